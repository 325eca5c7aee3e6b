#include "frontend/cpp/pch_cache.hpp"

#include <clang/Basic/SourceManager.h>
#include <clang/Basic/Version.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/Utils.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/SHA256.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace ll::cpp {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------- preamble

Preamble compute_preamble(std::string_view s) {
  Preamble p;
  size_t i = 0, n = s.size();
  int depth = 0;          // open #if blocks
  bool include_in_block = false, quoted_in_block = false;
  auto skip_ws = [&](size_t k) {
    while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r' || s[k] == '\f' || s[k] == '\v')) ++k;
    return k;
  };
  while (i < n) {
    size_t k = skip_ws(i);
    if (k >= n) break;
    if (s[k] == '\n') { i = k + 1; if (depth == 0) p.size = static_cast<uint32_t>(i); continue; }
    if (s.compare(k, 2, "//") == 0) {
      size_t e = s.find('\n', k);
      i = e == std::string_view::npos ? n : e + 1;
      if (depth == 0) p.size = static_cast<uint32_t>(i);
      continue;
    }
    if (s.compare(k, 2, "/*") == 0) {
      size_t e = s.find("*/", k + 2);
      if (e == std::string_view::npos) break;
      size_t after = skip_ws(e + 2);
      if (after < n && s[after] != '\n' && s.compare(after, 2, "//") != 0) break;  // code after the comment
      size_t nl = s.find('\n', after);
      i = nl == std::string_view::npos ? n : nl + 1;
      if (depth == 0) p.size = static_cast<uint32_t>(i);
      continue;
    }
    if (s[k] != '#') break;
    // A directive, possibly continued with backslash-newline.
    size_t e = k;
    while (e < n && s[e] != '\n') {
      if (s[e] == '\\' && e + 1 < n && s[e + 1] == '\n') e += 2;
      else if (s[e] == '\\' && e + 2 < n && s[e + 1] == '\r' && s[e + 2] == '\n') e += 3;
      else ++e;
    }
    size_t d = skip_ws(k + 1);
    size_t de = d;
    while (de < n && (std::isalpha(static_cast<unsigned char>(s[de])) || s[de] == '_')) ++de;
    std::string_view name = s.substr(d, de - d);
    size_t next = e < n ? e + 1 : n;
    if (name == "include" || name == "include_next" || name == "import") {
      size_t q = skip_ws(de);
      bool quoted = q < n && s[q] == '"';
      if (depth == 0) { p.has_include = true; p.has_quoted_include |= quoted; }
      else { include_in_block = true; quoted_in_block |= quoted; }
    } else if (name == "if" || name == "ifdef" || name == "ifndef") {
      ++depth;
    } else if (name == "elif" || name == "else" || name == "elifdef" || name == "elifndef") {
      if (depth == 0) break;
    } else if (name == "endif") {
      if (depth == 0) break;
      --depth;
      if (depth == 0) {
        p.has_include |= include_in_block;
        p.has_quoted_include |= quoted_in_block;
        include_in_block = quoted_in_block = false;
      }
    } else if (name == "define" || name == "undef" || name == "pragma" || name == "line" || name.empty()) {
      // #pragma once in a header analysed as a main file: harmless in the PCH header.
    } else {
      break;  // #error, #warning, module directives: stop here
    }
    i = next;
    if (depth == 0) p.size = static_cast<uint32_t>(i);
  }
  if (p.size > n) p.size = static_cast<uint32_t>(n);
  // The preamble must end at a line start (the analysed buffer blanks it line by line).
  while (p.size > 0 && s[p.size - 1] != '\n') --p.size;
  if (p.size == 0) p.has_include = p.has_quoted_include = false;
  return p;
}

// Comments blanked (newlines kept, so offsets stay the file's).
std::string blank_comments(std::string_view s) {
  std::string out(s);
  size_t i = 0, n = out.size();
  while (i < n) {
    char c = out[i];
    if (c == '"' ) {  // string literal (#include "x", #define S "...")
      size_t j = i + 1;
      while (j < n && out[j] != '"' && out[j] != '\n') j += out[j] == '\\' ? 2 : 1;
      i = j + 1;
      continue;
    }
    if (c == '/' && i + 1 < n && out[i + 1] == '/') {
      while (i < n && out[i] != '\n') out[i++] = ' ';
      continue;
    }
    if (c == '/' && i + 1 < n && out[i + 1] == '*') {
      size_t e = out.find("*/", i + 2);
      size_t end = e == std::string::npos ? n : e + 2;
      for (; i < end; ++i)
        if (out[i] != '\n') out[i] = ' ';
      continue;
    }
    ++i;
  }
  return out;
}

// What the PCH depends on: the directives, without comments and blank lines, each trimmed.
std::string normalized_directives(std::string_view pre) {
  std::string blanked = blank_comments(pre), out;
  size_t i = 0;
  while (i < blanked.size()) {
    size_t e = blanked.find('\n', i);
    if (e == std::string::npos) e = blanked.size();
    std::string_view line(blanked.data() + i, e - i);
    size_t b = line.find_first_not_of(" \t\r"), l = line.find_last_not_of(" \t\r");
    if (b != std::string_view::npos) {
      out.append(line.substr(b, l - b + 1));
      out.push_back('\n');
    }
    i = e + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------- diagnostics

void DiagCollector::HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) {
  DiagnosticConsumer::HandleDiagnostic(level, info);
  if (level < clang::DiagnosticsEngine::Error) return;
  llvm::SmallString<256> msg;
  info.FormatDiagnostic(msg);
  Item it;
  it.message = std::string(msg.str());
  it.fatal = level == clang::DiagnosticsEngine::Fatal;
  if (it.fatal) fatal = true;
  if (info.hasSourceManager() && info.getLocation().isValid()) {
    const clang::SourceManager& sm = info.getSourceManager();
    clang::SourceLocation loc = sm.getFileLoc(info.getLocation());
    clang::PresumedLoc pl = sm.getPresumedLoc(loc);
    if (pl.isValid()) {
      it.file = pl.getFilename();
      it.line = pl.getLine();
      it.col = pl.getColumn();
    }
    it.in_main = sm.isInMainFile(loc);
    it.offset = sm.getFileOffset(loc);
  }
  std::string lower = it.message;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("precompiled") != std::string::npos || lower.find("ast file") != std::string::npos ||
      lower.find(".pch") != std::string::npos)
    pch_problem = true;
  if (missing_header.empty() && it.message.size() > 16 && it.message.find("' file not found") != std::string::npos &&
      it.message[0] == '\'')
    missing_header = it.message.substr(1, it.message.find("' file not found") - 1);
  errors.push_back(std::move(it));
}

// ---------------------------------------------------------------------------- cache

std::string PchCache::default_dir() {
  if (const char* e = std::getenv("LEAKLINT_CACHE_DIR"); e && *e) return std::string(e) + "/pch-v1";
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::string(h) + "/.cache";
  else return "";
  return base + "/leaklint/pch-v1";
}

namespace {

std::string hex(llvm::ArrayRef<uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }

 private:
  int fd_ = -1;
};

}  // namespace

PchOutcome PchCache::get(const PchRequest& req, bool rebuild) {
  PchOutcome out;
  if (!enabled()) { out.status = "disabled"; return out; }
  if (!req.preamble.has_include || req.preamble.size == 0) { out.status = "none"; return out; }
  std::string main_dir = fs::path(req.main_file).parent_path().string();
  std::string_view pre = req.source.substr(0, req.preamble.size);

  // The command line without the input file, which is what the PCH depends on.
  std::vector<std::string> flags;
  for (size_t i = 0; i < req.args.size(); ++i)
    if (i != req.input) flags.push_back(req.args[i]);
  llvm::SHA256 h;
  auto feed = [&](std::string_view s) {
    h.update(llvm::StringRef(s.data(), s.size()));
    h.update(llvm::StringRef("\0", 1));
  };
  feed("leaklint-pch-v1");
  feed(clang::getClangFullVersion());
  for (const auto& f : flags) feed(f);
  // The working directory matters only when the command names relative paths.
  bool relative = false;
  for (size_t i = 1; i < flags.size(); ++i) {
    const std::string& a = flags[i];
    std::string value;
    for (const char* opt : {"-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-F", "--sysroot",
                            "-isysroot", "-resource-dir"}) {
      std::string o = opt;
      if (a == o && i + 1 < flags.size()) value = flags[i + 1];
      else if (a.size() > o.size() && a.compare(0, o.size(), o) == 0) value = a.substr(a[o.size()] == '=' ? o.size() + 1 : o.size());
    }
    if (!value.empty() && value[0] != '/') relative = true;
  }
  if (relative) feed(req.directory);
  feed(normalized_directives(pre));
  if (req.preamble.has_quoted_include) feed(main_dir);
  std::string key = hex(h.final()).substr(0, 40);

  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::string base = dir_ + "/" + key;
  std::string pch = base + ".pch", header = base + ".h";
  FileLock lock(base + ".lock");
  if (!rebuild && fs::exists(pch, ec) && fs::exists(header, ec)) {
    out.pch = pch;
    out.status = "hit";
    return out;
  }

  auto t0 = std::chrono::steady_clock::now();
  {
    std::string text = blank_comments(pre);
    std::ofstream hf(header, std::ios::binary | std::ios::trunc);
    hf.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  // Same flags, the preamble header as the input.
  std::vector<std::string> args;
  for (size_t i = 0; i < req.args.size(); ++i) {
    if (i == req.input) {
      if (req.preamble.has_quoted_include) {
        args.push_back("-iquote");
        args.push_back(main_dir);
      }
      args.push_back("-x");
      args.push_back("c++-header");
      args.push_back(header);
      continue;
    }
    args.push_back(req.args[i]);
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());

  std::string tmp = base + ".pch.tmp." + std::to_string(::getpid());
  bool ok = false;
  llvm::CrashRecoveryContext crc;
  bool ran = crc.RunSafely([&] {
    auto diag_opts = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
    auto engine = clang::CompilerInstance::createDiagnostics(diag_opts.get(), &out.diags, false);
    clang::CreateInvocationOptions cio;
    cio.Diags = engine;
    cio.RecoverOnError = true;
    std::shared_ptr<clang::CompilerInvocation> inv = clang::createInvocation(argv, cio);
    if (!inv) return;
    inv->getFrontendOpts().ProgramAction = clang::frontend::GeneratePCH;
    inv->getFrontendOpts().OutputFile = tmp;
    inv->getFrontendOpts().SkipFunctionBodies = true;  // declarations are all the analysis needs
    inv->getFrontendOpts().DisableFree = false;
    inv->getFileSystemOpts().WorkingDir = req.directory;
    inv->getDiagnosticOpts().ShowCarets = false;  // no "N errors generated." on stderr
    clang::CompilerInstance ci;
    ci.setInvocation(inv);
    ci.createDiagnostics(&out.diags, false);
    clang::GeneratePCHAction action;
    ok = ci.ExecuteAction(action) && out.diags.errors.empty();
  });
  out.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ran || !ok) {
    fs::remove(tmp, ec);
    out.status = "failed";
    // Errors are reported against the preamble header, whose bytes are the main file's.
    for (auto& e : out.diags.errors)
      if (e.file == header) {
        e.in_main = true;
        e.file = req.main_file;
      }
    return out;
  }
  fs::rename(tmp, pch, ec);
  if (ec) {
    fs::remove(tmp, ec);
    out.status = "failed";
    return out;
  }
  out.pch = pch;
  out.status = "built";
  return out;
}

}  // namespace ll::cpp
