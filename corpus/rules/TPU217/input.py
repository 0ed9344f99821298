# TPU217 spmd-sharding: reported only (the removed xla_sharding module too)
import numpy as np
import torch_xla.distributed.spmd as xs
import torch_xla.experimental.xla_sharding as old_xs
import torch_xla.runtime as xr

mesh = xs.Mesh(np.arange(8), (2, 4), ("data", "model"))
xs.mark_sharding(weight, mesh, ("model", None))
old_xs.mark_sharding(bias, mesh, (None,))
if xr.is_spmd():
    print("spmd")
