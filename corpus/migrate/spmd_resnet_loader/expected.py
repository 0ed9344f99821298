# The shape of pytorch/xla's examples/data_parallel/train_resnet_spmd_data_parallel.py, small: a
# trainer class whose device loader shards every batch on the "data" axis of a 4-D mesh
# (`input_sharding`), a step closure printing the loss, and a shuffling DataLoader. Only the
# images match the spec's rank; torch_xla left the labels replicated.
import os
import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.device_mesh
import torch.distributed.nn.functional
import torch.distributed.tensor
import torch.nn as nn
import builtins
import functools
import itertools
import math
import socket
import warnings
import weakref


def torchtpu_batch_sharding(mesh, partition_spec):
    """A function giving this process's slice, along dim 0, of a batch tensor split over the
    mesh axes `partition_spec[0]` names (a loader's `input_sharding`)."""
    return lambda tensor: torchtpu_shard_batch(tensor, mesh, partition_spec)


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


torchtpu_spmd_processes()


class TrainResNetSpmdDataParallel:
    def __init__(self, batch_size=16, epochs=2):
        self.device = torch.device("tpu:0")
        self.epochs = epochs
        torch.manual_seed(0)
        images, labels = torch.randn(64, 3, 8, 8), torch.randint(0, 10, (64,))
        train_loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(images, labels), batch_size=batch_size, shuffle=True, drop_last=True
        )
        num_devices = int(os.environ.get("WORLD_SIZE", "1"))
        mesh_shape = (num_devices, 1, 1, 1)
        mesh = torchtpu_device_mesh(np.array(range(num_devices)), mesh_shape, axis_names=("data", "dim1", "dim2", "dim3"))
        self.train_device_loader = torchtpu_device_loader(train_loader, self.device, torchtpu_batch_sharding(mesh, ("data", None, None, None)))
        self.model = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 10)
        ).to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
        self.loss_fn = nn.CrossEntropyLoss()

    def _train_update(self, epoch, step, loss):
        print(f"epoch {epoch} step {step} loss {loss.item():.7f}")

    def train_loop_fn(self, epoch):
        self.model.train()
        for step, (data, target) in enumerate(self.train_device_loader):
            self.optimizer.zero_grad()
            output = self.model(data)
            loss = self.loss_fn(output, target)
            loss = torchtpu_backward(loss)
            self.optimizer.step()
            self._train_update(epoch, step, loss)

    def start_training(self):
        for epoch in range(1, self.epochs + 1):
            self.train_loop_fn(epoch)
        torch.accelerator.synchronize()
        state = {k: v.cpu() for k, v in self.model.state_dict().items()}
        print("checksum", f"{sum(v.double().sum().item() for v in state.values()):.8f}")
        torch.save(state, "final.pt")


if __name__ == "__main__":
    TrainResNetSpmdDataParallel().start_training()
