"""Tensor basics on the emulated device, checked against CPU."""

import io

import pytest
import torch
import torch.nn.functional as F

from xla2tpu_emulator import report


def same(a, b, tol=0.0):
  a = a.cpu() if isinstance(a, torch.Tensor) else a
  if isinstance(b, torch.Tensor):
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    if tol:
      torch.testing.assert_close(a, b, atol=tol, rtol=tol)
    else:
      assert torch.equal(a, b), (a, b)
  else:
    assert a == b


@pytest.fixture
def xs():
  g = torch.Generator().manual_seed(0)
  x = torch.randn(5, 4, generator=g)
  return x, x.to("tpu")


def test_device_and_methods():
  t = torch.ones(2, device="tpu")
  assert t.device == torch.device("tpu", 0)
  assert t.is_tpu and not torch.ones(1).is_tpu
  assert torch.ones(1).tpu().device.type == "tpu"
  m = torch.nn.Linear(2, 2).tpu()
  assert m.weight.device.type == "tpu"
  assert torch.accelerator.current_accelerator().type == "tpu"


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.view(20),
        lambda x: x.t(),
        lambda x: x[1:3, ::2],
        lambda x: x.unsqueeze(0).permute(2, 0, 1).contiguous(),
        lambda x: x[:1].expand(3, 4),
        lambda x: x.reshape(2, 10),
        lambda x: x.flip(0),
        lambda x: x.diagonal(),
        lambda x: x.unfold(0, 2, 1),
        lambda x: x.split(2)[1],
        lambda x: x.chunk(2, 1)[0],
        lambda x: torch.view_as_real(x.to(torch.complex64)),
    ],
)
def test_views(xs, fn):
  x, t = xs
  same(fn(t), fn(x))


def test_views_share_memory(xs):
  x, t = xs
  t = t.clone()
  v = t[1:3]
  v.fill_(7.0)
  assert t[1:3].cpu().eq(7.0).all()
  x2 = x.clone()
  x2[1:3] = 7.0
  same(t, x2)


def test_inplace_and_out(xs):
  x, t = xs
  a, b = t.clone(), x.clone()
  a.add_(1).mul_(2).clamp_(max=3)
  b.add_(1).mul_(2).clamp_(max=3)
  same(a, b)
  o = torch.empty(0, device="tpu")
  torch.mul(t, 2, out=o)  # out= that must grow
  same(o, x * 2)
  o2 = torch.empty(5, 4, device="tpu")
  r = torch.add(t, t, out=o2)
  assert r is o2
  same(o2, x + x)
  idx = torch.tensor([0, 2])
  a[idx.tpu()] = 5.0
  b[idx] = 5.0
  same(a, b)
  a.resize_(40)  # grows the storage
  assert a.shape == (40,)
  same(a[:20], b.reshape(-1))


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int64,
              torch.int32, torch.bool, torch.uint8]
)
def test_dtype_casts(xs, dtype):
  x, t = xs
  same(t.to(dtype), x.to(dtype))


def test_cpu_tpu_copies(xs):
  x, t = xs
  back = t.cpu()
  assert back.device.type == "cpu"
  same(back, x)
  c = torch.zeros(5, 4)
  c.copy_(t)
  same(c, x)
  d = torch.zeros(5, 4, device="tpu")
  d.copy_(x)
  same(d, x)
  same(t.to("cpu", torch.float64), x.double())
  same(torch.tensor([1, 2, 3], device="tpu"), torch.tensor([1, 2, 3]))
  same(torch.from_numpy(x.numpy()).to("tpu"), x)


def test_indexing(xs):
  x, t = xs
  same(t[t > 0], x[x > 0])
  same(t[torch.tensor([0, 3]).tpu()], x[torch.tensor([0, 3])])
  same(t.gather(1, torch.zeros(5, 1, dtype=torch.long).tpu()),
       x.gather(1, torch.zeros(5, 1, dtype=torch.long)))
  same(torch.nonzero(t > 0), torch.nonzero(x > 0))
  same(t.masked_fill(t > 0, 1.0), x.masked_fill(x > 0, 1.0))
  same(torch.where(t > 0, t, 0.0), torch.where(x > 0, x, 0.0))
  same(t.index_select(0, torch.tensor([4, 0]).tpu()), x.index_select(0, torch.tensor([4, 0])))
  z = torch.zeros(3, device="tpu").scatter_add(
      0, torch.tensor([0, 1, 0]).tpu(), torch.ones(3, device="tpu"))
  same(z, torch.tensor([2.0, 1.0, 0.0]))


def test_sorting(xs):
  x, t = xs
  same(t.sort(dim=1).values, x.sort(dim=1).values)
  same(t.argsort(dim=0), x.argsort(dim=0))
  same(t.topk(2).values, x.topk(2).values)
  same(torch.unique(torch.tensor([3, 1, 3]).tpu()), torch.tensor([1, 3]))


def test_reductions(xs):
  x, t = xs
  for fn in (
      lambda v: v.sum(0), lambda v: v.mean(), lambda v: v.max(1).values,
      lambda v: v.argmax(), lambda v: v.std(0), lambda v: v.var(),
      lambda v: v.norm(), lambda v: v.cumsum(0), lambda v: v.prod(1),
      lambda v: v.amin(0), lambda v: v.logsumexp(1), lambda v: v.softmax(-1),
      lambda v: v.any(), lambda v: (v > 0).all(),
  ):
    same(fn(t), fn(x), tol=1e-6)


def test_nn_functional(xs):
  x, t = xs
  same(F.layer_norm(t, (4,)), F.layer_norm(x, (4,)), tol=1e-6)
  same(F.gelu(t), F.gelu(x))
  same(F.embedding(torch.tensor([1, 0]).tpu(), t), F.embedding(torch.tensor([1, 0]), x))
  w = torch.ones(1, 1, 2, 2)
  same(F.conv2d(t.view(1, 1, 5, 4), w.tpu()), F.conv2d(x.view(1, 1, 5, 4), w), tol=1e-6)
  same(F.max_pool2d(t.view(1, 1, 5, 4), 2), F.max_pool2d(x.view(1, 1, 5, 4), 2))
  same(t @ t.t(), x @ x.t(), tol=1e-5)


def test_sdpa_forward_backward():
  g = torch.Generator().manual_seed(1)
  q, k, v = (torch.randn(2, 2, 6, 8, generator=g) for _ in range(3))
  mask = torch.randn(6, 6, generator=g)
  ref = [t.clone().requires_grad_() for t in (q, k, v)]
  dev = [t.tpu().requires_grad_() for t in (q, k, v)]
  out_c = F.scaled_dot_product_attention(*ref, attn_mask=mask)
  out_t = F.scaled_dot_product_attention(*dev, attn_mask=mask.tpu())
  same(out_t, out_c, tol=1e-5)
  out_c.sum().backward()
  out_t.sum().backward()
  for a, b in zip(dev, ref):
    same(a.grad, b.grad, tol=1e-5)
  causal = F.scaled_dot_product_attention(q.tpu(), k.tpu(), v.tpu(), is_causal=True)
  same(causal, F.scaled_dot_product_attention(q, k, v, is_causal=True), tol=1e-5)
  assert report.OP_COUNTS.get(
      "aten::_scaled_dot_product_fused_attention_overrideable", 0) > 0


def test_host_syncs_counted(xs):
  _, t = xs
  before = dict(report.HOST_SYNCS)
  t[0, 0].item()  # marker: item-sync
  t.tolist()
  s = repr(t)
  assert "device='tpu:0'" in s
  kinds = {k[0] for k, n in report.HOST_SYNCS.items() if n > before.get(k, 0)}
  assert {"item", "tolist", "print"} <= kinds
  lines = {k[2] for k in report.HOST_SYNCS if k[0] == "item" and k[1] == __file__}
  assert any(isinstance(n, int) for n in lines)


def test_an_output_size_read_from_the_chip_is_a_host_sync():
  t = torch.tensor([1.0, -2.0, 3.0, -4.0]).tpu()
  counted = lambda: sum(n for k, n in report.HOST_SYNCS.items() if k[0] == "output size")  # noqa: E731
  before = counted()
  torch.nonzero(t > 0)
  assert counted() == before + 1
  assert t[t > 0].shape == (2,)  # the mask's count is read to size the result
  assert counted() == before + 2
  t[t < 0] = 0.0  # keeps the shape: nothing to read
  torch.where(t > 0, t, 0.0)
  assert counted() == before + 2
  lines = {k[2] for k in report.HOST_SYNCS if k[0] == "output size" and k[1] == __file__}
  assert lines, "counted at this file's lines"


def test_numpy_on_tpu_raises_like_torch(xs, capture_report):
  _, t = xs
  with pytest.raises(TypeError, match="can't convert tpu:0 device type tensor to numpy"):
    t.numpy()
  kinds = [e["kind"] for e in capture_report() if e["event"] == "incompatibility"]
  assert "numpy_on_device" in kinds


def test_save_and_load(xs, tmp_path):
  x, t = xs
  path = tmp_path / "ckpt.pt"
  torch.save({"w": t, "n": 3}, path)
  cpu = torch.load(path, map_location="cpu")
  same(cpu["w"], x)
  back = torch.load(path)
  assert back["w"].device.type == "tpu"
  same(back["w"], x)
  on_tpu = torch.load(path, map_location="tpu")
  assert on_tpu["w"].device.type == "tpu"
  buf = io.BytesIO()
  torch.save(torch.nn.Linear(2, 2).tpu().state_dict(), buf)
  assert any(k[0] == "save" for k in report.HOST_SYNCS)


def test_device_rng_differs_from_cpu_and_is_deterministic():
  torch.manual_seed(123)
  a = torch.randn(8, device="tpu").cpu()
  torch.manual_seed(123)
  b = torch.randn(8, device="tpu").cpu()
  torch.manual_seed(123)
  c = torch.randn(8)
  assert torch.equal(a, b)
  assert not torch.allclose(a, c)
  torch.manual_seed(123)
  d = F.dropout(torch.ones(1000, device="tpu"), 0.5)
  torch.manual_seed(123)
  e = F.dropout(torch.ones(1000, device="tpu"), 0.5)
  assert torch.equal(d.cpu(), e.cpu())
  # The CPU stream is untouched by device random ops.
  torch.manual_seed(5)
  ref = torch.randn(3)
  torch.manual_seed(5)
  torch.randn(100, device="tpu")
  assert torch.equal(torch.randn(3), ref)


def test_storage_resize_and_pin_memory():
  t = torch.arange(4.0, device="tpu")
  st = t.untyped_storage()
  st.resize_(0)
  assert t.untyped_storage().nbytes() == 0
  st.resize_(16)
  t.copy_(torch.arange(4.0))
  same(t, torch.arange(4.0))
  p = torch.ones(3).pin_memory()
  assert p.is_pinned()
  same(p.to("tpu", non_blocking=True), torch.ones(3))


def test_device_generator_objects():
  g = torch.Generator(device="tpu").manual_seed(3)
  a = torch.randn(4, device="tpu", generator=g).cpu()
  g2 = torch.Generator(device="tpu").manual_seed(3)
  assert torch.equal(torch.randn(4, device="tpu", generator=g2).cpu(), a)
  assert isinstance(torch.default_generator, torch.Generator)
  assert isinstance(g, torch.Generator)
  with pytest.raises(RuntimeError, match="Device index 1 is out of bounds"):
    torch.Generator(device="tpu:1")


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.bfloat16])
def test_scalar_overloads_through_composites(dtype):
  """remainder.Scalar and friends are C++ composites over a Tensor_out kernel: the scalar
  arrives as a wrapped number (transformers' vision_utils and canine hashing use `x % n`)."""
  c = torch.arange(1, 7).to(dtype)
  t = c.to("tpu")
  for f in (lambda x: x % 4, lambda x: x % 2.5, lambda x: torch.fmod(x, 3), lambda x: 5 - x,
            lambda x: 2**x, lambda x: x.clone().remainder_(3),
            lambda x: torch.div(x, 2, rounding_mode="floor")):
    same(f(t), f(c))


def test_histc_takes_the_dtypes_the_wheels_kernel_takes(capture_report):
  """TorchTPU 0.2.0's histc kernel (HistcHelperOut in the wheel) takes integers, which
  transformers' MoE routing counts off the CPU and torch's CPU kernel cannot: counted exactly,
  nothing reported. It refuses bool and bfloat16, and so does the emulator, at the user's line."""
  ids = torch.tensor([0, 1, 1, 3, 2, 3, 3], dtype=torch.int32)
  h = torch.histc(ids.to("tpu"), bins=4, min=0, max=3)
  same(h, torch.tensor([1, 2, 1, 3], dtype=torch.int32))
  same(torch.histc(ids.long().to("tpu"), bins=4, min=0, max=3), torch.tensor([1, 2, 1, 3]))
  same(torch.histc(ids.float().to("tpu"), bins=4, min=0, max=3), torch.histc(ids.float(), bins=4, min=0, max=3))
  assert capture_report() == [] or all(e.get("event") not in ("incompatibility", "warning") for e in capture_report())
  for dtype in (torch.bfloat16, torch.bool):
    with pytest.raises(RuntimeError, match="not implemented for"):
      torch.histc(ids.to(dtype).to("tpu"), bins=4, min=0, max=3)
  refused = [e for e in capture_report() if e.get("event") == "incompatibility"]
  assert [(e["kind"], e["op"]) for e in refused] == [("unsupported_dtype", "aten::histc")] * 2, refused
  assert all(e["file"].endswith("test_tensors.py") for e in refused), refused
