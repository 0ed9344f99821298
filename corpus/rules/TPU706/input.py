# TPU706 xla-availability-probe
import importlib.util
import pkgutil

import torch

HAS_XLA = importlib.util.find_spec("torch_xla") is not None
_xla_runtime = pkgutil.find_loader("torch_xla.runtime")
HAS_OPTIMUM_TPU = importlib.util.find_spec("optimum.tpu") is not None  # its replacement is transformers: reported
HAS_NUMPY = importlib.util.find_spec("numpy") is not None  # not a torch_xla probe: untouched

if HAS_XLA:
    import torch_xla.core.xla_model as xm


def device():
    # a branch guarded by a converted probe is converted too: it runs on TorchTPU now
    if HAS_XLA:
        return xm.xla_device()
    return torch.device("cpu")
