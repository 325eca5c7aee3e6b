# -*- coding: utf-8 -*-
import torch
ñame = torch.zeros(3, device='cuda')
中文 = [ñame]
ｔｏｒｃｈ = torch
x́ = 1  # combining accent
s = '‮ RTL override ​ zero width ‍ joiner 🧠🔥'
def 𝔣(model, x):
	return model(x)
for i in range(3):
    loss = 𝔣(model, i).sum()    loss.backward()
    total_loss += loss  # 􏿿
 y = 2
z = '\N{GREEK SMALL LETTER ALPHA}' + '\udcff'
