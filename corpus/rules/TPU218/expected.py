# TPU218 broadcast-master-param
import torch
import torch.distributed as dist

model = torch.nn.Linear(4, 4)
if dist.is_initialized():
    for tensor in [*model.parameters(), *model.buffers()]:
        dist.broadcast(tensor.data, src=0)
