# TPU707 xla-only-branch
import torch
from accelerate.utils import is_torch_xla_available

if is_torch_xla_available():
    import torch_xla.core.xla_model as xm

_XLA_AVAILABLE = is_torch_xla_available()


def barrier():
    if is_torch_xla_available():
        xm.rendezvous("barrier")  # dead on TorchTPU: reported, not converted
        xm.mark_step()  # deletion is fine either way


def gather(t):
    if not _XLA_AVAILABLE:
        return t
    else:
        return xm.all_gather(t)  # the else branch of `not <guard>`: reported


def step():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
