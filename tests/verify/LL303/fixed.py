"""LL303 fixed: no ``empty_cache()`` inside the batch loop.

The allocator reuses its cached blocks from batch to batch; the cache is emptied once,
after training (a phase boundary).
GPU-only: on the CPU empty_cache() does nothing.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import measure  # noqa: E402


class MLP(nn.Module):
    def __init__(self, features=1024, hidden=4096, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.GELU(),
                                 nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


def train_epoch(model, train_loader, optimizer, criterion, device, run):
    model.train()
    for step, (x, y) in enumerate(train_loader):
        run.mem.sync()
        start = time.perf_counter()
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        run.mem.sync()
        run.sample(step, iter_ms=1000 * (time.perf_counter() - start))


def scenario(run):
    run.require_cuda("empty_cache() acts on the CUDA caching allocator; a CPU run has no cache")
    model = MLP().to(run.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    x = torch.randn(run.iters * 256, 1024)
    y = torch.randint(0, 10, (run.iters * 256,))
    train_loader = DataLoader(TensorDataset(x, y), batch_size=256, shuffle=True)
    torch.cuda.reset_peak_memory_stats(run.device)
    train_epoch(model, train_loader, optimizer, criterion, run.device, run)
    run.set(max_allocated_mib=torch.cuda.max_memory_allocated(run.device) / measure.MiB,
            max_reserved_mib=torch.cuda.max_memory_reserved(run.device) / measure.MiB,
            alloc_retries=measure.allocator_counters(run.device)["alloc_retries"])
    torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL303", "fixed", iters=120))
