# torch_xla SPMD data parallel checkpointed by torch_xla's CheckpointManager, as its docs show it:
# a process group for the manager, a checkpoint every `save_interval` steps with the newest
# `max_to_keep` kept, and a restarted job that restores the last tracked step and trains on.
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.experimental.distributed_checkpoint as xc
import torch_xla.runtime as xr

CHECKPOINT_DIR = "checkpoints"
STEPS = 7


def run_job(mesh, device, stop):
    """One job: build, resume from the newest checkpoint if any, train until `stop`."""
    chkpt_mgr = xc.CheckpointManager(CHECKPOINT_DIR, save_interval=2, max_to_keep=2, chkpt_on_preemption=False)
    torch.manual_seed(len(chkpt_mgr.all_steps()))  # other initial weights on a restart
    model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 4)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    start = 0
    tracked = chkpt_mgr.all_steps()
    if tracked:
        last = max(tracked)
        xc.prime_optimizer(optimizer)
        state_dict = {"model": model.state_dict(), "optim": optimizer.state_dict()}
        chkpt_mgr.restore(last, state_dict)
        model.load_state_dict(state_dict["model"])
        optimizer.load_state_dict(state_dict["optim"])
        start = last + 1
        print(f"resumed from step {last}")
    for step in range(start, stop):
        g = torch.Generator().manual_seed(step)
        x, y = torch.randn(16, 16, generator=g).to(device), torch.randint(0, 4, (16,), generator=g).to(device)
        xs.mark_sharding(x, mesh, ("data", None))
        xs.mark_sharding(y, mesh, ("data",))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.8f}")
        if chkpt_mgr.save(step, {"model": model.state_dict(), "optim": optimizer.state_dict()}):
            print(f"checkpoint at step {step}")
    print(f"tracked steps {chkpt_mgr.all_steps()}")


def main():
    xr.use_spmd()
    dist.init_process_group("gloo", init_method="xla://")
    num_devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(num_devices), (num_devices,), ("data",))
    device = xm.xla_device()
    run_job(mesh, device, stop=4)  # interrupted after step 3 (checkpoints at 0 and 2)
    run_job(mesh, device, stop=STEPS)  # the restarted job resumes from step 2


if __name__ == "__main__":
    main()
