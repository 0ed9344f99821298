# TPU117 xla-tracing-helpers: reported only
from torch_xla.experimental.scan_layers import scan_layers
from torch_xla.experimental.fori_loop import fori_loop
import torch_xla.experimental.eager as eager

hidden = scan_layers(layers, hidden)
total = fori_loop(0, 10, body, init)
if eager.is_eager_mode():
    print("eager")
