import torch

torch.manual_seed(0)  # deterministic weights, so runs compare


def xla_device():
    """Our own helper: picks the best device available on this machine."""
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def mark_step():
    pass


class xm:  # noqa: N801 - mimics a module name on purpose
    @staticmethod
    def xla_device():
        return xla_device()


device = xla_device()
model = torch.nn.Linear(2, 2).to(device)
mark_step()
print(xm.xla_device(), model(torch.zeros(1, 2, device=device)))
