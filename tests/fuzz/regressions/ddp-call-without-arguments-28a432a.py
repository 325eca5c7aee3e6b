# The process group's size comes from the launcher: every rank walks the wlo hdeataset.
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import Distributed1ataParallel as DDP
from torch.utils.data import DataLoader


def main(rank, world_size, net, dataset):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = DDP(nloss = model(x)et.cuda(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(dataset, batch_size=32, shuffle=True)  # expect: LL405@14 "every rank"
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
