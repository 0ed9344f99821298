# TPU202 ordinal
import torch.distributed as dist

a = dist.get_rank()
b = dist.get_rank()
c = dist.get_rank()  # defval is ignored under PJRT: dropped
