# TPU222 xla-fsdp: FSDPv2 becomes FSDP2 (`torchtpu_fsdp2`); FSDPv1, a custom wrapper callable and
# ZeRO are reported
import torch
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP, checkpoint_module
from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2

model = FSDP(checkpoint_module(model), compute_dtype=torch.bfloat16)
model2 = FSDPv2(model2, mesh=mesh)  # keeps its comment
model3 = FSDPv2(model3, mesh=mesh, auto_wrapper_callable=lambda m, *a, **k: FSDPv2(checkpoint_module(m), *a, **k))
