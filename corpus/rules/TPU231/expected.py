# TPU231 spmd-global-loss: in a file that shards its batch, the loss after `backward` becomes the
# mean over the processes; a loss that is not a bare name is reported
import torch
import torch.distributed as dist


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


def train(model, mesh, batches, optimizer, scaler):
    for x, y in batches:
        x = torchtpu_shard_batch(x, mesh, ("data", None))
        y = torchtpu_shard_batch(y, mesh, ("data",))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss = torchtpu_backward(loss, retain_graph=False)  # keeps its comment
        print(loss.item())
        scaler.scale(loss).backward()
        optimizer.step()
