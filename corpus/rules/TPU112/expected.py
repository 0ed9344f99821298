# TPU112 wait-device-ops
import torch_xla.core.xla_model as xm
import torch

torch.accelerator.synchronize()
xm.wait_device_ops(devices=["xla:0"])  # explicit device list: reported
