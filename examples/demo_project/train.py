"""Training entry point of the demo project."""
import torch
import torch.nn.functional as F

from data import make_loaders
from model import SmallNet


def validate(model, val_loader, device):
    model.eval()
    correct = 0
    for x, y in val_loader:
        logits = model(x.to(device))
        correct += (logits.argmax(1) == y.to(device)).sum().item()
    return correct / len(val_loader.dataset)


def train_epoch(model, loader, optimizer, device, accum_steps=2):
    model.train()
    epoch_loss = 0.0
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x.to(device)), y.to(device)) / accum_steps
        loss.backward()
        epoch_loss += loss
        if (step + 1) % accum_steps == 0:
            optimizer.step()
    return epoch_loss / len(loader)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SmallNet().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    train_loader, val_loader = make_loaders("train.json", "val.json")
    for epoch in range(10):
        loss = train_epoch(model, train_loader, optimizer, device)
        acc = validate(model, val_loader, device)
        print(f"epoch {epoch}: loss {float(loss):.4f} acc {acc:.3f}")
        torch.save(model.state_dict(), f"ckpt_{epoch}.pt")


if __name__ == "__main__":
    main()
