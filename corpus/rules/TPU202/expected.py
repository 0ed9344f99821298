# TPU202 ordinal
import torch.distributed as dist

a = dist.get_rank()
b = dist.get_rank()
c = dist.get_rank()  # defval is ignored under PJRT: dropped


class Worker:
    def get_ordinal(self):
        return 3


d = Worker().get_ordinal()  # not torch_xla: untouched
