# TPU232 xla-fsdp-wrap-policy: in a file wrapping with FSDPv2, torch_xla's policies become PyTorch's
import os
import functools

import builtins
import itertools
import socket
import torch
import torch.distributed as dist
import torch.distributed.fsdp
import torch.distributed.fsdp.wrap
import torch.distributed.nn.functional
import torch.distributed.tensor
import warnings
import weakref


def torchtpu_fsdp2(
    module, *, mesh=None, shard_output=None, auto_wrap_policy=None, extra_data_axis=None
):
    """`module` on the chip, sharded by FSDP2 (`fully_shard`) over the mesh's "fsdp" axis (HSDP
    with `extra_data_axis`): each block the auto-wrap policy picks, asked as FSDPv2 asked it
    (children first, with the count of parameters not yet wrapped), then the root.

    - `shard_output` has nothing to do: each process's output is its slice of the batch.
    - Build the optimizer after this call: FSDP2 replaces the parameters.
    - The result is the model itself: it has no `.module`, and its state-dict keys carry no
      `_orig_module.`; `model.state_dict()` holds this process's shards (DTensors).
    """
    torchtpu_spmd_processes()
    mesh = torchtpu_global_mesh() if mesh is None else mesh
    if mesh is None:
        raise ValueError(
            "FSDPv2 without a mesh: pass mesh= or set the global mesh first"
        )
    names = tuple(mesh.mesh_dim_names or ())
    axes = ("fsdp",) if extra_data_axis is None else (extra_data_axis, "fsdp")
    if any(axis not in names for axis in axes):
        raise ValueError(
            f"FSDPv2 shards over the mesh axes {axes}; the mesh has {names}"
        )
    others = [n for n in names if n not in axes and mesh.size(names.index(n)) > 1]
    if others:
        raise NotImplementedError(
            f"mesh axes {others} besides {axes}: FSDP2 shards over {axes} only; split weights over"
            " other axes with DTensor (parallelize_module) on mesh[...] and pass fully_shard the rest"
        )
    if names != axes:
        mesh = mesh[axes if len(axes) > 1 else axes[0]]
    # `.to` replaces the parameters: TorchTPU refuses FSDP2's in-place move.
    module = module.to("tpu")

    def wrap(m, root):
        count = sum(p.numel() for p in m.parameters())
        if auto_wrap_policy is None or not auto_wrap_policy(m, True, count):
            return 0
        wrapped = sum(wrap(child, False) for child in m.children())
        if not root and auto_wrap_policy(m, False, count - wrapped):
            torch.distributed.fsdp.fully_shard(m, mesh=mesh)
            return count
        return wrapped

    wrap(module, True)
    torch.distributed.fsdp.fully_shard(module, mesh=mesh)
    return module


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


def torchtpu_global_mesh(mesh=None):
    """The program's global mesh: `mesh` when given (kept for later readers, such as FSDPv2
    without `mesh=`), else the one kept; None until set."""
    if mesh is not None:
        torchtpu_global_mesh.mesh = mesh
    return getattr(torchtpu_global_mesh, "mesh", None)


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


policy = functools.partial(torch.distributed.fsdp.wrap.transformer_auto_wrap_policy, transformer_layer_cls={Block})
big = functools.partial(torch.distributed.fsdp.wrap.size_based_auto_wrap_policy, min_num_params=10_000)
model = torchtpu_fsdp2(model, mesh=mesh, auto_wrap_policy=policy)
other = torchtpu_fsdp2(other, mesh=mesh, auto_wrap_policy=torch.distributed.fsdp.wrap.always_wrap_policy)
