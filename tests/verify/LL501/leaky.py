"""LL501 leaky: a forked worker process uses CUDA after the parent initialised it.

``mp.Process`` uses the platform default start method, fork on Linux (before Python
3.14). The child inherits the parent's CUDA state but cannot use it: its first CUDA
call raises "Cannot re-initialize CUDA in forked subprocess" and the child exits 1.
GPU-only: a CPU build has no CUDA state to inherit.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import measure  # noqa: E402


def score_shard(rank, results):
    x = torch.full((1024,), float(rank), device="cuda")
    results.put((rank, float(x.sum())))


def scenario(run):
    run.require_cuda("fork only fails after the parent has initialised CUDA")
    weights = torch.randn(1024, 1024).cuda()
    run.set(parent_checksum=float(weights.sum()))
    results = mp.Queue()
    workers = [mp.Process(target=score_shard, args=(rank, results)) for rank in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    received = []
    while not results.empty():
        received.append(results.get(timeout=5))
    run.set(exitcodes=[worker.exitcode for worker in workers], results=sorted(received),
            start_method=mp.get_start_method())


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL501", "leaky", iters=1))
