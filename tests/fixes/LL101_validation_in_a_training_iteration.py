# Full-batch training of a graph network: each iteration steps, then switches the model to eval
# mode and runs it again on the whole graph to validate, with autograd on. The second forward's
# outputs reach no backward (the next iteration rebinds `out` before its loss), yet its graph is
# recorded, and `best_emb` keeps it alive across epochs. Only that statement needs no_grad: the
# loop itself trains.
import torch
import torch.nn.functional as F
from torch_geometric.datasets import Planetoid
from models import GCN

dataset = Planetoid(root="data", name="Cora")
data = dataset[0].cuda()
model = GCN(dataset.num_features, 16, dataset.num_classes).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
best_val = float("inf")
for epoch in range(200):
    model.train()
    optimizer.zero_grad()
    out = model(data.x, data.edge_index)
    loss = F.nll_loss(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    optimizer.step()
    model.eval()
    out = model(data.x, data.edge_index)
    val_loss = F.nll_loss(out[data.val_mask], data.y[data.val_mask]).item()
    if val_loss < best_val:
        best_val = val_loss
        best_emb = out.cpu()
print(best_val, best_emb.shape)
