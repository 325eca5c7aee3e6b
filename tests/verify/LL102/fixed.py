"""LL102 fixed: losses are accumulated as Python floats.

Phase "train": ``running_loss += loss.item()``.
Phase "monitor": the loss over a data set is computed under ``torch.no_grad()`` and
accumulated with ``.item()``.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import measure  # noqa: E402


class Regressor(nn.Module):
    def __init__(self, features=64, hidden=256):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(1)


def make_loader(samples, batch_size, features, shuffle):
    x = torch.randn(samples, features)
    y = x[:, :4].sum(dim=1) + 0.1 * torch.randn(samples)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle)


def train_epoch(model, train_loader, optimizer, criterion, device, run):
    model.train()
    running_loss = 0.0
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        if step % 50 == 0:
            run.sample(step, phase="train", graph_nodes=0)
    return running_loss


def dataset_loss(model, loader, criterion, device, run):
    total = 0.0
    with torch.no_grad():
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            total = total + criterion(model(x), y).item()
            run.sample(step, phase="monitor", graph_nodes=0)
    return total


def scenario(run):
    model = Regressor().to(run.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    train_loader = make_loader(run.iters * 8, 8, 64, shuffle=True)
    monitor_loader = make_loader(16 * 512, 512, 64, shuffle=False)
    run.meter.ignore(model.parameters())
    with run.meter:
        running_loss = train_epoch(model, train_loader, optimizer, criterion, run.device, run)
        run.sample(run.iters, phase="train", graph_nodes=0)
        total = dataset_loss(model, monitor_loader, criterion, run.device, run)
    run.set(train_loss=float(running_loss) / len(train_loader),
            monitor_loss=float(total) / len(monitor_loader))


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL102", "fixed", iters=400))
