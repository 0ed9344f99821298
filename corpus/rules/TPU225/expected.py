# TPU225 process-topology: reported only
import torch_xla.runtime as xr

host = xr.host_index()
procs = xr.process_count()
