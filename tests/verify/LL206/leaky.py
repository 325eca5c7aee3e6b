"""LL206 leaky: gradient accumulation from a loss that is not divided by the count.

``backward()`` runs on every micro-batch and ``step()`` every ``ACCUM`` of them, so
``.grad`` holds the *sum* of ``ACCUM`` gradients. With SGD each update is then ``ACCUM``
times the update of one batch of ``ACCUM * 16`` samples: the effective learning rate is
``ACCUM`` times the configured one. The same loop also runs with Adam, which divides by
a running estimate of the gradient's scale.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import measure  # noqa: E402

ACCUM = 8


def big_batch_update(model, x, y, lr):
    """Norm of the SGD update one batch of the same samples would make (what accumulation emulates)."""
    grads = torch.autograd.grad(F.mse_loss(model(x).squeeze(1), y), list(model.parameters()))
    return lr * sum((g ** 2).sum() for g in grads).sqrt().item()


def train(model, train_loader, optimizer, run, kind, lr):
    probe = measure.ParamProbe(model.parameters())
    micro = []
    updates = 0
    optimizer.zero_grad(set_to_none=True)
    for i, (x, y) in enumerate(train_loader):
        micro.append((x, y))
        loss = F.mse_loss(model(x).squeeze(1), y)
        loss.backward()
        if (i + 1) % ACCUM == 0:
            bx = torch.cat([m[0] for m in micro])
            by = torch.cat([m[1] for m in micro])
            ref = big_batch_update(model, bx, by, lr) if kind == "sgd" else float("nan")
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            delta = probe.delta()
            run.sample(updates, phase=kind, update_norm=delta,
                       big_batch_update_norm=ref)
            micro = []
            updates += 1


def scenario(run):
    for kind, lr in (("sgd", 0.05), ("adam", 1e-3)):
        torch.manual_seed(0)
        model = nn.Linear(16, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr) if kind == "sgd" else torch.optim.Adam(model.parameters(), lr=lr)
        n = run.iters * ACCUM * 16
        x = torch.randn(n, 16)
        y = x @ torch.linspace(-1.0, 1.0, 16) + 0.1 * torch.randn(n)
        train_loader = DataLoader(TensorDataset(x, y), batch_size=16)
        train(model, train_loader, optimizer, run, kind, lr)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL206", "leaky", iters=20))
