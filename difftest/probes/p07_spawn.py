"""xmp.spawn / torch_xla.launch. Usage: p07_spawn.py MODE  (run_probes.sh runs every mode
in its own process with a timeout; CPU_NUM_DEVICES may be set by the caller)."""
import os, sys, threading
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp


def where():
    return "in-parent-process" if str(os.getpid()) == os.environ.get("PROBE_PARENT_PID") else "in-child-process"


def worker(index, tag, collective=True):
    dev = torch_xla.device()
    t = torch.tensor([float(index + 1)], device=dev)
    s = xm.all_reduce(xm.REDUCE_SUM, t) if collective else t * 1
    torch_xla.sync()
    print(f"WORKER tag={tag} index={index} {where()} pid={os.getpid()} thread={threading.get_ident() % 10000} "
          f"world={xr.world_size()} ordinal={xr.global_ordinal()} "
          f"local={xr.local_ordinal()} dev={dev} hw={xm.xla_device_hw(dev)} "
          f"{'all_reduce_sum' if collective else 'no_collective'}(index+1)={s.cpu().item()} master={xm.is_master_ordinal()}", flush=True)
    return index * 10


def launch_worker(*a):
    print(f"WORKER(launch) called with args={a!r} {where()} world={xr.world_size()} "
          f"ordinal={xr.global_ordinal()} dev={torch_xla.device()}", flush=True)


if __name__ == "__main__":
    os.environ["PROBE_PARENT_PID"] = str(os.getpid())
    mode = sys.argv[1]
    print(f"RESULT env CPU_NUM_DEVICES={os.environ.get('CPU_NUM_DEVICES')!r}", flush=True)
    try:
        if mode == "none":
            r = xmp.spawn(worker, args=("none",), nprocs=None)
        elif mode == "none_nocollective":
            r = xmp.spawn(worker, args=("none_nocollective", False), nprocs=None)
        elif mode == "1":
            r = xmp.spawn(worker, args=("1",), nprocs=1)
        elif mode == "2":
            r = xmp.spawn(worker, args=("2",), nprocs=2)
        elif mode == "none_fork":
            r = xmp.spawn(worker, args=("none_fork",), nprocs=None, start_method="fork")
        elif mode == "1_fork":
            r = xmp.spawn(worker, args=("1_fork",), nprocs=1, start_method="fork")
        elif mode == "2_fork":
            r = xmp.spawn(worker, args=("2_fork",), nprocs=2, start_method="fork")
        elif mode == "launch":
            r = torch_xla.launch(launch_worker, args=("launch",))
        elif mode == "launch_debug_single":
            r = torch_xla.launch(launch_worker, args=("launch_debug_single",), debug_single_process=True)
        elif mode == "after_init":  # runtime already initialised in the parent before spawn
            torch.ones(1, device=torch_xla.device()).cpu()
            r = xmp.spawn(worker, args=("after_init",), nprocs=None)
        elif mode == "after_init_1":
            torch.ones(1, device=torch_xla.device()).cpu()
            r = xmp.spawn(worker, args=("after_init_1",), nprocs=1)
        else:
            raise SystemExit("unknown mode")
        print(f"RESULT spawn[{mode}]: OK -> returned {r!r}", flush=True)
    except BaseException as e:
        msg = (str(e).strip().splitlines() or [""])[0]
        print(f"RESULT spawn[{mode}]: ERROR {type(e).__name__}: {msg[:300]}", flush=True)
