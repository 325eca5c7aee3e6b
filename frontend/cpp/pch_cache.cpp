#include "frontend/cpp/pch_cache.hpp"

#include <clang/Basic/DiagnosticParse.h>
#include <clang/Basic/DiagnosticSema.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Basic/Version.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/Utils.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/SHA256.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/file.h>

#include "frontend/cpp/compile_setup.hpp"
#include "frontend/cpp/contained_fs.hpp"
#include <sys/stat.h>
#include <unistd.h>

namespace ll::cpp {
namespace fs = std::filesystem;

bool mentions_torch(std::string_view s) {
  for (const char* w : {"torch", "ATen", "c10", "at::"})
    if (s.find(w) != std::string_view::npos) return true;
  return false;
}

namespace {

const char* kUmbrella =
    "// leaklint: LibTorch headers shared by every translation unit (see frontend/cpp/pch_cache.hpp)\n"
    "#if __has_include(<torch/torch.h>)\n"
    "#include <torch/torch.h>\n"
    "#if __has_include(<torch/script.h>)\n"
    "#include <torch/script.h>\n"
    "#endif\n"
    "#else\n"
    "#error leaklint-umbrella: <torch/torch.h> not found\n"
    "#endif\n";

// An include directory the LibTorch headers may need (LibTorch's own, CUDA's): decided by
// what it holds. A directory that exists but holds none of these cannot change what the
// umbrella includes, whatever its name: project folders are often called `pytorch-cpp`,
// `libtorch_examples`, `torch_project/include`, and keying on the name made every include
// directory of such a project build its own PCH (seen on pytorch-cpp: one 12 s build per
// tutorial). A directory that does not exist changes no header search, so it is left out too.
bool torch_include_dir(const std::string& dir) {
  std::error_code ec;
  for (const char* sub : {"/torch", "/ATen", "/c10", "/caffe2", "/cuda_runtime.h", "/cuda.h"})
    if (std::filesystem::exists(dir + sub, ec)) return true;
  return false;
}

// The flags the umbrella depends on: the file's, without project include directories and
// forced includes (which would make every directory of a project build its own PCH).
std::vector<std::string> umbrella_flags(const std::vector<std::string>& args, size_t input,
                                        const std::string& directory) {
  std::vector<std::string> out;
  static const char* path_opts[] = {"-I", "-iquote", "-isystem", "-idirafter", "--include-directory"};
  for (size_t i = 0; i < args.size(); ++i) {
    if (i == input) continue;
    const std::string& a = args[i];
    if (a == "-include" || a == "-imacros" || a == "--include") { ++i; continue; }
    if (a.rfind("-include", 0) == 0 && a != "-include-pch") continue;
    bool handled = false;
    for (const char* o : path_opts) {
      std::string opt = o;
      std::string dir;
      bool separate = false;
      if (a == opt) {
        if (i + 1 >= args.size()) break;
        dir = args[i + 1];
        separate = true;
      } else if (a.compare(0, opt.size(), opt) == 0) {
        dir = a.substr(opt.size());
      } else {
        continue;
      }
      handled = true;
      if (!dir.empty() && dir[0] == '=') dir = dir.substr(1);
      std::string abs = !dir.empty() && dir[0] != '/' ? directory + "/" + dir : dir;
      if (torch_include_dir(abs)) {
        out.push_back(opt);
        out.push_back(abs);
      }
      if (separate) ++i;
      break;
    }
    if (!handled) out.push_back(a);
  }
  return out;
}

}  // namespace

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
  switch (info.getID()) {
    case clang::diag::err_missing_dependent_template_keyword:
    case clang::diag::err_template_kw_missing:
    case clang::diag::err_typename_missing:
    case clang::diag::err_typename_missing_template:
      it.missing_keyword = true;
      break;
    default:
      break;
  }
  std::string real_file;  // the file itself, whatever `#line` says it is
  if (info.hasSourceManager() && info.getLocation().isValid()) {
    const clang::SourceManager& sm = info.getSourceManager();
    clang::SourceLocation loc = sm.getFileLoc(info.getLocation());
    real_file = sm.getFilename(loc).str();
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
  {
    missing_header = it.message.substr(1, it.message.find("' file not found") - 1);
    missing_header_in = real_file;
  }
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

void PchCache::evict() const {
  long max_mb = 2048;
  if (const char* e = std::getenv("LEAKLINT_CACHE_MAX_MB"); e && *e) max_mb = std::atol(e);
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> pchs;
  uintmax_t total = 0;
  for (const auto& ent : fs::directory_iterator(dir_, ec)) {
    if (ent.path().extension() != ".pch") continue;
    uintmax_t size = ent.file_size(ec);
    total += size;
    pchs.emplace_back(ent.last_write_time(ec), ent.path());
  }
  std::sort(pchs.begin(), pchs.end());
  for (const auto& [t, p] : pchs) {
    if (total <= static_cast<uintmax_t>(max_mb) << 20 || pchs.size() <= 1) break;
    uintmax_t size = fs::file_size(p, ec);
    fs::path base = p;
    base.replace_extension();
    fs::remove(p, ec);
    fs::remove(base.string() + ".h", ec);
    total -= std::min(total, size);
  }
}

PchOutcome PchCache::get(const PchRequest& req, bool rebuild) {
  PchOutcome out;
  if (!enabled()) { out.status = "disabled"; return out; }
  std::vector<std::string> flags = umbrella_flags(req.args, req.input, req.directory);
  llvm::SHA256 h;
  auto feed = [&](std::string_view s) {
    h.update(llvm::StringRef(s.data(), s.size()));
    h.update(llvm::StringRef("\0", 1));
  };
  feed("leaklint-pch-v3");
  feed(clang::getClangFullVersion());
  feed(kUmbrella);
  for (const auto& f : flags) feed(f);
  // The working directory matters only when the flags name relative paths.
  bool relative = false;
  for (size_t i = 1; i < flags.size(); ++i) {
    const std::string& a = flags[i];
    std::string value;
    for (const char* opt : {"-isysroot", "--sysroot", "-resource-dir"}) {
      std::string o = opt;
      if (a == o && i + 1 < flags.size()) value = flags[i + 1];
      else if (a.size() > o.size() && a.compare(0, o.size(), o) == 0) value = a.substr(a[o.size()] == '=' ? o.size() + 1 : o.size());
    }
    if (!value.empty() && value[0] != '/') relative = true;
  }
  if (relative) feed(req.directory);
  // Clang does not validate system headers against a PCH: a LibTorch upgrade under
  // -isystem must change the key. A few stats identify the installation.
  {
    std::vector<std::string> dirs{"/usr/include", "/usr/local/include"};
    for (size_t i = 0; i + 1 < flags.size(); ++i)
      if (flags[i] == "-I" || flags[i] == "-isystem" || flags[i] == "-idirafter" || flags[i] == "-iquote")
        dirs.push_back(flags[i + 1]);
    for (const auto& d : dirs)
      for (const char* f : {"torch/torch.h", "torch/version.h", "torch/script.h", "ATen/ATen.h", "ATen/Functions.h",
                            "c10/core/TensorImpl.h", "c10/macros/cmake_macros.h"}) {
        struct stat st {};
        std::string path = d + "/" + f;
        if (::stat(path.c_str(), &st) != 0) continue;
        feed(path);
        feed(std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime));
      }
  }
  std::string key = hex(h.final()).substr(0, 40);

  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (::access(dir_.c_str(), W_OK) != 0) {  // a read-only cache: parse without
    out.status = "disabled";
    return out;
  }
  std::string base = dir_ + "/" + key;
  std::string pch = base + ".pch", header = base + ".h", failed = base + ".failed";
  if (failed_keys_.count(key)) { out.status = "failed"; return out; }
  FileLock lock(base + ".lock");
  if (!rebuild && fs::exists(pch, ec) && fs::exists(header, ec)) {
    fs::last_write_time(pch, fs::file_time_type::clock::now(), ec);  // recently used
    out.pch = pch;
    out.status = "hit";
    return out;
  }
  // A build that failed in the last 10 minutes (in any process): do not repeat it per file.
  if (!rebuild && fs::exists(failed, ec)) {
    auto age = fs::file_time_type::clock::now() - fs::last_write_time(failed, ec);
    if (!ec && age < std::chrono::minutes(10)) {
      failed_keys_.insert(key);
      out.status = "failed";
      return out;
    }
  }

  auto t0 = std::chrono::steady_clock::now();
  {
    std::ofstream hf(header, std::ios::binary | std::ios::trunc);
    hf << kUmbrella;
  }
  std::vector<std::string> args = flags;
  args.push_back("-x");
  args.push_back("c++-header");
  args.push_back(header);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());

  std::string tmp = base + ".pch.tmp." + std::to_string(::getpid());
  bool ok = false;
  llvm::CrashRecoveryContext crc;
  bool ran = crc.RunSafelyOnThread([&] {
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
    if (!req.roots.empty()) {
      std::vector<std::string> roots = req.roots;
      roots.push_back(real_path(dir_).empty() ? dir_ : real_path(dir_));
      ci.createFileManager(contained_fs(roots));
    }
    clang::GeneratePCHAction action;
    ok = ci.ExecuteAction(action) && out.diags.errors.empty();
  }, 64u << 20);
  out.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ran || !ok) {
    fs::remove(tmp, ec);
    out.status = "failed";
    failed_keys_.insert(key);
    std::ofstream ff(failed, std::ios::trunc);
    ff << "failed\n";
    return out;
  }
  fs::remove(failed, ec);
  fs::rename(tmp, pch, ec);
  if (ec) {
    fs::remove(tmp, ec);
    out.status = "failed";
    return out;
  }
  out.pch = pch;
  out.status = "built";
  evict();
  return out;
}

}  // namespace ll::cpp
