#include "cli/crash_guard.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ll {
namespace {

std::set<std::string> g_crashed;
int g_report_fd = -1;  // the child's end of the pipe to the parent
volatile pid_t g_child = 0;
thread_local std::string t_marker;  // the file being analysed, NUL-terminated ("" none)
std::atomic_flag g_reporting = ATOMIC_FLAG_INIT;

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_previous[32];

// Async-signal-safe: names the file (NUL-terminated: a path may hold a newline), then lets
// the signal take its previous course (the default, or a sanitizer's report).
// The first thread to crash reports; one more crashing at the same time waits for the
// process to end, so that each attempt names exactly one file, in one write.
void on_fatal_signal(int sig) {
  if (g_reporting.test_and_set()) {
    for (;;) ::pause();
  }
  if (g_report_fd >= 0 && !t_marker.empty()) {
    ssize_t ignored = ::write(g_report_fd, t_marker.data(), t_marker.size());
    (void)ignored;
  }
  if (sig > 0 && sig < 32) ::sigaction(sig, &g_previous[sig], nullptr);
  ::raise(sig);
}

void forward_to_child(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

struct AltStack {
  std::unique_ptr<char[]> mem;
  AltStack() {
    const size_t size = 1 << 16;
    mem.reset(new char[size]);
    stack_t ss{};
    ss.ss_sp = mem.get();
    ss.ss_size = size;
    ::sigaltstack(&ss, nullptr);
  }
  ~AltStack() {
    stack_t ss{};
    ss.ss_flags = SS_DISABLE;
    ::sigaltstack(&ss, nullptr);
  }
};

}  // namespace

const std::set<std::string>& crashed_files() { return g_crashed; }

void analysing(const std::string* path) {
  if (g_report_fd < 0) return;
  t_marker.clear();
  if (path) {
    t_marker = *path;
    t_marker.push_back('\0');
  }
}

void prepare_thread_for_crash_report() {
  if (g_report_fd < 0) return;
  thread_local AltStack stack;
  (void)stack;
}

void maybe_injected_crash(const std::string& path) {
  static const char* needle = std::getenv("LEAKLINT_TEST_CRASH_ON");
  if (needle && *needle && path.find(needle) != std::string::npos) ::raise(SIGSEGV);
}

std::optional<int> run_guarded() {
  if (const char* off = std::getenv("LEAKLINT_NO_CRASH_GUARD"); off && std::strcmp(off, "1") == 0) return std::nullopt;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  for (int attempt = 0; attempt < 64; ++attempt) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return attempt == 0 ? std::nullopt : std::optional<int>(70);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      if (attempt == 0) return std::nullopt;  // no fork: analyse in this process, unguarded
      std::cerr << "leaklint: internal error: cannot start the analysis again\n";
      return 70;
    }
    if (pid == 0) {
      // The analysis never outlives the process the caller started (kill -9 of it cannot be
      // forwarded): it dies with it, and its leaklint-cpp children with it in turn.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(70);
      ::close(fds[0]);
      g_report_fd = fds[1];
      struct sigaction sa {};
      sa.sa_handler = on_fatal_signal;
      sa.sa_flags = SA_ONSTACK;
      sigemptyset(&sa.sa_mask);
      for (int sig : kFatalSignals) ::sigaction(sig, &sa, &g_previous[sig]);
      prepare_thread_for_crash_report();
      return std::nullopt;
    }
    ::close(fds[1]);
    g_child = pid;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction fwd {};
      fwd.sa_handler = forward_to_child;
      sigemptyset(&fwd.sa_mask);
      ::sigaction(sig, &fwd, nullptr);
    }
    std::string named;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n > 0) named.append(buf, static_cast<size_t>(n));
      else if (n == 0 || errno != EINTR) break;
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
    bool news = false;
    for (size_t at = 0; at < named.size();) {
      size_t end = named.find('\0', at);
      if (end == std::string::npos) end = named.size();
      if (end > at) news = g_crashed.insert(named.substr(at, end - at)).second || news;
      at = end + 1;
    }
    if (news) continue;  // again, without the files named
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM ||
                                WTERMSIG(status) == SIGHUP)) {
      // Stopped from outside: stop the same way.
      ::signal(WTERMSIG(status), SIG_DFL);
      ::raise(WTERMSIG(status));
    }
    if (WIFSIGNALED(status)) {
      std::cerr << "leaklint: internal error: the analysis was stopped by signal " << WTERMSIG(status) << "\n";
      return 128 + WTERMSIG(status);
    }
    return 70;
  }
  std::cerr << "leaklint: internal error: too many files crashed the analysis\n";
  return 70;
}

}  // namespace ll
