import torch as t


def run_epoch(model, optimizer, train_loader, val_loader):
    for x, y in train_loader:
        optimizer.zero_grad()
        t.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    model.eval()
    scores = []
    for x, y in val_loader:
        out = model(x)
        scores.append(out.argmax(1).eq(y).float().mean().item())
    return scores
