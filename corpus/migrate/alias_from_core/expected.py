import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def fn(rank):
    dist.init_process_group("tpu_dist", rank=rank, world_size=4)
    dev = torch.device("tpu")
    t = torch.full((2,), float(dist.get_rank() if dist.is_initialized() else 0), device=dev)
    print(rank, t.cpu())


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=4)
    mp.spawn(fn, args=(), nprocs=4)
