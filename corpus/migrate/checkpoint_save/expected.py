"""Periodic checkpointing in a multi-core job."""
import os

import torch
import torch_xla.utils.serialization as xser
import torch.distributed as dist


def save_checkpoint(model, optimizer, epoch, ckpt_dir):
    os.makedirs(ckpt_dir, exist_ok=True)
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": epoch,
    }
    # xm.save moves tensors to CPU and writes from the master ordinal only
    if dist.get_node_local_rank(fallback_rank=0) == 0:
        torch.save(torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, state), os.path.join(ckpt_dir, f"epoch_{epoch}.pt"))
    if dist.is_initialized():
        dist.barrier()
    if dist.is_initialized():
        dist.barrier()


def save_large(model, path):
    xser.save(model.state_dict(), path, master_only=True)


def load_checkpoint(model, path):
    device = torch.device("tpu")
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    return model.to(device), state["epoch"]
