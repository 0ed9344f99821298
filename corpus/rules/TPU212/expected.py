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
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(nested, args=(n,), nprocs=nprocs)


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
    torch.tpu.distributed.set_tpu_launch_env()
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(gn, args=(), nprocs=nprocs)  # no nprocs: every attached chip
    torch.tpu.distributed.set_tpu_launch_env()
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(gn, args=(), nprocs=nprocs)  # every attached chip, as torch_xla did
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=len(range(4)))
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(gn, args=(), nprocs=nprocs)  # computed by a call: evaluated once, may be None
    xmp.spawn(train_worker, nprocs=4)  # worker defined elsewhere: reported
    xmp.spawn(lambda i: print(i), nprocs=2)  # not a function of this file: reported
