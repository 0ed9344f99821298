# TPU207 all-reduce
import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm

dist.init_process_group("gloo")  # this file creates the process group: its collectives convert
t = torch.ones(2)
reduced = t.clone()  # xm.all_reduce returned a new tensor
dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
t = reduced * 0.5
reduced = t.clone()  # xm.all_reduce returned a new tensor
dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
mean = reduced * (1.0 / dist.get_world_size())
reduced = t.clone()  # xm.all_reduce returned a new tensor
dist.all_reduce(reduced, op=dist.ReduceOp.MAX)
peak = reduced
for tensor in [t, t]:  # xm.all_reduce reduced a list in place
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)  # a list reduced in place; torch_xla's string becomes dist.ReduceOp.SUM
xm.all_reduce("avg", [t])  # not a torch_xla reduce type: reported
grouped = xm.all_reduce(xm.REDUCE_SUM, t, groups=[[0, 1]])  # replica groups: reported
grads = [p.grad for p in [t, t]]  # a list this file builds
grads.append(t)
for tensor in grads:  # xm.all_reduce reduced a list in place
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)  # reduced in place, tensor by tensor
for tensor in grads:  # xm.all_reduce reduced a list in place, then scaled it
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    tensor.mul_(0.5)
averaged = grads  # in place, then the list itself
xm.all_reduce(xm.REDUCE_SUM, t)  # a tensor's reduced copy, discarded: reported
