# TPU216 spmd: reported only
import torch_xla.runtime as xr

xr.use_spmd()
if xr.is_spmd():
    print("spmd")
