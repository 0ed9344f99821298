"""Dispatch from a Target to the library-specific tracer, and which libraries are traced."""

from __future__ import annotations

import platform

from . import __version__


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
    for lib in libs:
        if lib in MODULES:
            importlib.import_module(MODULES[lib])


# Libraries beyond transformers/diffusers/timm: Hub library_name -> import name (for versions).
MODULES = {
    "sentence-transformers": "sentence_transformers",
    "open_clip": "open_clip",
    "peft": "peft",
    "pyannote-audio": "pyannote.audio",
    "speechbrain": "speechbrain",
}
# Their PyPI distributions: versions are read from the installed metadata, so a run that traces
# only transformers does not import them (speechbrain changes global torch flags on import).
DISTRIBUTIONS = {
    "sentence-transformers": "sentence-transformers",
    "open_clip": "open_clip_torch",
    "peft": "peft",
    "pyannote-audio": "pyannote.audio",
    "speechbrain": "speechbrain",
}


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
    if lib == "sentence-transformers":
        from . import st_models

        return sorted(st_models.RECIPES)
    if lib == "open_clip":
        from . import open_clip_models

        return sorted(open_clip_models.FAMILIES)
    if lib == "peft":
        from . import peft_models

        return peft_models.adapter_types()
    if lib in ("pyannote-audio", "speechbrain"):
        from . import audio_models

        return sorted(audio_models.TARGETS[lib])
    raise ValueError(lib)


def trace(target, deadline: float, **recipe_kw) -> dict:
    """Traces one target. ``recipe_kw`` (``envs``, ``recorder_cls``) reaches the recipe-based
    libraries only: the crosscheck re-traces them on real tensors with another recorder."""
    if target.library == "transformers":
        from . import hf

        return hf.trace(target.name, deadline)
    if target.library in ("pyannote-audio", "speechbrain"):
        from . import audio_models

        return audio_models.trace(target.library, target.name, deadline, **recipe_kw)
    modules = {"diffusers": "diffusers_models", "timm": "timm_models", "sentence-transformers": "st_models",
               "open_clip": "open_clip_models", "peft": "peft_models"}
    if target.library not in modules:
        raise ValueError(target.library)
    import importlib

    return importlib.import_module(f".{modules[target.library]}", __package__).trace(target.name, deadline, **recipe_kw)


# The libraries whose model types are traced.
LIBRARIES = ["transformers", "diffusers", "timm", "sentence-transformers", "open_clip", "peft", "pyannote-audio",
             "speechbrain"]


def library_versions(libs) -> dict:
    """The versions a profile records: Python, torch, the tracer and each library's."""
    import torch

    v = {"python": platform.python_version(), "torch": torch.__version__.split("+")[0], "tracer": __version__}
    from importlib.metadata import version

    for lib in libs:
        if lib in DISTRIBUTIONS:
            v[lib] = version(DISTRIBUTIONS[lib]).split("+")[0]
        else:
            v[lib] = __import__(lib).__version__.split("+")[0]
    return v
