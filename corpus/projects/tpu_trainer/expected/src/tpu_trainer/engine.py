"""The training loop, written for PyTorch/XLA."""
import os
import torch
import torch.distributed as dist


def torchtpu_mesh_reduce(data, reduce_fn):
    """`reduce_fn` of the list of every rank's `data` (`[data]` in a single process)."""
    if not dist.is_initialized():
        return reduce_fn([data])
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, data)
    return reduce_fn(gathered)


def torchtpu_optimizer_step(optimizer):
    """Average the gradients over the process group (if any), then `optimizer.step()`."""
    if dist.is_initialized():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    dist.all_reduce(param.grad)
                    param.grad /= dist.get_world_size()
    return optimizer.step()


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


def train_one_epoch(model, loader, optimizer, device, log_every=4):
    model.train()
    device_loader = loader
    for step, (inputs, labels) in enumerate(device_loader):
        (inputs, labels) = torch.utils._pytree.tree_map_only(
            torch.Tensor, lambda t: t.to(device), (inputs, labels)
        )
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        torchtpu_optimizer_step(optimizer)
        if step % log_every == 0:
            _log(step, loss)
    torchtpu_rank0_print(f"epoch done: {step + 1} steps")


def _log(step, loss):
    print(f"[{torchtpu_rank()}] step {step}: loss {loss.item():.6f}")


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct, total = 0, 0
    for inputs, labels in loader:
        inputs, labels = torch.utils._pytree.tree_map_only(
            torch.Tensor, lambda t: t.to(device), (inputs, labels)
        )
        correct += (model(inputs).argmax(-1) == labels).sum().item()
        total += labels.numel()
    correct = torchtpu_mesh_reduce(correct, sum)
    total = torchtpu_mesh_reduce(total, sum)
    return correct / total
