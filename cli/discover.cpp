// File discovery: an iterative directory walk with .gitignore semantics and symlink-loop
// detection. Every filesystem call uses the error_code overloads; nothing throws. Links
// whose real path leaves the root they were found under are not followed (unless asked),
// and FIFOs, devices and sockets are reported, never opened.
#include "cli/discover.hpp"
#include "cli/notebook.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

#include "rules/glob.hpp"

namespace ll {

namespace fs = std::filesystem;

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool has_extension(std::string_view path, std::initializer_list<std::string_view> exts) {
  const std::size_t slash = path.find_last_of('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return std::any_of(exts.begin(), exts.end(), [&](std::string_view e) {
    return name.size() > e.size() && ends_with(name, e);
  });
}

// Directories never worth descending into (version control, virtualenvs, caches, builds,
// Jupyter's autosave copies of notebooks, which would repeat every finding of the notebook,
// and the `__MACOSX` folder of a zip made on a Mac, which holds only AppleDouble metadata).
bool is_skipped_dir_name(std::string_view name) {
  static constexpr std::string_view kSkipped[] = {
      ".git",     ".hg",         "venv",     ".venv",      "build",       "node_modules",
      ".svn",     "__pycache__", ".tox",     ".nox",       ".mypy_cache", ".pytest_cache",
      ".ruff_cache", "site-packages", ".eggs", ".direnv", ".ipynb_checkpoints", "__MACOSX",
  };
  return std::find(std::begin(kSkipped), std::end(kSkipped), name) != std::end(kSkipped);
}

bool exists_no_throw(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

bool is_dir_no_throw(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir == ".") return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// The path the way the user would write it: "./a//b/" -> "a/b", "." stays ".".
std::string display_form(const std::string& p) {
  std::string s = fs::path(p).lexically_normal().generic_string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  if (s.empty()) s = ".";
  return s;
}

// The real path (symlinks resolved), "" when it cannot be resolved.
std::string real_form(const std::string& p) {
  std::error_code ec;
  fs::path real = fs::canonical(fs::path(p), ec);
  if (ec) return "";
  return real.generic_string();
}

// Is `path` (a real path) `root` or below it?
bool is_within(const std::string& path, const std::string& root) {
  if (root.empty() || path.empty()) return false;
  if (root == "/") return path[0] == '/';
  return path.size() >= root.size() && path.compare(0, root.size(), root) == 0 &&
         (path.size() == root.size() || path[root.size()] == '/');
}

std::string absolute_form(const std::string& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(fs::path(p), ec);
  if (ec) abs = fs::path(p);
  std::string s = abs.lexically_normal().generic_string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// ---- .gitignore ------------------------------------------------------------------------

struct IgnoreRule {
  Glob glob;
  bool negate = false;
  bool dir_only = false;
  bool anchored = false;  // matched against the path relative to the file's directory
};

struct IgnoreFile {
  int parent = -1;        // the next less specific file, -1 at the end of the chain
  std::string base;       // absolute directory the patterns are relative to
  std::vector<IgnoreRule> rules;
};

std::vector<IgnoreRule> parse_gitignore(const std::string& text) {
  std::vector<IgnoreRule> rules;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    // Trailing spaces are dropped unless escaped with a backslash.
    while (!line.empty() && line.back() == ' ') {
      std::size_t backslashes = 0;
      for (std::size_t i = line.size() - 1; i > 0 && line[i - 1] == '\\'; --i) ++backslashes;
      if (backslashes % 2 == 1) break;
      line.pop_back();
    }
    IgnoreRule r{Glob(""), false, false, false};
    std::string_view pat = line;
    if (!pat.empty() && pat[0] == '!') {
      r.negate = true;
      pat.remove_prefix(1);
    }
    if (!pat.empty() && pat.back() == '/') {
      r.dir_only = true;
      pat.remove_suffix(1);
    }
    if (pat.empty()) continue;
    r.anchored = pat.find('/') != std::string_view::npos;
    if (pat[0] == '/') pat.remove_prefix(1);
    if (pat.empty()) continue;
    r.glob = Glob(pat);
    rules.push_back(std::move(r));
  }
  return rules;
}

struct DirNode {
  dev_t dev = 0;
  ino_t ino = 0;
  int parent = -1;
  std::string display;
};

struct WorkItem {
  std::string display;  // as the user would write it
  std::string abs;      // absolute, normalised (through symlinks, not resolved)
  int ignore = -1;      // innermost .gitignore in effect
  int parent = -1;      // DirNode of the directory containing this one; -1 for a root
  bool root = false;    // named on the command line
  int tree = -1;        // index of the root this item was found under
};

class Walker {
 public:
  Walker(DiscoveredFiles& out, const DiscoverOptions& opts) : out_(out), opts_(opts) {}

  void add_root(const std::string& display) {
    WorkItem item;
    item.display = display;
    item.abs = absolute_form(display);
    item.ignore = chain_above(item.abs);
    item.root = true;
    item.tree = static_cast<int>(root_real_.size());
    root_real_.push_back(real_form(display));
    roots_.push_back(std::move(item));
  }

  void run() {
    // Roots first (in order), then every real directory; symlinked directories last, so a
    // tree reachable both directly and through a link is listed under its real path.
    std::vector<WorkItem> stack(roots_.rbegin(), roots_.rend());
    std::vector<WorkItem> deferred;
    while (!stack.empty() || !deferred.empty()) {
      if (stack.empty()) {
        stack.assign(std::make_move_iterator(deferred.rbegin()),
                     std::make_move_iterator(deferred.rend()));
        deferred.clear();
      }
      WorkItem item = std::move(stack.back());
      stack.pop_back();
      visit(item, stack, deferred);
    }
  }

 private:
  void diag(const std::string& path, std::string message, bool fatal) {
    Diagnostic d;
    d.path = path;
    d.kind = "io-error";
    d.message = std::move(message);
    d.fatal = fatal;
    out_.diagnostics.push_back(std::move(d));
  }

  // Adds the ignore file at `file` (patterns relative to `base`) on top of `parent`.
  int load_ignore_file(const fs::path& file, const std::string& base, int parent) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return parent;
    std::ifstream in(file, std::ios::binary);
    if (!in) return parent;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<IgnoreRule> rules = parse_gitignore(text);
    if (rules.empty()) return parent;
    ignores_.push_back(IgnoreFile{parent, base, std::move(rules)});
    return static_cast<int>(ignores_.size()) - 1;
  }

  // A repository starts here: its .git/info/exclude (lowest precedence).
  int start_repository(const std::string& dir) {
    const fs::path git = fs::path(dir) / ".git";
    if (!is_dir_no_throw(git)) return -1;
    return load_ignore_file(git / "info" / "exclude", dir, -1);
  }

  // The ignore chain in effect inside `abs` from the repository root down to its parent
  // directory (abs's own .gitignore is read when it is visited).
  int chain_above(const std::string& abs) {
    std::vector<std::string> dirs;  // abs's ancestors, nearest first
    fs::path d(abs);
    std::string repo;
    while (true) {
      if (exists_no_throw(d / ".git")) {
        repo = d.generic_string();
        break;
      }
      const fs::path parent = d.parent_path();
      if (parent.empty() || parent == d) break;
      d = parent;
      dirs.push_back(d.generic_string());
    }
    if (repo.empty()) return -1;  // outside a repository: only the walked tree's files
    int chain = start_repository(repo);
    if (repo == abs) return chain;
    // From the repository root down to abs's parent.
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
      chain = load_ignore_file(fs::path(*it) / ".gitignore", *it, chain);
    }
    return chain;
  }

  bool is_ignored(const std::string& abs, std::string_view name, bool is_dir, int chain) const {
    for (int f = chain; f >= 0; f = ignores_[static_cast<std::size_t>(f)].parent) {
      const IgnoreFile& file = ignores_[static_cast<std::size_t>(f)];
      std::string_view rel;
      if (file.base == "/") {
        rel = std::string_view(abs).substr(1);
      } else if (abs.size() > file.base.size() && abs.compare(0, file.base.size(), file.base) == 0 &&
                 abs[file.base.size()] == '/') {
        rel = std::string_view(abs).substr(file.base.size() + 1);
      } else {
        continue;
      }
      for (auto r = file.rules.rbegin(); r != file.rules.rend(); ++r) {
        if (r->dir_only && !is_dir) continue;
        if (r->glob.match(r->anchored ? rel : name)) return !r->negate;
      }
    }
    return false;
  }

  void visit(const WorkItem& item, std::vector<WorkItem>& stack, std::vector<WorkItem>& deferred) {
    struct stat st {};
    if (::stat(item.abs.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ELOOP) {
        diag(item.display, "symbolic link loop (too many levels of symbolic links); not followed",
             false);
      } else {
        diag(item.display, std::string("cannot access directory: ") + std::strerror(err), true);
      }
      return;
    }
    for (int a = item.parent; a >= 0; a = nodes_[static_cast<std::size_t>(a)].parent) {
      const DirNode& n = nodes_[static_cast<std::size_t>(a)];
      if (n.dev == st.st_dev && n.ino == st.st_ino) {
        diag(item.display,
             "symbolic link loop: points back to its ancestor directory `" + n.display +
                 "`; not followed",
             false);
        return;
      }
    }
    if (!visited_.insert({st.st_dev, st.st_ino}).second) return;  // reached another way
    nodes_.push_back(DirNode{st.st_dev, st.st_ino, item.parent, item.display});
    const int node = static_cast<int>(nodes_.size()) - 1;

    std::error_code ec;
    fs::directory_iterator it(fs::path(item.abs), ec);
    if (ec) {
      diag(item.display, "cannot read directory: " + ec.message(), true);
      return;
    }
    std::vector<fs::directory_entry> entries;
    bool has_git = false;
    bool has_gitignore = false;
    bool has_pyvenv = false;
    for (const fs::directory_iterator end; it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      has_git = has_git || name == ".git";
      has_gitignore = has_gitignore || name == ".gitignore";
      has_pyvenv = has_pyvenv || name == "pyvenv.cfg";
      entries.push_back(*it);
    }
    if (ec) diag(item.display, "cannot read directory: " + ec.message(), true);
    if (!item.root && has_pyvenv) return;  // a virtualenv

    int chain = item.ignore;
    if (!item.root && has_git) chain = start_repository(item.abs);  // nested: outer rules stop
    if (has_gitignore) chain = load_ignore_file(fs::path(item.abs) / ".gitignore", item.abs, chain);

    for (const fs::directory_entry& entry : entries) {
      const std::string name = entry.path().filename().string();
      std::error_code sec;
      const fs::file_status own = entry.symlink_status(sec);
      if (sec) continue;
      const bool is_link = fs::is_symlink(own);
      fs::file_status target = own;
      if (is_link) {
        target = entry.status(sec);
        if (sec) {
          if (sec == std::errc::too_many_symbolic_link_levels) {
            diag(join(item.display, name),
                 "symbolic link loop (too many levels of symbolic links); not followed", false);
          }
          else if ((is_python_path(name) || is_cpp_path(name) || is_notebook_path(name)) &&
                   !is_ignored(join(item.abs, name), name, false, chain)) {
            // A source file that cannot be read is worth saying, not skipping silently.
            diag(join(item.display, name), "dangling symbolic link: " + sec.message() + "; not analysed", true);
          }
          continue;
        }
      }
      const std::string abs = join(item.abs, name);
      const bool is_source = is_python_path(name) || is_cpp_path(name) || is_notebook_path(name);
      if (fs::is_directory(target)) {
        if ((opts_.default_excludes && is_skipped_dir_name(name)) || excluded(item, name)) continue;
        if (is_ignored(abs, name, true, chain)) {
          out_.skipped_ignored.push_back(join(item.display, name) + "/");
          continue;
        }
        if (is_link && !inside_tree(abs, item.tree)) {
          out_.skipped_links.push_back(join(item.display, name));
          continue;
        }
        WorkItem child{join(item.display, name), abs, chain, node, false, item.tree};
        (is_link ? deferred : stack).push_back(std::move(child));
      } else if (fs::is_regular_file(target)) {
        if (!is_source) continue;
        // `._model.py`: the AppleDouble file macOS writes beside `model.py` on a foreign file
        // system (resource fork and attributes, binary), never source.
        if (opts_.default_excludes && name.rfind("._", 0) == 0) continue;
        if (excluded(item, name)) continue;
        if (is_ignored(abs, name, false, chain)) {
          out_.skipped_ignored.push_back(join(item.display, name));
          continue;
        }
        if (is_link && !inside_tree(abs, item.tree)) {
          out_.skipped_links.push_back(join(item.display, name));
          continue;
        }
        out_.files.push_back(join(item.display, name));
      } else if (is_source && !is_ignored(abs, name, false, chain)) {
        // A FIFO, device or socket with a source name: opening it could block forever.
        if (is_link && !inside_tree(abs, item.tree)) {
          out_.skipped_links.push_back(join(item.display, name));
          continue;
        }
        struct stat fst {};
        const char* what = ::stat(abs.c_str(), &fst) == 0 ? special_file_kind(fst.st_mode) : "special file";
        diag(join(item.display, name), std::string("not a regular file (") + what + "); not analysed", true);
      }
    }
  }

  // --exclude / --extend-exclude: `name` inside the directory `item`.
  bool excluded(const WorkItem& item, const std::string& name) {
    if (opts_.exclude.empty()) return false;
    if (globs_.empty())
      for (const auto& p : opts_.exclude) globs_.emplace_back(p.find('/') != std::string::npos, Glob(p));
    std::string rel;
    if (item.tree >= 0) {
      const std::string& root = roots_[static_cast<std::size_t>(item.tree)].display;
      rel = item.display.size() > root.size() ? item.display.substr(root.size() + 1) : std::string();
    }
    rel = rel.empty() ? name : rel + "/" + name;
    while (rel.rfind("./", 0) == 0) rel.erase(0, 2);
    for (const auto& [with_slash, g] : globs_)
      if (g.match(with_slash ? rel : name)) return true;
    return false;
  }

  // Does the link at `abs` resolve to a path inside the root of tree `tree`?
  bool inside_tree(const std::string& abs, int tree) const {
    if (opts_.follow_external_symlinks || tree < 0) return true;
    return is_within(real_form(abs), root_real_[static_cast<std::size_t>(tree)]);
  }

  DiscoveredFiles& out_;
  const DiscoverOptions& opts_;
  std::vector<std::string> root_real_;  // real path of each root, by WorkItem::tree
  std::vector<WorkItem> roots_;
  std::vector<IgnoreFile> ignores_;
  std::vector<DirNode> nodes_;
  std::set<std::pair<dev_t, ino_t>> visited_;
  std::vector<std::pair<bool, Glob>> globs_;  // (has a `/`, pattern)
};

}  // namespace

bool is_python_path(const std::string& path) { return has_extension(path, {".py", ".pyi"}); }

bool is_cpp_path(const std::string& path) {
  return has_extension(path, {".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh", ".cu", ".cuh"});
}

bool is_cuda_path(const std::string& path) { return has_extension(path, {".cu", ".cuh"}); }

bool is_python_source(const std::string& path) {
  if (is_python_path(path)) return true;
  const std::string name = fs::path(path).filename().string();
  if (name.empty() || name.find('.') != std::string::npos) return false;  // has an extension
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  char buf[256];
  ssize_t n = 0;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n < 2 || buf[0] != '#' || buf[1] != '!') return false;
  const std::string_view first(buf, static_cast<std::size_t>(n));
  const std::string_view line = first.substr(0, first.find('\n'));
  return line.find("python") != std::string_view::npos;
}

const char* special_file_kind(unsigned mode) {
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISSOCK(mode)) return "socket";
  return "special file";
}

DiscoveredFiles discover(const std::vector<std::string>& paths, const DiscoverOptions& opts) {
  DiscoveredFiles out;
  Walker walker(out, opts);
  for (const std::string& p : paths) {
    if (p.empty()) continue;
    const std::string display = display_form(p);
    std::error_code ec;
    const fs::file_status st = fs::status(fs::path(p), ec);
    if (ec || !fs::exists(st)) {
      std::error_code lec;
      const fs::file_status own = fs::symlink_status(fs::path(p), lec);
      std::string why = "No such file or directory";
      if (fs::is_symlink(own)) {
        why = ec == std::errc::too_many_symbolic_link_levels
                  ? "symbolic link loop (too many levels of symbolic links)"
                  : "dangling symbolic link";
      } else if (ec && ec != std::errc::no_such_file_or_directory) {
        why = ec.message();
      }
      Diagnostic d;
      d.path = display;
      d.kind = "io-error";
      d.message = why;
      d.fatal = true;
      out.diagnostics.push_back(std::move(d));
      continue;
    }
    if (fs::is_directory(st)) {
      walker.add_root(display);
    } else if (fs::is_regular_file(st)) {
      out.files.push_back(display);  // named explicitly: always analysed
    } else {
      // A FIFO or device (`/dev/zero`) would block or never end: reported, never opened.
      struct stat fst {};
      const char* what = ::stat(p.c_str(), &fst) == 0 ? special_file_kind(fst.st_mode) : "special file";
      Diagnostic d;
      d.path = display;
      d.kind = "io-error";
      d.message = std::string("not a regular file (") + what + "); not analysed";
      d.fatal = true;
      out.diagnostics.push_back(std::move(d));
    }
  }
  walker.run();
  std::sort(out.files.begin(), out.files.end());
  std::sort(out.skipped_links.begin(), out.skipped_links.end());
  std::sort(out.skipped_ignored.begin(), out.skipped_ignored.end());
  out.files.erase(std::unique(out.files.begin(), out.files.end()), out.files.end());
  std::stable_sort(out.diagnostics.begin(), out.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.path < b.path; });
  return out;
}

}  // namespace ll
