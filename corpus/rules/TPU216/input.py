# TPU216 spmd: `use_spmd()` makes the process one of the job's, one per chip (converted, unsafe);
# in an SPMD program the global device count is the job's process count (TPU104, converted);
# automatic sharding and `is_spmd()` are reported
import torch_xla.runtime as xr

xr.use_spmd()
num_devices = xr.global_runtime_device_count()
if xr.is_spmd():
    print("spmd")
xr.use_spmd(auto=True)
