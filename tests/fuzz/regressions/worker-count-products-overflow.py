import torch
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=999999999, num_workers=999999999,
                    prefetch_factor=999999999)
huge = DataLoader(ds, num_workers=99999999999999999999999, prefetch_factor=999999999)
hexa = DataLoader(ds, num_workers=0x7fffffffffffffff, prefetch_factor=999999999)
