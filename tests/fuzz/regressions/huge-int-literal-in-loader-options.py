import torch
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=99999999999999999999, num_workers=4,
                    prefetch_factor=99999999999999999999999)
other = DataLoader(ds, num_workers=9, prefetch_factor=1_0)
