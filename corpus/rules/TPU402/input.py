# TPU402 xla-profiler: reported only
import torch_xla.debug.profiler as xp

server = xp.start_server(9012)
xp.trace_detached("localhost:9012", "/tmp/trace", duration_ms=1000)
