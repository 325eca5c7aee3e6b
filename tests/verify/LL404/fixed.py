"""LL404 fixed: workers return CPU tensors; the training loop moves each batch.

``pin_memory=True`` puts batches in page-locked memory so that
``.to(device, non_blocking=True)`` can overlap the copy; no worker touches CUDA, with
fork (phase "fork") or spawn (phase "spawn").
GPU-only: the leaky program needs CUDA to fail.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

import measure  # noqa: E402


class FeatureDataset(Dataset):
    def __init__(self, count, features):
        self.features = torch.randn(count, features)
        self.labels = torch.randint(0, 10, (count,))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.features[index], self.labels[index]


def train_epoch(model, train_loader, optimizer, criterion, device, run, phase):
    free_before = torch.cuda.mem_get_info(device)[0]
    reserved_before = torch.cuda.memory_reserved(device)
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        free_now = torch.cuda.mem_get_info(device)[0]
        grown = torch.cuda.memory_reserved(device) - reserved_before
        run.sample(step, phase=phase, workers=len(measure.child_pids()), loss=loss.item(),
                   device_memory_outside_allocator_mib=(free_before - free_now - grown)
                   / measure.MiB)


def scenario(run):
    run.require_cuda("the failure needs CUDA: a CPU build cannot initialise it in a worker")
    model = nn.Linear(64, 10).to(run.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    dataset = FeatureDataset(run.iters * 64, 64)
    fork_loader = DataLoader(dataset, batch_size=64, num_workers=2, pin_memory=True)
    run.phase("fork", train_epoch, model, fork_loader, optimizer, criterion, run.device,
              run, "fork")
    spawn_loader = DataLoader(dataset, batch_size=64, num_workers=2, pin_memory=True,
                              multiprocessing_context="spawn", timeout=120)
    run.phase("spawn", train_epoch, model, spawn_loader, optimizer, criterion, run.device,
              run, "spawn")


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL404", "fixed", iters=20))
