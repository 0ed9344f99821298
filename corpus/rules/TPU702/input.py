# TPU702 torchtpu-api-module
import torch
from torch_tpu import api

device = api.tpu_device()
x = torch.ones(2, device=device)
y = torch.ones(2, device="tpu")  # already TorchTPU: untouched
