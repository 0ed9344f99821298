# TPU202 ordinal
import os
import torch.distributed as dist

a = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))
b = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))
c = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))  # defval is ignored under PJRT: dropped


class Worker:
    def get_ordinal(self):
        return 3


d = Worker().get_ordinal()  # not torch_xla: untouched
