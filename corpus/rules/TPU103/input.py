# TPU103 device-kind
import torch
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

kind = xr.device_type()
hw = xm.xla_device_hw(xm.xla_device())
if xr.device_type() == "TPU":
    print("tpu")
acc = torch.accelerator.current_accelerator()  # already portable: untouched
