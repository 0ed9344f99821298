# TPU119 stablehlo-export: reported only
import torch_xla
import torch_xla.core.xla_model as xm

torch_xla.save_as_stablehlo(exported, "/tmp/shlo")
text = xm.get_stablehlo([loss])
