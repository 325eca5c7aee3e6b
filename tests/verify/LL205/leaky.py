"""LL205 leaky: validation puts the model in eval mode and training goes on in it.

``validate()`` calls ``model.eval()`` and nothing calls ``model.train()`` again, so from
the second epoch on dropout is off and batch-norm normalises with its running statistics
and stops updating them, while the optimizer keeps training.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import measure  # noqa: E402


class Classifier(nn.Module):
    def __init__(self, features=32, hidden=64, classes=4):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.bn = nn.BatchNorm1d(hidden)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.bn(self.fc1(x)))))


@torch.no_grad()
def validate(model, val_loader):
    model.eval()
    correct = 0
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct


def fit(model, train_loader, val_loader, optimizer, epochs, run):
    seen = {}
    # Share of the units that reach dropout non-zero and leave it zeroed: about p in train mode.
    model.drop.register_forward_hook(lambda m, i, o: seen.update(
        dropped=((i[0] != 0) & (o == 0)).sum().item() / max(1, (i[0] != 0).sum().item())))
    step = 0
    model.train()
    for epoch in range(epochs):
        for x, y in train_loader:
            before = model.bn.running_mean.clone()
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            run.sample(step, epoch=epoch, training_flag=int(model.training),
                       dropout_dropped_fraction=seen["dropped"],
                       bn_running_mean_change=(model.bn.running_mean - before).norm().item())
            step += 1
        validate(model, val_loader)


def scenario(run):
    model = Classifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    n = 32 * 10
    x, y = torch.randn(n, 32), torch.randint(0, 4, (n,))
    train_loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=32)
    fit(model, train_loader, val_loader, optimizer, max(2, run.iters // 10), run)


if __name__ == "__main__":
    sys.exit(measure.main(scenario, "LL205", "leaky", iters=40))
