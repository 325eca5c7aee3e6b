"""LL105 fixed: the hook's handle is removed in the same iteration.

``handle.remove()`` after the forward takes the hook off the module, so every forward
runs exactly one hook and nothing its closure captured outlives the iteration.
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
    def __init__(self, features=32, hidden=64, classes=4):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def hook_state(model):
    hooks = list(model.body._forward_hooks.values())
    kept = 0
    for h in hooks:
        held = [c.cell_contents for c in getattr(h, "__closure__", None) or ()]
        held += list(getattr(h, "__defaults__", None) or ())
        for v in held:
            if torch.is_tensor(v):
                kept += v.numel() * v.element_size()
    return len(hooks), kept


def train(model, train_loader, optimizer, device, run):
    model.train()
    calls = {"n": 0}
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        batch_stats = torch.zeros(4096, device=device)  # what this batch's hook records into

        def record(module, inputs, output, stats=batch_stats):
            calls["n"] += 1
            stats[: output.shape[1]] += output.detach().mean(0)

        handle = model.body.register_forward_hook(record)
        calls["n"] = 0
        loss = F.cross_entropy(model(x), y)
        handle.remove()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        hooks, kept = hook_state(model)
        run.sample(step, hooks=hooks, hook_calls_per_forward=calls["n"], hook_retained_bytes=kept)


def scenario(run):
    model = Classifier().to(run.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(run.iters * 32, 32)
    y = torch.randint(0, 4, (run.iters * 32,))
    train_loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    train(model, train_loader, optimizer, run.device, run)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL105", "fixed", iters=100))
