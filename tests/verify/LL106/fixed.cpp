// LL106 fixed: forward() keeps detached activations.
//
// `trace.push_back(h.detach())` keeps the values but not the graph: nothing of any batch's
// graph stays reachable from the model.
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "../measure.hpp"

struct TracerImpl : torch::nn::Module {
  explicit TracerImpl(int64_t features = 64, int64_t hidden = 256)
      : fc1(register_module("fc1", torch::nn::Linear(features, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, hidden))),
        head(register_module("head", torch::nn::Linear(hidden, 1))) {}
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor h = torch::tanh(fc2(torch::tanh(fc1(x))));
    trace.push_back(h.detach());
    return head(h).squeeze(1);
  }
  torch::nn::Linear fc1, fc2, head;
  std::vector<torch::Tensor> trace;
};
TORCH_MODULE(Tracer);

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

int64_t graph_nodes_held(Tracer& model) {
  int64_t n = 0;
  for (const auto& t : model->trace) n += measure::graph_nodes(t);
  return n;
}

// Forward passes whose outputs only feed a metric, with grad mode left on.
void monitor(Tracer& model, const Batches& batches, measure::Run& run) {
  int64_t step = 0;
  for (const auto& batch : batches) {
    double error = (model->forward(batch.first) - batch.second).abs().mean().item<double>();
    run.sample(step++, "forward_only",
               {{"error", error}, {"graph_nodes", graph_nodes_held(model)}, {"saved_bytes", run.meter.bytes()}});
  }
}

void train(Tracer& model, const Batches& batches, torch::optim::SGD& optimizer, measure::Run& run) {
  int64_t step = 0;
  for (const auto& batch : batches) {
    torch::Tensor loss = torch::mse_loss(model->forward(batch.first), batch.second);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    run.sample(step++, "train", {{"graph_nodes", graph_nodes_held(model)}, {"saved_bytes", run.meter.bytes()}});
  }
}

void scenario(measure::Run& run) {
  Tracer model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  Batches batches;
  for (int i = 0; i < run.iters; ++i) batches.emplace_back(torch::randn({64, 64}), torch::randn({64}));
  run.meter.ignore(model->parameters());
  measure::SavedTensorMeter::Scope metered(run.meter);
  monitor(model, batches, run);
  model->trace.clear();
  train(model, batches, optimizer, run);
}

int main(int argc, char** argv) { return measure::main(argc, argv, "LL106", "fixed", 40, scenario); }
