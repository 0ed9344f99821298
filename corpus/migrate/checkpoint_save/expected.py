"""Periodic checkpointing in a multi-core job."""
import os

import torch
import torch.distributed as dist
import torch_xla.utils.serialization as xser


def torchtpu_save(data, path):
    """`torch.save` of `data` with its tensors on the CPU (loads without a chip)."""
    cpu = torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, data)
    torch.save(cpu, path)


def save_checkpoint(model, optimizer, epoch, ckpt_dir):
    os.makedirs(ckpt_dir, exist_ok=True)
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": epoch,
    }
    # xm.save moves tensors to CPU and writes from the master ordinal only
    if dist.get_node_local_rank(fallback_rank=0) == 0:
        torchtpu_save(state, os.path.join(ckpt_dir, f"epoch_{epoch}.pt"))
    if dist.is_initialized():
        dist.barrier()
    if dist.is_initialized():
        dist.barrier()


def save_large(model, path):
    xser.save(model.state_dict(), path, master_only=True)


def load_checkpoint(model, path):
    device = torch.device("tpu:0")
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    return model.to(device), state["epoch"]


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("tpu:0")
    model = torch.nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(2):
        loss = model(torch.randn(8, 4).to(device)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        save_checkpoint(model, optimizer, epoch, "ckpt")
        print(f"epoch {epoch} loss={loss.item():.6f}")
    save_large(model, "large.pt")
    restored, epoch = load_checkpoint(torch.nn.Linear(4, 2), "ckpt/epoch_1.pt")
    print(f"restored epoch {epoch} on {restored.weight.device}: {restored.weight.sum().item():.6f}")
