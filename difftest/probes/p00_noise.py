"""Minimal program: import + one op + sync. Run with and without PJRT_DEVICE to see what
torch_xla prints on its own (stdout/stderr noise a comparison must filter) and what it
does to the environment."""
import os
print("PJRT_DEVICE env before import torch_xla:", repr(os.environ.get("PJRT_DEVICE")))
print("XLA_FLAGS env before import torch_xla:", repr(os.environ.get("XLA_FLAGS")))
import torch
import torch_xla
print("PJRT_DEVICE env after import torch_xla:", repr(os.environ.get("PJRT_DEVICE")))
print("XLA_FLAGS env after import torch_xla:", repr(os.environ.get("XLA_FLAGS")))
import torch_xla.runtime as xr
print("xr.device_type():", xr.device_type())
x = torch.ones(2, 2, device=torch_xla.device())
print("result:", (x @ x).sum().item())
print("PJRT_DEVICE env after runtime init:", repr(os.environ.get("PJRT_DEVICE")))
