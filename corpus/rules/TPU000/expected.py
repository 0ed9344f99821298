# TPU000 unmapped-api: reported, never converted
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs

t = torch_xla_tensor = xm.unlazy([])  # no automatic mapping: reported
mesh = xs.get_global_mesh()  # reported
