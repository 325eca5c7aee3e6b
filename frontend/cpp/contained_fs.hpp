// The file system Clang reads through: a scanned file may `#include`, `#embed`,
// `__has_include` or `-include` any path, and Clang's diagnostics about what it read may end
// up in a report. Paths whose real path (symlinks resolved) is outside the allowed roots, or
// inside a `.git` directory, do not exist for Clang.
#pragma once

#include <llvm/ADT/IntrusiveRefCntPtr.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <string>
#include <vector>

namespace ll::cpp {

// `roots`: real paths of directories whose contents may be read; `extra_files`: single
// files that may be read too (the PCH). Wraps the real file system.
llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> contained_fs(const std::vector<std::string>& roots,
                                                            const std::vector<std::string>& extra_files = {});

// True when `real` (a real path) is one of `roots` or below one, and not inside a `.git`.
bool contained_path(const std::string& real, const std::vector<std::string>& roots);

}  // namespace ll::cpp
