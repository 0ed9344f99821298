import torch


def move(batch, device):
    if device.type == "tpu":
        return {k: v.to(device, non_blocking=True) for k, v in batch.items()}
    return {k: v.to(device) for k, v in batch.items()}


def describe(t: torch.Tensor) -> str:
    if t.device.type == "tpu":
        return "on TPU"
    return f"on {t.device}"


x = torch.zeros(3).to("tpu")
y = torch.ones(3, device=torch.device("tpu:0"))
print(describe(x), describe(y), move({"a": x}, torch.device("tpu:0")))
print(describe(torch.ones(2)), move({"b": torch.ones(1)}, torch.device("cpu")))
