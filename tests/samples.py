"""Source snippets shared by the Python end-to-end tests (tests/cli, tests/integration)."""

# An evaluation loop without no_grad that keeps every output: LL101 at 7:21 and LL102 at
# 7:9. Tests locate findings by these lines; change them together.
LEAKY = """import torch


def validate(model, val_loader):
    outs = []
    for x in val_loader:
        outs.append(model(x).argmax(-1))
    return outs
"""
