"""torch.distributed on TPU via the "xla" backend, launched with torchrun."""
import os

import torch
import torch.distributed as dist


def setup():
    if not dist.is_initialized():
        if "RANK" not in os.environ:
            # started with plain `python`: a job of one process, set up as TorchTPU's launcher would
            torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=1)
            os.environ.setdefault("MASTER_ADDR", "localhost")
            os.environ.setdefault("MASTER_PORT", "29500")
        dist.init_process_group(
            "tpu_dist",
            rank=int(os.environ.get("RANK", "0")),
            world_size=int(os.environ.get("WORLD_SIZE", "1")),
        )
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    return rank, world_size


def main():
    rank, world_size = setup()
    device = torch.device("tpu:0")
    t = torch.ones(4, device=device) * rank
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    print(f"rank {rank} of {world_size} total={t.sum().item():.6f}")
    if rank == 0:
        print("sum of ranks:", t.cpu().tolist(), "world", world_size)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
