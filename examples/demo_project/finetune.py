"""Fine-tuning a second head with a frozen backbone."""
import torch
from torch import nn


def finetune(backbone, head, loader, epochs=3):
    optimizer = torch.optim.SGD(head.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()
    for _ in range(epochs):
        for x, y in loader:
            with torch.no_grad:
                feats = backbone(x)
            loss = criterion(head(feats), y)
            loss.backward()
            optimizer.zero_grad()
            optimizer.step()
