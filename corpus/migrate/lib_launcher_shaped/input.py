"""A framework's torch_xla launcher (the shape of ignite's and Lightning's XLA launchers)."""
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


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
        if xr.global_ordinal() == 0:
            return results
        return None


class XlaCollectives:
    """What the library's training loop calls; it never creates a process group itself."""

    def world_size(self):
        return xr.world_size()

    def all_gather(self, tensor):
        return xm.all_gather(tensor, dim=0)

    def reduce_mean(self, tensor):
        return xm.all_reduce(xm.REDUCE_SUM, tensor, scale=1.0 / xr.world_size())

    def barrier(self, name):
        xm.rendezvous(name)
