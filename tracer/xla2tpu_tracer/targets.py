"""Dispatch from a Target to the library-specific tracer."""

from __future__ import annotations


def preload(libs) -> None:
    """Import heavy libraries once in the parent, before forking workers."""
    import importlib

    import torch._dynamo  # noqa: F401
    import torch._subclasses.fake_tensor  # noqa: F401
    import transformers

    # Shared infrastructure (modeling_utils, masking, generation, torch.distributed.tensor,
    # ...) costs ~6 s to import; load it once here instead of in every worker.
    for mod in ("transformers.modeling_utils", "transformers.activations", "transformers.masking_utils",
                "transformers.generation", "transformers.modeling_outputs", "transformers.cache_utils",
                "torch.distributed.tensor"):
        try:
            importlib.import_module(mod)
        except Exception:  # noqa: BLE001
            pass
    for cls in ("LlamaForCausalLM", "BertModel", "CLIPModel", "WhisperForConditionalGeneration",
                "T5ForConditionalGeneration", "ViTForImageClassification", "Wav2Vec2ForCTC",
                "Qwen2VLForConditionalGeneration", "LlavaForConditionalGeneration", "MixtralForCausalLM"):
        try:
            getattr(transformers, cls)
        except Exception:  # noqa: BLE001
            pass
    if "transformers" in libs:
        from . import hf

        for mt in hf.model_types():
            hf.classes_for(mt)
    if "diffusers" in libs:
        import diffusers

        from . import diffusers_models

        for name in diffusers_models.COMPONENTS:
            getattr(diffusers, name)
    if "timm" in libs:
        import timm  # noqa: F401
        import timm.models  # noqa: F401


def names(lib: str) -> list[str]:
    if lib == "transformers":
        from . import hf

        return hf.model_types()
    if lib == "diffusers":
        from . import diffusers_models

        return sorted(diffusers_models.COMPONENTS)
    if lib == "timm":
        from . import timm_models

        return sorted(timm_models.FAMILIES)
    raise ValueError(lib)


def trace(target, deadline: float) -> dict:
    if target.library == "transformers":
        from . import hf

        return hf.trace(target.name, deadline)
    if target.library == "diffusers":
        from . import diffusers_models

        return diffusers_models.trace(target.name, deadline)
    if target.library == "timm":
        from . import timm_models

        return timm_models.trace(target.name, deadline)
    raise ValueError(target.library)
