"""LL403 fixed: the Dataset keeps its annotations in numpy arrays.

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


class DetectionDataset(Dataset):
    def __init__(self, count):
        i = np.arange(count)
        files = (f"images/{k // 1000:04d}/{k:08d}.jpg" for k in range(count))
        self.files = np.fromiter(files, dtype="S28", count=count)
        self.labels = (i % 80).astype(np.int64)
        self.boxes = np.stack([i % 640 * 1.0, i % 480 * 1.0, 32.0 + i % 97, 24.0 + i % 89],
                              axis=1).astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        x, y, w, h = self.boxes[index].tolist()
        return torch.tensor([x / 640, y / 480, w / 640, h / 480]), int(self.labels[index])


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
    dataset = DetectionDataset(run.iters * 1000)
    run.set(build_s=time.perf_counter() - started, samples=len(dataset),
            index_mib=(dataset.files.nbytes + dataset.labels.nbytes
                       + dataset.boxes.nbytes) / measure.MiB)
    train_loader = DataLoader(dataset, batch_size=1000, shuffle=True, num_workers=2)
    iterate(train_loader, run)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL403", "fixed", iters=100))
