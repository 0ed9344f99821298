"""The recipe tables and the decorators that fill them: the bottom of ``hf_types``, which the
family modules import to register and ``hf_types`` reads (see its docstring)."""

from __future__ import annotations

from collections.abc import Callable

# model_type -> fn() -> config: builds the config when the class defaults cannot (validation)
BUILD: dict[str, Callable] = {}
# model_type -> [fn(cfg, variant)]: after configs.shrink; mutate cfg in place
CONFIG: dict[str, list[Callable]] = {}
# model_type -> [fn(model, cfg, head_kind, kw, with_labels)]: after the generic builders;
# mutate kw in place. kw is {} when the generic builders have nothing for the main input.
INPUTS: dict[str, list[Callable]] = {}
# model types whose input recipe feeds the images itself (hf.add_image_inputs is not run)
FEEDS_IMAGES: set[str] = set()
# model type -> the other inputs (video, audio) its input recipe feeds, noted in the profile
FEEDS: dict[str, tuple[str, ...]] = {}


def build(*types: str):
    def deco(fn):
        for t in types:
            BUILD[t] = fn
        return fn
    return deco


def config(*types: str):
    def deco(fn):
        for t in types:
            CONFIG.setdefault(t, []).append(fn)
        return fn
    return deco


def inputs(*types: str, feeds_images: bool = False, feeds: tuple[str, ...] = ()):
    def deco(fn):
        for t in types:
            INPUTS.setdefault(t, []).append(fn)
            if feeds_images:
                FEEDS_IMAGES.add(t)
            if feeds:
                FEEDS[t] = feeds
        return fn
    return deco


def fix_config(model_type: str, cfg, variant: str):
    for fn in CONFIG.get(model_type, ()):
        fn(cfg, variant)
    return cfg


def has_inputs(model_type: str) -> bool:
    return model_type in INPUTS


def fix_inputs(model_type: str, model, cfg, head_kind: str, kw: dict, with_labels: bool) -> dict:
    for fn in INPUTS.get(model_type, ()):
        fn(model, cfg, head_kind, kw, with_labels)
    return kw
