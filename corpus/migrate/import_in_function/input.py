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
