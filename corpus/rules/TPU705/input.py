# TPU705 backends-tpu
import torch

torch.backends.tpu.allow_excess_precision = True
flag = torch.backends.tpu.allow_excess_precision
already = torch.tpu.allow_excess_precision  # already TorchTPU: untouched
