"""LL403 leaky: a Dataset that keeps its annotations as a Python list of dicts.

Forked DataLoader workers share the parent's pages copy-on-write, but reading a
Python object writes its reference count (and the garbage collector walks every
dict and list), so each worker ends up copying the pages of the whole list
(pytorch/pytorch#13246).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

import measure  # noqa: E402


class DetectionDataset(Dataset):
    def __init__(self, count):
        self.annotations = [
            {"file": f"images/{i // 1000:04d}/{i:08d}.jpg", "label": i % 80,
             "bbox": [i % 640 * 1.0, i % 480 * 1.0, 32.0 + i % 97, 24.0 + i % 89]}
            for i in range(count)
        ]

    def __len__(self):
        return len(self.annotations)

    def __getitem__(self, index):
        ann = self.annotations[index]
        x, y, w, h = ann["bbox"]
        return torch.tensor([x / 640, y / 480, w / 640, h / 480]), ann["label"]


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
            index_mib=measure.python_object_bytes(dataset.annotations) / measure.MiB)
    train_loader = DataLoader(dataset, batch_size=1000, shuffle=True, num_workers=2)
    iterate(train_loader, run)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL403", "leaky", iters=100))
