# TPU220 xla-process-group-api: reported only
from torch_xla.distributed.xla_backend import new_xla_process_group

group = new_xla_process_group(ranks=[0, 1])
