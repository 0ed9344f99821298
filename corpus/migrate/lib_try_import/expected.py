"""Device helpers for a library that runs on CPU, CUDA or TPU."""
import os
import torch
import torch.distributed as dist


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


try:
    import torch_tpu  # noqa: F401  (TorchTPU probe; was a torch_xla import)

    _HAS_XLA = True
except ImportError:
    xm = None
    _HAS_XLA = False


def get_device():
    if _HAS_XLA:
        return torch.device("tpu:0")
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def world_size():
    if _HAS_XLA:
        return torchtpu_world_size()
    return 1


def step_barrier():
    """Flush pending device work (TPU only)."""


if __name__ == "__main__":
    device = get_device()
    torch.manual_seed(0)
    w = torch.randn(4, 4).to(device)
    y = (w @ w.T).sum()
    step_barrier()
    print(f"has_xla={_HAS_XLA} world={world_size()} on {y.device}: {y.item():.6f}")
