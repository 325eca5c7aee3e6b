// LL102 fixed: losses are accumulated as plain doubles.
//
// Phase "train": `running_loss += loss.item<double>()`.
// Phase "monitor": the loss over a data set is computed under `torch::NoGradGuard` and
// accumulated with `.item<double>()`.
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "../measure.hpp"

struct RegressorImpl : torch::nn::Module {
  explicit RegressorImpl(int64_t features = 64, int64_t hidden = 256)
      : net(register_module("net", torch::nn::Sequential(torch::nn::Linear(features, hidden), torch::nn::ReLU(),
                                                         torch::nn::Linear(hidden, hidden), torch::nn::ReLU(),
                                                         torch::nn::Linear(hidden, 1)))) {}
  torch::Tensor forward(torch::Tensor x) { return net->forward(x).squeeze(1); }

  torch::nn::Sequential net;
};
TORCH_MODULE(Regressor);

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

Batches make_batches(int64_t samples, int64_t batch_size, int64_t features, bool shuffle) {
  torch::Tensor x = torch::randn({samples, features});
  torch::Tensor y = x.narrow(1, 0, 4).sum(1) + 0.1 * torch::randn({samples});
  torch::Tensor order = shuffle ? torch::randperm(samples) : torch::arange(samples);
  Batches out;
  for (int64_t start = 0; start < samples; start += batch_size) {
    torch::Tensor index = order.narrow(0, start, std::min(batch_size, samples - start));
    out.emplace_back(x.index_select(0, index), y.index_select(0, index));
  }
  return out;
}

double train_epoch(Regressor& model, const Batches& train_batches, torch::optim::SGD& optimizer,
                          torch::nn::MSELoss& criterion, measure::Run& run) {
  model->train();
  double running_loss = 0.0;
  int64_t step = 0;
  for (const auto& batch : train_batches) {
    optimizer.zero_grad();
    torch::Tensor loss = criterion(model->forward(batch.first), batch.second);
    loss.backward();
    optimizer.step();
    running_loss += loss.item<double>();
    if (step % 50 == 0) run.sample(step, "train", {{"graph_nodes", 0}});
    ++step;
  }
  return running_loss;
}

double dataset_loss(Regressor& model, const Batches& batches, torch::nn::MSELoss& criterion,
                           measure::Run& run) {
  torch::NoGradGuard no_grad;
  double total = 0.0;
  int64_t step = 0;
  for (const auto& batch : batches) {
    total = total + criterion(model->forward(batch.first), batch.second).item<double>();
    run.sample(step++, "monitor", {{"graph_nodes", 0}});
  }
  return total;
}

void scenario(measure::Run& run) {
  Regressor model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  torch::nn::MSELoss criterion;
  Batches train_batches = make_batches(run.iters * 8, 8, 64, true);
  Batches monitor_batches = make_batches(16 * 512, 512, 64, false);
  run.meter.ignore(model->parameters());
  measure::SavedTensorMeter::Scope metered(run.meter);
  double running_loss = train_epoch(model, train_batches, optimizer, criterion, run);
  run.sample(run.iters, "train", {{"graph_nodes", 0}});
  double total = dataset_loss(model, monitor_batches, criterion, run);
  run.set("train_loss", running_loss / static_cast<double>(train_batches.size()));
  run.set("monitor_loss", total / static_cast<double>(monitor_batches.size()));
}

int main(int argc, char** argv) { return measure::main(argc, argv, "LL102", "fixed", 400, scenario); }
