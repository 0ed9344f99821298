# torch_xla SPMD data parallel checkpointed by torch_xla's CheckpointManager, as its docs show it:
# a process group for the manager, a checkpoint every `save_interval` steps with the newest
# `max_to_keep` kept, and a restarted job that restores the last tracked step and trains on.
import os
import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint
import torch.distributed.device_mesh
import torch.distributed.nn.functional
import torch.distributed.tensor
import torch.nn as nn
import torch.nn.functional as F
import builtins
import fsspec.core
import functools
import itertools
import math
import socket
import warnings
import weakref


def torchtpu_backward(loss, **kwargs):
    """`loss.backward(**kwargs)`, then the loss's mean over the job's processes (detached).
    Each process computed the loss of its slice of the batch; SPMD computed the global
    batch's, which is that mean for a mean-reduced loss over equal slices."""
    # `loss.backward(...)` would be a method call TPU231 converts: call it as a function.
    torch.Tensor.backward(loss, **kwargs)
    loss = loss.detach().clone()
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
    return loss


class torchtpu_checkpoint_manager:
    """Checkpoints in `path/<step>` with `torch.distributed.checkpoint`, saved every
    `save_interval` steps (or when forced), the newest `max_to_keep` kept (0: all) and older
    ones deleted by rank 0. Steps are the directories holding a finished checkpoint. A local path, or an fsspec URL (`gs://…`,
    with its filesystem package installed). `save_async` saves before it returns, and there
    is no preemption notice on TorchTPU: `reached_preemption` is False."""

    def __init__(self, path, save_interval, max_to_keep=0, process_group=None):
        if save_interval <= 0 or max_to_keep < 0:
            raise ValueError(
                "save_interval must be positive and max_to_keep non-negative"
            )
        self.path = str(path).rstrip("/")
        self.save_interval, self.max_to_keep = save_interval, max_to_keep
        self.group = process_group
        self.fs, self.root = fsspec.core.url_to_fs(self.path)  # fsspec comes with torch
        self.fs.makedirs(self.root, exist_ok=True)
        names = [
            p.rstrip("/").rsplit("/", 1)[-1]
            for p in self.fs.ls(self.root, detail=False)
        ]
        done = [
            int(n)
            for n in names
            if n.isdigit() and self.fs.exists(f"{self.root}/{n}/.metadata")
        ]
        self.steps = sorted(done)

    def _rank(self):
        return dist.get_rank(self.group) if dist.is_initialized() else 0

    def should_save(self, step):
        return step % self.save_interval == 0

    def save(self, step, state_dict, force=False):
        if not (force or self.should_save(step)):
            return False
        if self._rank() == 0 and self.fs.exists(f"{self.root}/{step}"):
            # Before save's collective planning.
            self.fs.rm(f"{self.root}/{step}", recursive=True)
        torch.distributed.checkpoint.save(
            state_dict, checkpoint_id=f"{self.path}/{step}", process_group=self.group
        )
        self.steps = sorted(set(self.steps) | {step})
        while self.max_to_keep and len(self.steps) > self.max_to_keep:
            oldest = self.steps.pop(0)
            if self._rank() == 0:
                self.fs.rm(f"{self.root}/{oldest}", recursive=True)
        if dist.is_initialized():
            dist.barrier(self.group)  # every process then lists the same steps
        return True

    def save_async(self, step, state_dict, force=False):
        return self.save(step, state_dict, force)

    def restore(self, step, state_dict):
        if step not in self.steps:
            raise ValueError(
                f"Cannot restore from untracked step {step}. Valid steps are: {self.steps}"
            )
        torch.distributed.checkpoint.load(
            state_dict, checkpoint_id=f"{self.path}/{step}", process_group=self.group
        )

    def all_steps(self):
        return list(self.steps)

    def join(self):
        pass

    def reached_preemption(self, step):
        return False


def torchtpu_device_mesh(device_ids, mesh_shape, axis_names=None):
    """A DeviceMesh of `mesh_shape` over the job's TorchTPU processes, one per chip, device i
    being rank i."""
    torchtpu_spmd_processes()
    world = dist.get_world_size()
    ids = torch.as_tensor(device_ids).flatten().tolist()
    if ids != list(range(world)) or math.prod(mesh_shape) != world:
        raise ValueError(
            f"a mesh {tuple(mesh_shape)} of devices {ids}: TorchTPU's mesh orders ranks 0..{world - 1}"
        )
    names = None if axis_names is None else tuple(axis_names)
    return torch.distributed.device_mesh.init_device_mesh(
        "tpu", tuple(mesh_shape), mesh_dim_names=names
    )


def torchtpu_global_batch_norm(module):
    """The forward of `module`, a BatchNorm, over the global batch in training, as SPMD
    normalised: the mean and variance of every process's slice together, reduced with their
    gradients, and running statistics that are the global batch's on every process."""

    def forward(input):
        if not module.training:
            return type(module).forward(module, input)
        reduce = torch.distributed.nn.functional.all_reduce
        dims, shape = [0, *range(2, input.dim())], [1, -1] + [1] * (input.dim() - 2)
        n = input.numel() // input.size(1) * dist.get_world_size()
        mean = reduce(input.sum(dims)) / n
        centered = input - mean.view(shape)
        var = reduce((centered * centered).sum(dims)) / n
        if module.track_running_stats:
            with torch.no_grad():
                module.num_batches_tracked += 1
                factor = module.momentum
                if factor is None:  # a cumulative average
                    factor = 1 / module.num_batches_tracked.item()
                module.running_mean.lerp_(mean, factor)
                module.running_var.lerp_(var * n / (n - 1), factor)
        out = centered * (var.view(shape) + module.eps).rsqrt()
        if module.affine:
            out = out * module.weight.view(shape) + module.bias.view(shape)
        return out

    return forward


def torchtpu_prime_optimizer(optimizer):
    """Step `optimizer` once with zero gradients, so its state exists for `dcp.load` to fill
    in place. The step moves the parameters (weight decay): load the checkpoint right after."""
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.requires_grad:
                param.grad = torch.zeros_like(param)
    optimizer.step()
    return optimizer


def torchtpu_shard_batch(tensor, mesh, partition_spec):
    """What `xs.mark_sharding(batch, mesh, (axes, None, ...))` becomes: this process's slice of
    the global batch along dim 0, split over the mesh axes named for it (a name, an index or
    a tuple of them). A parameter is FSDP2's to shard, and other dims stay whole: both raise."""
    if (
        isinstance(tensor, torch.nn.Parameter)
        or tensor.requires_grad
        and tensor.is_leaf
    ):
        raise ValueError(
            "mark_sharding of a parameter: on TorchTPU shard parameters with fully_shard (FSDP2)"
        )
    if any(axes is not None for axes in partition_spec[1:]):
        raise ValueError(
            f"partition spec {partition_spec} splits more than dim 0: not a batch split"
        )
    axes = (
        partition_spec[0]
        if isinstance(partition_spec[0], tuple)
        else (partition_spec[0],)
    )
    pieces, index = 1, 0
    for axis in axes:
        axis = mesh.mesh_dim_names.index(axis) if isinstance(axis, str) else axis
        size = mesh.size(axis)
        pieces, index = pieces * size, index * size + mesh.get_local_rank(axis)
    if tensor.shape[0] % pieces:
        raise ValueError(
            f"a batch of {tensor.shape[0]} does not split into {pieces} equal slices (SPMD padded uneven ones)"
        )
    torchtpu_shard_batch.pieces = pieces  # for torchtpu_global_sum and _cat
    return tensor.tensor_split(pieces)[index]


def torchtpu_spmd_processes():
    """What `xr.use_spmd()` becomes: this process is one of the job's TorchTPU processes, one
    per chip (torchrun after TorchTPU's launch environment; plain `python` is a job of one chip).

    SPMD ran one program over every chip, and each process now runs it on its own:
    - rank 0 prints, as SPMD printed once (`print(..., force=True)` prints on any rank);
    - parameters are replicated: rank 0's are broadcast at a module's first forward, and their
      gradients are averaged over the processes when backward ends (before any clipping), as
      the partitioner did for a batch that `torchtpu_shard_batch` splits: in buckets, in the
      order the parameters were first seen, whatever order backward (or torch.compile) made
      them in. FSDP2 and DTensor parameters are theirs to reduce;
    - a BatchNorm in training normalises over the global batch (`torchtpu_global_batch_norm`).
    """
    if not dist.is_initialized():
        if "RANK" not in os.environ:  # plain `python`: a job of one chip
            chips = torch.accelerator.device_count()
            if chips > 1:
                warnings.warn(
                    f"{chips} TPU chips are attached and this SPMD program runs on one: start one process per"
                    " chip, `eval \"$(python -m torch.tpu.distributed | sed 's/^/export /')\"` then"
                    ' `torchrun --nproc_per_node="$WORLD_SIZE" <script> ...`'
                )
            torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=1)
            os.environ.update(
                RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1"
            )
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            if "MASTER_PORT" not in os.environ:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", 0))
                    os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        dist.init_process_group("tpu_dist")
    if dist.get_world_size() == 1 or hasattr(torchtpu_spmd_processes, "hook"):
        return
    if dist.get_rank() != 0:
        print_anywhere = builtins.print

        def rank_0_print(*args, force=False, **kwargs):
            if force:
                print_anywhere(*args, **kwargs)

        builtins.print = rank_0_print
    replicated, order, ready = weakref.WeakSet(), itertools.count(), []

    def average():
        # In the order parameters were first seen, the same on every process: the hooks fire in
        # backward's order, which torch.compile can make differ between processes.
        buckets, size = [], 0
        for _, grad in sorted(ready, key=lambda r: r[0]):
            if not buckets or grad.dtype != buckets[-1][0].dtype or size > 2**22:
                buckets.append([])
                size = 0
            buckets[-1].append(grad)
            size += grad.numel()
        ready.clear()
        for bucket in buckets:
            flat = torch.cat([g.reshape(-1) for g in bucket])
            dist.all_reduce(flat, op=dist.ReduceOp.AVG)
            for g, mean in zip(bucket, flat.split([g.numel() for g in bucket])):
                g.copy_(mean.view_as(g))

    def accumulated(param, index):
        if not ready:
            torch.autograd.Variable._execution_engine.queue_callback(average)
        ready.append((index, param.grad))

    @torch.compiler.disable
    def replicate(module, args):
        if module in replicated:
            return
        for m in module.modules():
            replicated.add(m)
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.forward = torchtpu_global_batch_norm(m)
        for p in module.parameters():
            if (
                p in replicated
                or isinstance(p, torch.distributed.tensor.DTensor)
                or p.device.type != "tpu"
            ):
                continue
            replicated.add(p)
            dist.broadcast(p.detach(), src=0)
            if p.requires_grad:
                p.register_post_accumulate_grad_hook(
                    functools.partial(accumulated, index=next(order))
                )
        for b in module.buffers():
            if b.device.type == "tpu":
                dist.broadcast(b, src=0)

    torchtpu_spmd_processes.hook = (
        torch.nn.modules.module.register_module_forward_pre_hook(replicate)
    )


CHECKPOINT_DIR = "checkpoints"
STEPS = 7


def run_job(mesh, device, stop):
    """One job: build, resume from the newest checkpoint if any, train until `stop`."""
    chkpt_mgr = torchtpu_checkpoint_manager(CHECKPOINT_DIR, save_interval=2, max_to_keep=2)
    torch.manual_seed(len(chkpt_mgr.all_steps()))  # other initial weights on a restart
    model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 4)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    start = 0
    tracked = chkpt_mgr.all_steps()
    if tracked:
        last = max(tracked)
        torchtpu_prime_optimizer(optimizer)
        state_dict = {"model": model.state_dict(), "optim": optimizer.state_dict()}
        chkpt_mgr.restore(last, state_dict)
        model.load_state_dict(state_dict["model"])
        optimizer.load_state_dict(state_dict["optim"])
        start = last + 1
        print(f"resumed from step {last}")
    for step in range(start, stop):
        g = torch.Generator().manual_seed(step)
        x, y = torch.randn(16, 16, generator=g).to(device), torch.randint(0, 4, (16,), generator=g).to(device)
        x = torchtpu_shard_batch(x, mesh, ("data", None))
        y = torchtpu_shard_batch(y, mesh, ("data",))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss = torchtpu_backward(loss)
        optimizer.step()
        print(f"step {step} loss {loss.item():.8f}")
        if chkpt_mgr.save(step, {"model": model.state_dict(), "optim": optimizer.state_dict()}):
            print(f"checkpoint at step {step}")
    print(f"tracked steps {chkpt_mgr.all_steps()}")


def main():
    torchtpu_spmd_processes()
    num_devices = int(os.environ.get("WORLD_SIZE", "1"))
    mesh = torchtpu_device_mesh(np.arange(num_devices), (num_devices,), axis_names=("data",))
    device = torch.device("tpu:0")
    run_job(mesh, device, stop=4)  # interrupted after step 3 (checkpoints at 0 and 2)
    run_job(mesh, device, stop=STEPS)  # the restarted job resumes from step 2


if __name__ == "__main__":
    main()
