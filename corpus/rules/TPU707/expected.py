# TPU707 xla-only-branch
import torch
from accelerate.utils import is_torch_xla_available

if is_torch_xla_available():
    import torch_xla.core.xla_model as xm

_XLA_AVAILABLE = is_torch_xla_available()


def barrier():
    if is_torch_xla_available():
        xm.rendezvous("barrier")  # dead on TorchTPU: reported, not converted


def gather(t):
    if not _XLA_AVAILABLE:
        return t
    else:
        return xm.all_gather(t)  # the else branch of `not <guard>`: reported


def step():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def pick_device():
    # Only device selection: the guard becomes a TorchTPU test, the device call is converted.
    if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu":
        device = torch.device("tpu:0")
    else:
        device = torch.device("cpu")
    return device


def pick_device_and_sync():
    # Not only device selection: reported, not converted.
    if is_torch_xla_available():
        device = xm.xla_device()
        world = xm.xrt_world_size()
    else:
        device, world = torch.device("cpu"), 1
    return device, world
