"""Launch on every available TPU core: nprocs=None lets torch_xla pick the number of devices."""
import os
import torch, torch.distributed as dist
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    device = torch.device("tpu:0")
    torch.manual_seed(0)
    w = torch.randn(4, 4)
    x = torch.randn(2, 4)
    y = (x @ w).to(device)
    print(f"index {index} rank {dist.get_rank() if dist.is_initialized() else int(os.environ.get('RANK', '0'))} of {dist.get_world_size() if dist.is_initialized() else int(os.environ.get('WORLD_SIZE', '1'))} y_sum={y.sum().item():.6f}")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(), nprocs=None)
