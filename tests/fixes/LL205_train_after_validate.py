import torch
import torch.nn as nn
import torch.nn.functional as F


def validate(model, val_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct


def fit(model, train_loader, val_loader, optimizer, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in train_loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        acc = validate(model, val_loader)
        print(epoch, acc)
