// LL103 fixed: truncated BPTT that detaches the hidden state at each chunk.
//
// `hidden = hidden.detach()` cuts the link to the previous chunk, so every backward covers
// one chunk and needs no retain_graph; memory and backward time stay flat.
// Phases "step_each_chunk" (backward + step per chunk) and "accumulate" (gradients
// accumulated over the stream, one step at its end).
#include <torch/torch.h>

#include <tuple>
#include <utility>
#include <vector>

#include "../measure.hpp"

constexpr int64_t kVocab = 64;

struct CharRNNImpl : torch::nn::Module {
  explicit CharRNNImpl(int64_t vocab = kVocab, int64_t embed_dim = 16, int64_t hidden = 64)
      : hidden_size(hidden),
        embed(register_module("embed", torch::nn::Embedding(vocab, embed_dim))),
        rnn(register_module("rnn", torch::nn::GRU(embed_dim, hidden))),
        head(register_module("head", torch::nn::Linear(hidden, vocab))) {}

  torch::Tensor init_hidden(int64_t batch) { return torch::zeros({1, batch, hidden_size}); }

  std::tuple<torch::Tensor, torch::Tensor> forward(torch::Tensor tokens, torch::Tensor hidden) {
    torch::Tensor out;
    std::tie(out, hidden) = rnn->forward(embed->forward(tokens), hidden);
    return {head->forward(out), hidden};
  }

  int64_t hidden_size;
  torch::nn::Embedding embed;
  torch::nn::GRU rnn;
  torch::nn::Linear head;
};
TORCH_MODULE(CharRNN);

using Chunks = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

Chunks make_chunks(int64_t count, int64_t length, int64_t batch) {
  torch::Tensor stream = torch::randint(0, kVocab, {count * length + 1, batch});
  Chunks chunks;
  for (int64_t i = 0; i < count; ++i) {
    int64_t start = i * length;
    chunks.emplace_back(stream.narrow(0, start, length), stream.narrow(0, start + 1, length));
  }
  return chunks;
}

void train_tbptt(CharRNN& model, const Chunks& chunks, torch::optim::SGD& optimizer,
                 torch::nn::CrossEntropyLoss& criterion, measure::Run& run, const std::string& phase) {
  model->train();
  torch::Tensor hidden = model->init_hidden(chunks[0].first.size(1));
  int64_t step = 0;
  for (const auto& chunk : chunks) {
    hidden = hidden.detach();
    optimizer.zero_grad();
    torch::Tensor output;
    std::tie(output, hidden) = model->forward(chunk.first, hidden);
    torch::Tensor loss = criterion(output.reshape({-1, kVocab}), chunk.second.reshape(-1));
    loss.backward();
    optimizer.step();
    run.sample(step++, phase, {{"loss", loss.item<double>()}});
  }
}

void accumulate_tbptt(CharRNN& model, const Chunks& chunks, torch::optim::SGD& optimizer,
                      torch::nn::CrossEntropyLoss& criterion, measure::Run& run) {
  model->train();
  optimizer.zero_grad();
  torch::Tensor hidden = model->init_hidden(chunks[0].first.size(1));
  int64_t step = 0;
  for (const auto& chunk : chunks) {
    hidden = hidden.detach();
    torch::Tensor output;
    std::tie(output, hidden) = model->forward(chunk.first, hidden);
    torch::Tensor loss = criterion(output.reshape({-1, kVocab}), chunk.second.reshape(-1));
    double start = measure::thread_cpu_ms();
    loss.backward();
    run.sample(step++, "accumulate", {{"backward_ms", measure::thread_cpu_ms() - start}, {"loss", loss.item<double>()}});
  }
  optimizer.step();
}

void scenario(measure::Run& run) {
  CharRNN model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05));
  torch::nn::CrossEntropyLoss criterion;
  run.meter.ignore(model->parameters());
  measure::SavedTensorMeter::Scope metered(run.meter);
  Chunks chunks = make_chunks(4, 8, 16);
  run.phase("step_each_chunk", [&] { train_tbptt(model, chunks, optimizer, criterion, run, "step_each_chunk"); });
  chunks = make_chunks(run.iters, 8, 16);
  run.phase("accumulate", [&] { accumulate_tbptt(model, chunks, optimizer, criterion, run); });
}

int main(int argc, char** argv) { return measure::main(argc, argv, "LL103", "fixed", 24, scenario); }
