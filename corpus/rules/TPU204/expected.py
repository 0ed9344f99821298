# TPU204 is-master-ordinal
import torch.distributed as dist

if dist.get_node_local_rank(fallback_rank=0) == 0:
    print("local master")
if not dist.is_initialized() or dist.get_rank() == 0:
    print("global master")
flag = not (not dist.is_initialized() or dist.get_rank() == 0)


class Node:
    def is_master_ordinal(self):
        return True


if Node().is_master_ordinal():  # not torch_xla: untouched
    print("node")
