#include "frontend/cpp/tu_analysis.hpp"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/Utils.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <signal.h>
#include <sys/stat.h>

#include "frontend/cpp/ast_lowering.hpp"
#include "frontend/cpp/contained_fs.hpp"
#include "frontend/cpp/model_builder.hpp"
#include "frontend/cpp/ts_lowering.hpp"

namespace ll::cpp {
namespace fs = std::filesystem;

namespace {

struct ParseState {
  std::string_view source;
  DiagCollector diags;
  Module module;
  std::vector<Diagnostic> lower_diags;
  bool lowered = false;
  // Headers that were not found and were skipped (never LibTorch's): the rest of the TU is
  // Clang's recovery, with real LibTorch types.
  std::vector<std::string> skipped;
  // The main file includes a header of its own (`#include "net.h"`) that was found.
  bool own_header_found = false;
  // For each skipped header, the file whose #include names it.
  std::map<std::string, std::string> includer;
};

bool torch_header(const std::string& h);

// A header that is not found (OpenCV, a library whose include directory the default command
// line does not know) is skipped instead of stopping the compile: Clang recovers from the
// unknown names it declared, and what the file does with LibTorch keeps its real types.
// LibTorch's own headers are never skipped: without them nothing is known.
class SkipMissingHeaders : public clang::PPCallbacks {
 public:
  SkipMissingHeaders(ParseState& st, const clang::SourceManager& sm) : st_(st), sm_(sm) {}
  bool FileNotFound(llvm::StringRef name) override {
    std::string h = name.str();
    if (torch_header(h)) return false;
    if (st_.skipped.size() < 64) st_.skipped.push_back(std::move(h));
    return true;
  }
  void InclusionDirective(clang::SourceLocation hash, const clang::Token&, llvm::StringRef name, bool angled,
                          clang::CharSourceRange, clang::OptionalFileEntryRef file, llvm::StringRef,
                          llvm::StringRef, const clang::Module*, bool, clang::SrcMgr::CharacteristicKind) override {
    if (!angled && file && sm_.isInMainFile(hash)) st_.own_header_found = true;
    if (!file && st_.includer.size() < 64) st_.includer.try_emplace(name.str(), sm_.getFilename(sm_.getFileLoc(hash)).str());
  }

 private:
  ParseState& st_;
  const clang::SourceManager& sm_;
};

class LowerConsumer : public clang::ASTConsumer {
 public:
  LowerConsumer(ParseState& st, clang::SourceManager& sm) : st_(st), sm_(sm) {}
  // Header function bodies are skipped: the analysis reads declarations from headers and
  // bodies only from the main file.
  bool shouldSkipFunctionBody(clang::Decl* d) override {
    return !sm_.isInMainFile(sm_.getFileLoc(d->getLocation()));
  }
  void HandleTranslationUnit(clang::ASTContext& ctx) override {
    // Errors of a TU whose missing headers were skipped are what the skipped declarations
    // leave unknown: the recovery AST is lowered.
    // So is the AST of a file whose only errors are missing `template`/`typename` keywords.
    if (st_.diags.fatal || (st_.diags.main_file_hard_errors() && st_.skipped.empty())) return;
    lower_ast(ctx, st_.source, st_.module, st_.lower_diags);
    st_.lowered = true;
  }

 private:
  ParseState& st_;
  clang::SourceManager& sm_;
};

class LowerAction : public clang::ASTFrontendAction {
 public:
  explicit LowerAction(ParseState& st) : st_(st) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci, llvm::StringRef) override {
    return std::make_unique<LowerConsumer>(st_, ci.getSourceManager());
  }
  // A "prefix" translation unit: Sema skips the end-of-TU template instantiations and
  // checks, which the analysis does not need and which dominate the time with LibTorch.
  clang::TranslationUnitKind getTranslationUnitKind() override { return clang::TU_Prefix; }
  bool BeginSourceFileAction(clang::CompilerInstance& ci) override {
    ci.getPreprocessor().addPPCallbacks(std::make_unique<SkipMissingHeaders>(st_, ci.getSourceManager()));
    return true;
  }

 private:
  ParseState& st_;
};

// Signal handlers run on an alternate stack, so that a stack overflow inside Clang can be
// recovered from (CrashRecoveryContext's handler jumps back to RunSafely).
struct AltStack {
  std::vector<char> mem;
  stack_t old{};
  bool set = false;
  AltStack() {
    if (::sigaltstack(nullptr, &old) != 0) return;
    if (!(old.ss_flags & SS_DISABLE) && old.ss_size >= 64 * 1024) return;  // one is there (ASan's)
    mem.resize(256 * 1024);
    stack_t ss{};
    ss.ss_sp = mem.data();
    ss.ss_size = mem.size();
    ss.ss_flags = 0;
    set = ::sigaltstack(&ss, nullptr) == 0;
  }
  ~AltStack() {
    if (set) ::sigaltstack(&old, nullptr);  // whatever was installed before (or none)
  }
};

size_t input_index(const std::vector<std::string>& args, const std::string& directory, const std::string& file) {
  std::error_code ec;
  fs::path want = fs::weakly_canonical(file, ec);
  for (size_t i = args.size(); i-- > 1;) {
    const std::string& a = args[i];
    if (a.empty() || a[0] == '-') continue;
    fs::path p(a);
    if (p.is_relative()) p = fs::path(directory) / p;
    if (fs::weakly_canonical(p, ec) == want) return i;
  }
  return args.size();
}

std::atomic<bool> g_crash_recovered{false};

// Runs Clang over the file; returns false if Clang itself failed (crash, no invocation).
bool parse(const std::vector<std::string>& args, const std::string& directory, const std::string& abs_file,
           const std::string& pch, const std::vector<std::string>& roots, ParseState& st) {
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  bool ok = false;
  llvm::CrashRecoveryContext crc;
  // On a thread with a large stack: deeply nested input must not overflow Clang's parser.
  bool ran = crc.RunSafelyOnThread([&] {
    AltStack alt;
    auto diag_opts = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
    auto engine = clang::CompilerInstance::createDiagnostics(diag_opts.get(), &st.diags, false);
    clang::CreateInvocationOptions cio;
    cio.Diags = engine;
    cio.RecoverOnError = true;
    std::shared_ptr<clang::CompilerInvocation> inv = clang::createInvocation(argv, cio);
    if (!inv) return;
    inv->getFrontendOpts().ProgramAction = clang::frontend::ParseSyntaxOnly;
    inv->getFrontendOpts().SkipFunctionBodies = true;
    inv->getFrontendOpts().DisableFree = false;
    inv->getFileSystemOpts().WorkingDir = directory;
    inv->getDiagnosticOpts().ShowCarets = false;  // no "N errors generated." on stderr
    // What skipped headers declared is unknown everywhere it is used: no "too many errors"
    // stop (a fatal error) before the end of the file.
    inv->getDiagnosticOpts().ErrorLimit = 0;
    // LibTorch's headers come from the shared PCH; the file's own `#include <torch/...>`
    // lines are then no-ops (`#pragma once`).
    if (!pch.empty()) inv->getPreprocessorOpts().ImplicitPCHInclude = pch;
    (void)abs_file;
    clang::CompilerInstance ci;
    ci.setInvocation(inv);
    ci.createDiagnostics(&st.diags, false);
    // Headers, #embed and __has_include outside the project and the system's, Clang's,
    // LibTorch's and CUDA's headers do not exist (contained_fs.hpp).
    ci.createFileManager(contained_fs(roots, pch.empty() ? std::vector<std::string>{} : std::vector<std::string>{pch}));
    LowerAction action(st);
    ci.ExecuteAction(action);
    ok = true;
  }, 64u << 20);
  if (!ran) g_crash_recovered.store(true);
  return ran && ok;
}

Diagnostic diag(const std::string& path, std::string kind, std::string message, uint32_t line = 0, uint32_t col = 0,
                bool fatal = false) {
  Diagnostic d;
  d.path = path;
  d.kind = std::move(kind);
  d.message = std::move(message);
  d.line = line;
  d.col = col;
  d.fatal = fatal;
  return d;
}

// A header name that may be repeated in a report: a plain path spelled in the scanned file
// itself (Clang's message text is never quoted: it can carry bytes of the files it read).
bool quotable_header(const std::string& h, const std::string& source) {
  if (h.empty() || h.size() > 200 || h[0] == '/' || h.find("..") != std::string::npos) return false;
  for (char c : h)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/' || c == '+'))
      return false;
  return source.find(h) != std::string::npos;
}

// A header name a report may show: one the file names itself (quotable_header), or one an
// #include of a file inside the project tree names (`#include "version.h"` in the project's
// own `net.h`, never a system or LibTorch header's text). Shown with the file that includes it.
std::string shown_header(const std::string& h, const std::string& source, const std::string& includer,
                         const std::vector<std::string>& roots) {
  if (quotable_header(h, source)) return "'" + h + "'";
  std::string real = includer.empty() ? std::string() : real_path(includer);
  if (real.empty() || !contained_path(real, roots) || !quotable_header(h, h)) return "a header";
  std::string base = fs::path(real).filename().string();
  if (!quotable_header(base, base)) return "a header";
  return "'" + h + "' (included by " + base + ")";
}

bool torch_header(const std::string& h) {
  for (const char* p : {"torch/", "ATen/", "c10/", "caffe2/", "cuda", "cudnn", "thrust/", "cub/"})
    if (h.rfind(p, 0) == 0) return true;
  return false;
}

// ---- Project headers the default command line does not know where to find
// (`#include "network.hpp"` from src/main.cpp, the header in include/): the directories of the
// scanned tree that hold them, found by name.

bool header_name(const std::string& n) {
  for (const char* ext : {".h", ".hpp", ".hh", ".hxx", ".cuh", ".inl", ".ipp", ".tpp"}) {
    const size_t k = std::strlen(ext);
    if (n.size() > k && n.compare(n.size() - k, k, ext) == 0) return true;
  }
  return false;
}

// Every header file under `root` (real paths), listed once per process and root; hidden and
// dependency folders are skipped, symlinks are not followed, and the walk is bounded.
const std::vector<std::string>& headers_under(const std::string& root) {
  static std::mutex mu;
  static std::map<std::string, std::vector<std::string>> index;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = index.try_emplace(root);
  if (!fresh) return it->second;
  std::error_code ec;
  fs::recursive_directory_iterator walk(root, fs::directory_options::skip_permission_denied, ec), end;
  size_t visited = 0;
  for (; !ec && walk != end && visited < 200000; walk.increment(ec), ++visited) {
    const fs::directory_entry& e = *walk;
    const std::string name = e.path().filename().string();
    if (e.is_directory(ec) && !e.is_symlink(ec)) {
      if (walk.depth() >= 12 || (!name.empty() && name[0] == '.') || name == "node_modules" || name == "third_party")
        walk.disable_recursion_pending();
      continue;
    }
    if (e.is_regular_file(ec) && !e.is_symlink(ec) && header_name(name)) it->second.push_back(e.path().string());
  }
  return it->second;
}

// Directories under the project roots from which the skipped includes resolve, nearest to
// the file first; at most 8.
std::vector<std::string> project_include_dirs(const std::vector<std::string>& skipped,
                                              const std::vector<std::string>& roots, const std::string& file) {
  std::vector<std::string> out;
  for (const std::string& name : skipped) {
    if (name.empty() || name[0] == '/' || name.find("..") != std::string::npos || !header_name(name)) continue;
    std::string best;
    size_t best_common = 0;
    for (const std::string& root : roots)
      for (const std::string& h : headers_under(root)) {
        if (h.size() <= name.size() + 1 || h.compare(h.size() - name.size(), name.size(), name) != 0 ||
            h[h.size() - name.size() - 1] != '/')
          continue;
        size_t common = 0;
        while (common < h.size() && common < file.size() && h[common] == file[common]) ++common;
        std::string dir = h.substr(0, h.size() - name.size() - 1);
        if (best.empty() || common > best_common || (common == best_common && dir.size() < best.size())) {
          best = dir;
          best_common = common;
        }
      }
    if (!best.empty() && std::find(out.begin(), out.end(), best) == out.end()) out.push_back(best);
    if (out.size() >= 8) break;
  }
  return out;
}

}  // namespace

bool crash_recovered() { return g_crash_recovered.load(); }

void enable_crash_recovery() {
  llvm::CrashRecoveryContext::Enable();
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) {
    struct sigaction sa {};
    if (::sigaction(sig, nullptr, &sa) != 0) continue;
    sa.sa_flags |= SA_ONSTACK;
    ::sigaction(sig, &sa, nullptr);
  }
}

TuResult analyze_tu(const std::string& path, const TuOptions& opts, PchCache& cache) {
  auto t0 = std::chrono::steady_clock::now();
  TuResult r;
  std::error_code ec;
  std::string abs = fs::absolute(path, ec).lexically_normal().string();
  // A file (or a symlink) whose real path is outside its project tree is not read at all: a
  // scanned tree must not make leaklint print /etc/passwd or ~/.ssh/id_rsa.
  {
    std::string real = real_path(abs);
    std::vector<std::string> roots = project_roots(abs, opts.compile);
    if (!real.empty() && !contained_path(real, roots)) {
      r.diagnostics.push_back(diag(path, "outside-tree",
                                   "the file resolves (through a symlink) to a path outside the scanned tree; not "
                                   "analysed",
                                   0, 0, true));
      return r;
    }
  }
  struct stat st {};
  if (::stat(abs.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) {
    r.diagnostics.push_back(diag(path, "io-error", S_ISDIR(st.st_mode) ? "is a directory" : "cannot read file", 0, 0, true));
    return r;
  }
  if (static_cast<uint64_t>(st.st_size) > opts.max_file_size) {
    r.diagnostics.push_back(diag(path, "too-large",
                                 too_large_message(static_cast<uint64_t>(st.st_size), opts.max_file_size), 0, 0,
                                 true));
    return r;
  }
  {
    std::ifstream in(abs, std::ios::binary);
    if (!in) {
      r.diagnostics.push_back(diag(path, "io-error", "cannot read file", 0, 0, true));
      return r;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    r.source = ss.str();
  }
  auto finish = [&](TuResult& res) {
    res.module.path = path;
    res.module.lang = Lang::Cpp;
    res.module.comments = scan_comments(res.source);
    // (Servers run handlers on their own threads: cpp-httplib, gRPC, Crow, Drogon, Pistache,
    // Boost.Asio.)
    for (std::string_view w : {"std::thread", "std::jthread", "std::async", "pthread_create", "ThreadPool",
                               "thread_pool", "QThread", "QtConcurrent", "boost::thread", "boost::asio",
                               "#pragma omp", "tbb::", "folly::", "std::execution::par", "httplib", "grpc",
                               "crow::", "drogon", "Pistache"})
      if (res.source.find(w) != std::string::npos) res.module.mentions_threads = true;
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto syntactic = [&](TuResult& res) {
    res.module = Module{};
    lower_tree_sitter(res.source, res.module, res.diagnostics);
    for (auto& d : res.diagnostics)
      if (d.path.empty()) d.path = path;
    res.analysed = true;
    res.semantic = false;
    res.low_confidence = true;
  };
  if (opts.force_syntactic) {
    syntactic(r);
    r.diagnostics.push_back(diag(path, "syntactic-only",
                                 "analysed syntactically (--syntactic-only): findings are lower confidence"));
    finish(r);
    return r;
  }

  CompileCommand cmd = compile_command(abs, opts.compile);
  r.command_origin = cmd.origin;
  if (!cmd.warning.empty()) r.diagnostics.push_back(diag(path, "compile-database", cmd.warning));
  if (opts.verbose && !cmd.dropped.empty()) {
    // Flag names only: a value may be a path or text of the database's choosing.
    std::string msg = std::to_string(cmd.dropped.size()) + " compile flag(s) of the " + cmd.origin +
                      " were not used by the analysis:";
    size_t shown = 0;
    for (const auto& d : cmd.dropped) {
      if (shown++ == 20) { msg += " ..."; break; }
      std::string flag = d.arg.substr(0, d.arg.find_first_of("=,"));
      if (flag.size() > 40 || (!flag.empty() && flag[0] != '-')) flag = flag.empty() || flag[0] == '@' ? "@file" : "(input)";
      msg += " " + flag + " (" + d.reason + ")";
    }
    r.diagnostics.push_back(diag(path, "compile-flags-dropped", msg));
  }
  std::vector<std::string> read_roots = cmd.read_roots;
  if (cache.enabled()) read_roots.push_back(real_path(cache.dir()).empty() ? cache.dir() : real_path(cache.dir()));
  size_t input = input_index(cmd.args, cmd.directory, abs);
  if (input >= cmd.args.size()) {
    cmd.args.push_back(abs);
    input = cmd.args.size() - 1;
  }
  bool cuda = false;
  for (const auto& a : cmd.args) cuda |= a == "cuda";

  PchRequest req;
  req.args = cmd.args;
  req.input = input;
  req.directory = cmd.directory;
  req.roots = read_roots;
  PchOutcome pch;
  if (!cuda && mentions_torch(r.source)) pch = cache.get(req);
  else pch.status = cuda ? "none" : "not-torch";
  r.pch_status = pch.status;
  r.pch_seconds = pch.build_seconds;

  ParseState ps;
  ps.source = r.source;
  bool clang_ok = true;
  {
    clang_ok = parse(cmd.args, cmd.directory, abs, pch.pch, read_roots, ps);
    if (clang_ok && !pch.pch.empty() && ps.diags.pch_problem) {
      // A stale PCH (a header changed since it was built): rebuild once, else parse without.
      PchOutcome again = cache.get(req, /*rebuild=*/true);
      r.pch_status = "retry";
      r.pch_seconds += again.build_seconds;
      ps = ParseState{};
      ps.source = r.source;
      clang_ok = parse(cmd.args, cmd.directory, abs, again.pch, read_roots, ps);
    }
    // A project header that is not found (OpenCV, argparse, cxxopts without their include
    // directory, included by the file or by one of its own headers) fails the same way without
    // the PCH: re-parsing LibTorch for nothing cost 3-10 s per such file on pytorch/examples.
    bool missing_project_header = !ps.diags.missing_header.empty() && !torch_header(ps.diags.missing_header);
    if (clang_ok && !pch.pch.empty() && (ps.diags.main_file_errors() || ps.diags.fatal) && !ps.lowered &&
        !missing_project_header) {
      // Rare: something the shared PCH does not reproduce (a macro defined before the
      // file's includes, say). Confirm without it.
      ParseState plain;
      plain.source = r.source;
      if (parse(cmd.args, cmd.directory, abs, "", read_roots, plain) && plain.lowered) {
        ps = std::move(plain);
        r.pch_status += "+plain";
      }
    }
  }
  // Without a database entry, headers of the project itself that were not found are looked
  // up in the tree, and the file is parsed once more with their directories.
  if (clang_ok && !cmd.exact && !ps.skipped.empty()) {
    std::vector<std::string> dirs = project_include_dirs(ps.skipped, cmd.project_roots, abs);
    if (!dirs.empty()) {
      std::vector<std::string> args = cmd.args;
      const size_t at = std::min<size_t>(1, args.size());
      for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) args.insert(args.begin() + at, "-I" + *d);
      ParseState again;
      again.source = r.source;
      if (parse(args, cmd.directory, abs, pch.pch, read_roots, again) && (again.lowered || !ps.lowered)) {
        ps = std::move(again);
        r.pch_status += "+project-includes";
      }
    }
  }
  if (!clang_ok) {
    r.diagnostics.push_back(diag(path, "internal",
                                 "the Clang frontend failed on this file; analysed syntactically, findings are lower "
                                 "confidence"));
    syntactic(r);
    finish(r);
    return r;
  }
  // A file that never spells LibTorch, and in which nothing Clang resolved is LibTorch's (its
  // own headers not found, or found and declaring another framework): whatever it calls
  // `forward` or `model` belongs to a framework nothing shows (a project's own
  // `pytorchcpp/nn.h` with its own `Tensor` and `Variable`). Nothing is analysed; a diagnostic
  // says why where a missing-headers one would have stood (else only with --verbose: a plain C++
  // file of the project needs no word).
  auto reaches_torch = [](const Module& mod) {
    for (const Expr& x : mod.exprs)
      for (std::string_view ns : {"torch", "at", "c10"})
        if (x.qname.size() > ns.size() && x.qname.compare(0, ns.size(), ns) == 0 && x.qname[ns.size()] == '.')
          return true;
    return false;
  };
  // With headers skipped, the lowering spells unresolved names by their look (`nn::Module` as
  // LibTorch's), so only the file's own words count, unless a header of its own was found
  // (`#include "net.h"` with `using Tensor = torch::Tensor;`, beside a missing generated
  // `version.h`): then what resolved decides, as when nothing is missing.
  const bool unseen_framework =
      !mentions_libtorch(r.source, /*bare_tensor=*/false) &&
      (ps.lowered ? (!ps.skipped.empty() && !ps.own_header_found) || !reaches_torch(ps.module)
                  : !ps.diags.missing_header.empty() && !torch_header(ps.diags.missing_header));
  if (unseen_framework) {
    r.module = Module{};
    r.analysed = true;
    r.semantic = ps.lowered;
    if (!ps.skipped.empty() || !ps.lowered || opts.verbose)
      r.diagnostics.push_back(diag(path, "not-libtorch",
                                   "skipped: the file never names LibTorch (torch, at::, c10, ATen) and nothing it "
                                   "uses resolves to LibTorch, so no rule applies to it"));
    finish(r);
    return r;
  }
  if (ps.lowered) {
    r.module = std::move(ps.module);
    for (auto& d : ps.lower_diags) {
      d.path = path;
      r.diagnostics.push_back(std::move(d));
    }
    r.analysed = true;
    r.semantic = true;
    if (!ps.skipped.empty()) {
      // Findings rest on LibTorch's real types; edits could not be checked by a compile.
      r.fixable = false;
      std::string h = ps.skipped.front();  // the first one the file names itself, if any
      for (const std::string& x : ps.skipped)
        if (quotable_header(x, r.source)) { h = x; break; }
      auto by = ps.includer.find(h);
      std::string shown = shown_header(h, r.source, by == ps.includer.end() ? "" : by->second, cmd.project_roots);
      std::string more = ps.skipped.size() > 1 ? " and " + std::to_string(ps.skipped.size() - 1) + " more" : "";
      r.diagnostics.push_back(diag(path, "missing-headers",
                                   shown + more + " not found (" + cmd.origin +
                                       "): skipped, and the rest analysed with Clang's recovery (LibTorch types "
                                       "are real); no fixes are offered. Pass -p BUILD_DIR with a "
                                       "compile_commands.json"));
    } else if (ps.diags.only_missing_keywords()) {
      // Clang recovered as if each missing disambiguator were written: the findings stand, but
      // an edit could not be checked by a compile.
      r.fixable = false;
      const DiagCollector::Item& e = ps.diags.errors.front();
      const size_t n = ps.diags.errors.size();
      r.diagnostics.push_back(diag(path, "compile-error",
                                   "Clang needs a `template` or `typename` keyword here that other compilers "
                                   "accept without (" + std::to_string(n) + (n == 1 ? " place" : " places") +
                                       ", first at line " + std::to_string(e.line) + ":" + std::to_string(e.col) +
                                       "); analysed as if it were written, no fixes are offered",
                                   e.line, e.col));
    } else if (!ps.diags.errors.empty()) {
      // Errors only in other files (headers): the main file's AST is usable but may miss facts.
      r.low_confidence = true;
      r.diagnostics.push_back(diag(path, "compile-error",
                                   "errors in included files (" + std::to_string(ps.diags.errors.size()) +
                                       (ps.diags.errors.size() == 1 ? " error" : " errors") +
                                       "); findings are lower confidence"));
    }
    finish(r);
    return r;
  }
  // The TU does not compile: the tree-sitter lowering, with the reason.
  std::string missing = ps.diags.missing_header;
  const DiagCollector::Item* first = nullptr;
  for (const auto& e : ps.diags.errors)
    if (e.in_main) { first = &e; break; }
  if (!first && !ps.diags.errors.empty()) first = &ps.diags.errors.front();
  uint32_t line = first && first->in_main ? first->line : 0, col = first && first->in_main ? first->col : 0;
  std::string msg;
  std::string shown = shown_header(missing, r.source, ps.diags.missing_header_in, cmd.project_roots);
  // (A CUDA header, LibTorch's own `c10/cuda/...` or the toolkit's `cuda_runtime_api.h`, when
  // LibTorch was found: that LibTorch is a CPU build, or the toolkit is not installed.)
  const bool cuda_header = [&] {
    for (const char* p : {"c10/cuda/", "ATen/cuda/", "c10/hip/", "ATen/hip/", "torch/csrc/cuda/", "cuda", "cudnn",
                          "thrust/", "cub/"})
      if (missing.rfind(p, 0) == 0) return true;
    return false;
  }();
  if (!missing.empty() && cuda_header && !cmd.torch_include.empty()) {
    msg = "CUDA headers not found (" + shown +
          " of LibTorch's CUDA part or of the CUDA toolkit not found: LibTorch was found, but as a CPU build or "
          "without the toolkit); analysed syntactically, findings are lower confidence. Pass -p BUILD_DIR with a "
          "compile_commands.json of a CUDA build";
    r.diagnostics.push_back(diag(path, "missing-headers", msg, line, col));
  } else if (!missing.empty() && torch_header(missing)) {
    msg = "LibTorch headers not found (" + shown + " not found";
    if (cmd.torch_include.empty() && !cmd.exact)
      msg += opts.compile.torch_search ? "; no LibTorch installation was found"
                                       : "; the default LibTorch search is disabled (LEAKLINT_NO_TORCH_INCLUDES)";
    msg += "); analysed syntactically, findings are lower confidence. Pass -p BUILD_DIR with a "
           "compile_commands.json, or set LIBTORCH to the LibTorch directory";
    r.diagnostics.push_back(diag(path, "missing-headers", msg, line, col));
  } else if (!missing.empty()) {
    msg = shown + " not found (" + cmd.origin +
          "); analysed syntactically, findings are lower confidence. Pass -p BUILD_DIR with a compile_commands.json";
    r.diagnostics.push_back(diag(path, "missing-headers", msg, line, col));
  } else {
    // Never Clang's message text: it can quote bytes of any file the compile read.
    msg = "the file does not compile";
    if (first && first->in_main)
      msg += " (first error at line " + std::to_string(first->line) + ":" + std::to_string(first->col) + ", " +
             std::to_string(ps.diags.errors.size()) + (ps.diags.errors.size() == 1 ? " error)" : " errors)");
    else if (first)
      msg += " (" + std::to_string(ps.diags.errors.size()) +
             (ps.diags.errors.size() == 1 ? " error" : " errors") + " in included files)";
    msg += "; analysed syntactically, findings are lower confidence";
    r.diagnostics.push_back(diag(path, "compile-error", msg, line, col));
  }
  syntactic(r);
  finish(r);
  return r;
}

}  // namespace ll::cpp
