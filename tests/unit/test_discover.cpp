// File discovery: extensions, skipped directories, .gitignore semantics, symlinks.
#include "cli/discover.hpp"

#include <gtest/gtest.h>

#include <grp.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ll {
namespace {

namespace fs = std::filesystem;

// In a child process running as root: gives up reading past directory permissions. First
// the capabilities themselves (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH; allowed for any
// process, whatever uid 0 maps to), else becomes `nobody`. Returns false if neither worked.
bool drop_dac_override() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) == 0) {
    for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH}) {
      data[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
      data[CAP_TO_INDEX(cap)].permitted &= ~CAP_TO_MASK(cap);
    }
    if (::syscall(SYS_capset, &header, data) == 0) return true;
  }
  return ::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0;
}

class Discover : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "leaklint-discover-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = fs::path(tmpl);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(root_ / "locked", fs::perms::owner_all, ec);
    if (!old_cwd_.empty()) fs::current_path(old_cwd_, ec);
    fs::remove_all(root_, ec);
  }

  void touch(const std::string& rel, const std::string& text = "") const {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
  void mkdir(const std::string& rel) const { fs::create_directories(root_ / rel); }
  void symlink(const std::string& target, const std::string& rel) const {
    fs::create_directories((root_ / rel).parent_path());
    fs::create_symlink(target, root_ / rel);
  }
  void enter() {
    old_cwd_ = fs::current_path();
    fs::current_path(root_);
  }

  // Discovers `paths` (relative to the scratch root) from inside it.
  DiscoveredFiles run(const std::vector<std::string>& paths = {"."}) {
    enter();
    DiscoveredFiles d = discover(paths);
    fs::current_path(old_cwd_);
    old_cwd_.clear();
    return d;
  }

  static bool has(const DiscoveredFiles& d, const std::string& f) {
    return std::find(d.files.begin(), d.files.end(), f) != d.files.end();
  }

  fs::path root_;
  fs::path old_cwd_;
};

TEST(DiscoverPaths, Extensions) {
  for (const char* p : {"a.py", "dir/b.pyi", "x.cpp", "x.cc", "x.cxx", "x.h", "x.hpp", "x.hh", "k.cu"}) {
    EXPECT_TRUE(is_python_path(p) || is_cpp_path(p)) << p;
  }
  EXPECT_TRUE(is_python_path("a.py"));
  EXPECT_FALSE(is_cpp_path("a.py"));
  EXPECT_TRUE(is_cpp_path("k.cu"));
  for (const char* p : {"a.pyc", "README.md", "py", ".py", "dir.py/file", "a.c", "a.pyx"}) {
    EXPECT_FALSE(is_python_path(p) || is_cpp_path(p)) << p;
  }
}

TEST_F(Discover, FindsSourcesAndSkipsToolDirectories) {
  touch("a.py");
  touch("pkg/b.pyi");
  touch("pkg/ext/k.cu");
  touch("pkg/notes.txt");
  touch("pkg/c.pyc");
  for (const char* d : {".git", ".hg", ".svn", "venv", ".venv", "build", "node_modules",
                        "__pycache__", ".tox", ".mypy_cache", "lib/site-packages", "pkg/build",
                        "nb/.ipynb_checkpoints"}) {
    touch(std::string(d) + "/skip.py");
  }
  touch("myenv/pyvenv.cfg");
  touch("myenv/lib/skip.py");
  touch("builder/keep.py");  // only exact names are skipped
  const DiscoveredFiles d = run();
  EXPECT_EQ(d.files, (std::vector<std::string>{"a.py", "builder/keep.py", "pkg/b.pyi", "pkg/ext/k.cu"}));
  EXPECT_TRUE(d.diagnostics.empty());
}

TEST_F(Discover, PathsAsTheUserWroteThem) {
  touch("src/a.py");
  touch("src/sub/b.py");
  EXPECT_EQ(run({"./src/"}).files, (std::vector<std::string>{"src/a.py", "src/sub/b.py"}));
  EXPECT_EQ(run({"src//sub"}).files, std::vector<std::string>{"src/sub/b.py"});
  EXPECT_EQ(run({"./src/a.py"}).files, std::vector<std::string>{"src/a.py"});
  const DiscoveredFiles abs = discover({root_.string() + "/src/sub"});
  EXPECT_EQ(abs.files, std::vector<std::string>{(root_ / "src/sub/b.py").string()});
  // Overlapping arguments: sorted and unique.
  EXPECT_EQ(run({"src/sub/b.py", ".", "src"}).files,
            (std::vector<std::string>{"src/a.py", "src/sub/b.py"}));
}

TEST_F(Discover, ExplicitFilesAreAlwaysIncluded) {
  mkdir(".git");
  touch(".gitignore", "ignored.py\ngen/\n");
  touch("ignored.py");
  touch("gen/g.py");
  touch("build/b.py");
  touch("script");
  const DiscoveredFiles d = run({"ignored.py", "gen/g.py", "build/b.py", "script", "."});
  EXPECT_EQ(d.files, (std::vector<std::string>{"build/b.py", "gen/g.py", "ignored.py", "script"}));
  // A directory named explicitly is walked even if its name is on the skip list.
  EXPECT_EQ(run({"build"}).files, std::vector<std::string>{"build/b.py"});
}

TEST_F(Discover, WhatAGitignoreSkipsIsListedForVerbose) {
  // Committed sources under an ignored directory are skipped, as ruff does; --verbose names
  // them so that a user can tell (and name them on the command line).
  mkdir(".git");
  touch(".gitignore", "ignored.py\nthird_party/\n");
  touch("ignored.py");
  touch("third_party/kernels/k.cpp");
  touch("kept.py");
  touch("notes.txt");
  const DiscoveredFiles d = run({"."});
  EXPECT_EQ(d.files, std::vector<std::string>{"kept.py"});
  EXPECT_EQ(d.skipped_ignored, (std::vector<std::string>{"ignored.py", "third_party/"}));
}

TEST_F(Discover, MissingPathIsADiagnostic) {
  touch("a.py");
  const DiscoveredFiles d = run({"a.py", "nope.py", "nodir/"});
  EXPECT_EQ(d.files, std::vector<std::string>{"a.py"});
  ASSERT_EQ(d.diagnostics.size(), 2U);
  EXPECT_EQ(d.diagnostics[0].path, "nodir");
  EXPECT_EQ(d.diagnostics[0].kind, "io-error");
  EXPECT_TRUE(d.diagnostics[0].fatal);
  EXPECT_EQ(d.diagnostics[1].path, "nope.py");
}

TEST_F(Discover, GitignoreSemantics) {
  mkdir(".git/info");
  touch(".git/info/exclude", "excluded_by_info.py\n");
  touch(".gitignore",
        "# a comment\n"
        "\n"
        "*.gen.py\n"
        "!keep.gen.py\n"
        "/top_only.py\n"
        "logs/\n"
        "!logs/keep.py\n"
        "docs/**/*.py\n"
        "a/**/b.py\n"
        "data?.py\n"
        "[abc]x.py\n"
        "\\#hash.py\n"
        "\\!bang.py\n"
        "trailing.py   \n"
        "space\\ .py\n"
        "deep/*.py\n"
        "**/anywhere/*.py\n"
        "crlf.py\r\n");
  touch("sub/.gitignore", "!override.gen.py\nlocal.py\n/anchored_here.py\n");
  const char* ignored[] = {
      "x.gen.py", "top_only.py", "logs/a.py", "logs/keep.py", "sub/logs/c.py", "docs/x.py",
      "docs/a/b/c.py", "a/b.py", "a/x/y/b.py", "data1.py", "ax.py", "#hash.py", "!bang.py",
      "trailing.py", "space .py", "deep/d.py", "z/anywhere/w.py", "anywhere/w.py", "crlf.py",
      "sub/local.py", "sub/deeper/local.py", "sub/anchored_here.py", "excluded_by_info.py",
      "sub/y.gen.py",
  };
  const char* kept[] = {
      "keep.gen.py", "sub/top_only.py", "logs.py", "a/c.py", "data12.py", "dx.py", "hash.py",
      "space.py", "deep/more/d.py", "sub/override.gen.py", "local.py",
      "sub/deeper/anchored_here.py",
  };
  for (const char* f : ignored) touch(f);
  for (const char* f : kept) touch(f);
  const DiscoveredFiles d = run();
  for (const char* f : ignored) EXPECT_FALSE(has(d, f)) << f << " should be ignored";
  for (const char* f : kept) EXPECT_TRUE(has(d, f)) << f << " should be kept";
  EXPECT_EQ(d.files.size(), std::size(kept));
}

TEST_F(Discover, AncestorGitignoresApplyWhenWalkingASubdirectory) {
  mkdir(".git");
  touch(".gitignore", "*.gen.py\n/pkg/private/\n");
  touch("pkg/.gitignore", "skip.py\n");
  touch("pkg/sub/a.py");
  touch("pkg/sub/b.gen.py");
  touch("pkg/sub/skip.py");
  touch("pkg/private/p.py");
  EXPECT_EQ(run({"pkg/sub"}).files, std::vector<std::string>{"pkg/sub/a.py"});
  EXPECT_EQ(run({"pkg"}).files, std::vector<std::string>{"pkg/sub/a.py"});
}

TEST_F(Discover, GitignoreOutsideARepositoryStillApplies) {
  touch(".gitignore", "out/\n");
  touch("out/o.py");
  touch("in/i.py");
  EXPECT_EQ(run().files, std::vector<std::string>{"in/i.py"});
}

TEST_F(Discover, NestedRepositoryStartsFresh) {
  mkdir(".git");
  touch(".gitignore", "*.tmp.py\n");
  mkdir("vendor/lib/.git");
  touch("vendor/lib/.gitignore", "secret.py\n");
  touch("vendor/lib/x.tmp.py");
  touch("vendor/lib/secret.py");
  touch("y.tmp.py");
  EXPECT_EQ(run().files, std::vector<std::string>{"vendor/lib/x.tmp.py"});
}

TEST_F(Discover, SymlinkLoopsAreReportedNotFollowed) {
  touch("a/x.py");
  symlink("..", "a/up");       // back to the root
  symlink("self", "a/self");   // points at itself
  symlink("../a", "a/again");  // back to its own directory
  const DiscoveredFiles d = run();
  EXPECT_EQ(d.files, std::vector<std::string>{"a/x.py"});
  ASSERT_EQ(d.diagnostics.size(), 3U);
  for (const Diagnostic& diag : d.diagnostics) {
    EXPECT_EQ(diag.kind, "io-error");
    EXPECT_FALSE(diag.fatal);
    EXPECT_NE(diag.message.find("loop"), std::string::npos) << diag.message;
  }
  EXPECT_EQ(d.diagnostics[0].path, "a/again");
  EXPECT_EQ(d.diagnostics[1].path, "a/self");
  EXPECT_EQ(d.diagnostics[2].path, "a/up");
}

TEST_F(Discover, SymlinkedDirectoriesAreListedOnce) {
  touch("real/r.py");
  symlink("real", "alias");
  symlink("real/r.py", "link.py");
  symlink("missing", "dangling");
  symlink("missing.py", "dangling.py");
  const DiscoveredFiles d = run();
  EXPECT_EQ(d.files, (std::vector<std::string>{"link.py", "real/r.py"}));
  // A dangling link to a directory says nothing; a dangling source file is reported.
  ASSERT_EQ(d.diagnostics.size(), 1U);
  EXPECT_EQ(d.diagnostics[0].path, "dangling.py");
  // Named explicitly, a link to a directory is walked.
  EXPECT_EQ(run({"alias"}).files, std::vector<std::string>{"alias/r.py"});
}

TEST_F(Discover, ExternalSymlinkedTreeIsWalkedOnlyWhenAsked) {
  touch("outside/o.py");
  touch("proj/p.py");
  symlink("../outside", "proj/ext");
  // A scanned tree is untrusted: a link does not take discovery out of it ...
  const DiscoveredFiles d = run({"proj"});
  EXPECT_EQ(d.files, (std::vector<std::string>{"proj/p.py"}));
  EXPECT_TRUE(d.diagnostics.empty());
  EXPECT_EQ(d.skipped_links, (std::vector<std::string>{"proj/ext"}));
  // ... unless the user asks for it.
  DiscoverOptions follow;
  follow.follow_external_symlinks = true;
  enter();
  const DiscoveredFiles all = discover({"proj"}, follow);
  fs::current_path(old_cwd_);
  old_cwd_.clear();
  EXPECT_EQ(all.files, (std::vector<std::string>{"proj/ext/o.py", "proj/p.py"}));
  // Named on the command line, the link is a root: the user chose it.
  EXPECT_EQ(run({"proj/ext"}).files, (std::vector<std::string>{"proj/ext/o.py"}));
}

TEST_F(Discover, LinksToTheFilesystemRootAndOutsideFilesAreNotFollowed) {
  touch("proj/p.py");
  touch("secret.py", "SECRET = (\n");
  symlink("/", "proj/rootfs");
  symlink("../secret.py", "proj/leak.py");
  symlink("/etc/passwd", "proj/passwd.py");
  const DiscoveredFiles d = run({"proj"});
  EXPECT_EQ(d.files, (std::vector<std::string>{"proj/p.py"}));
  EXPECT_TRUE(d.diagnostics.empty());
  EXPECT_EQ(d.skipped_links, (std::vector<std::string>{"proj/leak.py", "proj/passwd.py", "proj/rootfs"}));
}

TEST_F(Discover, LinksInsideTheTreeKeepWorking) {
  touch("proj/pkg/a.py");
  symlink("pkg", "proj/alias");
  symlink("pkg/a.py", "proj/b.py");
  symlink("../pkg", "proj/sub/up");  // leaves proj/sub, stays in proj
  const DiscoveredFiles d = run({"proj"});
  EXPECT_EQ(d.files, (std::vector<std::string>{"proj/b.py", "proj/pkg/a.py"}));
  EXPECT_TRUE(d.skipped_links.empty());
  EXPECT_TRUE(d.diagnostics.empty());
}

TEST_F(Discover, FifosAndDevicesAreDiagnosticsNeverOpened) {
  touch("ok.py");
  ASSERT_EQ(::mkfifo((root_ / "pipe.py").c_str(), 0644), 0);
  ASSERT_EQ(::mkfifo((root_ / "other-pipe").c_str(), 0644), 0);  // not a source name: ignored
  // In the tree.
  DiscoveredFiles d = run();
  EXPECT_EQ(d.files, std::vector<std::string>{"ok.py"});
  ASSERT_EQ(d.diagnostics.size(), 1U);
  EXPECT_EQ(d.diagnostics[0].path, "pipe.py");
  EXPECT_TRUE(d.diagnostics[0].fatal);
  EXPECT_NE(d.diagnostics[0].message.find("FIFO"), std::string::npos);
  // On the command line (a FIFO and a character device).
  d = run({"pipe.py", "/dev/zero", "ok.py"});
  EXPECT_EQ(d.files, std::vector<std::string>{"ok.py"});
  ASSERT_EQ(d.diagnostics.size(), 2U);
  EXPECT_EQ(d.diagnostics[0].path, "/dev/zero");
  EXPECT_NE(d.diagnostics[0].message.find("character device"), std::string::npos);
  EXPECT_EQ(d.diagnostics[1].path, "pipe.py");
}

TEST_F(Discover, UnreadableDirectoryIsADiagnostic) {
  touch("locked/l.py");
  touch("open/o.py");
  fs::permissions(root_ / "locked", fs::perms::none);
  // Root reads any directory: run the discovery without that privilege, in a child. The
  // child enters the scratch tree (under the temporary directory) first and never goes
  // back to the working directory, so where the build tree lives (e.g. a clone under a
  // mode-0700 /root) does not matter; dropping the two capabilities that bypass directory
  // permissions works as uid 0 in any user namespace, and setuid(nobody) is the fallback.
  if (geteuid() == 0) {
    fs::permissions(root_, fs::perms::all);
    for (auto& p : fs::recursive_directory_iterator(root_, fs::directory_options::skip_permission_denied))
      if (p.path().filename() != "locked") fs::permissions(p.path(), fs::perms::all);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (::chdir(root_.c_str()) != 0) _exit(4);
      if (!drop_dac_override()) _exit(3);
      const DiscoveredFiles d = discover({"."});
      bool ok = d.files == std::vector<std::string>{"open/o.py"} && d.diagnostics.size() == 1 &&
                d.diagnostics[0].path == "locked" && d.diagnostics[0].kind == "io-error";
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << "exit 4: could not enter the scratch tree; 3: could not drop privileges; 1: wrong result";
    return;
  }
  const DiscoveredFiles d = run();
  EXPECT_EQ(d.files, std::vector<std::string>{"open/o.py"});
  ASSERT_EQ(d.diagnostics.size(), 1U);
  EXPECT_EQ(d.diagnostics[0].path, "locked");
  EXPECT_EQ(d.diagnostics[0].kind, "io-error");
}

TEST_F(Discover, DanglingSourceLinkIsADiagnostic) {
  touch("ok.py");
  fs::create_symlink(root_ / "missing.py", root_ / "gone.py");
  fs::create_symlink(root_ / "missing.txt", root_ / "gone.txt");
  const DiscoveredFiles d = run();
  EXPECT_EQ(d.files, std::vector<std::string>{"ok.py"});
  ASSERT_EQ(d.diagnostics.size(), 1U);
  EXPECT_EQ(d.diagnostics[0].path, "gone.py");
}

TEST_F(Discover, DeepTreesNeedNoRecursion) {
  std::string rel;
  for (int i = 0; i < 400; ++i) rel += "d/";
  touch(rel + "leaf.py");
  const DiscoveredFiles d = run();
  ASSERT_EQ(d.files.size(), 1U);
  EXPECT_EQ(d.files[0], rel + "leaf.py");
}

TEST(DiscoverKinds, SourceKindsByNameAndShebang) {
  EXPECT_TRUE(is_cpp_path("ops/kernels.cuh"));
  EXPECT_TRUE(is_cpp_path("ops/kernel.cu"));
  EXPECT_FALSE(is_cpp_path("notes.txt"));
  const fs::path dir = fs::temp_directory_path() / ("leaklint-shebang-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "evaluate") << "#!/usr/bin/env python3\nimport torch\n";
  std::ofstream(dir / "tool") << "#!/bin/sh\necho python\n";
  std::ofstream(dir / "run.sh") << "#!/usr/bin/env python3\n";  // an extension decides
  EXPECT_TRUE(is_python_source((dir / "evaluate").string()));
  EXPECT_FALSE(is_python_source((dir / "tool").string()));
  EXPECT_FALSE(is_python_source((dir / "run.sh").string()));
  EXPECT_TRUE(is_python_source("whatever.py"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace ll
