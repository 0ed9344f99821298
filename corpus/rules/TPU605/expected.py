# TPU605 xla-fsdp-config: reported only
import os
from transformers import TrainingArguments
import torch
import torch.distributed as dist


def accelerate_tpu_processes():
    """True in one of several TorchTPU processes (torchrun, `accelerate launch`).

    accelerate has no multi-process type for the "tpu" device: each rank would train
    alone. Its multi-process CPU mode (`cpu=True`) shards the data and wraps DDP without
    device ids; ACCELERATE_TORCH_DEVICE keeps the device "tpu", and the process group it
    finds is TorchTPU's (gloo for the CPU tensors accelerate gathers).
    """
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or not torch.accelerator.is_available():
        return False
    if torch.accelerator.current_accelerator().type != "tpu":
        return False
    os.environ.setdefault("ACCELERATE_TORCH_DEVICE", "tpu")
    if not dist.is_initialized():
        dist.init_process_group("tpu:tpu_dist,cpu:gloo")
    return True


args = TrainingArguments(
    output_dir="out",
    fsdp="full_shard",
    fsdp_config={"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"], "xla": True, "xla_fsdp_v2": True},
    use_cpu=accelerate_tpu_processes(),
)
cfg = {"xla_fsdp_grad_ckpt": True}
other = {"xla_metrics": 1}  # not a transformers FSDP key: untouched
