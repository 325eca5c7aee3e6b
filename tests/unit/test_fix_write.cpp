// The --fix writer (LockedFile, write_atomic) and notebook write-back, on real files in a
// temporary directory: an edit made while a file is held is never overwritten, symlinks
// stay links, files outside the roots and read-only files are refused.
#include "cli/fix.hpp"
#include "cli/engine.hpp"
#include "cli/notebook.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ll {
namespace {

namespace fs = std::filesystem;

class FixWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "leaklint-fixwrite-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = fs::canonical(tmpl).string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(root_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }
  std::string put(const std::string& rel, const std::string& text) {
    fs::path p = fs::path(root_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  static std::string get(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::vector<std::string> temps() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root_))
      if (e.path().filename().string().rfind(".leaklint-fix-", 0) == 0) out.push_back(e.path().string());
    return out;
  }
  std::string root_;
};

TEST_F(FixWrite, ReplacesWhenUnchanged) {
  std::string p = put("a.py", "old\n");
  ::chmod(p.c_str(), 0751);
  LockedFile f;
  std::string err;
  ASSERT_TRUE(f.open(p, {root_}, false, &err)) << err;
  EXPECT_EQ(f.content(), "old\n");
  ASSERT_TRUE(f.replace("new\n", &err)) << err;
  ASSERT_TRUE(f.replace("newer\n", &err)) << err;  // a second round (C++ fixes)
  EXPECT_EQ(get(p), "newer\n");
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0751u);
  EXPECT_TRUE(temps().empty());
}

TEST_F(FixWrite, EditInPlaceWhileHeldIsNeverOverwritten) {
  std::string p = put("a.py", "old\n");
  LockedFile f;
  std::string err;
  ASSERT_TRUE(f.open(p, {root_}, false, &err)) << err;
  std::ofstream(p, std::ios::binary | std::ios::app) << "# saved by an editor\n";  // ignores flock
  EXPECT_FALSE(f.replace("fixed\n", &err));
  EXPECT_TRUE(f.changed());
  EXPECT_NE(err.find("changed while it was being fixed"), std::string::npos) << err;
  EXPECT_EQ(get(p), "old\n# saved by an editor\n");
  EXPECT_TRUE(temps().empty());
}

TEST_F(FixWrite, EditSavedByRenameWhileHeldIsNeverOverwritten) {
  std::string p = put("a.py", "old\n");
  LockedFile f;
  std::string err;
  ASSERT_TRUE(f.open(p, {root_}, false, &err)) << err;
  std::string tmp = put("a.py.swp", "old\n");  // same bytes, new inode
  ASSERT_EQ(::rename(tmp.c_str(), p.c_str()), 0);
  EXPECT_FALSE(f.replace("fixed\n", &err));
  EXPECT_TRUE(f.changed());
  EXPECT_EQ(get(p), "old\n");
}

TEST_F(FixWrite, HoldsTheLockOnEveryInodeItWrote) {
  std::string p = put("a.py", "old\n");
  std::string err;
  {
    LockedFile f;
    ASSERT_TRUE(f.open(p, {root_}, false, &err)) << err;
    ASSERT_TRUE(f.replace("new\n", &err)) << err;
    int fd = ::open(p.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0);  // the new file is locked until the cycle ends
    ::close(fd);
  }
  int fd = ::open(p.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  ::close(fd);
}

TEST_F(FixWrite, SymlinkIsWrittenThroughAndKept) {
  std::string target = put("sub/real.py", "old\n");
  std::string link = root_ + "/link.py";
  ASSERT_EQ(::symlink("sub/real.py", link.c_str()), 0);
  LockedFile f;
  std::string err;
  ASSERT_TRUE(f.open(link, {root_}, false, &err)) << err;
  EXPECT_EQ(f.real_path(), target);
  ASSERT_TRUE(f.replace("new\n", &err)) << err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(get(target), "new\n");
}

TEST_F(FixWrite, RefusesARealPathOutsideTheRoots) {
  std::string outside = put("outside/x.py", "old\n");
  fs::create_directories(root_ + "/tree");
  std::string link = root_ + "/tree/x.py";
  ASSERT_EQ(::symlink(outside.c_str(), link.c_str()), 0);
  LockedFile f;
  std::string err;
  EXPECT_FALSE(f.open(link, {root_ + "/tree"}, false, &err));
  EXPECT_NE(err.find("outside the paths being fixed"), std::string::npos) << err;
  // A root that is a prefix of the name but not a parent directory does not count.
  fs::create_directories(root_ + "/tr");
  EXPECT_FALSE(f.open(link, {root_ + "/tr"}, false, &err));
  EXPECT_EQ(get(outside), "old\n");
  // Named on the command line itself (the link's real path is a root): allowed.
  LockedFile g;
  EXPECT_TRUE(g.open(link, {link}, false, &err)) << err;
}

TEST_F(FixWrite, RefusesReadOnlyFilesUnlessAllowed) {
  std::string p = put("a.py", "old\n");
  ::chmod(p.c_str(), 0444);
  LockedFile f;
  std::string err;
  EXPECT_FALSE(f.open(p, {root_}, false, &err));  // also as root: leaklint's own check
  EXPECT_NE(err.find("read-only"), std::string::npos) << err;
  LockedFile g;
  ASSERT_TRUE(g.open(p, {root_}, true, &err)) << err;
  ASSERT_TRUE(g.replace("new\n", &err)) << err;
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
}

TEST_F(FixWrite, WriteAtomicNewFileFollowsUmaskAndKeepsSymlinks) {
  mode_t old = ::umask(027);
  std::string err;
  std::string p = root_ + "/base.json";
  ASSERT_TRUE(write_atomic(p, "{}\n", &err)) << err;
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  std::string link = root_ + "/link.json";
  ASSERT_EQ(::symlink("base.json", link.c_str()), 0);
  ASSERT_TRUE(write_atomic(link, "[]\n", &err)) << err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(get(p), "[]\n");
  EXPECT_TRUE(temps().empty());
}

TEST_F(FixWrite, StaleTempFilesAreRemovedOnlyWhenUnlocked) {
  std::string stale = put("d/.leaklint-fix-aaaaaa", "x");
  std::string live = put("d/.leaklint-fix-bbbbbb", "x");
  std::string mine = put("d/.leaklint-fix-notes", "x");
  int fd = ::open(live.c_str(), O_RDONLY);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  std::string err;
  ASSERT_TRUE(write_atomic(root_ + "/d/a.py", "x\n", &err)) << err;
  ::close(fd);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(mine));
}

// --- notebooks ---------------------------------------------------------------------------

std::string fix_notebook_text(const std::string& json, const std::string& from, const std::string& to) {
  std::string err;
  auto nb = load_notebook(json, &err);
  EXPECT_TRUE(nb) << err;
  if (!nb) return "";
  std::string py = nb->python;
  size_t at = py.find(from);
  EXPECT_NE(at, std::string::npos);
  py.replace(at, from.size(), to);
  auto out = apply_notebook_edits(json, *nb, py);
  EXPECT_TRUE(out);
  return out ? *out : "";
}

// A fix whose result no longer parses is rolled back: the file keeps its bytes and the run
// says so. The broken fix is made here, in the findings handed to the fixer (the product has
// no switch that corrupts fixes).
const char kWithoutCall[] =
    "import torch\n\n\ndef embed(encoder, batches):\n    out = []\n    for b in batches:\n"
    "        with torch.no_grad:\n            out.append(encoder(b))\n    return out\n";

FileResult with_broken_fixes(const std::string& path, const std::string& text) {
  FileResult r = analyze_text(path, text, Config{}, EngineOptions{});
  int fixes = 0;
  for (Finding& f : r.findings)
    for (Fix& fx : f.fixes)
      for (Edit& e : fx.edits) {
        e.text += "(:";
        ++fixes;
      }
  EXPECT_GT(fixes, 0) << "the sample has no fix to break";
  return r;
}

TEST_F(FixWrite, FixThatBreaksTheSyntaxIsRolledBack) {
  const std::string path = put("a.py", kWithoutCall);
  FileResult good = analyze_text(path, kWithoutCall, Config{}, EngineOptions{});
  FixOutcome control = fix_text(path, kWithoutCall, good, Config{}, EngineOptions{}, false);
  EXPECT_NE(control.fixed, control.original);  // the unbroken fix applies
  FixOutcome o = fix_text(path, kWithoutCall, with_broken_fixes(path, kWithoutCall), Config{}, EngineOptions{}, false);
  EXPECT_EQ(o.fixed, o.original);
  EXPECT_EQ(o.applied, 0);
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_NE(o.errors[0].find("rolled back"), std::string::npos) << o.errors[0];
}

TEST_F(FixWrite, FixFileWritesNothingWhenItsFixIsRolledBack) {
  const std::string path = put("a.py", kWithoutCall);
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  FileResult r = with_broken_fixes(path, kWithoutCall);
  FixRunOptions o;
  o.roots = {root_};
  std::ostringstream out, err;
  bool failed = false;
  EXPECT_EQ(fix_file(r, Config{}, EngineOptions{}, o, out, err, &failed), 0);
  EXPECT_NE(err.str().find("rolled back"), std::string::npos) << err.str();
  EXPECT_EQ(get(path), kWithoutCall);
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // not even replaced by the same bytes
}

TEST(NotebookWrite, EmptySourceLineIsKeptAndNotReadPast) {
  // A cell whose source array ends with "" (and one that is only ""): no line of its own.
  const std::string json =
      "{\"cells\": [{\"cell_type\": \"code\", \"source\": [\"x = 1\\n\", \"y = 2\\n\", \"\"]},\n"
      " {\"cell_type\": \"code\", \"source\": [\"\"]},\n"
      " {\"cell_type\": \"code\", \"source\": [\"z = 3\"]}]}\n";
  std::string err;
  auto nb = load_notebook(json, &err);
  ASSERT_TRUE(nb) << err;
  EXPECT_EQ(nb->python.find("z = 3"), nb->python.rfind("z = 3"));
  // Virtual lines map to the right cells: line 3 is the boundary, z = 3 is cell 3 line 1.
  size_t z_line = 1;
  for (size_t i = 0; i < nb->python.find("z = 3"); ++i) z_line += nb->python[i] == '\n';
  ASSERT_LE(z_line, nb->lines.size());
  EXPECT_EQ(nb->lines[z_line - 1].cell, 3);
  EXPECT_EQ(nb->lines[z_line - 1].line, 1u);
  std::string out = fix_notebook_text(json, "y = 2\n", "y = 2  # fixed\n");
  EXPECT_EQ(out, "{\"cells\": [{\"cell_type\": \"code\", \"source\": [\"x = 1\\n\", \"y = 2  # fixed\\n\", \"\"]},\n"
                 " {\"cell_type\": \"code\", \"source\": [\"\"]},\n"
                 " {\"cell_type\": \"code\", \"source\": [\"z = 3\"]}]}\n");
}

TEST(NotebookWrite, OnlyTheChangedCellsBytesChange) {
  const std::string json =
      "{\"metadata\":{\"b\":1,\"a\":\"\\u00e9\"},\"cells\":[{\"cell_type\":\"code\",\"source\":\"a = 1\\nb = 2\",\"outputs\":[]},"
      "{\"cell_type\":\"code\",\"source\":[\n   \"c = 3\\n\",\n   \"d = 4\"\n  ]}],\"nbformat\":4}";
  std::string out = fix_notebook_text(json, "d = 4\n", "d = 5\n");
  std::string want = json;
  want.replace(want.find("\"d = 4\""), 7, "\"d = 5\"");
  EXPECT_EQ(out, want);
  out = fix_notebook_text(json, "a = 1\n", "a = 1\nimport x\n");
  want = json;
  want.replace(want.find("a = 1\\nb = 2"), 12, "a = 1\\nimport x\\nb = 2");
  EXPECT_EQ(out, want);
  // A line added to a list source takes the list's own separator and indentation.
  out = fix_notebook_text(json, "c = 3\n", "c = 3\ne = 0\n");
  want = json;
  want.replace(want.find("\"c = 3\\n\",\n"), 11, "\"c = 3\\n\",\n   \"e = 0\\n\",\n");
  EXPECT_EQ(out, want);
}

}  // namespace
}  // namespace ll
