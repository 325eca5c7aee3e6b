"""LL304 leaky: an out-of-memory error retried inside the ``except`` clause.

While the except clause runs, the exception's traceback references the frames of the
failed attempt, and through them its partial autograd graph: the retry on half the
batch has to fit next to the memory that already failed.
On the CPU the budget is an address-space limit (RLIMIT_AS); on CUDA it is
``torch.cuda.set_per_process_memory_fraction``.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import measure  # noqa: E402


class WideMLP(nn.Module):
    def __init__(self, features=64, hidden=4096, depth=6):
        super().__init__()
        self.inp = nn.Linear(features, hidden)
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.LayerNorm(hidden), nn.GELU()) for _ in range(depth)])
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h).squeeze(1)


def make_batches(sizes, features):
    return [(torch.randn(n, features), torch.randn(n)) for n in sizes]


def train_step(model, x, y, optimizer, criterion):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def train(model, batches, optimizer, criterion, device, run):
    for step, (x, y) in enumerate(batches):
        x, y = x.to(device), y.to(device)
        try:
            train_step(model, x, y, optimizer, criterion)
        except RuntimeError as err:
            if "out of memory" not in str(err) and "can't allocate memory" not in str(err):
                raise
            run.sample(step, phase="retry", batch=len(x))
            for x_half, y_half in zip(x.chunk(2), y.chunk(2)):
                train_step(model, x_half, y_half, optimizer, criterion)
        run.sample(step, batch=len(x))


def scenario(run):
    batch = 128
    model = WideMLP().to(run.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    warmup = make_batches([batch], 64)
    run.meter.ignore(model.parameters())
    with run.meter:
        run.mem.settle()
        run.mem.reset_peak()
        start = run.mem.footprint()
        train(model, warmup, optimizer, criterion, run.device, run)
        step_peak = run.mem.peak_footprint() - start
        run.series.clear()
        budget = int(1.5 * step_peak)
        run.set(step_peak_mib=step_peak / measure.MiB, budget_mib=budget / measure.MiB)
        sizes = [batch] * run.iters
        sizes[len(sizes) // 2] = 2 * batch
        batches = make_batches(sizes, 64)
        with run.memory_budget(budget):
            run.phase("train", train, model, batches, optimizer, criterion, run.device, run)
    retry = run.series.get("retry", {})
    run.set(retries=len(retry.get("step", [])),
            steps_done=len(run.series.get("main", {}).get("step", [])))


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL304", "leaky", iters=5))
