import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def fn(rank):
    os.environ["LOCAL_RANK"] = str(rank)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + rank)
    dist.init_process_group("tpu_dist")
    dev = torch.device("tpu")
    t = torch.full((2,), float(dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))), device=dev)
    print(rank, t.cpu())


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=4)
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(4)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * 4)
    mp.spawn(fn, args=(), nprocs=4)
