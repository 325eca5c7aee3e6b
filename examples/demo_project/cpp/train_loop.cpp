// A LibTorch training loop with a running loss for the progress bar.
#include <torch/torch.h>

#include <iostream>

void train_epoch(torch::nn::Sequential& net, torch::optim::SGD& optimizer,
                 const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches) {
  net->train();
  torch::Tensor running_loss = torch::zeros({});
  for (const auto& [x, y] : batches) {
    optimizer.zero_grad();
    torch::Tensor loss = torch::mse_loss(net->forward(x), y);
    loss.backward();
    optimizer.step();
    running_loss += loss;
  }
  std::cout << "epoch loss " << running_loss.item<double>() / batches.size() << "\n";
}
