"""Device helpers for a library that runs on CPU, CUDA or TPU."""
import torch

try:
    import torch_xla.core.xla_model as xm
    import torch_xla.runtime as xr

    _HAS_XLA = True
except ImportError:
    xm = None
    _HAS_XLA = False


def get_device():
    if _HAS_XLA:
        return xm.xla_device()
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def world_size():
    if _HAS_XLA:
        return xr.world_size()
    return 1


def step_barrier():
    """Flush pending device work (TPU only)."""
    if xm is not None:
        xm.mark_step()


if __name__ == "__main__":
    device = get_device()
    torch.manual_seed(0)
    w = torch.randn(4, 4).to(device)
    y = (w @ w.T).sum()
    step_barrier()
    print(f"has_xla={_HAS_XLA} world={world_size()} on {y.device}: {y.item():.6f}")
