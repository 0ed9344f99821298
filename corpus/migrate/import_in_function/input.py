import torch


def pick_device(use_tpu: bool) -> torch.device:
    if use_tpu:
        import torch_xla.core.xla_model as xm

        return xm.xla_device()
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def flush(use_tpu: bool) -> None:
    if use_tpu:
        import torch_xla

        torch_xla.sync()


def save_checkpoint(model, path, use_tpu=False):
    if use_tpu:
        import torch_xla.core.xla_model as xm

        xm.save(model.state_dict(), path)
    else:
        torch.save(model.state_dict(), path)


if __name__ == "__main__":
    device = pick_device(use_tpu=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to(device)
    loss = model(torch.randn(3, 4).to(device)).pow(2).sum()
    loss.backward()
    flush(use_tpu=True)
    save_checkpoint(model, "model.pt", use_tpu=True)
    print(device, pick_device(use_tpu=False), f"loss={loss.item():.6f}")
