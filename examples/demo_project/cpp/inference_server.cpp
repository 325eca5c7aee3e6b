// A LibTorch inference server: loads a TorchScript model and answers requests.
#include <torch/script.h>
#include <torch/torch.h>

#include <vector>

class Server {
 public:
  explicit Server(const std::string& path) : module_(torch::jit::load(path)) {
    module_.to(torch::kCUDA);
    module_.eval();
  }

  std::vector<float> handle(const torch::Tensor& request) {
    std::vector<torch::jit::IValue> inputs{request.to(torch::kCUDA)};
    torch::Tensor scores = module_.forward(inputs).toTensor().softmax(-1);
    scores = scores.to(torch::kCPU).contiguous();
    return std::vector<float>(scores.data_ptr<float>(), scores.data_ptr<float>() + scores.numel());
  }

 private:
  torch::jit::Module module_;
};
