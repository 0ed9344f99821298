"""A framework's XLA strategy: it wraps the model and runs collectives, but the process
group (or torch_xla's runtime) is set up by whoever launches the job, not by this module."""
import os
import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


class XLAStrategy:
    def __init__(self, model):
        self.device = torch.device("tpu:0")
        self.model = model.to(self.device)

    @property
    def world_size(self):
        return torchtpu_world_size()

    def barrier(self, name="barrier"):
        xm.rendezvous(name)

    def broadcast_parameters(self):
        xm.broadcast_master_param(self.model)

    def all_gather(self, tensor):
        return xm.all_gather(tensor, dim=0)

    def reduce_metric(self, value):
        return xm.mesh_reduce("metric", value, lambda xs: sum(xs) / len(xs))

    def optimizer_step(self, optimizer):
        return xm.optimizer_step(optimizer)
