"""LL403 fixed: the Dataset keeps its index in numpy arrays.

A numpy array is one object with one flat buffer; reading an element from a forked
worker does not write to the buffer's pages, so they stay shared with the parent.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

import measure  # noqa: E402


class ImageListDataset(Dataset):
    def __init__(self, count):
        paths = (f"images/{i // 1000:04d}/{i:08d}.jpg" for i in range(count))
        self.paths = np.fromiter(paths, dtype="S28", count=count)
        self.labels = np.arange(count, dtype=np.int64) % 1000

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        path = self.paths[index].decode()
        return len(path) + index % 7, int(self.labels[index])


def iterate(train_loader, run):
    for step, (features, labels) in enumerate(train_loader):
        if step % 10 == 0:
            workers = measure.child_pids()
            host = measure.host_memory(workers)
            run.sample(step, workers=len(workers),
                       worker_private_dirty_mib=max(host["per_pid"].values(), default=0)
                       / measure.MiB,
                       workers_private_dirty_mib=host["private_dirty"] / measure.MiB)
        time.sleep(0.001)


def scenario(run):
    started = time.perf_counter()
    dataset = ImageListDataset(run.iters * 1000)
    run.set(build_s=time.perf_counter() - started, samples=len(dataset),
            index_mib=(dataset.paths.nbytes + dataset.labels.nbytes) / measure.MiB)
    train_loader = DataLoader(dataset, batch_size=1000, shuffle=True, num_workers=2)
    iterate(train_loader, run)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL403", "fixed", iters=150))
