// LL201 leaky: a training loop that never resets the gradients.
//
// backward() adds into .grad(); without a reset, every step() applies the sum of the
// gradients of all earlier batches. The gradient buffers themselves keep their size.
#include <torch/torch.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "../measure.hpp"

struct RegressorImpl : torch::nn::Module {
  explicit RegressorImpl(int64_t features = 16, int64_t hidden = 64)
      : net(register_module("net", torch::nn::Sequential(torch::nn::Linear(features, hidden), torch::nn::Tanh(),
                                                         torch::nn::Linear(hidden, 1)))) {}
  torch::Tensor forward(torch::Tensor x) { return net->forward(x).squeeze(1); }

  torch::nn::Sequential net;
};
TORCH_MODULE(Regressor);

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

std::pair<torch::Tensor, torch::Tensor> make_data(int64_t samples, int64_t features) {
  torch::Tensor x = torch::randn({samples, features});
  torch::Tensor w = torch::linspace(-1.0, 1.0, features);
  torch::Tensor y = torch::matmul(x, w) + 0.05 * torch::randn({samples});
  return {x, y};
}

Batches shuffled_batches(const torch::Tensor& x, const torch::Tensor& y, int64_t batch_size) {
  torch::Tensor order = torch::randperm(x.size(0));
  Batches out;
  for (int64_t start = 0; start < x.size(0); start += batch_size) {
    torch::Tensor index = order.narrow(0, start, std::min(batch_size, x.size(0) - start));
    out.emplace_back(x.index_select(0, index), y.index_select(0, index));
  }
  return out;
}

double full_loss(Regressor& model, const torch::Tensor& x, const torch::Tensor& y, torch::nn::MSELoss& criterion) {
  torch::NoGradGuard no_grad;
  return criterion(model->forward(x), y).item<double>();
}

void train(Regressor& model, const Batches& train_batches, torch::optim::SGD& optimizer, torch::nn::MSELoss& criterion,
           measure::Run& run, const std::pair<torch::Tensor, torch::Tensor>& data) {
  measure::GradProbe probe(model->parameters());
  model->train();
  int64_t step = 0;
  for (const auto& batch : train_batches) {
    int64_t grads_at_forward = probe.grads_alive_bytes();
    torch::Tensor loss = criterion(model->forward(batch.first), batch.second);
    probe.before();
    loss.backward();
    measure::GradProbe::Result grads = probe.after();
    optimizer.step();
    run.sample(step++, "main",
               {{"loss", full_loss(model, data.first, data.second, criterion)},
                {"batch_loss", loss.item<double>()},
                {"fresh_grad_norm", grads.fresh},
                {"applied_grad_norm", grads.applied},
                {"applied_over_fresh", grads.applied / std::max(grads.fresh, 1e-12)},
                {"batches_in_grad", grads.batches},
                {"grad_bytes", grads.grad_bytes},
                {"grads_at_forward_bytes", grads_at_forward},
                {"same_grad_buffers", grads.same_buffers}});
  }
}

void scenario(measure::Run& run) {
  Regressor model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.02));
  torch::nn::MSELoss criterion;
  std::pair<torch::Tensor, torch::Tensor> data = make_data(run.iters * 64, 16);
  Batches train_batches = shuffled_batches(data.first, data.second, 64);
  run.set("initial_loss", full_loss(model, data.first, data.second, criterion));
  run.set("param_bytes", measure::tensor_bytes(model->parameters()));
  train(model, train_batches, optimizer, criterion, run, data);
}

int main(int argc, char** argv) { return measure::main(argc, argv, "LL201", "leaky", 60, scenario); }
