"""CPU implementations for TorchTPU kernels that have no CPU kernel in torch.

Each function takes the op's arguments as CPU tensors (aliases of the tpu
arguments) and returns CPU results; kernels.make_generic maps them back.
"""

import sys

import torch

from . import report

aten = torch.ops.aten


def _resize_out(out, res):
  if out.shape != res.shape:
    out.resize_(res.shape)
  out.copy_(res)
  return out


def linear_backward(self, grad_output, weight, output_mask):
  gi = gw = gb = None
  if weight.dim() == 1:
    # F.linear(x, w) with a 1-D weight (d_fine's deformable attention): a dot product over
    # the last dimension, so the output has one dimension less than the input.
    g = grad_output.unsqueeze(-1)
    if output_mask[0]:
      gi = g * weight
    if output_mask[1]:
      gw = (g * self).reshape(-1, self.size(-1)).sum(0)
    if output_mask[2]:
      gb = grad_output.sum()
    return gi, gw, gb
  if output_mask[0]:
    gi = grad_output.matmul(weight)
  if output_mask[1] or output_mask[2]:
    g2 = grad_output.reshape(-1, grad_output.size(-1))
    if output_mask[1]:
      gw = g2.t().matmul(self.reshape(-1, self.size(-1)))
    if output_mask[2]:
      gb = g2.sum(0)
  return gi, gw, gb


def _gates(input_gates, hidden_gates, input_bias, hidden_bias):
  g = input_gates + hidden_gates
  if input_bias is not None:
    g = g + input_bias
  if hidden_bias is not None:
    g = g + hidden_bias
  return g


def thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
  g = _gates(input_gates, hidden_gates, input_bias, hidden_bias)
  i, f, c, o = g.chunk(4, dim=1)
  i, f, c, o = i.sigmoid(), f.sigmoid(), c.tanh(), o.sigmoid()
  cy = f * cx + i * c
  hy = o * cy.tanh()
  workspace = torch.cat([i, f, c, o], dim=1)
  return hy, cy, workspace


def thnn_fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias):
  i, f, c, o = workspace.chunk(4, dim=1)
  tcy = cy.tanh()
  gcy = torch.zeros_like(cy) if grad_cy is None else grad_cy.clone()
  if grad_hy is not None:
    gcy = gcy + grad_hy * o * (1 - tcy * tcy)
    go = grad_hy * tcy * o * (1 - o)
  else:
    go = torch.zeros_like(o)
  gi = gcy * c * i * (1 - i)
  gf = gcy * cx * f * (1 - f)
  gc = gcy * i * (1 - c * c)
  grad_gates = torch.cat([gi, gf, gc, go], dim=1)
  grad_cx = gcy * f
  grad_bias = grad_gates.sum(0) if has_bias else None
  return grad_gates, grad_cx, grad_bias


def thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
  ig = input_gates if input_bias is None else input_gates + input_bias
  hg = hidden_gates if hidden_bias is None else hidden_gates + hidden_bias
  ir, iz, in_ = ig.chunk(3, dim=1)
  hr, hz, hn = hg.chunk(3, dim=1)
  r = (ir + hr).sigmoid()
  z = (iz + hz).sigmoid()
  n = (in_ + r * hn).tanh()
  hy = (1 - z) * n + z * hx
  workspace = torch.cat([r, z, n, hx, hn], dim=1)
  return hy, workspace


def thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias):
  r, z, n, hx, hn = workspace.chunk(5, dim=1)
  gz = grad_hy * (hx - n) * z * (1 - z)
  gn = grad_hy * (1 - z) * (1 - n * n)
  gr = gn * hn * r * (1 - r)
  grad_input_gates = torch.cat([gr, gz, gn], dim=1)
  grad_hidden_gates = torch.cat([gr, gz, gn * r], dim=1)
  grad_hx = grad_hy * z
  gib = grad_input_gates.sum(0) if has_bias else None
  ghb = grad_hidden_gates.sum(0) if has_bias else None
  return grad_input_gates, grad_hidden_gates, grad_hx, gib, ghb


def native_norm(self, p=2):
  return torch.linalg.vector_norm(self, 2 if p is None else p)


def native_norm_dim(self, p, dim, keepdim, dtype):
  return torch.linalg.vector_norm(
      self, 2 if p is None else p, dim=dim, keepdim=keepdim, dtype=dtype
  )


def _acc(dtype):
  return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def mm_dtype(self, mat2, out_dtype):
  a = _acc(self.dtype)
  return aten.mm(self.to(a), mat2.to(a)).to(out_dtype)


def mm_dtype_out(self, mat2, out_dtype, *, out):
  return _resize_out(out, mm_dtype(self, mat2, out_dtype))


def bmm_dtype(self, mat2, out_dtype):
  a = _acc(self.dtype)
  return aten.bmm(self.to(a), mat2.to(a)).to(out_dtype)


def bmm_dtype_out(self, mat2, out_dtype, *, out):
  return _resize_out(out, bmm_dtype(self, mat2, out_dtype))


def addmm_dtype(self, mat1, mat2, out_dtype, *, beta=1, alpha=1):
  a = _acc(mat1.dtype)
  return aten.addmm(
      self.to(a), mat1.to(a), mat2.to(a), beta=beta, alpha=alpha
  ).to(out_dtype)


def addmm_dtype_out(self, mat1, mat2, out_dtype, *, beta=1, alpha=1, out):
  return _resize_out(out, addmm_dtype(self, mat1, mat2, out_dtype, beta=beta, alpha=alpha))


def baddbmm_dtype(self, batch1, batch2, out_dtype, *, beta=1, alpha=1):
  a = _acc(batch1.dtype)
  return aten.baddbmm(
      self.to(a), batch1.to(a), batch2.to(a), beta=beta, alpha=alpha
  ).to(out_dtype)


def baddbmm_dtype_out(self, batch1, batch2, out_dtype, *, beta=1, alpha=1, out):
  return _resize_out(
      out, baddbmm_dtype(self, batch1, batch2, out_dtype, beta=beta, alpha=alpha)
  )


def _decomp(name):
  def fn(*args, **kwargs):
    from torch._decomp import decomposition_table  # pylint: disable=import-outside-toplevel

    ns, _, rest = name.partition("::")
    base, _, ov = rest.partition(".")
    op = getattr(getattr(torch.ops, ns), base)
    op = getattr(op, ov or "default")
    return decomposition_table[op](*args, **kwargs)

  return fn


# The dtypes TorchTPU 0.2.0's histc kernel refuses, read from the wheel: HistcHelperOut
# (csrc/ops/histc/histc_aten_kernels.cc in libpywrap_2_15_0_common.so) tests the input's
# ScalarType against two bit masks before it builds anything: complex types fail with
# "expected the first argument not to be complex", Bool and BFloat16 with "not implemented
# for"; every integer and the other floating types go on to the kernel.
_HISTC_REFUSED = (torch.bool, torch.bfloat16)


def _histc_any_dtype(self, bins, lo, hi):
  if self.is_complex():
    raise RuntimeError(f"expected the first argument not to be complex, got {self.dtype}")
  if self.dtype in _HISTC_REFUSED:
    name = str(self.dtype).replace("torch.", "")
    msg = (f"aten::histc is not implemented for {name} on TorchTPU 0.2.0 (its kernel takes integer"
           " and float16/32/64 inputs, not bool or bfloat16): cast the input, e.g. x.float()")
    frame = sys._getframe(2)  # pylint: disable=protected-access
    report.incompatibility("unsupported_dtype", msg, op="aten::histc", frame=frame)
    raise report.reported(RuntimeError(msg))
  if self.is_floating_point():
    return aten.histc(self, bins, lo, hi)
  # TorchTPU takes integers (CUDA too; transformers' MoE routing counts int32 expert ids off
  # the CPU); torch's CPU kernel does not. Counted in float64, exact for these counts.
  return aten.histc(self.double(), bins, lo, hi).to(self.dtype)


def histc(self, bins=100, min=0, max=0):  # pylint: disable=redefined-builtin
  return _histc_any_dtype(self, bins, min, max)


def histc_out(self, bins=100, min=0, max=0, *, out):  # pylint: disable=redefined-builtin
  return _resize_out(out, _histc_any_dtype(self, bins, min, max))


IMPLS = {
    "aten::histc": histc,
    "aten::histc.out": histc_out,
    "aten::linear_backward": linear_backward,
    "aten::_thnn_fused_lstm_cell": thnn_fused_lstm_cell,
    "aten::_thnn_fused_lstm_cell_backward_impl": thnn_fused_lstm_cell_backward_impl,
    "aten::_thnn_fused_gru_cell": thnn_fused_gru_cell,
    "aten::_thnn_fused_gru_cell_backward": thnn_fused_gru_cell_backward,
    "aten::native_norm": native_norm,
    "aten::native_norm.ScalarOpt_dim_dtype": native_norm_dim,
    "aten::mm.dtype": mm_dtype,
    "aten::mm.dtype_out": mm_dtype_out,
    "aten::bmm.dtype": bmm_dtype,
    "aten::bmm.dtype_out": bmm_dtype_out,
    "aten::addmm.dtype": addmm_dtype,
    "aten::addmm.dtype_out": addmm_dtype_out,
    "aten::baddbmm.dtype": baddbmm_dtype,
    "aten::baddbmm.dtype_out": baddbmm_dtype_out,
    "aten::_fused_rms_norm_backward": _decomp("aten::_fused_rms_norm_backward"),
    "aten::_fused_dropout": _decomp("aten::_fused_dropout"),
}
