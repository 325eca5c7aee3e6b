import torch


def fit(model, optimizer, loader):
    for x, y in loader:
        loss = torch.nn.functional.l1_loss(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
