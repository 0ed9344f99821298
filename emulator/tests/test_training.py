"""Training on the emulated device matches the same training on CPU."""

import pytest
import torch
import torch.nn.functional as F

from xla2tpu_emulator import report


def _train_mlp(device):
  torch.manual_seed(0)
  model = torch.nn.Sequential(
      torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.LayerNorm(32),
      torch.nn.Dropout(0.0), torch.nn.Linear(32, 4),
  ).to(device)
  opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
  g = torch.Generator().manual_seed(1)
  x = torch.randn(64, 8, generator=g).to(device)
  y = torch.randint(0, 4, (64,), generator=g).to(device)
  losses = []
  for _ in range(10):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
  return losses, [p.detach().cpu() for p in model.parameters()]


def test_mlp_training_matches_cpu():
  lc, pc = _train_mlp("cpu")
  lt, pt = _train_mlp("tpu")
  assert max(abs(a - b) for a, b in zip(lc, lt)) <= 1e-6
  for a, b in zip(pc, pt):
    torch.testing.assert_close(b, a, atol=1e-6, rtol=1e-6)
  assert lt[-1] < lt[0]


def test_bert_tiny_training_step_matches_cpu():
  transformers = pytest.importorskip("transformers")
  cfg = transformers.BertConfig(
      vocab_size=100, hidden_size=32, num_hidden_layers=2,
      num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=3,
  )

  def run(device):
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, 100, (4, 16), generator=g)
    mask = torch.ones(4, 16, dtype=torch.long)
    mask[:, 12:] = 0
    labels = torch.tensor([0, 1, 2, 1])
    losses = []
    for _ in range(2):
      out = model(input_ids=ids.to(device), attention_mask=mask.to(device),
                  labels=labels.to(device))
      out.loss.backward()
      opt.step()
      opt.zero_grad()
      losses.append(out.loss.item())
    return losses, {k: v.detach().cpu() for k, v in model.state_dict().items()}

  lc, sc = run("cpu")
  before = report.OP_COUNTS.get(
      "aten::_scaled_dot_product_fused_attention_overrideable_backward", 0)
  lt, st = run("tpu")
  for a, b in zip(lc, lt):
    assert abs(a - b) < 1e-5
  for k in sc:
    torch.testing.assert_close(st[k], sc[k], atol=1e-5, rtol=1e-4)
  assert report.OP_COUNTS.get(
      "aten::_scaled_dot_product_fused_attention_overrideable_backward", 0) > before


def test_rnn_cells_and_rms_norm_gradients():
  for cell_cls in (torch.nn.LSTMCell, torch.nn.GRUCell):
    torch.manual_seed(0)
    cell = cell_cls(4, 5)
    x = torch.randn(3, 4, requires_grad=True)
    out = cell(x)
    out = out[0] + out[1] if isinstance(out, tuple) else out
    out.sum().backward()
    gx, gw = x.grad.clone(), cell.weight_ih.grad.clone()
    cell.zero_grad()
    ct = cell.to("tpu")
    xt = x.detach().tpu().requires_grad_()
    out = ct(xt)
    out = out[0] + out[1] if isinstance(out, tuple) else out
    out.sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), gx, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(ct.weight_ih.grad.cpu(), gw, atol=1e-6, rtol=1e-5)
  torch.manual_seed(0)
  lstm = torch.nn.LSTM(4, 5, batch_first=True)
  x = torch.randn(2, 3, 4, requires_grad=True)
  lstm(x)[0].sum().backward()
  gw = lstm.weight_ih_l0.grad.clone()
  xt = x.detach().tpu().requires_grad_()
  lt = lstm.to("tpu")
  lt.zero_grad()
  lt(xt)[0].sum().backward()  # through aten::lstm.input's decomposition
  torch.testing.assert_close(xt.grad.cpu(), x.grad, atol=1e-6, rtol=1e-5)
  torch.testing.assert_close(lt.weight_ih_l0.grad.cpu(), gw, atol=1e-6, rtol=1e-5)
  rn = torch.nn.RMSNorm(6)
  x = torch.randn(2, 6, requires_grad=True)
  rn(x).sum().backward()
  xt = x.detach().tpu().requires_grad_()
  rn.to("tpu")(xt).sum().backward()
  torch.testing.assert_close(xt.grad.cpu(), x.grad, atol=1e-6, rtol=1e-5)


def test_autocast_bf16():
  a = torch.randn(4, 8, device="tpu")
  w = torch.randn(8, 8, device="tpu")
  with torch.autocast("tpu", dtype=torch.bfloat16):
    mm = a @ w
    lin = F.linear(a, w)
    soft = torch.softmax(mm, -1)  # not in the list: runs in its input dtype
    ex = torch.exp(a)  # not in the list: stays fp32
    mse = F.mse_loss(mm, mm.detach())  # fp32 policy op
  assert mm.dtype == torch.bfloat16
  assert lin.dtype == torch.bfloat16
  assert soft.dtype == torch.bfloat16
  assert ex.dtype == torch.float32
  assert mse.dtype == torch.float32
  with torch.amp.autocast("tpu"):
    assert (a @ w).dtype == torch.bfloat16  # TPU default autocast dtype
  assert (a @ w).dtype == torch.float32


def test_autocast_softmax_guidance_keeps_float32():
  """TPU301's note, run: a float32 input keeps log_softmax in float32 under
  autocast("tpu"), as torch_xla's autocast policy did, and matches it exactly."""
  logits = torch.randn(4, 8, device="tpu")
  w = torch.randn(8, 8, device="tpu")
  with torch.autocast("tpu", dtype=torch.bfloat16):
    mm = logits @ w
    plain = F.log_softmax(mm, dim=-1)
    kept = F.log_softmax(mm.float(), dim=-1)
  assert plain.dtype == torch.bfloat16  # the numerical change the note reports
  assert kept.dtype == torch.float32
  torch.testing.assert_close(kept.cpu(), F.log_softmax(mm.float().cpu(), dim=-1))


def test_grad_scaler_fails_through_registry():
  model = torch.nn.Linear(2, 2).tpu()
  opt = torch.optim.SGD(model.parameters(), lr=0.1)
  scaler = torch.amp.GradScaler("tpu")
  loss = model(torch.ones(3, 2, device="tpu")).sum()
  scaler.scale(loss).backward()
  with pytest.raises(NotImplementedError) as e:
    scaler.step(opt)
  assert str(e.value) == (
      "'aten::_amp_foreach_non_finite_check_and_unscale_' is not implemented"
      " for TPU. Please file a feature request"
  )


def test_compile_tpu_backend_matches_eager():
  torch.manual_seed(0)
  model = torch.nn.Sequential(
      torch.nn.Linear(6, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2)).tpu()
  x = torch.randn(5, 6, device="tpu")
  eager = model(x)
  compiled = torch.compile(model, backend="tpu")
  torch.testing.assert_close(compiled(x).cpu(), eager.cpu())
  default = torch.compile(model)  # tpu inputs -> "tpu" backend
  torch.testing.assert_close(default(x).cpu(), eager.cpu())
  from xla2tpu_emulator import advise  # pylint: disable=import-outside-toplevel

  assert advise.graphs_compiled() >= 2
  # training through the compiled module
  compiled(x).sum().backward()
  assert model[0].weight.grad is not None


def test_compile_inductor_on_tpu_raises(capture_report):
  from xla2tpu_emulator import compile as emu_compile  # pylint: disable=import-outside-toplevel

  model = torch.nn.Linear(3, 3).tpu()
  with pytest.raises(Exception) as e:
    torch.compile(model, backend="inductor")(torch.ones(2, 3, device="tpu"))
  assert emu_compile.INDUCTOR_TPU_ERROR in str(e.value)
  kinds = [ev["kind"] for ev in capture_report() if ev["event"] == "incompatibility"]
  assert "inductor_backend" in kinds
  torch._dynamo.reset()  # pylint: disable=protected-access


class _TiedLM(torch.nn.Module):

  def __init__(self):
    super().__init__()
    self.emb = torch.nn.Embedding(10, 4)
    self.head = torch.nn.Linear(4, 10, bias=False)
    self.head.weight = self.emb.weight

  def forward(self, ids):
    return self.head(self.emb(ids))


def test_module_to_tpu_unties_shared_parameters(capture_report):
  """Like torch_xla: TorchTPU has no _has_compatible_shallow_copy_type
  kernel, so Module.to() replaces parameters and tied weights come apart:
  a warning at the line that moved the module once it runs untied."""
  model = _TiedLM()
  model.to("tpu")  # move-line
  assert model.emb.weight is not model.head.weight
  assert not [e for e in capture_report() if e["event"] == "warning"], "not before it runs"
  model(torch.tensor([1, 2], device="tpu"))
  warns = [e for e in capture_report() if e["event"] == "warning"]
  assert [w["kind"] for w in warns] == ["untied_parameters"]
  assert "emb.weight, head.weight" in warns[0]["message"]
  assert "move-line" in open(warns[0]["file"], encoding="utf-8").read().splitlines()[warns[0]["line"] - 1]
  model(torch.tensor([1, 2], device="tpu"))
  assert len([e for e in capture_report() if e["event"] == "warning"]) == 1, "once per move"


def test_shared_parameters_retied_after_the_move_do_not_warn(capture_report):
  """Re-tied before the next forward (transformers' `tie_weights()`): right on TorchTPU."""
  model = _TiedLM()
  model.to("tpu")
  model.head.weight = model.emb.weight  # re-tie: works on tpu
  model(torch.tensor([1, 2], device="tpu"))
  assert model.emb.weight is model.head.weight
  assert not [e for e in capture_report() if e["event"] == "warning"]


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5)])
def test_linear_with_a_one_dimensional_weight_trains_like_the_cpu(shape):
  """F.linear(x, w) with w of shape [in] (d_fine's and deimv2's attention): its backward."""
  g = torch.Generator().manual_seed(0)
  x, w = torch.randn(*shape, generator=g), torch.randn(5, generator=g)
  grads = []
  for dev in ("cpu", "tpu"):
    xs, ws = (t.detach().to(dev).requires_grad_() for t in (x, w))
    y = F.linear(xs, ws)
    (y * y).sum().backward()
    grads.append([y.detach().cpu(), xs.grad.cpu(), ws.grad.cpu()])
  for a, c in zip(*grads):
    assert a.shape == c.shape
    torch.testing.assert_close(a, c)
