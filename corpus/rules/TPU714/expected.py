# TPU714 accelerate-tpu-processes
import os
import accelerate
from accelerate import Accelerator, PartialState
import torch
import torch.distributed as dist


def accelerate_tpu_processes():
    """True in one of several TorchTPU processes (torchrun, `accelerate launch`).

    accelerate has no multi-process type for the "tpu" device: each rank would train
    alone. Its multi-process CPU mode (`cpu=True`) shards the data and wraps DDP without
    device ids; ACCELERATE_TORCH_DEVICE keeps the device "tpu", and the process group it
    finds is TorchTPU's (gloo for the CPU tensors accelerate gathers).
    """
    if (
        int(os.environ.get("WORLD_SIZE", "1")) <= 1
        or not torch.accelerator.is_available()
    ):
        return False
    if torch.accelerator.current_accelerator().type != "tpu":
        return False
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true":
        # accelerate's multi-process CPU mode has no FSDP: it would silently use DDP.
        raise RuntimeError(
            "accelerate has no FSDP mode for TorchTPU: shard with torch.distributed.fsdp.fully_shard"
        )
    os.environ.setdefault("ACCELERATE_TORCH_DEVICE", "tpu")
    if not dist.is_initialized():
        dist.init_process_group("tpu:tpu_dist,cpu:gloo")
    return True


accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=2, cpu=accelerate_tpu_processes())
state = PartialState(cpu=accelerate_tpu_processes())
exploded = accelerate.Accelerator(
    log_with="tensorboard",
    cpu=accelerate_tpu_processes(),
)
on_cpu = Accelerator(cpu=True)  # untouched: the CPU was asked for
sharded = Accelerator(fsdp_plugin=accelerate.FullyShardedDataParallelPlugin(fsdp_version=2))  # FSDP: reported
from_config = Accelerator(**{"mixed_precision": "bf16"})  # unpacked: reported, `cpu` may be in it
