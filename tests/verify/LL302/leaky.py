"""LL302 leaky: ``torch.cuda.empty_cache()`` called while the model is still referenced.

empty_cache() returns only cached blocks that no tensor uses; the model is deleted
after it, so its blocks go into the cache and stay reserved by this process.
GPU-only: on the CPU empty_cache() does nothing.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import measure  # noqa: E402


class WideNet(nn.Module):
    def __init__(self, width=2048, depth=4, classes=10):
        super().__init__()
        self.body = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


@torch.no_grad()
def evaluate(model, batch):
    return model(batch).argmax(dim=1).float().mean().item()


def score_and_unload(batch, device, run, step):
    model = WideNet().to(device)
    score = evaluate(model, batch)
    loaded = run.mem.reserved()
    torch.cuda.empty_cache()
    del model
    run.sample(step, reserved_with_model_mib=loaded / measure.MiB,
               reserved_after_release_mib=run.mem.reserved() / measure.MiB,
               allocated_after_release_mib=run.mem.now() / measure.MiB)
    return score


def scenario(run):
    run.require_cuda("empty_cache() acts on the CUDA caching allocator; a CPU run has no cache")
    batch = torch.randn(8, 2048, device=run.device)
    run.set(model_mib=measure.tensor_bytes(WideNet().parameters()) / measure.MiB)
    for step in range(run.iters):
        score_and_unload(batch, run.device, run, step)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL302", "leaky", iters=3))
