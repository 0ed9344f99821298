# TPU223 xla-distributed-checkpoint: the SPMD planners become PyTorch's default ones and
# prime_optimizer a helper; CheckpointManager is reported
from torch_xla.experimental.distributed_checkpoint import CheckpointManager
import torch


def torchtpu_prime_optimizer(optimizer):
    """What `xc.prime_optimizer(optimizer)` becomes: one step with zero gradients, so the
    optimizer's state exists for `dcp.load` to fill in place. The step moves the parameters
    (weight decay): load the checkpoint right after."""
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.requires_grad:
                param.grad = torch.zeros_like(param)
    optimizer.step()
    return optimizer


chkpt = CheckpointManager("gs://bucket/ckpt", save_interval=100)
import torch.distributed.checkpoint as dist_cp

dist_cp.save(state_dict=state_dict, storage_writer=dist_cp.FileSystemWriter(path), planner=dist_cp.DefaultSavePlanner())
torchtpu_prime_optimizer(optimizer)
dist_cp.load(state_dict=state_dict, storage_reader=dist_cp.FileSystemReader(path), planner=dist_cp.DefaultLoadPlanner())
