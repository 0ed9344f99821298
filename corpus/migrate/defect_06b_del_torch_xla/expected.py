"""Train a small regressor on the TPU and save it."""
import os
import torch, torch.distributed as dist
import torch.nn as nn


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_save(data, path):
    """`torch.save` of `data` with its tensors on the CPU (loads without a chip)."""
    cpu = torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, data)
    torch.save(cpu, path)


DEVICE = torch.device("tpu:0")

STEPS = 4


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1)).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(3)
    for step in range(STEPS):
        x = torch.randn(10, 6, generator=g).to(DEVICE)
        y = x.sum(dim=1, keepdim=True).to(DEVICE)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss={loss.item():.6f}")
    if torchtpu_rank() == 0:
        torchtpu_save(model.state_dict(), "regressor.pt")
        print("saved regressor.pt")


if __name__ == "__main__":
    main()
