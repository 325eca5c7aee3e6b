"""LL106 fixed: forward() keeps detached activations.

``self.trace.append(h.detach())`` keeps the values but not the graph: nothing of any
batch's graph stays reachable from the model.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import measure  # noqa: E402


class Tracer(nn.Module):
    def __init__(self, features=64, hidden=256):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 1)
        self.trace = []

    def forward(self, x):
        h = torch.tanh(self.fc2(torch.tanh(self.fc1(x))))
        self.trace.append(h.detach())
        return self.head(h).squeeze(1)


def graph_nodes_held(model):
    return sum(measure.graph_nodes(t) for t in model.trace)


def monitor(model, batches, run):
    # Forward passes whose outputs only feed a metric, with grad mode left on.
    for step, (x, y) in enumerate(batches):
        error = (model(x) - y).abs().mean().item()
        run.sample(step, phase="forward_only", error=error, graph_nodes=graph_nodes_held(model),
                   saved_bytes=run.meter.bytes)


def train(model, batches, optimizer, run):
    for step, (x, y) in enumerate(batches):
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        run.sample(step, phase="train", graph_nodes=graph_nodes_held(model), saved_bytes=run.meter.bytes)


def scenario(run):
    model = Tracer()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [(torch.randn(64, 64), torch.randn(64)) for _ in range(run.iters)]
    run.meter.ignore(model.parameters())
    with run.meter:
        monitor(model, batches, run)
        model.trace.clear()
        train(model, batches, optimizer, run)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL106", "fixed", iters=40))
