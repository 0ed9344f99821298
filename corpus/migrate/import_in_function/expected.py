import torch
import torch.distributed as dist


def pick_device(use_tpu: bool) -> torch.device:
    if use_tpu:
        return torch.device("tpu")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def flush(use_tpu: bool) -> None:
    pass


def save_checkpoint(model, path, use_tpu=False):
    if use_tpu:
        if dist.get_node_local_rank(fallback_rank=0) == 0:
            torch.save(torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, model.state_dict()), path)
        if dist.is_initialized():
            dist.barrier()
    else:
        torch.save(model.state_dict(), path)
