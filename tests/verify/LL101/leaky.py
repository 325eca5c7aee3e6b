"""LL101 leaky: an evaluation loop that runs the model with grad mode on.

Phase "main" (the verdict): the loop keeps nothing from one batch to the next, yet every
forward pass records its activations for a backward pass that never comes, so the peak
memory of the loop is the activations of a forward pass (two, while the next forward
runs and the previous output is still alive) instead of one intermediate at a time.
Phase "kept" (informative, LL102's effect): the softmax outputs kept for the metrics
keep each batch's whole graph alive, so memory grows with every batch.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import measure  # noqa: E402


class Classifier(nn.Module):
    def __init__(self, features=64, hidden=256, depth=3, classes=10):
        super().__init__()
        layers = [nn.Linear(features, hidden)]
        for _ in range(depth):
            layers += [nn.LayerNorm(hidden), nn.GELU(), nn.Linear(hidden, hidden)]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def make_val_loader(batches, batch_size, features):
    x = torch.randn(batches * batch_size, features)
    y = torch.randint(0, 10, (batches * batch_size,))
    return DataLoader(TensorDataset(x, y), batch_size=batch_size)


def evaluate(model, val_loader, device, run):
    model.eval()
    correct = 0
    for step, (x, y) in enumerate(val_loader):
        x, y = x.to(device), y.to(device)
        logits = model(x)
        correct += (logits.argmax(dim=1) == y).sum().item()
        run.sample(step)
    return correct


def evaluate_keeping_outputs(model, val_loader, device, run):
    model.eval()
    probabilities = []
    for step, (x, y) in enumerate(val_loader):
        x = x.to(device)
        logits = model(x)
        probabilities.append(F.softmax(logits, dim=1))
        run.sample(step, phase="kept")
    return torch.cat(probabilities)


def scenario(run):
    model = Classifier().to(run.device)
    val_loader = make_val_loader(run.iters, 512, 64)
    run.meter.ignore(model.parameters())
    with run.meter:
        run.mem.settle()
        run.mem.reset_peak()
        run.meter.reset_peak()
        base = run.mem.now()
        correct = evaluate(model, val_loader, run.device, run)
        run.mem.sync()
        run.set(peak_above_start_mib=(run.mem.peak() - base) / measure.MiB,
                saved_peak_mib=run.meter.peak / measure.MiB,
                accuracy=correct / len(val_loader.dataset))
        run.mem.settle()
        run.mem.reset_peak()
        run.meter.reset_peak()
        base = run.mem.now()
        probabilities = evaluate_keeping_outputs(model, val_loader, run.device, run)
        run.mem.sync()
        run.set(kept_peak_above_start_mib=(run.mem.peak() - base) / measure.MiB,
                kept_saved_peak_mib=run.meter.peak / measure.MiB,
                kept_outputs_mib=probabilities.numel() * probabilities.element_size()
                / measure.MiB)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL101", "leaky", iters=16))
