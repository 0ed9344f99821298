# TPU003 unused-noqa: reported by `xla2tpu check` (tests/cli_gate.rs); `migrate` leaves
# every comment as it is, so the unused directive below survives a migration unchanged.
import torch

device = torch.device("tpu")  # noqa: TPU101
