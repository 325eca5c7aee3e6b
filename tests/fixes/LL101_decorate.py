import torch


def evaluate(model, val_loader):
    model.eval()
    correct = 0
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct
