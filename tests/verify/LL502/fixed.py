"""LL502 fixed: the processes are started from a function called under the main guard.

A spawned child re-imports this module as ``__mp_main__``: the import defines the
functions and stops at the guard, then the child runs its target (``Process`` and
``Pool`` alike).
"""
import torch.multiprocessing as mp  # a PyTorch program: torch's drop-in multiprocessing
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def square(value, results):
    results.put((value, value * value))


def square_value(value):
    return value * value


def scenario(run):
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    workers = [ctx.Process(target=square, args=(value, results)) for value in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    received = []
    while not results.empty():
        received.append(results.get(timeout=5))
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    pool = ctx.Pool(2)
    pending = pool.map_async(square_value, range(4))
    pending.wait(timeout=60)
    pool_done = pending.ready()
    pool.terminate()
    run.set(exitcodes=[worker.exitcode for worker in workers], results=sorted(received),
            start_method=ctx.get_start_method(), pool_done=pool_done,
            pool_results=pending.get() if pool_done else None)


if __name__ == "__main__":
    # imported here so that the spawned children, which re-import this module, do not
    # load the measurement helpers too
    import measure

    sys.exit(measure.main(scenario, "LL502", "fixed", iters=1))
