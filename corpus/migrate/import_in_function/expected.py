import torch
import torch.distributed as dist


def torchtpu_save(data, path):
    """`torch.save` of `data` with its tensors on the CPU (loads without a chip)."""
    cpu = torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, data)
    torch.save(cpu, path)


def pick_device(use_tpu: bool) -> torch.device:
    if use_tpu:
        return torch.device("tpu:0")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def flush(use_tpu: bool) -> None:
    pass


def save_checkpoint(model, path, use_tpu=False):
    if use_tpu:
        if dist.get_node_local_rank(fallback_rank=0) == 0:
            torchtpu_save(model.state_dict(), path)
        if dist.is_initialized():
            dist.barrier()
    else:
        torch.save(model.state_dict(), path)


if __name__ == "__main__":
    device = pick_device(use_tpu=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to(device)
    loss = model(torch.randn(3, 4).to(device)).pow(2).sum()
    loss.backward()
    flush(use_tpu=True)
    save_checkpoint(model, "model.pt", use_tpu=True)
    print(device, pick_device(use_tpu=False), f"loss={loss.item():.6f}")
