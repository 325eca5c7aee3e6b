// LL206 leaky: gradient accumulation from a loss that is not divided by the count.
//
// backward() runs on every micro-batch and step() every kAccum of them, so .grad() holds
// the sum of kAccum gradients. With SGD each update is kAccum times the update of one batch
// of the same kAccum * 16 samples. The same loop also runs with Adam, which divides by a
// running estimate of the gradient's scale.
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "../measure.hpp"

constexpr int64_t kAccum = 8;

double big_batch_update(torch::nn::Linear& model, const torch::Tensor& x, const torch::Tensor& y, double lr) {
  torch::Tensor loss = torch::mse_loss(model->forward(x).squeeze(1), y);
  std::vector<torch::Tensor> grads = torch::autograd::grad({loss}, model->parameters());
  double sq = 0.0;
  for (const auto& g : grads) sq += g.pow(2).sum().item<double>();
  return lr * std::sqrt(sq);
}

template <typename Optimizer>
void train(torch::nn::Linear& model, Optimizer& optimizer, const torch::Tensor& xs, const torch::Tensor& ys,
           measure::Run& run, const std::string& kind, double lr) {
  measure::ParamProbe probe(model->parameters());
  int64_t updates = 0;
  int64_t batches = xs.size(0) / 16;
  optimizer.zero_grad();
  for (int64_t i = 0; i < batches; ++i) {
    torch::Tensor x = xs.narrow(0, i * 16, 16);
    torch::Tensor y = ys.narrow(0, i * 16, 16);
    torch::Tensor loss = torch::mse_loss(model->forward(x).squeeze(1), y);
    loss.backward();
    if ((i + 1) % kAccum == 0) {
      int64_t start = (i + 1 - kAccum) * 16;
      double ref = big_batch_update(model, xs.narrow(0, start, kAccum * 16), ys.narrow(0, start, kAccum * 16), lr);
      optimizer.step();
      optimizer.zero_grad();
      run.sample(updates++, kind, {{"update_norm", probe.delta()}, {"big_batch_update_norm", ref}});
    }
  }
}

void scenario(measure::Run& run) {
  for (const std::string kind : {"sgd", "adam"}) {
    torch::manual_seed(0);
    torch::nn::Linear model(16, 1);
    int64_t n = run.iters * kAccum * 16;
    torch::Tensor x = torch::randn({n, 16});
    torch::Tensor y = torch::matmul(x, torch::linspace(-1.0, 1.0, 16)) + 0.1 * torch::randn({n});
    if (kind == "sgd") {
      torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05));
      train(model, optimizer, x, y, run, kind, 0.05);
    } else {
      torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
      train(model, optimizer, x, y, run, kind, 1e-3);
    }
  }
}

int main(int argc, char** argv) { return measure::main(argc, argv, "LL206", "leaky", 20, scenario); }
