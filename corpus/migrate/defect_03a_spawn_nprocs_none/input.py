"""Launch on every available TPU core: nprocs=None lets torch_xla pick the number of devices."""
import torch, torch.distributed as dist
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    device = xm.xla_device()
    torch.manual_seed(0)
    w = torch.randn(4, 4)
    x = torch.randn(2, 4)
    y = (x @ w).to(device)
    xm.mark_step()
    print(f"index {index} rank {xr.global_ordinal()} of {xr.world_size()} y_sum={y.sum().item():.6f}")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(), nprocs=None)
