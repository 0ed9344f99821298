# TPU209 reduce-constant
import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm

t = torch.ones(2)
dist.all_reduce(t, op=dist.ReduceOp.SUM)
dist.all_reduce(t, op=dist.ReduceOp.MAX)
t2 = xm.all_reduce(xm.REDUCE_MIN, t)  # inside xm.all_reduce: left for TPU207


class Reducer:
    def __init__(self, op=xm.REDUCE_SUM):  # a default: where it goes is for a person to follow
        self.op = op
        self.fallback = xm.REDUCE_MAX  # stored: reported, not converted
