# TPU705 backends-tpu
import torch

torch.backends.tpu.allow_excess_precision = True
flag = torch.backends.tpu.allow_excess_precision
