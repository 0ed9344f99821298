# TPU224 removed-runtime-modules: reported only
import torch_xla.experimental.pjrt as pjrt
import torch_xla.runtime as xr

if xr.using_pjrt():
    rank = pjrt.global_ordinal()
