import torch.nn.functional as F


def train(model, loader, optimizer):
    history = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        history.append(loss * 2)
    return history
