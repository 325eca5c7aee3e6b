import torch.nn.functional as F


def train(model, loader, optimizer):
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss
    return total / len(loader)
