"""LL203 leaky: manual data-parallel training without synchronising gradients.

Two gloo processes start from the same parameters and train on different shards of the
data. Neither wraps the model in DistributedDataParallel nor all-reduces the gradients
before ``optimizer.step()``, so each rank applies only its own gradients and the two
replicas drift apart.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import measure  # noqa: E402

WORLD = 2


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc(x)


def worker(rank, port, steps, out_dir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)  # same initial parameters on every rank
    model = Regressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard
    for step in range(steps):
        x = torch.randn(16, 8, generator=gen)
        y = x.sum(1, keepdim=True) + (rank + 1) * torch.randn(16, 1, generator=gen)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    flat = torch.cat([p.detach().view(-1) for p in model.parameters()])
    torch.save(flat, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def scenario(run):
    import socket
    import tempfile

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as out_dir:
        mp.spawn(worker, args=(port, run.iters, out_dir), nprocs=WORLD, join=True)
        params = [torch.load(os.path.join(out_dir, f"rank{r}.pt")) for r in range(WORLD)]
    diff = (params[0] - params[1]).abs().max().item()
    run.set(world_size=WORLD, steps=run.iters, max_abs_param_difference=diff,
            identical=bool(torch.equal(params[0], params[1])))


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL203", "leaky", iters=50))
