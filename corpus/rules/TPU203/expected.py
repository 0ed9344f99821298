# TPU203 local-ordinal
import torch.distributed as dist

a = dist.get_node_local_rank(fallback_rank=0)
b = dist.get_node_local_rank(fallback_rank=0)
