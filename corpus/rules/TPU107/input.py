# TPU107 xla-save: reported only
import torch
import torch_xla.core.xla_model as xm
import torch_xla.utils.serialization as xser

model = torch.nn.Linear(2, 2)
xm.save(model.state_dict(), "/tmp/model.pt")
xser.save(model.state_dict(), "/tmp/model_ser")
