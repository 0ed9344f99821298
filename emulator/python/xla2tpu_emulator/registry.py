"""TorchTPU 0.2.0 operator registry (the same TSV that drives `xla2tpu ops check`).

Row classes: tpu_kernel, composite_implicit, composite_explicit, missing_fallback.
Only `tpu_kernel` ops get a PrivateUse1 registration in the emulator; every
other op reaches the emulated device exactly as it reaches TorchTPU.
"""

import functools

from xla2tpu_emulator import config

# Ops that TorchTPU 0.2.0 registers at AutogradPrivateUse1 (torch-tpu 0.2.0
# wheel on torch 2.15.0, read from the dispatcher; shared/data
# torchtpu_ops_registered.json). Where torch has no autograd kernel of its own
# for one of them (CompositeImplicitAutograd ops that TorchTPU gave a backend
# kernel), the emulator supplies one, so gradients flow as on TorchTPU.
AUTOGRAD_OVERRIDES = (
    "aten::cross_entropy_loss",
    "aten::ctc_loss",
    "aten::ctc_loss.Tensor",
    "aten::fft_fft",
    "aten::fft_fft.out",
    "aten::fft_ifft",
    "aten::fft_ifft.out",
    "aten::fft_irfft",
    "aten::fft_irfft.out",
    "aten::fft_rfft",
    "aten::fft_rfft.out",
    "aten::linear",
    "aten::nll_loss_nd",
    "aten::repeat_interleave.self_Tensor",
    "aten::repeat_interleave.self_int",
    "aten::rms_norm",
    "aten::silu_backward",
)

# Autocast policy. The TorchTPU list says WHICH 135 ops have an
# AutocastPrivateUse1 kernel, not what each does. Policy source: PyTorch's CUDA
# autocast lists (aten/src/ATen/autocast_mode.cpp), restricted to those ops:
# lower_precision_fp ops run in the autocast dtype, promote ops run in the
# widest input type, every other listed op runs in float32 (the CUDA fp32 and
# fp32_set_opt_dtype lists; the listed ops that CUDA does not list, e.g.
# linalg_*, fft_*, max_pool3d, are all float32 ops in PyTorch's CPU list).
# binary_cross_entropy is "banned" under CUDA autocast (it raises); TorchTPU
# registers a kernel for it, so the emulator runs it in float32 instead.
LOWER_PRECISION = frozenset(
    "aten::" + n
    for n in (
        "_convolution.deprecated _convolution conv1d conv1d.padding conv2d"
        " conv2d.padding conv3d conv3d.padding conv_tbc conv_transpose1d"
        " conv_transpose2d.input conv_transpose3d.input convolution prelu"
        " addmm addmv addr matmul einsum mm mv linalg_vecdot linear addbmm"
        " baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell"
        " _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell"
        " _scaled_dot_product_flash_attention scaled_dot_product_attention"
        " _addmm_activation _native_multi_head_attention"
    ).split()
)
PROMOTE = frozenset(
    "aten::" + n
    for n in (
        "addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put"
        " tensordot scatter_add"
    ).split()
)


def _read_rows(path):
  rows = {}
  header_seen = False
  with open(path, encoding="utf-8") as f:
    for line in f:
      line = line.rstrip("\n")
      if not line or line.startswith("#"):
        continue
      cols = line.split("\t")
      if not header_seen and cols[0] == "op":
        header_seen = True
        continue
      while len(cols) < 4:
        cols.append("")
      rows[cols[0]] = (cols[1], cols[2], cols[3])
  return rows


@functools.lru_cache(maxsize=None)
def rows():
  """op -> (class, effective, structured_delegate)."""
  return _read_rows(config.registry_path())


def op_class(name):
  row = rows().get(name)
  return row[0] if row else None


def tpu_kernel_ops():
  return [op for op, (cls, _, _) in rows().items() if cls.endswith("_kernel")]


@functools.lru_cache(maxsize=None)
def autocast_ops():
  out = []
  with open(config.autocast_path(), encoding="utf-8") as f:
    for line in f:
      line = line.strip()
      if line and not line.startswith("#"):
        out.append(line)
  return tuple(out)


def autocast_policy(name):
  if name in LOWER_PRECISION:
    return "lower"
  if name in PROMOTE:
    return "promote"
  return "fp32"
