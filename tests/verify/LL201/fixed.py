"""LL201 fixed: gradients are reset at the top of every iteration.

``optimizer.zero_grad(set_to_none=True)`` (the default since torch 2.0) drops the
gradient buffers, so each ``step()`` applies only this batch's gradient and no gradient
memory is held during the forward pass.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import measure  # noqa: E402


class Regressor(nn.Module):
    def __init__(self, features=16, hidden=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(1)


def make_data(samples, features):
    x = torch.randn(samples, features)
    w = torch.linspace(-1.0, 1.0, features)
    y = x @ w + 0.05 * torch.randn(samples)
    return x, y


@torch.no_grad()
def full_loss(model, x, y, criterion):
    return criterion(model(x), y).item()


def train(model, train_loader, optimizer, criterion, device, run, data):
    probe = measure.GradProbe(model.parameters())
    model.train()
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        grads_at_forward = probe.grads_alive_bytes()
        loss = criterion(model(x), y)
        probe.before()
        loss.backward()
        grads = probe.after()
        optimizer.step()
        run.sample(step, loss=full_loss(model, data[0], data[1], criterion),
                   batch_loss=loss.item(), fresh_grad_norm=grads["fresh"],
                   applied_grad_norm=grads["applied"],
                   applied_over_fresh=grads["applied"] / max(grads["fresh"], 1e-12),
                   batches_in_grad=grads["batches"], grad_bytes=grads["grad_bytes"],
                   grads_at_forward_bytes=grads_at_forward,
                   same_grad_buffers=grads["same_buffers"])


def scenario(run):
    model = Regressor().to(run.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    criterion = nn.MSELoss()
    x, y = make_data(run.iters * 64, 16)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    data = (x.to(run.device), y.to(run.device))
    run.set(initial_loss=full_loss(model, data[0], data[1], criterion),
            param_bytes=measure.tensor_bytes(model.parameters()))
    train(model, train_loader, optimizer, criterion, run.device, run, data)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL201", "fixed", iters=60))
