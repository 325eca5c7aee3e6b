"""A tiny request handler serving a TorchScript model."""
import torch

model = torch.jit.load("model.pt", map_location="cuda")
model.eval()


def handle(request_tensor):
    scores = model(request_tensor.cuda())
    return scores.softmax(-1).tolist()
