# TPU204 is-master-ordinal
import os
import torch.distributed as dist


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


if dist.get_node_local_rank(fallback_rank=0) == 0:
    print("local master")
if torchtpu_rank() == 0:
    print("global master")
flag = not (torchtpu_rank() == 0)


class Node:
    def is_master_ordinal(self):
        return True


if Node().is_master_ordinal():  # not torch_xla: untouched
    print("node")
