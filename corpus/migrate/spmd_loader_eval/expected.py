# Issue 43, item 9: SPMD data parallelism through the device loader's `input_sharding`
# (pytorch/xla's ResNet SPMD example's shape), with an evaluation over a sharded loader that
# counts correct predictions and samples and averages the loss of each batch. torch_xla read
# every number over the global batch.
import os
import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.device_mesh
import torch.distributed.nn.functional
import torch.distributed.tensor
import torch.nn.functional as F
import builtins
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


def torchtpu_batch_sharding(mesh, partition_spec):
    """A function giving this process's slice, along dim 0, of a batch tensor split over the
    mesh axes `partition_spec[0]` names (a loader's `input_sharding`)."""
    return lambda tensor: torchtpu_shard_batch(tensor, mesh, partition_spec)


class torchtpu_device_loader:
    """What `MpDeviceLoader(loader, device)` becomes: the loader's batches with every tensor
    moved to `device` (then passed through `sharding`, this process's slice of the global
    batch, when given), without background prefetching."""

    def __init__(self, loader, device, sharding=None):
        self.loader, self.device, self.sharding = loader, device, sharding

    def __iter__(self):
        for batch in self.loader:
            yield torch.utils._pytree.tree_map_only(torch.Tensor, self.move, batch)

    def __len__(self):
        return len(self.loader)

    def move(self, tensor):
        tensor = tensor.to(self.device)
        return tensor if self.sharding is None else self.sharding(tensor)


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


def torchtpu_global_mean(value):
    """The global batch's value of `value`, a mean over this process's slice of the batch
    (`torchtpu_shard_batch`), as SPMD read it: the processes' mean (the slices are equal)."""
    value = value.detach().clone()
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(value, op=dist.ReduceOp.AVG)
    return value


def torchtpu_global_sum(value):
    """The global batch's value of `value`, a sum or a count over this process's slice of the
    batch (`torchtpu_shard_batch`), as SPMD read it: the processes' sum; of a slice's size
    (an int), the size times the slices (they are equal)."""
    pieces = getattr(torchtpu_shard_batch, "pieces", 1)
    if isinstance(value, int):
        return value * pieces
    value = value.detach().clone()
    if pieces > 1:
        torchtpu_whole_world(pieces)
        dist.all_reduce(value)
    return value


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


def torchtpu_whole_world(pieces):
    """Raise unless the batch was split over every process: a sum or a gather over the world
    would count a slice more than once."""
    if pieces != dist.get_world_size():
        raise ValueError(
            f"the batch was split {pieces} ways over {dist.get_world_size()} processes: "
            "reduce what is read over the processes holding different slices"
        )


torchtpu_spmd_processes()
device = torch.device("tpu:0")
n = int(os.environ.get("WORLD_SIZE", "1"))
mesh = torchtpu_device_mesh(np.arange(n), (n, 1), axis_names=("data", "model"))
torch.manual_seed(0)
features, labels = torch.randn(96, 10), torch.randint(0, 4, (96,))
dataset = torch.utils.data.TensorDataset(features, labels)
train = torch.utils.data.DataLoader(torch.utils.data.Subset(dataset, range(64)), batch_size=16)
test = torch.utils.data.DataLoader(torch.utils.data.Subset(dataset, range(64, 96)), batch_size=8)
sharding = torchtpu_batch_sharding(mesh, ("data", None))
model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.3)

for epoch in range(2):
    model.train()
    for x, y in torchtpu_device_loader(train, device, sharding):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss = torchtpu_backward(loss)
        optimizer.step()
    print(f"epoch {epoch} last loss {loss.item():.6f}")

model.eval()
correct, seen, losses = 0, 0, []
with torch.no_grad():
    for x, y in torchtpu_device_loader(test, device, sharding):
        logits = model(x)
        losses.append(torchtpu_global_mean(F.cross_entropy(logits, y)).item())
        correct += torchtpu_global_sum((logits.argmax(dim=1) == y).sum()).item()
        seen += torchtpu_global_sum(y.size(0))
print(f"eval accuracy {correct}/{seen} mean batch loss {sum(losses) / len(losses):.6f}")
