"""Dataset and loaders for the demo."""
import json

import torch
from torch.utils.data import DataLoader, Dataset


class JsonImages(Dataset):
    def __init__(self, index_path):
        with open(index_path) as f:
            self.samples = json.load(f)  # a list of dicts, read by every worker

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        s = self.samples[i]
        return torch.load(s["tensor_path"]), s["label"]


def make_loaders(train_index, val_index):
    train = DataLoader(JsonImages(train_index), batch_size=64, shuffle=True, num_workers=4)
    val = DataLoader(JsonImages(val_index), batch_size=64, persistent_workers=True)
    return train, val
