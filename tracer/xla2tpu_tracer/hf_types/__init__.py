"""Per-type recipes for transformers types whose tiny config or inputs the generic shrinker
(configs.py) and input builders (hf_inputs.py) cannot get right.

A recipe states one of the model's own invariants (what its processor or a real checkpoint
always provides) and nothing else: it never catches a failure, skips a class or a phase, or
changes what counts as traced. hf.py applies them after the generic steps, so a type without a
recipe is traced exactly as before. One module per family of models; each registers by model
type (``AutoConfig.for_model``'s key).
"""

from __future__ import annotations

from ..hf_inputs import NoInputBuilder, generic_inputs

# Importing the family modules registers their recipes.
from . import audio, audio2, detection, gemma, text, vision, vlm, vlm2  # noqa: F401
from .registry import BUILD, CONFIG, FEEDS, FEEDS_IMAGES, INPUTS, fix_config, fix_inputs, has_inputs  # noqa: F401


def build_inputs(model, cfg, head_kind: str, with_labels: bool):
    """kwargs for model(**kwargs): the generic builders (hf_inputs), then the type's recipes."""
    model_type = getattr(cfg, "model_type", "")
    try:
        kw = generic_inputs(model, cfg, head_kind, with_labels)
    except NoInputBuilder:
        if not has_inputs(model_type):
            raise
        kw = {}
    return fix_inputs(model_type, model, cfg, head_kind, kw, with_labels)
