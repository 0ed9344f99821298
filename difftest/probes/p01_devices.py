"""Device / world-size / ordinal queries in a single process (no spawn)."""
import io, contextlib, os
from _probe import check, note
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

note("env PJRT_DEVICE", repr(os.environ.get("PJRT_DEVICE")))
check("xr.device_type()", xr.device_type)
dev = check("xm.xla_device()", xm.xla_device)
check("torch_xla.device()", torch_xla.device)
check("torch_xla.device() == xm.xla_device()", lambda: torch_xla.device() == xm.xla_device())
check("torch_xla.devices()", torch_xla.devices)
check("torch_xla.device_count()", torch_xla.device_count)
check("torch_xla.real_devices()", torch_xla.real_devices)
check("xm.xla_device(devkind='TPU')", xm.xla_device, devkind="TPU")
check("xm.xla_device(devkind='CPU')", xm.xla_device, devkind="CPU")
check("xm.xla_device(n=1)", xm.xla_device, n=1)
check("xm.xla_device_hw(dev)", xm.xla_device_hw, torch_xla.device())
check("xm.xla_device_hw('xla:0')", xm.xla_device_hw, "xla:0")
check("xm.xla_device_kind()", xm.xla_device_kind)
check("xm.xla_real_devices()", lambda: xm.xla_real_devices([torch_xla.device()]))
check("xm.xrt_world_size()", lambda: xm.xrt_world_size())
check("xr.world_size()", xr.world_size)
check("xm.get_ordinal()", lambda: xm.get_ordinal())
check("xm.get_local_ordinal()", xm.get_local_ordinal)
check("xr.global_ordinal()", xr.global_ordinal)
check("xr.local_ordinal()", xr.local_ordinal)
check("xr.process_index()", xr.process_index)
check("xr.process_count()", xr.process_count)
check("xr.local_process_count()", xr.local_process_count)
check("xr.global_device_count()", xr.global_device_count)
check("xr.local_device_count()", xr.local_device_count)
check("xr.addressable_device_count()", xr.addressable_device_count)
check("xr.global_runtime_device_count()", xr.global_runtime_device_count)
check("xr.is_bf16_supported()", xr.is_bf16_supported)
check("xm.is_master_ordinal()", xm.is_master_ordinal)
check("xm.is_master_ordinal(local=False)", xm.is_master_ordinal, local=False)
check("xm.master_print('RESULT master_print output:', 'hello', 1)", xm.master_print, "RESULT master_print output:", "hello", 1)
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    xm.master_print("captured?")
note("master_print output seen by contextlib.redirect_stdout", repr(buf.getvalue()))
t = torch.ones(2, device=torch_xla.device())
check("tensor.device", lambda: t.device)
check("xm.is_xla_tensor(t)", xm.is_xla_tensor, t)
check("str(tensor)", lambda: str(t))
