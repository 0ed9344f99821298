# TPU001 xla-import: imports removed once nothing uses them, and so are assignments aliasing them
import os
import torch
import torch.distributed as dist
import torch_xla.debug.metrics as met  # still used below: must stay


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

device = torch.device("tpu:0")
print(torchtpu_world_size(), torchtpu_rank())
assert met.counter_value("CompileTime") > 0
