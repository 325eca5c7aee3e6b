// LL105 fixed: the hook is removed in the same iteration.
//
// remove_hook(index) after the backward takes the hook off the weight, so every backward
// runs exactly one hook and nothing its closure captured outlives the iteration.
#include <torch/torch.h>

#include <memory>
#include <utility>
#include <vector>

#include "../measure.hpp"

namespace {
int64_t g_hooks_alive = 0;   // hooks whose closure still exists
int64_t g_kept_bytes = 0;    // bytes of the tensors their closures keep
int64_t g_calls = 0;         // hook calls during the current backward

// What a hook's closure captures; counts itself while any copy of the hook exists.
struct Captured {
  explicit Captured(torch::Tensor t) : stats(std::move(t)) {
    ++g_hooks_alive;
    g_kept_bytes += stats.numel() * static_cast<int64_t>(stats.element_size());
  }
  ~Captured() {
    --g_hooks_alive;
    g_kept_bytes -= stats.numel() * static_cast<int64_t>(stats.element_size());
  }
  torch::Tensor stats;
};
}  // namespace

void train(torch::nn::Linear& model, const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches,
           torch::optim::SGD& optimizer, measure::Run& run) {
  int64_t step = 0;
  for (const auto& batch : batches) {
    auto captured = std::make_shared<Captured>(torch::zeros({4096}));
    unsigned index = model->weight.register_hook([captured](torch::Tensor grad) {
      ++g_calls;
      captured->stats.narrow(0, 0, 1).add_(grad.detach().norm());
      return grad;
    });
    captured.reset();
    g_calls = 0;
    optimizer.zero_grad();
    torch::Tensor loss = torch::mse_loss(model->forward(batch.first), batch.second);
    loss.backward();
    model->weight.remove_hook(index);
    optimizer.step();
    run.sample(step++, "main",
               {{"hooks", g_hooks_alive}, {"hook_calls_per_forward", g_calls}, {"hook_retained_bytes", g_kept_bytes}});
  }
}

void scenario(measure::Run& run) {
  torch::nn::Linear model(32, 4);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
  for (int i = 0; i < run.iters; ++i) batches.emplace_back(torch::randn({32, 32}), torch::randn({32, 4}));
  train(model, batches, optimizer, run);
}

int main(int argc, char** argv) { return measure::main(argc, argv, "LL105", "fixed", 100, scenario); }
