#include "cli/cpp_driver.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <chrono>
#include <csignal>
#include <thread>

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ll {
namespace {

using json = nlohmann::json;

bool executable(const std::string& p) {
  struct stat st {};
  return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string p(buf, static_cast<size_t>(n));
  size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

Diagnostic make_diag(const std::string& path, std::string kind, std::string message, bool fatal = true) {
  Diagnostic d;
  d.path = path;
  d.kind = std::move(kind);
  d.message = std::move(message);
  d.fatal = fatal;
  return d;
}

Severity severity_of(const std::string& s) {
  if (s == "error") return Severity::Error;
  if (s == "note") return Severity::Note;
  return Severity::Warning;
}

Range range_of(const json& j) {
  Range r;
  r.line = j.value("line", 0u);
  r.col = j.value("col", 0u);
  r.end_line = j.value("end_line", r.line);
  r.end_col = j.value("end_col", r.col);
  r.begin = j.value("begin", 0u);
  r.end = j.value("end", r.begin);
  return r;
}

FileResult parse_file_result(const json& j, const std::string& path, FileSummary* impact) {
  FileResult r;
  r.path = path;
  if (impact) {
    impact->program = j.value("program", false);
    impact->gpu_evidence = j.value("gpu_evidence", false);
  }
  for (const json& fj : j.value("findings", json::array())) {
    Finding f;
    f.rule = fj.value("rule", "");
    f.severity = severity_of(fj.value("severity", "warning"));
    f.path = path;
    f.range = range_of(fj);
    f.message = fj.value("message", "");
    for (const json& nj : fj.value("notes", json::array())) f.notes.push_back({range_of(nj), nj.value("message", "")});
    for (const json& xj : fj.value("fixes", json::array())) {
      Fix fix;
      fix.title = xj.value("title", "");
      fix.safe = xj.value("safe", false);
      for (const json& ej : xj.value("edits", json::array()))
        fix.edits.push_back({ej.value("begin", 0u), ej.value("end", 0u), ej.value("text", "")});
      f.fixes.push_back(std::move(fix));
    }
    f.low_confidence = fj.value("low_confidence", false);
    f.memory_claim = fj.value("memory_claim", false);
    f.suppressed = fj.value("suppressed", false);
    f.suppression = fj.value("suppression", "");
    r.findings.push_back(std::move(f));
  }
  for (const json& dj : j.value("diagnostics", json::array())) {
    Diagnostic d;
    d.path = path;
    d.kind = dj.value("kind", "internal");
    d.message = dj.value("message", "");
    d.line = dj.value("line", 0u);
    d.col = dj.value("col", 0u);
    d.fatal = dj.value("fatal", false);
    r.diagnostics.push_back(std::move(d));
  }
  return r;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Child {
  pid_t pid = -1;
  int out = -1;
  std::vector<size_t> files;  // indices into the input
  std::string buf;
  std::chrono::steady_clock::time_point deadline;
  bool timed_out = false;
};

// leaklint-cpp's status when it reached its memory limit (frontend/cpp/main.cpp).
constexpr int kExitResourceLimit = 75;

bool spawn(const std::vector<std::string>& argv, Child& c, std::string* err) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    *err = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> av;
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  // The child ends with us (it sets PR_SET_PDEATHSIG and checks this pid).
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "LEAKLINT_CPP_PARENT=", 20) != 0) env_store.emplace_back(*e);
  env_store.push_back("LEAKLINT_CPP_PARENT=" + std::to_string(::getpid()));
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  // Its own process group: a timeout stops it and anything it started.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  int rc = ::posix_spawn(&c.pid, av[0], &fa, &attr, av.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    *err = std::string("cannot start ") + argv[0] + ": " + std::strerror(rc);
    return false;
  }
  c.out = fds[0];
  return true;
}

}  // namespace

std::string find_cpp_companion(const std::string& hint) {
  if (!hint.empty()) return executable(hint) ? hint : "";
  if (const char* e = std::getenv("LEAKLINT_CPP"); e && *e) return executable(e) ? std::string(e) : "";
  std::string dir = self_dir();
  if (!dir.empty()) {
    for (const char* rel : {"/leaklint-cpp", "/../libexec/leaklint/leaklint-cpp"})
      if (executable(dir + rel)) return dir + rel;
  }
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t i = 0;
    while (i <= p.size()) {
      size_t c = p.find(':', i);
      std::string d = p.substr(i, c == std::string::npos ? std::string::npos : c - i);
      // Absolute entries only: an empty or relative entry would run a leaklint-cpp from the
      // working directory, which may be the scanned tree.
      if (!d.empty() && d[0] == '/' && executable(d + "/leaklint-cpp")) return d + "/leaklint-cpp";
      if (c == std::string::npos) break;
      i = c + 1;
    }
  }
  return "";
}

std::vector<FileResult> analyze_cpp_files(const std::vector<std::string>& files, const std::string& build_dir,
                                          int jobs) {
  CppDriverOptions o;
  o.build_dir = build_dir;
  o.jobs = jobs;
  return analyze_cpp_files(files, o);
}

std::vector<FileResult> analyze_cpp_files(const std::vector<std::string>& files, const CppDriverOptions& opts,
                                          std::vector<FileSummary>* impact) {
  std::vector<FileResult> results(files.size());
  if (impact) impact->assign(files.size(), FileSummary{});
  for (size_t i = 0; i < files.size(); ++i) results[i].path = files[i];
  if (files.empty()) return results;
  std::string companion = find_cpp_companion(opts.companion);
  if (companion.empty()) {
    for (auto& r : results)
      r.diagnostics.push_back(make_diag(
          r.path, "unsupported",
          "C++ analysis needs leaklint-cpp, built with -DLEAKLINT_ENABLE_CPP=ON (not found next to leaklint, in "
          "$LEAKLINT_CPP or on PATH); not analysed",
          /*fatal=*/true));  // the run fails (exit 1): a hook or CI job must not pass unanalysed code
    return results;
  }
  std::vector<std::string> base{companion, "--no-source"};
  if (!opts.build_dir.empty()) { base.push_back("-p"); base.push_back(opts.build_dir); }
  if (!opts.config_file.empty()) { base.push_back("--config"); base.push_back(opts.config_file); }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
    return s;
  };
  if (!opts.select.empty()) base.push_back("--select=" + join(opts.select));
  if (!opts.ignore.empty()) base.push_back("--ignore=" + join(opts.ignore));
  for (const auto& a : opts.extra_args) base.push_back("--extra-arg=" + a);
  if (opts.no_cache) base.push_back("--no-cache");
  if (!opts.cache_dir.empty()) base.push_back("--cache-dir=" + opts.cache_dir);
  if (opts.max_file_size_kib) base.push_back("--max-file-size=" + std::to_string(opts.max_file_size_kib));
  // What a file may include is confined to the tree it was found in (and system headers).
  // A file named on the command line stands for its directory.
  std::vector<std::string> roots;
  for (const auto& r : opts.roots) {
    struct stat st {};
    std::string dir = r;
    if (::stat(r.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      size_t slash = r.find_last_of('/');
      dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : r.substr(0, slash));
    }
    if (std::find(roots.begin(), roots.end(), dir) == roots.end()) roots.push_back(dir);
  }
  for (const auto& r : roots) base.push_back("--root=" + r);
  if (opts.verbose) base.push_back("--verbose");

  int jobs = opts.jobs > 0 ? opts.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  size_t batch = std::max<size_t>(1, opts.batch);
  // Small inputs: spread them over the processes rather than filling one batch.
  batch = std::min(batch, std::max<size_t>(1, (files.size() + static_cast<size_t>(jobs) - 1) / static_cast<size_t>(jobs)));
  std::vector<std::vector<size_t>> queue;
  for (size_t i = 0; i < files.size(); i += batch) {
    std::vector<size_t> chunk;
    for (size_t k = i; k < std::min(files.size(), i + batch); ++k) chunk.push_back(k);
    queue.push_back(std::move(chunk));
  }
  std::reverse(queue.begin(), queue.end());

  // `--` keeps file names that start with '-' from being read as options.
  auto finish = [&](Child& c, int status) {
    std::string problem;
    if (c.timed_out)
      problem = "leaklint-cpp took longer than " + std::to_string(opts.timeout_s) +
                " s on this file and was stopped (pathological input?); not analysed";
    else if (WIFEXITED(status) && WEXITSTATUS(status) == kExitResourceLimit)
      problem = "resource-limit";
    else if (WIFSIGNALED(status)) problem = "leaklint-cpp was killed by signal " + std::to_string(WTERMSIG(status));
    else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      problem = "leaklint-cpp exited with status " + std::to_string(WEXITSTATUS(status));
    json j = json::parse(c.buf, nullptr, false);
    std::vector<bool> done(c.files.size(), false);
    if (!j.is_discarded() && j.is_array()) {
      for (size_t k = 0; k < j.size() && k < c.files.size(); ++k) {
        size_t idx = c.files[k];
        results[idx] = parse_file_result(j[k], files[idx], impact ? &(*impact)[idx] : nullptr);
        done[k] = true;
      }
    } else if (problem.empty()) {
      problem = "leaklint-cpp printed no valid JSON";
    }
    // A process that died takes only its own file down: the others of its batch run again,
    // each in a process of its own.
    for (size_t k = 0; k < c.files.size(); ++k) {
      if (done[k]) continue;
      if (c.files.size() > 1) queue.push_back({c.files[k]});
      else if (problem == "resource-limit")
        results[c.files[k]].diagnostics.push_back(make_diag(
            files[c.files[k]], "resource-limit",
            "leaklint-cpp reached its memory limit on this file (LEAKLINT_CPP_MEMORY_MB, default 4096 MiB) and was "
            "stopped (pathological input?); not analysed"));
      else results[c.files[k]].diagnostics.push_back(make_diag(files[c.files[k]], "internal", problem));
    }
  };

  std::vector<Child> running;
  auto start_next = [&]() {
    while (!queue.empty() && static_cast<int>(running.size()) < jobs) {
      Child c;
      c.files = std::move(queue.back());
      queue.pop_back();
      std::vector<std::string> argv = base;
      argv.push_back("--");
      for (size_t idx : c.files) argv.push_back(files[idx]);
      std::string err;
      if (!spawn(argv, c, &err)) {
        for (size_t idx : c.files) results[idx].diagnostics.push_back(make_diag(files[idx], "internal", err));
        continue;
      }
      c.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opts.timeout_s * c.files.size());
      running.push_back(std::move(c));
    }
  };
  start_next();
  while (!running.empty()) {
    std::vector<pollfd> pfds;
    for (const auto& c : running) pfds.push_back({c.out, POLLIN, 0});
    int n = ::poll(pfds.data(), pfds.size(), 1000);
    if (n < 0 && errno == EINTR) continue;
    auto now = std::chrono::steady_clock::now();
    for (auto& c : running)
      if (!c.timed_out && now > c.deadline) {  // its pipe closes when it dies: handled below
        c.timed_out = true;
        ::kill(-c.pid, SIGKILL);  // its process group (see spawn)
        ::kill(c.pid, SIGKILL);
      }
    for (size_t i = running.size(); i-- > 0;) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = ::read(running[i].out, buf, sizeof buf);
      if (got > 0) {
        running[i].buf.append(buf, static_cast<size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      ::close(running[i].out);
      int status = 0;
      while (::waitpid(running[i].pid, &status, 0) < 0 && errno == EINTR) {
      }
      finish(running[i], status);
      running.erase(running.begin() + static_cast<long>(i));
    }
    start_next();
  }
  for (size_t i = 0; i < files.size(); ++i) {
    // A file that leaklint-cpp refused to read (a symlink out of the tree) is not read here either.
    bool refused = false;
    for (const auto& d : results[i].diagnostics) refused |= d.kind == "outside-tree";
    if (!refused) results[i].source = read_file(files[i]);
  }
  return results;
}

}  // namespace ll
