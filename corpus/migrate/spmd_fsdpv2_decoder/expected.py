# torch_xla FSDPv2 (SPMD fully sharded data parallel) fine-tune of a small decoder, the shape of
# pytorch/xla's examples/fsdp/train_decoder_only_fsdp_v2.py: one process, a global mesh over every
# device (FSDPv2 reads it: no mesh= here), each decoder block wrapped by the auto-wrap policy, the
# batch sharded on the "fsdp" axis, the weights read back whole from the wrapper's state_dict.
import os
import functools
import math

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint.state_dict
import torch.distributed.device_mesh
import torch.distributed.fsdp
import torch.distributed.fsdp.wrap
import torch.distributed.nn.functional
import torch.distributed.tensor
import torch.nn as nn
import torch.nn.functional as F
import builtins
import itertools
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


def torchtpu_full_state_dict(module):
    """The sharded module's state dict as full tensors with the model's own keys. Every
    process must call it: it gathers the shards."""
    options = torch.distributed.checkpoint.state_dict.StateDictOptions(
        full_state_dict=True
    )
    return torch.distributed.checkpoint.state_dict.get_model_state_dict(
        module, options=options
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


def torchtpu_global_mesh(mesh=None):
    """The program's global mesh: `mesh` when given (kept for later readers, such as FSDPv2
    without `mesh=`), else the one kept; None until set."""
    if mesh is not None:
        torchtpu_global_mesh.mesh = mesh
    return getattr(torchtpu_global_mesh, "mesh", None)


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


VOCAB, HIDDEN, HEADS, FFN, LAYERS, SEQ = 64, 32, 4, 128, 3, 16


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(HIDDEN)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)
        self.ln2 = nn.LayerNorm(HIDDEN)
        self.up = nn.Linear(HIDDEN, FFN)
        self.down = nn.Linear(FFN, HIDDEN)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, HEADS, h // HEADS).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(h // HEADS)
        mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(y)
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class TinyDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.pos = nn.Embedding(SEQ, HIDDEN)
        self.layers = nn.ModuleList([DecoderLayer() for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.embed(ids) + self.pos(pos)
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(self.norm(x))
        return (logits,)  # a tuple, as Hugging Face models return: FSDPv2 needs shard_output


def batches(steps=4, global_bs=8):
    g = torch.Generator().manual_seed(1234)
    for _ in range(steps):
        data = torch.randint(0, VOCAB, (global_bs, SEQ + 1), generator=g)
        yield data[:, :-1].contiguous(), data[:, 1:].contiguous()


def shard_output(output, mesh):
    # FSDPv2 calls it on every wrapped block too (their output is a tensor), then on the root's tuple.
    real = output[0] if isinstance(output, tuple) else output
    real = torchtpu_shard_batch(real, mesh, ("fsdp", None, None))


def main():
    torchtpu_spmd_processes()
    n = int(os.environ.get("WORLD_SIZE", "1"))
    mesh = torchtpu_device_mesh(np.arange(n), (n, 1), axis_names=("fsdp", "tensor"))
    torchtpu_global_mesh(mesh)
    device = torch.device("tpu:0")
    torch.manual_seed(0)
    model = TinyDecoder()
    policy = functools.partial(torch.distributed.fsdp.wrap.transformer_auto_wrap_policy, transformer_layer_cls={DecoderLayer})
    model = torchtpu_fsdp2(model, shard_output=shard_output, auto_wrap_policy=policy)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step, (x, y) in enumerate(batches()):
        x, y = x.to(device), y.to(device)
        x = torchtpu_shard_batch(x, mesh, ("fsdp", None))
        y = torchtpu_shard_batch(y, mesh, ("fsdp", None))
        optimizer.zero_grad()
        logits = model(x)[0]
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        loss = torchtpu_backward(loss)
        optimizer.step()
        print(f"step {step} loss {loss.item():.8f}")
    state = {k.replace("_orig_module.", ""): v.cpu() for k, v in torchtpu_full_state_dict(model).items()}
    print(f"checksum {sum(v.double().sum().item() for v in state.values()):.6f}")


if __name__ == "__main__":
    main()
