"""xla2tpu operator tracer: records the ATen ops that Hugging Face / diffusers / timm
models dispatch, for the xla2tpu evaluator (see corpus/ops/README.md)."""

__version__ = "0.2.0"
