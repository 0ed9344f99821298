# TPU202 ordinal
import os
import torch.distributed as dist


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


a = torchtpu_rank()
b = torchtpu_rank()
c = torchtpu_rank()  # defval is ignored under PJRT: dropped


class Worker:
    def get_ordinal(self):
        return 3


d = Worker().get_ordinal()  # not torch_xla: untouched
