# TPU114 device-info: reported only
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

kind = xm.xla_device_kind()
mem = xm.get_memory_info(device)
attrs = xr.global_runtime_device_attributes()
bf16 = xr.is_bf16_supported()
