# An SPMD program: the launch script starts it with plain `python`.
import torch_xla.runtime as xr

xr.use_spmd()
