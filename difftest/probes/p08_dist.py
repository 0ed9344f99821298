"""torch.distributed with the "xla" backend: standalone, inside xmp.spawn, DDP.
Usage: p08_dist.py standalone|standalone_plain_import|standalone_env|spawned|ddp"""
import os, sys
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
if sys.argv[1:] != ["standalone_plain_import"]:  # that mode checks `import torch_xla` alone is enough
    import torch_xla.distributed.xla_backend  # registers the "xla" backend
    import torch_xla.distributed.xla_multiprocessing as xmp
from _probe import check, note


def body(tag):
    check(f"[{tag}] dist.init_process_group('xla', init_method='xla://')",
          dist.init_process_group, "xla", init_method="xla://")
    check(f"[{tag}] dist.is_initialized()", dist.is_initialized)
    check(f"[{tag}] dist.get_world_size()", dist.get_world_size)
    check(f"[{tag}] dist.get_rank()", dist.get_rank)
    check(f"[{tag}] dist.get_backend()", dist.get_backend)
    dev = torch_xla.device()
    t = torch.tensor([1.0, 2.0], device=dev)
    check(f"[{tag}] dist.all_reduce(t)", lambda: (dist.all_reduce(t), t.cpu().tolist())[1])
    check(f"[{tag}] dist.broadcast(t, 0)", lambda: (dist.broadcast(t, 0), t.cpu().tolist())[1])
    outs = [torch.zeros(2, device=dev)]
    check(f"[{tag}] dist.all_gather([o], t)", lambda: (dist.all_gather(outs, t), [o.cpu().tolist() for o in outs])[1])
    check(f"[{tag}] dist.barrier()", dist.barrier)


def ddp(tag):
    from torch.nn.parallel import DistributedDataParallel as DDP
    if not dist.is_initialized():
        dist.init_process_group("xla", init_method="xla://")
    dev = torch_xla.device()
    torch.manual_seed(0)
    m = nn.Linear(4, 2).to(dev)
    dm = check(f"[{tag}] DDP(model, gradient_as_bucket_view=True)", lambda: DDP(m, gradient_as_bucket_view=True))
    if dm is None:
        return
    opt = torch.optim.SGD(dm.parameters(), lr=0.01)
    x = torch.arange(8.0).reshape(2, 4).to(dev)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = dm(x).pow(2).mean()
        loss.backward()
        opt.step()
        torch_xla.sync()
        losses.append(round(loss.item(), 6))
    note(f"[{tag}] DDP 3-step losses", losses)
    torch.manual_seed(0)
    ref = nn.Linear(4, 2)
    ro = torch.optim.SGD(ref.parameters(), lr=0.01)
    xc = torch.arange(8.0).reshape(2, 4)
    rl = []
    for _ in range(3):
        ro.zero_grad(); l = ref(xc).pow(2).mean(); l.backward(); ro.step(); rl.append(round(l.item(), 6))
    note(f"[{tag}] plain CPU losses", rl)


def spawned_worker(index):
    body("spawned")
    ddp("spawned-ddp")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "standalone":
        body("standalone")
    elif mode == "standalone_plain_import":
        body("standalone_plain_import")
    elif mode == "standalone_env":  # the classic env:// variables set by hand
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29533")
        os.environ.setdefault("RANK", "0"); os.environ.setdefault("WORLD_SIZE", "1")
        body("standalone_env")
    elif mode == "spawned":
        xmp.spawn(spawned_worker, args=())
    elif mode == "ddp":
        ddp("ddp-standalone")
