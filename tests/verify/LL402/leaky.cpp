// LL402 leaky: 10 DataLoader workers with 40 jobs in flight (`max_jobs`, LibTorch's
// prefetch depth; its default is 2 x workers).
//
// LibTorch's workers are threads of the training process; up to `max_jobs` finished
// batches wait in its memory for the training loop. All of it is *host* RAM.
#include <torch/torch.h>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "../measure.hpp"

constexpr int64_t kFeatures = 4096;
constexpr int64_t kBatch = 128;

// Decodes sample `index` on the fly (no per-sample state kept).
class SyntheticImages : public torch::data::datasets::Dataset<SyntheticImages> {
 public:
  explicit SyntheticImages(int64_t samples) : samples_(samples) {}
  torch::data::Example<> get(size_t index) override {
    return {torch::full({kFeatures}, static_cast<double>(index % 255)), torch::tensor(static_cast<int64_t>(index % 10))};
  }
  torch::optional<size_t> size() const override { return static_cast<size_t>(samples_); }

 private:
  int64_t samples_;
};

int64_t threads_of_this_process() {
  int64_t count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir))
      if (entry->d_name[0] != '.') ++count;
    closedir(dir);
  }
  return count;
}

// Host memory of this process: anonymous PSS (the workers are threads: no other process).
int64_t host_total() { return measure::smaps_rollup()["Pss_Anon"]; }

void scenario(measure::Run& run) {
  auto dataset = SyntheticImages(run.iters * kBatch).map(torch::data::transforms::Stack<>());
  int64_t shmem_base = measure::meminfo()["Shmem"];
  int64_t base = host_total();
  int64_t threads_base = threads_of_this_process();
  auto train_loader = torch::data::make_data_loader(
      std::move(dataset), torch::data::DataLoaderOptions().batch_size(kBatch).workers(10).max_jobs(40));
  int64_t step = 0;
  for (auto& batch : *train_loader) {
    torch::Tensor x = batch.data.to(run.device);
    torch::Tensor y = batch.target.to(run.device);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // stands in for the training step
    if (step % 4 == 0) {
      int64_t shmem = std::max<int64_t>(0, measure::meminfo()["Shmem"] - shmem_base);
      run.sample(step, "main",
                 {{"host_mib", (host_total() + shmem - base) / measure::MiB},
                  {"shmem_mib", shmem / measure::MiB},
                  {"workers_private_dirty_mib", 0.0},
                  {"workers", threads_of_this_process() - threads_base}});
    }
    ++step;
  }
  run.set("batch_mib", kBatch * kFeatures * 4 / measure::MiB);
  run.set("num_workers", 10);
  run.set("prefetch_factor", 4);
  run.set("inflight_mib", 40 * kBatch * kFeatures * 4 / measure::MiB);
}

int main(int argc, char** argv) { return measure::main(argc, argv, "LL402", "leaky", 56, scenario); }
