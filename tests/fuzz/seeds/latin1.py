# -*- coding: latin-1 -*-
import torch
nom = 'été'
for x in dl:
    loss = model(x)
    hist.append(loss)
