import torch


def feature_statistics(feature_net, loader, dim):
    # Sums of feature vectors and of their outer products: tensors, not numbers, so the
    # fix detaches them (`.item()` would raise on a vector).
    mu = torch.zeros([dim], dtype=torch.float64)
    sigma = torch.zeros([dim, dim], dtype=torch.float64)
    for images in loader:
        features = feature_net(images).to(torch.float64)
        mu += features.sum(0)
        sigma += features.T @ features
    return mu, sigma
