# Utility module in the style of accelerate/lightning: every torch_xla use is behind a flag.
import importlib.util
import os

import torch
import torch.distributed as dist


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


_torch_xla_available = importlib.util.find_spec("torch_tpu") is not None

if _torch_xla_available:
    import torch_xla.core.xla_model as xm


def is_tpu_available() -> bool:
    return _torch_xla_available


def wait_for_everyone():
    if is_tpu_available():
        if dist.is_initialized():
            dist.barrier()
    elif torch.distributed.is_initialized():
        torch.distributed.barrier()


def num_processes() -> int:
    if is_tpu_available():
        return torchtpu_world_size()
    return int(os.environ.get("WORLD_SIZE", 1))


def reduce_sum(tensor):
    if is_tpu_available():
        return xm.all_reduce("sum", tensor)
    torch.distributed.all_reduce(tensor)
    return tensor


def send_to_device(tensor):
    if is_tpu_available():
        return tensor.to(torch.device("tpu:0"))
    return tensor.to("cuda" if torch.cuda.is_available() else "cpu")


if __name__ == "__main__":
    torch.manual_seed(0)
    t = send_to_device(torch.randn(3))
    print(f"tpu={is_tpu_available()} processes={num_processes()} on {t.device}")
    wait_for_everyone()
    total = reduce_sum(t * 2)
    print(f"sum={total.sum().item():.6f}")
