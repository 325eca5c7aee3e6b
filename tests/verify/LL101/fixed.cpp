// LL101 fixed: the same evaluation loops under `torch::NoGradGuard`.
//
// No activations are recorded: an intermediate is freed as soon as the next layer has
// consumed it, and the kept softmax outputs are plain tensors.
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "../measure.hpp"

struct ClassifierImpl : torch::nn::Module {
  explicit ClassifierImpl(int64_t features = 64, int64_t hidden = 256, int depth = 3, int64_t classes = 10) {
    body->push_back(torch::nn::Linear(features, hidden));
    for (int i = 0; i < depth; ++i) {
      body->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
      body->push_back(torch::nn::GELU());
      body->push_back(torch::nn::Linear(hidden, hidden));
    }
    register_module("body", body);
    head = register_module("head", torch::nn::Linear(hidden, classes));
  }
  torch::Tensor forward(torch::Tensor x) { return head->forward(body->forward(x)); }

  torch::nn::Sequential body;
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Classifier);

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

Batches make_val_batches(int64_t batches, int64_t batch_size, int64_t features) {
  torch::Tensor x = torch::randn({batches * batch_size, features});
  torch::Tensor y = torch::randint(0, 10, {batches * batch_size});
  Batches out;
  for (int64_t i = 0; i < batches; ++i)
    out.emplace_back(x.narrow(0, i * batch_size, batch_size), y.narrow(0, i * batch_size, batch_size));
  return out;
}

int64_t evaluate(Classifier& model, const Batches& val_batches, measure::Run& run) {
  torch::NoGradGuard no_grad;
  model->eval();
  int64_t correct = 0;
  int64_t step = 0;
  for (const auto& batch : val_batches) {
    torch::Tensor logits = model->forward(batch.first);
    correct += logits.argmax(1).eq(batch.second).sum().item<int64_t>();
    run.sample(step++);
  }
  return correct;
}

torch::Tensor evaluate_keeping_outputs(Classifier& model, const Batches& val_batches, measure::Run& run) {
  torch::NoGradGuard no_grad;
  model->eval();
  std::vector<torch::Tensor> probabilities;
  int64_t step = 0;
  for (const auto& batch : val_batches) {
    torch::Tensor logits = model->forward(batch.first);
    probabilities.push_back(torch::softmax(logits, 1));
    run.sample(step++, "kept");
  }
  return torch::cat(probabilities);
}

void scenario(measure::Run& run) {
  Classifier model;
  Batches val_batches = make_val_batches(run.iters, 512, 64);
  run.meter.ignore(model->parameters());
  measure::SavedTensorMeter::Scope metered(run.meter);

  run.mem_reset_peak();
  run.meter.reset_peak();
  int64_t base = run.mem_now();
  int64_t correct = evaluate(model, val_batches, run);
  run.set("peak_above_start_mib", (run.mem_peak() - base) / measure::MiB);
  run.set("saved_peak_mib", run.meter.peak() / measure::MiB);
  run.set("accuracy", static_cast<double>(correct) / static_cast<double>(run.iters * 512));

  run.mem_reset_peak();
  run.meter.reset_peak();
  base = run.mem_now();
  torch::Tensor probabilities = evaluate_keeping_outputs(model, val_batches, run);
  run.set("kept_peak_above_start_mib", (run.mem_peak() - base) / measure::MiB);
  run.set("kept_saved_peak_mib", run.meter.peak() / measure::MiB);
  run.set("kept_outputs_mib", probabilities.numel() * probabilities.element_size() / measure::MiB);
}

int main(int argc, char** argv) { return measure::main(argc, argv, "LL101", "fixed", 16, scenario); }
