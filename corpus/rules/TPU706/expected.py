# TPU706 xla-availability-probe
import importlib.util
import pkgutil

import torch

HAS_XLA = importlib.util.find_spec("torch_tpu") is not None
_xla_runtime = pkgutil.find_loader("torch_tpu")
HAS_OPTIMUM_TPU = importlib.util.find_spec("optimum.tpu") is not None  # its replacement is transformers: reported
HAS_NUMPY = importlib.util.find_spec("numpy") is not None  # not a torch_xla probe: untouched


def device():
    # a branch guarded by a converted probe is converted too: it runs on TorchTPU now
    if HAS_XLA:
        return torch.device("tpu:0")
    return torch.device("cpu")
