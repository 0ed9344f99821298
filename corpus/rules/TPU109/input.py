# TPU109 xla-serialization: reported only
import torch
import torch_xla.utils.serialization as xser

model = torch.nn.Linear(2, 2)
xser.save(model.state_dict(), "/tmp/model_ser")
state = xser.load("/tmp/model_ser")
