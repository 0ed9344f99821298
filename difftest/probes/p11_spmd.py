"""SPMD on CPU: xr.use_spmd() + xs.mark_sharding. run_probes.sh runs this with
different device-count env settings (CPU_NUM_DEVICES, XLA_FLAGS host device count)."""
import os
import numpy as np
import torch
import torch_xla
import torch_xla.runtime as xr
import torch_xla.distributed.spmd as xs
from _probe import check, note, env_summary

env_summary()
note("env CPU_NUM_DEVICES / XLA_FLAGS", (os.environ.get("CPU_NUM_DEVICES"), os.environ.get("XLA_FLAGS")))
check("xr.use_spmd()", xr.use_spmd)
check("xr.is_spmd()", xr.is_spmd)
n = check("xr.global_runtime_device_count()", xr.global_runtime_device_count) or 1
check("xr.world_size() under SPMD", xr.world_size)
check("torch_xla.device() under SPMD", torch_xla.device)
mesh = check(f"xs.Mesh(range({n}), ({n}, 1), ('data', 'model'))",
             lambda: xs.Mesh(np.arange(n), (n, 1), ("data", "model")))
dev = torch_xla.device()
t = torch.arange(16.0).reshape(4, 4).to(dev)
if mesh is not None:
    check("xs.mark_sharding(t, mesh, ('data', None))", lambda: type(xs.mark_sharding(t, mesh, ("data", None))).__name__)
    check("sharding spec", lambda: torch_xla._XLAC._get_xla_sharding_spec(t))
    y = (t * 2).sum(1)
    check("(t*2).sum(1) result", lambda: y.cpu().tolist())
    check("xs.get_1d_mesh('data')", lambda: xs.get_1d_mesh("data").mesh_shape)
    lin = torch.nn.Linear(4, 4).to(dev)
    check("mark_sharding on Linear weight (None, 'data') + forward", lambda: (xs.mark_sharding(lin.weight, mesh, (None, "data")), lin(t).shape)[1])
    check("xs.set_global_mesh / get_global_mesh", lambda: (xs.set_global_mesh(mesh), xs.get_global_mesh().mesh_shape)[1])
