"""LL405 fixed: the DataLoader of the DDP training loop has a DistributedSampler.

Each of the two gloo processes iterates its own half of the dataset: one epoch is one pass
over the data.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402

import measure  # noqa: E402

WORLD = 2
SAMPLES = 256


class Indexed(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 8)
        self.y = self.x.sum(1, keepdim=True)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i], i


def worker(rank, port, out_dir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    model = DDP(nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    dataset = Indexed(SAMPLES)
    sampler = DistributedSampler(dataset, shuffle=True)
    sampler.set_epoch(0)
    train_loader = DataLoader(dataset, batch_size=16, sampler=sampler)
    seen = []
    steps = 0
    for x, y, idx in train_loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        seen.extend(idx.tolist())
        steps += 1
    torch.save({"seen": seen, "steps": steps}, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def scenario(run):
    import socket
    import tempfile

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as out_dir:
        mp.spawn(worker, args=(port, out_dir), nprocs=WORLD, join=True)
        ranks = [torch.load(os.path.join(out_dir, f"rank{r}.pt")) for r in range(WORLD)]
    union = set()
    total = 0
    for r, res in enumerate(ranks):
        run.record(phase="ranks", rank=r, samples_seen=len(res["seen"]), unique_seen=len(set(res["seen"])),
                   steps=res["steps"])
        union |= set(res["seen"])
        total += len(res["seen"])
    run.set(dataset_size=SAMPLES, world_size=WORLD, samples_processed_all_ranks=total,
            unique_samples_all_ranks=len(union), passes_per_epoch=total / SAMPLES)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL405", "fixed", iters=1))
