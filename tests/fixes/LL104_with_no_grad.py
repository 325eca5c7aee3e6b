import torch


def embed(encoder, batches):
    out = []
    for b in batches:
        with torch.no_grad:
            out.append(encoder(b))
    with torch.inference_mode:
        pass
    return out
