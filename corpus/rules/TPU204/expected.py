# TPU204 is-master-ordinal
import os
import torch.distributed as dist

if dist.get_node_local_rank(fallback_rank=0) == 0:
    print("local master")
if (dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))) == 0:
    print("global master")
flag = not ((dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))) == 0)


class Node:
    def is_master_ordinal(self):
        return True


if Node().is_master_ordinal():  # not torch_xla: untouched
    print("node")
