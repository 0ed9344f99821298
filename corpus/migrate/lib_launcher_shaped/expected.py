"""A framework's torch_xla launcher (the shape of ignite's and Lightning's XLA launchers)."""
import os
import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


class XlaLauncher:
    """Starts `function` on every device; the library's users never see torch_xla."""

    def __init__(self, nprocs=None):
        self.nprocs = nprocs

    @property
    def is_interactive_compatible(self):
        return False

    def launch(self, function, *args, **kwargs):
        xmp.spawn(self._wrapping_function, args=(function, args, kwargs), nprocs=self.nprocs)

    def _wrapping_function(self, process_idx, function, args, kwargs):
        results = function(*args, **kwargs)
        xm.rendezvous("end-process")
        if torchtpu_rank() == 0:
            return results
        return None


class XlaCollectives:
    """What the library's training loop calls; it never creates a process group itself."""

    def world_size(self):
        return torchtpu_world_size()

    def all_gather(self, tensor):
        return xm.all_gather(tensor, dim=0)

    def reduce_mean(self, tensor):
        return xm.all_reduce(xm.REDUCE_SUM, tensor, scale=1.0 / torchtpu_world_size())

    def barrier(self, name):
        xm.rendezvous(name)
