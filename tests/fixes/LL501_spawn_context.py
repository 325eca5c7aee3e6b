import multiprocessing as mp

import torch

weights = torch.ones(8, device="cuda")


def work(i):
    return i


if __name__ == "__main__":
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        print(pool.map(work, range(4)))
