// LL205 fixed: the model goes back to train mode after validation.
//
// model->train() right after validate() restores dropout and batch-norm's batch statistics
// for the next epoch.
#include <torch/torch.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "../measure.hpp"

struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
      : fc1(register_module("fc1", torch::nn::Linear(32, 64))),
        bn(register_module("bn", torch::nn::BatchNorm1d(64))),
        drop(register_module("drop", torch::nn::Dropout(0.5))),
        fc2(register_module("fc2", torch::nn::Linear(64, 4))) {}

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor h = torch::relu(bn->forward(fc1->forward(x)));
    torch::Tensor d = drop->forward(h);
    // Share of the units that reach dropout non-zero and leave it zeroed: about p in train mode.
    torch::Tensor nonzero = h.ne(0);
    dropped = nonzero.logical_and(d.eq(0)).sum().item<double>() / std::max(1.0, nonzero.sum().item<double>());
    return fc2->forward(d);
  }

  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Dropout drop;
  torch::nn::Linear fc2;
  double dropped = 0.0;
};
TORCH_MODULE(Classifier);

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

int64_t validate(Classifier& model, const Batches& val) {
  model->eval();
  torch::NoGradGuard no_grad;
  int64_t correct = 0;
  for (const auto& b : val) correct += model->forward(b.first).argmax(1).eq(b.second).sum().item<int64_t>();
  return correct;
}

void fit(Classifier& model, const Batches& train, const Batches& val, torch::optim::SGD& optimizer, int epochs,
         measure::Run& run) {
  int64_t step = 0;
  model->train();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (const auto& b : train) {
      torch::Tensor before = model->bn->running_mean.clone();
      torch::Tensor loss = torch::cross_entropy_loss(model->forward(b.first), b.second);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      run.sample(step++, "main",
                 {{"epoch", epoch},
                  {"training_flag", static_cast<int>(model->is_training())},
                  {"dropout_dropped_fraction", model->dropped},
                  {"bn_running_mean_change", (model->bn->running_mean - before).norm().item<double>()}});
    }
    validate(model, val);
    model->train();
  }
}

void scenario(measure::Run& run) {
  Classifier model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05));
  torch::Tensor x = torch::randn({320, 32});
  torch::Tensor y = torch::randint(0, 4, {320}, torch::kLong);
  Batches train, val;
  for (int64_t s = 0; s < 320; s += 32) train.emplace_back(x.narrow(0, s, 32), y.narrow(0, s, 32));
  for (int64_t s = 0; s < 64; s += 32) val.emplace_back(x.narrow(0, s, 32), y.narrow(0, s, 32));
  fit(model, train, val, optimizer, std::max(2, run.iters / 10), run);
}

int main(int argc, char** argv) { return measure::main(argc, argv, "LL205", "fixed", 40, scenario); }
