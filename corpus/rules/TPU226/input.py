# TPU226 spmd-mesh: `xs.Mesh` becomes a DeviceMesh of the job's processes (converted, unsafe); the
# global mesh and 1-D mesh helpers are reported (there is no global mesh on TorchTPU)
import numpy as np
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

num_devices = xr.global_runtime_device_count()
mesh = xs.Mesh(np.array(range(num_devices)), (num_devices, 1), ("data", "model"))
flat = xs.Mesh(device_ids=np.arange(num_devices), mesh_shape=(num_devices,))
xs.set_global_mesh(mesh)
fsdp_mesh = xs.get_1d_mesh("fsdp")
assert xs.get_global_mesh() is mesh
