"""Periodic checkpointing in a multi-core job."""
import os

import torch
import torch_xla.core.xla_model as xm
import torch_xla.utils.serialization as xser


def save_checkpoint(model, optimizer, epoch, ckpt_dir):
    os.makedirs(ckpt_dir, exist_ok=True)
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": epoch,
    }
    # xm.save moves tensors to CPU and writes from the master ordinal only
    xm.save(state, os.path.join(ckpt_dir, f"epoch_{epoch}.pt"))
    xm.rendezvous("checkpoint_saved")


def save_large(model, path):
    xser.save(model.state_dict(), path, master_only=True)


def load_checkpoint(model, path):
    device = xm.xla_device()
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    return model.to(device), state["epoch"]
