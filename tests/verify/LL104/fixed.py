"""LL104 fixed: ``with torch.no_grad():`` enters an instance of the context manager."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import measure  # noqa: E402


class Classifier(nn.Module):
    def __init__(self, features=32, hidden=64, classes=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


def evaluate(model, val_loader, device, run):
    model.eval()
    correct = 0
    with torch.no_grad():
        for step, (x, y) in enumerate(val_loader):
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(dim=1) == y).sum().item()
            run.sample(step)
    return correct


def scenario(run):
    model = Classifier().to(run.device)
    x = torch.randn(run.iters * 64, 32)
    y = torch.randint(0, 4, (run.iters * 64,))
    val_loader = DataLoader(TensorDataset(x, y), batch_size=64)
    with run.meter.ignore(model.parameters()):
        correct = run.phase("evaluate", evaluate, model, val_loader, run.device, run)
    run.set(batches_evaluated=len(run.series.get("main", {}).get("step", [])),
            correct=correct)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL104", "fixed", iters=8))
