# TPU104 device-list: reported only (in an SPMD program the global count converts: see TPU216)
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

devices = xm.get_xla_supported_devices()
n = xr.global_runtime_device_count()
all_devs = torch_xla.devices()
