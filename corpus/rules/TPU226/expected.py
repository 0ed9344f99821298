# TPU226 spmd-mesh: reported only (the mesh names processes on TorchTPU)
import numpy as np
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

num_devices = xr.global_runtime_device_count()
mesh = xs.Mesh(np.array(range(num_devices)), (num_devices, 1), ("data", "model"))
xs.set_global_mesh(mesh)
fsdp_mesh = xs.get_1d_mesh("fsdp")
assert xs.get_global_mesh() is mesh
