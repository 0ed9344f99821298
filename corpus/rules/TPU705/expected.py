# TPU705 backends-tpu
import torch

torch.tpu.allow_excess_precision = True
flag = torch.tpu.allow_excess_precision
already = torch.tpu.allow_excess_precision  # already TorchTPU: untouched
