# TPU702 torchtpu-api-module
import torch

device = torch.device("tpu")
x = torch.ones(2, device=device)
y = torch.ones(2, device="tpu")  # already TorchTPU: untouched
