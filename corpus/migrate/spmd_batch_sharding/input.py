# torch_xla SPMD data parallel, the shape of pytorch/xla's
# examples/data_parallel/train_resnet_spmd_data_parallel.py: one process drives every device, the
# global batch is annotated on the "data" axis and the partitioner averages the gradients. The
# gradients are clipped: the global norm, which the migration must see after averaging.
import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

GLOBAL_BATCH, STEPS = 16, 5

xr.use_spmd()


def batches():
    g = torch.Generator().manual_seed(1234)
    for _ in range(STEPS):
        yield torch.randn(GLOBAL_BATCH, 16, generator=g), torch.randint(0, 4, (GLOBAL_BATCH,), generator=g)


def main():
    device = xm.xla_device()
    num_devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(num_devices), (num_devices, 1), ("data", "model"))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for step, (data, target) in enumerate(batches()):
        data, target = data.to(device), target.to(device)
        xs.mark_sharding(data, mesh, ("data", None))
        xs.mark_sharding(target, mesh, ("data",))
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.8f}")
    state = {k: v.cpu() for k, v in model.state_dict().items()}
    print("checksum", f"{sum(v.double().sum().item() for v in state.values()):.10f}")
    torch.save(state, "final.pt")


if __name__ == "__main__":
    main()
