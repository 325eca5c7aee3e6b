"""LL202 leaky: ``zero_grad()`` between ``backward()`` and ``step()``.

The reset wipes the gradients that backward() just computed, so ``step()`` applies
zeros: the parameters never change and the loss stays where it started.
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
    params = measure.ParamProbe(model.parameters())
    model.train()
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
        run.sample(step, loss=full_loss(model, data[0], data[1], criterion),
                   batch_loss=loss.item(), param_change=params.delta())


def scenario(run):
    model = Regressor().to(run.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    x, y = make_data(run.iters * 64, 16)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    data = (x.to(run.device), y.to(run.device))
    run.set(initial_loss=full_loss(model, data[0], data[1], criterion))
    train(model, train_loader, optimizer, criterion, run.device, run, data)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL202", "leaky", iters=60))
