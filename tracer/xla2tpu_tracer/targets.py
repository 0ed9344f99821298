"""Dispatch from a Target to the library-specific tracer."""

from __future__ import annotations


def preload(libs) -> None:
    """Import heavy libraries once in the parent, before forking workers."""
    import transformers  # noqa: F401
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
