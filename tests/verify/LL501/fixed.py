"""LL501 fixed: worker processes are started with the spawn start method.

A spawned child is a fresh interpreter that initialises CUDA for itself. (Its target
must be importable, as ``score_shard`` is: a lambda or closure would not pickle.)
GPU-only: the leaky program needs CUDA to fail.
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
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    workers = [ctx.Process(target=score_shard, args=(rank, results)) for rank in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    received = []
    while not results.empty():
        received.append(results.get(timeout=5))
    run.set(exitcodes=[worker.exitcode for worker in workers], results=sorted(received),
            start_method=ctx.get_start_method())


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL501", "fixed", iters=1))
