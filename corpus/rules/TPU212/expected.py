# TPU212 spawn
import os
import torch_xla.distributed.xla_multiprocessing as xmp
from trainer import train_worker
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def fn(index, cfg):
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    dist.init_process_group("tpu_dist")
    print(index, cfg)


def gn(index):
    """Worker with a docstring: the prelude goes after it."""
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    dist.init_process_group("tpu_dist")
    print(index)


def launch(n):
    def nested(index, n):
        os.environ["LOCAL_RANK"] = str(index)
        os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
        dist.init_process_group("tpu_dist")
        print(index, n)

    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=n)
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(n)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * n)
    mp.spawn(nested, args=(n,), nprocs=n)


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=4)
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(4)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * 4)
    mp.spawn(fn, args=({"a": 1},), nprocs=4)
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=8)
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(8)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * 8)
    mp.start_processes(gn, args=(), nprocs=8, start_method="fork")
    xmp.spawn(gn, args=())  # no nprocs: reported
    xmp.spawn(gn, nprocs=None)  # every chip: reported, TorchTPU needs the count
    xmp.spawn(gn, nprocs=len(range(4)))  # computed by a call: reported
    xmp.spawn(train_worker, nprocs=4)  # worker defined elsewhere: reported
    xmp.spawn(lambda i: print(i), nprocs=2)  # not a function of this file: reported
