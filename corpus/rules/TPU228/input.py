# TPU228 spmd-mark-sharding: a batch held in a name, as a statement with a spec literal naming axes
# for dim 0 only, becomes this process's slice (converted, unsafe);
# parameters, other splits, results used as values and the other annotations are reported
import torch
import torch_xla.distributed.spmd as xs
import torch_xla.distributed.parallel_loader as pl

mesh = xs.get_1d_mesh("data")
model = torch.nn.Linear(16, 4)
xs.mark_sharding(model.weight, mesh, ("data", None))
loader = pl.MpDeviceLoader(data, device, input_sharding=xs.ShardingSpec(mesh, ("data", None)))
for x, y in loader:
    xs.mark_sharding(x, mesh, ("data", None))
    xs.mark_sharding(y, mesh, partition_spec=("data",))
    xs.mark_sharding(y, mesh, ("data",), use_dynamo_custom_op=True)
    xs.mark_sharding(x, mesh, (None, "model"))
    xs.mark_sharding(x, mesh, spec)
    sharded = xs.mark_sharding(x, mesh, ("data", None))
    x = xs.mark_sharding_with_gradients(x, mesh, ("data", None))
    xs.clear_sharding(x)
