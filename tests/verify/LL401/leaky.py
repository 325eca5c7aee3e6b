"""LL401 leaky: ``persistent_workers=True`` on a DataLoader without worker processes.

``num_workers`` is left at 0, so the option has nothing to act on: DataLoader's
constructor raises ValueError before the first batch.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import measure  # noqa: E402


def make_loader(x, y):
    return DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True,
                      persistent_workers=True)


def run_epochs(x, y, epochs, run):
    loader = make_loader(x, y)
    for epoch in range(epochs):
        total = 0.0
        for features, labels in loader:
            total += float(features.sum()) + float(labels.sum())
        run.sample(epoch, workers=len(measure.child_pids()), checksum=total)


def scenario(run):
    x = torch.randn(1024, 16)
    y = torch.randint(0, 2, (1024,))
    run.phase("construct_and_iterate", run_epochs, x, y, run.iters, run)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL401", "leaky", iters=2))
