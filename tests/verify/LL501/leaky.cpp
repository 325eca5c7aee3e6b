// LL501 leaky: forked worker processes use CUDA after the parent initialised it.
//
// A child made by fork() inherits the parent's CUDA state but cannot use it: its first CUDA
// call fails, and the exception it cannot handle ends the process (SIGABRT).
// GPU-only: a CPU build has no CUDA state to inherit.
#include <torch/torch.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../measure.hpp"

void score_shard(int rank, int result_fd) {
  torch::Tensor x = torch::full({1024}, static_cast<double>(rank), torch::kCUDA);
  std::string line = std::to_string(rank) + " " + std::to_string(x.sum().item<double>()) + "\n";
  if (write(result_fd, line.data(), line.size()) < 0) _exit(2);
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
  std::vector<pid_t> workers;
  for (int rank = 0; rank < 2; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      close(results[0]);
      score_shard(rank, results[1]);
      _exit(0);
    }
    workers.push_back(pid);
  }
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
  run.set("start_method", "fork");
}

int main(int argc, char** argv) { return measure::main(argc, argv, "LL501", "leaky", 1, scenario); }
