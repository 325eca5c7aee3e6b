// LL501 fixed: worker processes are started as fresh programs (posix_spawn of this
// executable with --shard RANK), the C++ counterpart of the spawn start method.
//
// A spawned child initialises CUDA for itself.
// GPU-only: the leaky program needs CUDA to fail.
#include <torch/torch.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../measure.hpp"

extern char** environ;

// The worker program: `<this executable> --shard RANK` prints "rank value".
int score_shard(int rank) {
  torch::Tensor x = torch::full({1024}, static_cast<double>(rank), torch::kCUDA);
  std::printf("%d %f\n", rank, x.sum().item<double>());
  return 0;
}

// "rank value" lines written by the workers, sorted by rank.
std::vector<measure::Value> read_results(int fd) {
  std::string text;
  char buf[256];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  std::vector<std::pair<int, double>> pairs;
  int rank = 0;
  double value = 0.0;
  for (const char* p = text.c_str(); std::sscanf(p, "%d %lf", &rank, &value) == 2; p = std::strchr(p, '\n') + 1) {
    pairs.emplace_back(rank, value);
    if (!std::strchr(p, '\n')) break;
  }
  std::sort(pairs.begin(), pairs.end());
  std::vector<measure::Value> out;
  for (const auto& rv : pairs) out.emplace_back(std::vector<measure::Value>{rv.first, rv.second});
  return out;
}

// Python's convention: the exit status, or minus the signal that ended the process.
int exit_code(int status) { return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status); }

void scenario(measure::Run& run) {
  run.require_cuda("fork only fails after the parent has initialised CUDA");
  torch::Tensor weights = torch::randn({1024, 1024}).to(torch::kCUDA);
  run.set("parent_checksum", weights.sum().item<double>());
  int results[2];
  if (pipe(results) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, results[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, results[0]);
  std::vector<pid_t> workers;
  for (int rank = 0; rank < 2; ++rank) {
    std::string self = "/proc/self/exe", flag = "--shard", arg = std::to_string(rank);
    char* argv[] = {self.data(), flag.data(), arg.data(), nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, environ) != 0)
      throw std::runtime_error("posix_spawn failed");
    workers.push_back(pid);
  }
  posix_spawn_file_actions_destroy(&actions);
  close(results[1]);
  std::vector<measure::Value> exitcodes;
  for (pid_t pid : workers) {
    int status = 0;
    waitpid(pid, &status, 0);
    exitcodes.emplace_back(exit_code(status));
  }
  run.set("exitcodes", exitcodes);
  run.set("results", read_results(results[0]));
  close(results[0]);
  run.set("start_method", "spawn");
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--shard") return score_shard(std::stoi(argv[2]));
  return measure::main(argc, argv, "LL501", "fixed", 1, scenario);
}
