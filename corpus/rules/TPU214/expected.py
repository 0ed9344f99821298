# TPU214 xla-process-group
import os
import torch
import torch.distributed as dist

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
        timeout=None,
    )
dist.init_process_group("nccl", init_method="env://")  # not XLA: untouched
dist.init_process_group("tpu_dist")  # already TorchTPU: untouched
