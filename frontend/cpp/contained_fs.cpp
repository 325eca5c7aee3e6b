#include "frontend/cpp/contained_fs.hpp"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <mutex>

#include "frontend/cpp/compile_setup.hpp"

namespace ll::cpp {

bool contained_path(const std::string& real, const std::vector<std::string>& roots) {
  if (real.empty() || real[0] != '/') return false;
  if (real.find("/.git/") != std::string::npos ||
      (real.size() >= 5 && real.compare(real.size() - 5, 5, "/.git") == 0))
    return false;
  for (const auto& r : roots)
    if (path_within(real, r)) return true;
  return false;
}

namespace {

class ContainedFileSystem : public llvm::vfs::ProxyFileSystem {
 public:
  ContainedFileSystem(llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs, std::vector<std::string> roots,
                      std::vector<std::string> files)
      : ProxyFileSystem(std::move(fs)), roots_(std::move(roots)), files_(std::move(files)) {}

  llvm::ErrorOr<llvm::vfs::Status> status(const llvm::Twine& path) override {
    if (!allowed(path)) return std::make_error_code(std::errc::no_such_file_or_directory);
    return ProxyFileSystem::status(path);
  }
  bool exists(const llvm::Twine& path) override { return allowed(path) && ProxyFileSystem::exists(path); }
  llvm::ErrorOr<std::unique_ptr<llvm::vfs::File>> openFileForRead(const llvm::Twine& path) override {
    if (!allowed(path)) return std::make_error_code(std::errc::no_such_file_or_directory);
    return ProxyFileSystem::openFileForRead(path);
  }
  llvm::vfs::directory_iterator dir_begin(const llvm::Twine& dir, std::error_code& ec) override {
    if (!allowed(dir)) {
      ec = std::make_error_code(std::errc::no_such_file_or_directory);
      return {};
    }
    return ProxyFileSystem::dir_begin(dir, ec);
  }
  std::error_code getRealPath(const llvm::Twine& path, llvm::SmallVectorImpl<char>& out) override {
    if (!allowed(path)) return std::make_error_code(std::errc::no_such_file_or_directory);
    return ProxyFileSystem::getRealPath(path, out);
  }

 private:
  bool allowed(const llvm::Twine& path) {
    llvm::SmallString<256> p;
    path.toVector(p);
    if (!llvm::sys::path::is_absolute(p)) {
      auto cwd = getCurrentWorkingDirectory();
      if (!cwd) return false;
      llvm::SmallString<256> abs(*cwd);
      llvm::sys::path::append(abs, p);
      p = abs;
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(p);
    if (it != cache_.end()) return it->second;
    llvm::SmallString<256> real;
    bool ok = false;
    if (!llvm::sys::fs::real_path(p, real, /*expand_tilde=*/false)) {
      std::string r(real.str());
      ok = contained_path(r, roots_);
      for (const auto& f : files_) ok |= r == f;
    }
    cache_[p] = ok;
    return ok;
  }

  std::vector<std::string> roots_, files_;
  std::mutex mu_;
  llvm::StringMap<bool> cache_;
};

}  // namespace

llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> contained_fs(const std::vector<std::string>& roots,
                                                            const std::vector<std::string>& extra_files) {
  std::vector<std::string> files;
  for (const auto& f : extra_files) {
    std::string r = real_path(f);
    if (!r.empty()) files.push_back(r);
  }
  return llvm::makeIntrusiveRefCnt<ContainedFileSystem>(llvm::vfs::createPhysicalFileSystem(), roots, files);
}

}  // namespace ll::cpp
