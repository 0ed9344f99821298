"""Logs which accelerator a run used; torch_xla is optional."""
import torch

try:
    import torch_xla.core.xla_model as xm

    _XLA_AVAILABLE = True
except ImportError:
    _XLA_AVAILABLE = False


def describe(device):
    if _XLA_AVAILABLE:
        return f"{device} ({xm.xla_device_kind(device)})"
    return str(device)


device = xm.xla_device() if _XLA_AVAILABLE else torch.device("cpu")
x = torch.arange(6.0).reshape(2, 3).to(device)
print(describe(device), f"{(x @ x.T).trace().item():.6f}")
