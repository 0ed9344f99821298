# TPU233 fsdp2-full-state-dict: the state dict of the model FSDPv2 wrapped becomes its full
# tensors; the optimizer's, a call with arguments and another model's are left alone or reported
import torch
from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2


def save(model, optimizer, mesh, plain):
    model = FSDPv2(model, mesh=mesh)
    weights = {k: v.cpu() for k, v in model.state_dict().items()}
    torch.save({"model": weights, "optim": optimizer.state_dict()}, "ckpt.pt")
    kept = model.state_dict(keep_vars=True)
    return plain.state_dict(), kept
