"""Profiler server, eager mode, persistent cache. Usage: p13_misc.py server|eager|cache|cache_late"""
import os, socket, sys, tempfile, time
from _probe import check, note
mode = sys.argv[1]

if mode == "cache":  # must be called before the runtime is initialised
    import torch, torch_xla
    import torch_xla.runtime as xr
    d = tempfile.mkdtemp()
    check("xr.initialize_cache(path) before any device use", xr.initialize_cache, d)
    dev = torch_xla.device()
    (torch.arange(4.0, device=dev) * 3).sum().cpu()
    torch_xla.sync()
    note("  files in cache dir after 1 graph", sorted(os.listdir(d))[:3] + (["..."] if len(os.listdir(d)) > 3 else []))
    note("  count", len(os.listdir(d)))
    check("xr.get_num_cached_compilation_graph()", xr.get_num_cached_compilation_graph)
    check("xr.initialize_cache again (second call)", xr.initialize_cache, d)
elif mode == "cache_late":
    import torch, torch_xla
    import torch_xla.runtime as xr
    torch.ones(1, device=torch_xla.device()).cpu()
    check("xr.initialize_cache(path) AFTER runtime init", xr.initialize_cache, tempfile.mkdtemp())
elif mode == "server":
    import torch, torch_xla
    import torch_xla.debug.profiler as xp
    port = 9012
    srv = check(f"xp.start_server({port})", xp.start_server, port)
    time.sleep(0.5)
    s = socket.socket()
    s.settimeout(2)
    note("  port accepts TCP connection on 127.0.0.1", s.connect_ex(("127.0.0.1", port)) == 0)
    s.close()
    check("xp.start_server(port) second time", xp.start_server, port)
    with xp.Trace("probe_trace"):
        torch.ones(2, device=torch_xla.device()).cpu()
    note("xp.Trace context", "ran")
    check("xp.trace_detached exists", lambda: callable(xp.trace_detached))
elif mode == "eager":
    import torch, torch_xla
    import torch_xla.debug.metrics as met
    check("torch_xla.experimental.eager_mode(True)", torch_xla.experimental.eager_mode, True)
    check("torch_xla.experimental.is_eager_mode()", torch_xla.experimental.is_eager_mode)
    dev = torch_xla.device()
    met.clear_all()
    a = torch.ones(3, device=dev)
    b = a * 2
    c = b + 1
    note("graph executions (ExecuteComputation) after 3 ops w/o sync, eager on", met.counter_value("ExecuteComputation"))
    check("result", lambda: c.cpu().tolist())
    check("torch_xla.experimental.eager_mode(False)", torch_xla.experimental.eager_mode, False)
    met.clear_all()
    d = c * 5
    e = d + 1
    note("graph executions after 2 ops w/o sync, eager off", met.counter_value("ExecuteComputation"))
    check("result", lambda: e.cpu().tolist())
    check("torch_xla.experimental.eager_mode_context", lambda: hasattr(torch_xla.experimental, "eager_mode_context"))
