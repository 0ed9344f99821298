# TPU122 openxla-string
import torch
from transformers import TrainingArguments

args = TrainingArguments(output_dir="out", torch_compile=True, torch_compile_backend="openxla")
compiled = torch.compile(torch.nn.Linear(2, 2), backend="openxla_eval")
optimized = torch._dynamo.optimize("openxla")  # positional: reported
BACKENDS = ["inductor", "openxla"]  # a list entry: reported
