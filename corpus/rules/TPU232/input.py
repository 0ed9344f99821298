# TPU232 xla-fsdp-wrap-policy: in a file wrapping with FSDPv2, torch_xla's policies become PyTorch's
import functools

import torch_xla.distributed.fsdp.wrap as xw
from torch_xla.distributed.fsdp.wrap import size_based_auto_wrap_policy, transformer_auto_wrap_policy
from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2

policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
big = functools.partial(size_based_auto_wrap_policy, min_num_params=10_000)
model = FSDPv2(model, mesh=mesh, auto_wrap_policy=policy)
other = FSDPv2(other, mesh=mesh, auto_wrap_policy=xw.always_wrap_policy)
