"""LL402 fixed: 2 DataLoader workers with ``prefetch_factor=2`` (4 batches in flight).

Enough to keep a training step busy; host RAM holds 2 worker processes and at most 4
finished batches.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

import measure  # noqa: E402

FEATURES = 4096
BATCH = 128


class SyntheticImages(Dataset):
    """Decodes sample ``i`` on the fly (no per-sample state kept)."""

    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return self.samples

    def __getitem__(self, index):
        return torch.full((FEATURES,), float(index % 255)), index % 10


def consume(train_loader, device, run, shmem_base, base):
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        time.sleep(0.02)  # stands in for the training step
        if step % 4 == 0:
            workers = measure.child_pids()
            host = measure.host_memory([os.getpid()] + workers, shmem_base)
            run.sample(step, host_mib=(host["total"] - base) / measure.MiB,
                       shmem_mib=host["shmem"] / measure.MiB,
                       workers_private_dirty_mib=sum(host["per_pid"][pid] for pid in workers)
                       / measure.MiB,
                       workers=len(workers))


def scenario(run):
    dataset = SyntheticImages(run.iters * BATCH)
    shmem_base = measure.meminfo().get("Shmem", 0)
    base = measure.host_memory([os.getpid()], shmem_base)["total"]
    train_loader = DataLoader(dataset, batch_size=BATCH, shuffle=True, num_workers=2,
                              prefetch_factor=2, pin_memory=True)
    consume(train_loader, run.device, run, shmem_base, base)
    run.set(batch_mib=BATCH * FEATURES * 4 / measure.MiB, num_workers=2, prefetch_factor=2,
            inflight_mib=2 * 2 * BATCH * FEATURES * 4 / measure.MiB)
    if run.cuda:
        run.set(cuda_allocated_mib=torch.cuda.memory_allocated(run.device) / measure.MiB)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL402", "fixed", iters=56))
