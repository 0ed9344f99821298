# TPU203 local-ordinal
import torch.distributed as dist

a = dist.get_node_local_rank(fallback_rank=0)
b = dist.get_node_local_rank(fallback_rank=0)
c = int(__import__("os").environ.get("LOCAL_RANK", 0))  # already portable: untouched
