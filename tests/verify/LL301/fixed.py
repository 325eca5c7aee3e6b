"""LL301 fixed: the previous model is released before the next one is built.

``del model; gc.collect(); torch.cuda.empty_cache()`` at the end of each iteration: the
peak holds one model, and on CUDA the freed blocks go back to the driver.
"""
import gc
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import measure  # noqa: E402


class WideNet(nn.Module):
    def __init__(self, width=1536, depth=4, classes=10):
        super().__init__()
        self.body = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


@torch.no_grad()
def evaluate(model, batch):
    return model(batch).argmax(dim=1).float().mean().item()


def compare_seeds(seeds, batch, device, run, base):
    scores = {}
    for step, seed in enumerate(seeds):
        run.mem.reset_peak()
        torch.manual_seed(seed)
        model = WideNet().to(device)
        peak = run.mem.peak()
        scores[seed] = evaluate(model, batch)
        run.sample(step, peak_during_build_mib=(peak - base) / measure.MiB,
                   after_build_mib=(run.mem.now() - base) / measure.MiB)
        del model
        gc.collect()
        torch.cuda.empty_cache()
    return scores


def scenario(run):
    batch = torch.randn(8, 1536, device=run.device)
    run.mem.sync()
    base = run.mem.now()
    model_mib = measure.tensor_bytes(WideNet().parameters()) / measure.MiB
    run.set(model_mib=model_mib)
    compare_seeds(range(run.iters), batch, run.device, run, base)
    run.mem.sync()
    if run.cuda:
        run.set(reserved_minus_allocated_mib=(torch.cuda.memory_reserved(run.device)
                                              - torch.cuda.memory_allocated(run.device))
                / measure.MiB)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL301", "fixed", iters=4))
