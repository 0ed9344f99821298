import torch
import torch_xla.core.xla_model as xm


def move(batch, device):
    if device.type == "xla":
        return {k: v.to(device, non_blocking=True) for k, v in batch.items()}
    return {k: v.to(device) for k, v in batch.items()}


def describe(t: torch.Tensor) -> str:
    if t.device.type == "xla":
        return "on TPU"
    return f"on {t.device}"


x = torch.zeros(3).to("xla")
y = torch.ones(3, device=torch.device("xla:0"))
print(describe(x), describe(y), move({"a": x}, xm.xla_device()))
print(describe(torch.ones(2)), move({"b": torch.ones(1)}, torch.device("cpu")))
