"""LL502 leaky: spawn-context processes started at module top level.

A spawned child re-imports the main module to find its target; the import runs the
top-level code again, which tries to start processes inside the child. Python stops
that with "An attempt has been made to start a new process before the current process
has finished its bootstrapping phase", so every child exits with status 1 and the work
is not done. With ``Process`` the parent sees the exit codes; a ``Pool`` replaces each
dead worker with a new one that dies the same way, so ``map`` never returns (the
program waits for it only 5 seconds, so that it cannot hang).
"""
import torch.multiprocessing as mp  # a PyTorch program: torch's drop-in multiprocessing
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def square(value, results):
    results.put((value, value * value))


def square_value(value):
    return value * value


ctx = mp.get_context("spawn")
results = ctx.Queue()
workers = [ctx.Process(target=square, args=(value, results)) for value in range(2)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join(timeout=60)

pool = ctx.Pool(2)
pending = pool.map_async(square_value, range(4))
pending.wait(timeout=5)
pool_done = pending.ready()
pool.terminate()


def scenario(run):
    received = []
    while not results.empty():
        received.append(results.get(timeout=5))
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    run.set(exitcodes=[worker.exitcode for worker in workers], results=sorted(received),
            start_method=ctx.get_start_method(), pool_done=pool_done,
            pool_results=pending.get() if pool_done else None)


if __name__ == "__main__":
    # imported here so that the spawned children, which re-import this module, do not
    # load the measurement helpers too
    import measure

    sys.exit(measure.main(scenario, "LL502", "leaky", iters=1))
