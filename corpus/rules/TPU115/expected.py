# TPU115 cpu-device-transfer: reported only
import torch_xla.core.xla_model as xm

outputs = xm._maybe_convert_to_cpu(outputs)
batch = xm.send_cpu_data_to_device(batch, device)
