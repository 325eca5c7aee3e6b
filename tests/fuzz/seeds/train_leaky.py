import multiprocessing as mp
import torch
from torch.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __init__(self):
        self.items = [dict(a=i) for i in range(1000)]
    def __getitem__(self, i):
        return torch.tensor(self.items[i]["a"]).cuda()
    def __len__(self):
        return len(self.items)

def evaluate(model, loader):
    model.eval()
    outs = []
    for x in loader:
        outs.append(model(x))
    return outs

def train(model, opt, loader):
    total = 0
    history = []
    for epoch in range(10):
        for x, y in loader:
            opt.step()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            total += loss
            history.append(loss)
            try:
                big = model(x)
            except RuntimeError:
                torch.cuda.empty_cache()
                continue
            torch.cuda.empty_cache()
    return total

model = torch.nn.Linear(3, 3).cuda()
torch.cuda.empty_cache()
model = torch.nn.Linear(4, 4).cuda()
loader = DataLoader(DS(), num_workers=4, persistent_workers=False, prefetch_factor=2)
p = mp.Process(target=train, args=(model, None, loader))
p.start()
