import torch
import torch.nn.functional as F


def distill(student, teacher, loaders, optimizer, epochs):
    for epoch in range(epochs):
        for phase in ("train", "val"):
            for x, y in loaders[phase]:
                optimizer.zero_grad()
                soft = teacher(x).detach()
                with torch.set_grad_enabled(phase == "train"):
                    out = student(x)
                    loss = F.kl_div(F.log_softmax(out, 1), F.softmax(soft, 1), reduction="batchmean")
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
