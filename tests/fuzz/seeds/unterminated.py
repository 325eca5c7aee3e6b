import torch
s = 'abc
t = """never closed
for b in loader:
    loss = model(b
    losses.append(loss
f = f'{x:{y}'
g = f"{'{'}
def h(:
class C(torch.utils.data.Dataset:
    def __getitem__(self, i): return self.data[i
