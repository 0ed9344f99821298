# TPU228 spmd-mark-sharding: a batch held in a name, as a statement with a spec literal naming axes
# for dim 0 only, becomes this process's slice (converted, unsafe);
# parameters, other splits, results used as values and the other annotations are reported
import torch
import torch_xla.distributed.spmd as xs


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


mesh = xs.get_1d_mesh("data")
model = torch.nn.Linear(16, 4)
xs.mark_sharding(model.weight, mesh, ("data", None))
loader = torchtpu_device_loader(data, device, torchtpu_batch_sharding(mesh, ("data", None)))
for x, y in loader:
    x = torchtpu_shard_batch(x, mesh, ("data", None))
    y = torchtpu_shard_batch(y, mesh, ("data",))
    xs.mark_sharding(y, mesh, ("data",), use_dynamo_custom_op=True)
    xs.mark_sharding(x, mesh, (None, "model"))
    xs.mark_sharding(x, mesh, spec)
    sharded = xs.mark_sharding(x, mesh, ("data", None))
    x = xs.mark_sharding_with_gradients(x, mesh, ("data", None))
    xs.clear_sharding(x)
