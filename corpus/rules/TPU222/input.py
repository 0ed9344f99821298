# TPU222 xla-fsdp: reported only
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP, checkpoint_module
from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2

model = FSDP(checkpoint_module(model), compute_dtype=torch.bfloat16)
model2 = FSDPv2(model2)
