"""LL404 leaky: ``Dataset.__getitem__`` moves every sample to CUDA in a worker process.

Phase "fork" (the Linux default): the parent has initialised CUDA, and a forked worker
cannot: "Cannot re-initialize CUDA in forked subprocess".
Phase "spawn": every worker starts its own CUDA context, which takes device memory in
each worker (measured as the drop of free device memory while the workers run).
GPU-only: a CPU build has no CUDA to initialise.
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
        return self.features[index].cuda(), self.labels[index].cuda()


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
    fork_loader = DataLoader(dataset, batch_size=64, num_workers=2)
    run.phase("fork", train_epoch, model, fork_loader, optimizer, criterion, run.device,
              run, "fork")
    spawn_loader = DataLoader(dataset, batch_size=64, num_workers=2,
                              multiprocessing_context="spawn", timeout=120)
    run.phase("spawn", train_epoch, model, spawn_loader, optimizer, criterion, run.device,
              run, "spawn")


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL404", "leaky", iters=20))
