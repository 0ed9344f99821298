"""Device names spelled as strings all over a small training + eval script."""
import torch, torch.distributed as dist
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

DEVICE = "xla"


def to_device(x, dev="xla"):
    return x.to(dev)


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def main():
    # CPU-side coordination (metrics, barriers) over gloo; ranks come from the XLA runtime
    dist.init_process_group("gloo", init_method="xla://")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = torch.device(f"xla:{xr.global_ordinal()}")

    model = make_model().to(DEVICE)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(5)
    for step in range(3):
        x = to_device(torch.randn(6, 4, generator=g))
        y = to_device(torch.randint(0, 2, (6,), generator=g))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss={loss.item():.6f} device={loss.device}")

    compiled = torch.compile(model, backend="openxla")
    with torch.no_grad():
        x = torch.randn(3, 4, generator=g).to(local)
        out = compiled(x)
    # average a CPU metric over the job
    metric = torch.tensor([out.sum().item()])
    dist.all_reduce(metric)
    metric /= world
    print(f"rank {rank} of {world} eval on {out.device}: metric={metric.item():.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
