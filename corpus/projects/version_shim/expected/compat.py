"""One spelling for the PyTorch/XLA APIs that moved between releases."""
import torch


def get_device():
    return torch.device("tpu:0")


__all__ = ["get_device"]
