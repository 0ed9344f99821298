# TPU203 local-ordinal
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

a = xm.get_local_ordinal()
b = xr.local_ordinal()
c = int(__import__("os").environ.get("LOCAL_RANK", 0))  # already portable: untouched
