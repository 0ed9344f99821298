# TPU207 all-reduce
import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm

dist.init_process_group("gloo")  # this file creates the process group: its collectives convert
t = torch.ones(2)
t = xm.all_reduce(xm.REDUCE_SUM, t, scale=0.5)
mean = xm.all_reduce(xm.REDUCE_SUM, t, scale=1.0 / dist.get_world_size())
peak = xm.all_reduce(xm.REDUCE_MAX, t)
xm.all_reduce("sum", [t, t])  # a list reduced in place; torch_xla's string becomes dist.ReduceOp.SUM
xm.all_reduce("avg", [t])  # not a torch_xla reduce type: reported
grouped = xm.all_reduce(xm.REDUCE_SUM, t, groups=[[0, 1]])  # replica groups: reported
grads = [p.grad for p in [t, t]]  # a list this file builds
grads.append(t)
xm.all_reduce(xm.REDUCE_SUM, grads)  # reduced in place, tensor by tensor
averaged = xm.all_reduce(xm.REDUCE_SUM, grads, scale=0.5)  # in place, then the list itself
xm.all_reduce(xm.REDUCE_SUM, t)  # a tensor's reduced copy, discarded: reported
