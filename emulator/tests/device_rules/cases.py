"""Device-rule probes: each pair is a case a real accelerator backend rejects
(a tensor or module left on the CPU) and its neighbour that must keep running.

Backend-neutral: `dev` is the accelerator device ("tpu" on the emulator,
torch_xla's device for the second oracle), `x` a (2, 3, 8, 8) tensor on it.
The emulator's suite runs every case in-process; test_device_oracle.py runs
the same cases under torch_xla 2.9 on its CPU device and requires the same
raise/run outcome (both oracles must agree, else the case is not a fact).
"""

# name: (source, outcome[, torch_xla's outcome where it differs]). The source is
# a Python expression; the outcome is what a codegen-registered backend (CUDA)
# does, which the emulator follows. torch_xla converts CPU operands of
# element-wise ops instead of refusing them, and refuses a CPU 0-dim tensor in
# `where`; those differences are pinned too, so the oracle test sees a change.
CASES = {
    # Codegen device check (ExactSame ops).
    "linear_cpu_module": ("torch.nn.Linear(8, 2)(x)", "raise"),
    "linear_moved_module": ("torch.nn.Linear(8, 2).to(dev)(x)", "run"),
    "embedding_cpu_weight": ("F.embedding(torch.tensor([1, 2]).to(dev), torch.randn(10, 4))", "raise"),
    "embedding_device_weight": ("F.embedding(torch.tensor([1, 2]).to(dev), torch.randn(10, 4).to(dev))", "run"),
    "conv2d_cpu_weight": ("F.conv2d(x, torch.randn(4, 3, 3, 3))", "raise"),
    "conv2d_device_weight": ("F.conv2d(x, torch.randn(4, 3, 3, 3).to(dev))", "run"),
    "cat_mixed": ("torch.cat([x, torch.randn(2, 3, 8, 8)])", "raise"),
    "cat_device": ("torch.cat([x, torch.randn(2, 3, 8, 8).to(dev)])", "run"),
    "bmm_cpu_mat2": ("torch.bmm(x[0], torch.randn(3, 8, 2))", "raise"),
    "bmm_device_mat2": ("torch.bmm(x[0], torch.randn(3, 8, 2).to(dev))", "run"),
    "cross_entropy_cpu_target": ("F.cross_entropy(torch.randn(4, 5).to(dev), torch.tensor([0, 1, 2, 3]))", "raise"),
    "cross_entropy_device_target": ("F.cross_entropy(torch.randn(4, 5).to(dev), torch.tensor([0, 1, 2, 3]).to(dev))", "run"),
    "addmm_cpu_bias": ("torch.addmm(torch.randn(2), x[0, 0], torch.randn(8, 2).to(dev))", "raise"),
    "matmul_cpu_other": ("x @ torch.randn(8, 2)", "raise"),
    "matmul_device_other": ("x @ torch.randn(8, 2).to(dev)", "run"),
    "layer_norm_cpu_weight": ("F.layer_norm(x, (8,), torch.ones(8), torch.zeros(8))", "raise"),
    "layer_norm_device_weight": ("F.layer_norm(x, (8,), torch.ones(8).to(dev), torch.zeros(8).to(dev))", "run"),
    "sdpa_cpu_key": ("F.scaled_dot_product_attention(x, torch.randn(2, 3, 8, 8), x)", "raise"),
    "sdpa_device_key": ("F.scaled_dot_product_attention(x, x.clone(), x)", "run"),
    "lstm_cpu_module": ("torch.nn.LSTM(8, 4, batch_first=True)(x[0])[0]", "raise"),
    "lstm_moved_module": ("torch.nn.LSTM(8, 4, batch_first=True).to(dev)(x[0])[0]", "run"),
    # TensorIterator ops: CPU 0-dim tensors pass as scalars, nothing else does.
    "add_cpu_tensor": ("x + torch.randn(2, 3, 8, 8)", "raise", "run"),
    "mul_cpu_0dim": ("x * torch.tensor(2.0)", "run"),
    "where_cpu_other": ("torch.where(x > 0, x, torch.zeros(2, 3, 8, 8))", "raise"),
    "where_cpu_0dim": ("torch.where(x > 0, x, torch.tensor(0.0))", "run", "raise"),
    "masked_fill_cpu_0dim": ("x.masked_fill(x > 0, torch.tensor(0.0))", "run"),
    "add_out_cpu": ("torch.add(x, x, out=torch.empty(2, 3, 8, 8))", "raise", "run"),
    # Index tensors of advanced indexing may live on the CPU.
    "index_cpu_indices": ("x[torch.tensor([0, 1])]", "run"),
    "index_put_cpu_indices": ("x.clone().index_put_((torch.tensor([0]),), torch.tensor(1.0))", "run"),
    "index_put_cpu_values": ("x.clone().index_put_((torch.tensor([0]),), torch.ones(3, 8, 8))", "raise", "run"),
    # Explicit copies between devices.
    "to_device": ("torch.randn(3).to(dev)", "run"),
    "copy_from_cpu": ("torch.zeros(3).to(dev).copy_(torch.randn(3))", "run"),
    "copy_to_cpu": ("torch.zeros(3).copy_(torch.randn(3).to(dev))", "run"),
}


def outcome(name, backend):
  """The expected outcome of case `name` on "emulator" or "torch_xla"."""
  case = CASES[name]
  return case[2] if backend == "torch_xla" and len(case) > 2 else case[1]
