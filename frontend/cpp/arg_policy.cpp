#include "frontend/cpp/arg_policy.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace ll::cpp {
namespace {

bool starts(const std::string& s, const char* p) { return s.compare(0, std::strlen(p), p) == 0; }

bool ends(const std::string& s, const char* p) {
  size_t n = std::strlen(p);
  return s.size() >= n && s.compare(s.size() - n, n, p) == 0;
}

// Flags (not kept) whose value is the next argument: both are dropped together, so that the
// value is never read as a flag of its own.
const char* const kSeparateValue[] = {
    "-o", "-MF", "-MT", "-MQ", "-MJ", "-Xclang", "-Xpreprocessor", "-Xlinker", "-Xassembler", "-Xcuda-ptxas",
    "-Xcuda-fatbinary", "-Xopenmp-target", "-Xoffload-linker", "-Xarch_host", "-Xarch_device", "-mllvm",
    "-dependency-file", "-dependency-dot", "--serialize-diagnostics", "-serialize-diagnostic-file",
    "-header-include-file", "-include-pch", "--include-pch", "-load", "--config", "-B", "--prefix", "-L", "-F",
    "-arch", "-specs", "--specs", "-isysroot", "--sysroot", "-iprefix", "-iwithprefix", "-iwithprefixbefore",
    "-ivfsoverlay", "-gcc-toolchain", "--gcc-toolchain", "-module-dependency-dir", "-aux-info", "-wrapper",
    "--param", "-dumpdir", "-dumpbase", "-dumpbase-ext", "-u", "-z", "-T", "-e", "-framework", "-install_name",
    "-exported_symbols_list", "-Xanalyzer", "-Xflang", "-main-file-name", "-fmodule-file", "-fmodules-cache-path",
    "-fmodule-map-file", "-iframework", "-iframeworkwithsysroot", "-isystem-after", "-imultilib", "-resource-dir",
    "--resource-dir", "-ccc-install-dir", "-ftime-trace-granularity", "-fprofile-list", "-fcrash-diagnostics-dir",
    "--output", "-output", "-working-directory", "--cuda-path", "--rocm-path", "--hip-path", "-fplugin-arg",
    "-Xthinlto-distributor", "-Xparser", "-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options",
    "-Xnvlink", "--linker-options", "-ccbin", "--compiler-bindir", "-odir", "--output-directory",
    "--dependency-output", "-MO", "--keep-dir", "-keep-dir", "-ivfsstatcache", "-imsvc",
};

bool takes_separate_value(const std::string& a) {
  for (const char* f : kSeparateValue)
    if (a == f) return true;
  return false;
}

// -m flags that only choose the target's ISA or ABI (predefined macros, type sizes).
bool harmless_m_flag(const std::string& a) {
  static const char* const valued[] = {"-march=", "-mcpu=", "-mtune=", "-mfpu=", "-mfloat-abi=", "-mabi=",
                                       "-mcmodel=", "-mfpmath=", "-mprefer-vector-width=", "-mmacosx-version-min=",
                                       "-mlong-double-"};
  for (const char* v : valued)
    if (starts(a, v)) {
      for (char c : a.substr(std::strlen(v)))
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '+' || c == ','))
          return false;
      return true;
    }
  std::string n = a.substr(2);
  if (starts(n, "no-")) n = n.substr(3);
  static const char* const names[] = {"32", "64", "x32", "16", "thumb", "arm", "red-zone", "fma", "f16c", "bmi", "bmi2",
                                      "popcnt", "lzcnt", "aes", "pclmul", "cx16", "movbe", "mmx", "ssse3", "rdrnd",
                                      "rdseed", "adx", "sha", "fsgsbase", "vzeroupper", "fma4", "xop", "tbm", "abm",
                                      "sahf", "crc32", "gfni", "vaes", "vpclmulqdq", "prfchw", "stackrealign",
                                      "unaligned-access", "strict-align", "omit-leaf-frame-pointer", "fp16",
                                      "ieee-fp", "soft-float", "hard-float", "80387", "align-double", "retpoline",
                                      "outline-atomics", "red-zone"};
  for (const char* x : names)
    if (n == x) return true;
  for (const char* p : {"sse", "avx", "amx", "xsave", "f16c", "bmi"})
    if (starts(n, p)) {
      for (char c : n)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) return false;
      return true;
    }
  return false;
}

// -f flags that change only the language accepted or predefined macros (with or without no-).
bool harmless_f_flag(const std::string& a) {
  static const char* const valued[] = {"-fvisibility=", "-ftemplate-depth=", "-fconstexpr-depth=",
                                       "-fconstexpr-steps=", "-fmacro-backtrace-limit=",
                                       "-ftemplate-backtrace-limit=", "-fbracket-depth=", "-fopenmp-version=",
                                       "-fms-compatibility-version=", "-fmsc-version=", "-fdenormal-fp-math=",
                                       "-ffp-contract=", "-ffp-model=", "-fwchar-type=", "-fgnuc-version=",
                                       "-fcuda-flush-denormals-to-zero", "-fexcess-precision="};
  for (const char* v : valued)
    if (starts(a, v)) {
      for (char c : a.substr(std::strlen(v)))
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
      return true;
    }
  std::string n = a.substr(2);
  if (starts(n, "no-")) n = n.substr(3);
  static const char* const names[] = {
      "exceptions", "cxx-exceptions", "rtti", "pic", "PIC", "pie", "PIE", "openmp", "openmp-simd", "signed-char",
      "unsigned-char", "char8_t", "ms-extensions", "ms-compatibility", "delayed-template-parsing", "gnu-keywords",
      "operator-names", "strict-aliasing", "fast-math", "math-errno", "finite-math-only", "builtin", "common",
      "omit-frame-pointer", "threadsafe-statics", "strict-overflow", "wrapv", "sized-deallocation", "aligned-new",
      "coroutines", "gnu89-inline", "short-enums", "short-wchar", "trapping-math", "unroll-loops",
      "inline-functions", "use-cxa-atexit", "elide-constructors", "access-control", "asm", "declspec",
      "dollars-in-identifiers", "gnu-inline-asm", "trigraphs", "digraphs", "stack-protector",
      "stack-protector-strong", "stack-protector-all", "visibility-inlines-hidden", "inline", "implicit-templates",
      "gpu-rdc", "strict-enums", "signed-zeros", "reciprocal-math", "associative-math", "honor-nans",
      "honor-infinities", "unsafe-math-optimizations", "strict-vtable-pointers", "char8_t", "relaxed-template-template-args",
      "new-infallible", "assume-sane-operator-new", "gnu-extensions", "cuda-allow-variadic-functions",
      "cuda-approx-transcendentals", "semantic-interposition", "plt", "function-sections", "data-sections",
      "unique-section-names", "strict-float-cast-overflow", "vectorize", "slp-vectorize", "lax-vector-conversions",
      "fixed-point", "zero-initialized-in-bss", "merge-all-constants", "keep-static-consts", "emulated-tls",
      "trapv", "split-stack", "cf-protection", "stack-clash-protection", "sanitize-address-use-after-scope"};
  for (const char* x : names)
    if (n == x) return std::string(x) != "sanitize-address-use-after-scope";
  return false;
}

// Why a dropped flag is dropped (best effort; the allowlist is what decides).
const char* reason_for(const std::string& a) {
  if (a.empty()) return "empty argument";
  if (a[0] == '@') return "response file";
  if (starts(a, "-Xclang") || starts(a, "-mllvm") || starts(a, "-Xpreprocessor") || starts(a, "-Wp,") ||
      starts(a, "-Xlinker") || starts(a, "-Wl,") || starts(a, "-Xassembler") || starts(a, "-Wa,") || starts(a, "-X"))
    return "passes options to another tool";
  if (starts(a, "-fplugin") || starts(a, "-fpass-plugin") || a == "-load") return "loads code";
  if (a == "-o" || starts(a, "-M") || starts(a, "-dependency") || starts(a, "--serialize-diagnostics") ||
      starts(a, "-header-include") || starts(a, "-fmodules") || starts(a, "-save-temps") || starts(a, "--save-temps") ||
      starts(a, "-ftime-trace") || starts(a, "-fprofile") || starts(a, "-fcoverage") || starts(a, "-fcrash-diagnostics") ||
      starts(a, "-fproc-stat-report") || starts(a, "-fsave-optimization-record") || starts(a, "-foptimization-record") ||
      starts(a, "--output") || starts(a, "-aux-info") || starts(a, "-module-dependency-dir"))
    return "writes files";
  if (starts(a, "--config") || a == "-B" || starts(a, "-B") || starts(a, "-specs") || starts(a, "--specs") ||
      starts(a, "-isysroot") || starts(a, "--sysroot") || starts(a, "-gcc-toolchain") || starts(a, "--gcc-") ||
      starts(a, "-resource-dir") || starts(a, "--resource-dir") || starts(a, "-ivfsoverlay") || starts(a, "-ccc-") ||
      starts(a, "--cuda-path") || starts(a, "-working-directory"))
    return "redirects the toolchain or reads options from elsewhere";
  if (starts(a, "-W") || a == "-w" || starts(a, "-pedantic")) return "warnings are not reported";
  if (starts(a, "-include") || starts(a, "-imacros") || starts(a, "--include")) return "file outside the scanned tree";
  return "not on the allowlist";
}

bool plain_value(const std::string& v) { return !v.empty() && v[0] != '-' && v[0] != '@'; }

}  // namespace

bool arg_policy_forbidden(const std::string& a) {
  if (!a.empty() && a[0] == '@') return true;
  static const char* const prefixes[] = {
      "-o", "-M", "-X", "-Wl,", "-Wp,", "-Wa,", "-mllvm", "-module", "-fplugin", "-fpass-plugin", "-load",
      "-fmodule", "-fprebuilt-module", "-fimplicit-module", "-fprofile", "-fcoverage", "-ftime-trace", "-save-temps",
      "--save-temps", "-dependency", "--serialize-diagnostics", "-serialize-diagnostic", "-header-include", "-B",
      "--config", "-specs", "--specs", "-isysroot", "--sysroot", "-ivfsoverlay", "-fcrash-diagnostics",
      "-fproc-stat-report", "-fsanitize", "-include-pch", "--include-pch", "-emit", "-fdepfile",
      "-fsave-optimization-record", "-foptimization-record", "-gcc-toolchain", "--gcc-", "-fembed",
      "--cuda-path", "-resource-dir", "--resource-dir", "-iprefix", "-iwithprefix", "-F", "-L", "-cc1", "-ccc-",
      "-working-directory", "-fapinotes", "-iapinotes", "-fxray", "-fdebug-", "-frewrite-map", "-Xarch", "--output",
      "-aux-info", "-wrapper", "-ivfsstatcache", "-v", "-###", "-E", "-S", "-c", "-fsyntax-only"};
  for (const char* p : prefixes)
    if (starts(a, p)) return true;
  return false;
}

ArgPolicyResult apply_arg_policy(const std::vector<std::string>& in, const ArgPolicyOptions& opts) {
  ArgPolicyResult out;
  auto resolve = [&](const std::string& p) { return opts.resolve ? opts.resolve(p) : p; };
  std::string want = resolve(opts.input);
  out.args.push_back(ends(opts.input, ".c") ? "clang" : "clang++");
  auto drop = [&](const std::string& a, const char* why) { out.dropped.push_back({a, why}); };
  auto keep2 = [&](const std::string& f, const std::string& v) {
    out.args.push_back(f);
    out.args.push_back(v);
  };
  bool only_inputs = false;
  for (size_t i = 1; i < in.size(); ++i) {
    const std::string& a = in[i];
    bool has_next = i + 1 < in.size();
    if (only_inputs || a.empty() || a[0] != '-' || a == "-") {
      if (a.empty() || a[0] == '@') { drop(a, reason_for(a)); continue; }
      if (a == "-" || resolve(a) != want) drop(a, "another input file");
      continue;  // the input is appended last
    }
    if (a == "--") { only_inputs = true; continue; }
    // Include directories: what a header lookup reads is checked where files are opened.
    bool matched = false;
    for (const char* f : {"-I", "-isystem", "-iquote", "-idirafter"}) {
      if (a == f) {
        matched = true;
        if (has_next && plain_value(in[i + 1])) keep2(a, in[i + 1]);
        else drop(a, "missing or suspicious value");
        if (has_next) ++i;
        break;
      }
      // Joined: -Idir (not -isystem-after, -iquoteX is fine).
      if (starts(a, f) && (std::string(f) == "-I" || a.size() > std::strlen(f))) {
        std::string v = a.substr(std::strlen(f));
        if (std::string(f) != "-I" && !v.empty() && v[0] == '-') break;  // -isystem-after & co
        matched = true;
        if (!v.empty() && v[0] != '@') out.args.push_back(a);
        else drop(a, "missing or suspicious value");
        break;
      }
    }
    if (matched) continue;
    if (a == "-D" || a == "-U") {
      if (has_next && plain_value(in[i + 1])) keep2(a, in[i + 1]);
      else drop(a, "missing or suspicious value");
      if (has_next) ++i;
      continue;
    }
    if ((starts(a, "-D") || starts(a, "-U")) && a.size() > 2) { out.args.push_back(a); continue; }
    if (starts(a, "-std=") || starts(a, "--std=")) {
      std::string v = a.substr(a.find('=') + 1);
      bool ok = !v.empty() && v.size() < 32;
      for (char c : v) ok &= std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '_';
      if (ok) out.args.push_back("-std=" + v);
      else drop(a, "not a language standard");
      continue;
    }
    if (a == "-x" || (starts(a, "-x") && a.size() > 2)) {
      std::string v = a == "-x" ? (has_next ? in[i + 1] : "") : a.substr(2);
      if (a == "-x" && has_next) ++i;
      // A header listed in the database is analysed as a source file of its language: a
      // `*-header` language would make Clang refuse the LibTorch preamble (PCH) built for
      // sources and parse all of LibTorch again (5-30 s per header).
      if (v == "c-header") v = "c";
      if (v == "c++-header") v = "c++";
      if (v == "c" || v == "c++" || v == "cuda" || v == "hip")
        keep2("-x", v);
      else
        drop(a, "not a C, C++ or CUDA language");
      continue;
    }
    if (a == "-include" || a == "-imacros" || a == "--include") {
      std::string v = has_next ? in[i + 1] : "";
      if (has_next) ++i;
      if (plain_value(v) && opts.path_allowed && opts.path_allowed(resolve(v)))
        keep2(a == "--include" ? "-include" : a, resolve(v));
      else
        drop(a, "file outside the scanned tree");
      continue;
    }
    if ((starts(a, "-include") || starts(a, "--include=") || starts(a, "-imacros")) && !starts(a, "-include-pch") &&
        !starts(a, "--include-pch")) {
      std::string flag = starts(a, "-imacros") ? "-imacros" : "-include";
      size_t at = starts(a, "--include=") ? 10 : flag.size();
      std::string v = a.substr(at);
      if (plain_value(v) && opts.path_allowed && opts.path_allowed(resolve(v))) keep2(flag, resolve(v));
      else drop(a, "file outside the scanned tree");
      continue;
    }
    if (a == "-target") {
      if (has_next && plain_value(in[i + 1])) keep2("-target", in[i + 1]);
      else drop(a, "missing or suspicious value");
      if (has_next) ++i;
      continue;
    }
    if (starts(a, "--target=")) { out.args.push_back(a); continue; }
    if (starts(a, "-m") && harmless_m_flag(a)) { out.args.push_back(a); continue; }
    // GCC's OpenMP: `-fopenmp` makes LibTorch's headers include <omp.h>, which is GCC's
    // (Clang has none without libomp); the analysis needs no OpenMP, so it is left out.
    if (a == "-fopenmp" || starts(a, "-fopenmp=")) { drop(a, "GCC's OpenMP headers are not Clang's"); continue; }
    if (starts(a, "-f") && harmless_f_flag(a)) { out.args.push_back(a); continue; }
    if (a == "-pthread" || a == "-ansi" || a == "-nostdinc" || a == "-nostdinc++" || a == "-nostdlibinc" ||
        a == "-nobuiltininc" || a == "-stdlib=libc++" || a == "-stdlib=libstdc++" || a == "-nocudainc" ||
        a == "-nocudalib" || a == "--cuda-host-only" || a == "--cuda-device-only" || a == "--no-cuda-version-check" ||
        a == "-undef" || a == "-trigraphs") {
      out.args.push_back(a);
      continue;
    }
    if (a == "-O" || (starts(a, "-O") && a.size() <= 6 && a.find_first_of("/=@") == std::string::npos)) {
      out.args.push_back(a);
      continue;
    }
    if (starts(a, "--cuda-gpu-arch=") || starts(a, "--offload-arch=")) {
      bool ok = true;
      for (char c : a.substr(a.find('=') + 1)) ok &= std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ',';
      if (ok) { out.args.push_back(a); continue; }
    }
    drop(a, reason_for(a));
    if (takes_separate_value(a) && has_next) ++i;
  }
  out.args.push_back(opts.input);
  // Defence in depth: the allowlist above never keeps these; assert it for every build.
  std::vector<std::string> safe;
  for (size_t i = 0; i < out.args.size(); ++i) {
    const std::string& a = out.args[i];
    bool value = i > 0 && (out.args[i - 1] == "-I" || out.args[i - 1] == "-isystem" || out.args[i - 1] == "-iquote" ||
                           out.args[i - 1] == "-idirafter" || out.args[i - 1] == "-D" || out.args[i - 1] == "-U" ||
                           out.args[i - 1] == "-x" || out.args[i - 1] == "-include" ||
                           out.args[i - 1] == "-imacros" || out.args[i - 1] == "-target");
    if (i > 0 && i + 1 < out.args.size() && !value && arg_policy_forbidden(a)) {
      out.dropped.push_back({a, "forbidden"});
      continue;
    }
    safe.push_back(a);
  }
  out.args = std::move(safe);
  return out;
}

}  // namespace ll::cpp
