"""Evaluation helpers that aggregate metrics across TPU cores."""
import os
import numpy as np
import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm


def torchtpu_all_gather(value, dim=0):
    """`value` (or each tensor of a list) gathered from every rank along `dim`."""
    if not dist.is_initialized():
        return value
    if isinstance(value, list):
        return [torch.tpu.ops.all_gather_dim(t, dim) for t in value]
    return torch.tpu.ops.all_gather_dim(value, dim)


def torchtpu_mesh_reduce(data, reduce_fn):
    """`reduce_fn` of the list of every rank's `data` (`[data]` in a single process)."""
    if not dist.is_initialized():
        return reduce_fn([data])
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, data)
    return reduce_fn(gathered)


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


def reduce_mean(t):
    # sum over replicas, then divide by the replica count
    return xm.all_reduce(xm.REDUCE_SUM, t, scale=1.0 / torchtpu_world_size())


def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device)
    seen = torch.zeros((), device=device)
    with torch.no_grad():
        for data, target in loader:
            pred = model(data).argmax(dim=1)
            correct += (pred == target).sum()
            seen += target.numel()
    correct = xm.all_reduce(xm.REDUCE_SUM, correct)
    seen = xm.all_reduce("sum", seen)
    accuracy = (correct / seen).item()
    # gather python floats from every core and average them on the host
    mean_acc = torchtpu_mesh_reduce(accuracy, np.mean)
    torchtpu_rank0_print(f"accuracy={mean_acc:.4f}")
    return mean_acc


def gather_predictions(preds):
    all_preds = torchtpu_all_gather(preds, dim=0)
    max_loss = xm.all_reduce(xm.REDUCE_MAX, preds.float().max())
    if dist.is_initialized():
        dist.barrier()
    return all_preds, max_loss


def log_once(msg):
    if torchtpu_rank() == 0:
        print(msg)
    if dist.get_node_local_rank(fallback_rank=0) == 0:
        print("local leader:", msg)


if __name__ == "__main__":
    # (reduce_mean is not called: xm.xrt_world_size was removed in torch_xla 2.9)
    torch.manual_seed(0)
    device = torch.device("tpu:0")
    model = torch.nn.Linear(8, 3).to(device)
    batches = [(torch.randn(16, 8).to(device), torch.randint(0, 3, (16,)).to(device)) for _ in range(3)]
    evaluate(model, batches, device)
    preds, max_loss = gather_predictions(torch.arange(6).to(device))
    print(tuple(preds.shape), f"{max_loss.item():.6f}")
    log_once("done")
