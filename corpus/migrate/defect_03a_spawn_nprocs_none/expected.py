"""Launch on every available TPU core: nprocs=None lets torch_xla pick the number of devices."""
import os
import torch, torch.distributed as dist
import torch.multiprocessing as mp


def _mp_fn(index):
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    torch.manual_seed(0)
    w = torch.randn(4, 4)
    x = torch.randn(2, 4)
    y = (x @ w).to(device)
    print(f"index {index} rank {dist.get_rank() if dist.is_initialized() else int(os.environ.get('RANK', '0'))} of {dist.get_world_size() if dist.is_initialized() else int(os.environ.get('WORLD_SIZE', '1'))} y_sum={y.sum().item():.6f}")


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env()
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(_mp_fn, args=(), nprocs=nprocs)
