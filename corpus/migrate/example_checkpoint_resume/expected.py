"""Train, checkpoint, then resume from the checkpoint in a fresh model.

New-style torch_xla API (torch_xla.device / torch_xla.sync), one process per core.
"""
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def torchtpu_optimizer_step(optimizer):
    """Average the gradients over the process group (if any), then `optimizer.step()`."""
    if dist.is_initialized():
        for group in optimizer.param_groups:
            for param in group['params']:
                if param.grad is not None:
                    dist.all_reduce(param.grad)
                    param.grad /= dist.get_world_size()
    return optimizer.step()


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get('RANK', '0'))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


def torchtpu_save(data, path):
    """`torch.save` of `data` with its tensors on the CPU (loads without a chip)."""
    cpu = torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, data)
    torch.save(cpu, path)


def torchtpu_spawn(
    fn, args=(), nprocs=None, join=True, daemon=False, start_method='spawn'
):
    """Run `fn(index, *args)` in one TorchTPU process per chip (every attached chip unless
    `nprocs` says; `nprocs=1` runs it here), each with torchrun's variables. This process's
    environment is left as it was: here the world is still one process."""
    parent_env = os.environ.copy()
    try:
        torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=nprocs)
        chips = os.environ['TORCH_TPU_SLICEBUILDER_ADDRESSES'].split(',')
        nodes = int(os.environ.get('NNODES', '1'))
        local = len(chips) // nodes
        os.environ.setdefault('MASTER_ADDR', 'localhost')
        os.environ.setdefault('MASTER_PORT', '29500')
        os.environ['LOCAL_WORLD_SIZE'] = str(local)
        os.environ['WORLD_SIZE'] = str(nodes * local)
        if nprocs != 1:
            worker_args = (fn, args)
            return mp.start_processes(
                torchtpu_worker, worker_args, local, join, daemon, start_method
            )
        try:
            torchtpu_worker(0, fn, args)
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
    finally:
        os.environ.clear()
        os.environ.update(parent_env)


def torchtpu_worker(index, fn, args):
    """A process `torchtpu_spawn` started: `fn(index, *args)` with the `LOCAL_RANK` and `RANK`
    that torchrun would give it."""
    os.environ['LOCAL_RANK'] = str(index)
    node = int(os.environ.get('NODE_RANK', '0'))
    os.environ['RANK'] = str(node * int(os.environ['LOCAL_WORLD_SIZE']) + index)
    fn(index, *args)


CKPT = 'ckpt.pt'


def build_model():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))


def get_batches(rank, world):
    torch.manual_seed(11)
    xs = torch.randn(5, 8, 8)  # 5 steps of 8 samples
    ys = torch.randn(5, 8, 2)
    return xs[:, rank::world], ys[:, rank::world]


def run_steps(model, optimizer, xs, ys, device, first, last):
    for step in range(first, last):
        x, y = xs[step].to(device), ys[step].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        torchtpu_optimizer_step(optimizer)
        torchtpu_rank0_print(f"step {step} loss={loss.item():.6f}")


def _mp_fn(index):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    rank, world = dist.get_rank(), dist.get_world_size()
    xs, ys = get_batches(rank, world)

    torch.manual_seed(0)
    model = build_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    run_steps(model, optimizer, xs, ys, device, 0, 3)

    if dist.get_node_local_rank(fallback_rank=0) == 0:
        torchtpu_save({'model': model.state_dict(),
                 'optimizer': optimizer.state_dict(),
                 'step': 3}, CKPT)
    if dist.is_initialized():
        dist.barrier()
    dist.barrier()

    # --- resume, as a restarted job would ---
    state = torch.load(CKPT)
    model = build_model()
    model.load_state_dict(state['model'])
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    optimizer.load_state_dict(state['optimizer'])
    start = state['step']
    torchtpu_rank0_print(f"resumed at step {start}")
    run_steps(model, optimizer, xs, ys, device, start, start + 2)

    checksum = sum(p.norm().item() for p in model.parameters())
    print(f"rank {rank} of {world} checksum={checksum:.6f}")


if __name__ == '__main__':
    torchtpu_spawn(_mp_fn)
