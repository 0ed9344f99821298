"""The per-type recipes (xla2tpu_tracer/hf_types): registered for real model types, each saying
why, and applied by the builders exactly where the generic ones stop."""

import inspect

import pytest
import torch

from xla2tpu_tracer import hf_inputs, hf_types


def _recipes():
    for table in (hf_types.CONFIG, hf_types.INPUTS):
        for model_type, fns in table.items():
            for fn in fns:
                yield model_type, fn
    yield from hf_types.BUILD.items()


def test_every_recipe_is_for_a_model_type_transformers_knows():
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    unknown = sorted({t for t, _ in _recipes() if t not in CONFIG_MAPPING})
    assert not unknown, f"recipes for types transformers does not have: {unknown}"
    assert hf_types.FEEDS_IMAGES <= set(hf_types.INPUTS)
    assert set(hf_types.FEEDS) <= hf_types.FEEDS_IMAGES  # video/audio notes follow an image fed


def test_every_recipe_says_why():
    silent = sorted({f"{t}: {fn.__module__}.{fn.__name__}" for t, fn in _recipes()
                     if not (inspect.getdoc(fn) or "").strip()})
    assert not silent, f"recipes without a docstring: {silent}"


class _Cfg:
    model_type = "xla2tpu_test_type"
    vocab_size = 50


class _NoisyModel(torch.nn.Module):
    main_input_name = "noise"  # no generic builder knows it

    def forward(self, noise, input_ids=None):
        return noise.sum()


@pytest.fixture
def recipe():
    calls = []

    def fn(model, cfg, head_kind, kw, with_labels):
        """test recipe"""
        calls.append((type(model).__name__, head_kind, dict(kw), with_labels))
        kw["noise"] = torch.zeros(2, 3)

    hf_types.INPUTS["xla2tpu_test_type"] = [fn]
    yield calls
    del hf_types.INPUTS["xla2tpu_test_type"]


def test_a_recipe_builds_what_no_generic_builder_can(recipe):
    kw = hf_types.build_inputs(_NoisyModel(), _Cfg(), "base", with_labels=False)
    assert set(kw) == {"noise"} and recipe == [("_NoisyModel", "base", {}, False)]


def test_without_a_recipe_a_missing_builder_is_still_an_error():
    cfg = _Cfg()
    cfg.model_type = "xla2tpu_other_type"
    with pytest.raises(hf_inputs.NoInputBuilder):
        hf_types.build_inputs(_NoisyModel(), cfg, "base", with_labels=False)


def test_a_recipe_sees_the_generic_inputs_and_the_training_flag(recipe):
    class TextModel(torch.nn.Module):
        main_input_name = "input_ids"

        def forward(self, input_ids, noise=None):
            return input_ids

    kw = hf_types.build_inputs(TextModel(), _Cfg(), "base", with_labels=True)
    (_, _, seen, training), = recipe
    assert set(seen) == {"input_ids"} and training and set(kw) == {"input_ids", "noise"}


def test_a_mapped_class_transformers_does_not_export_is_found_in_its_model_package():
    import transformers

    from xla2tpu_tracer import hf

    assert not hasattr(transformers, "VoxtralRealtimeTextModel")
    assert hf._resolve("VoxtralRealtimeTextModel").__name__ == "VoxtralRealtimeTextModel"
    with pytest.raises(AttributeError):
        hf._resolve("NoSuchModelAnywhere")


def _tiny(model_type):
    from transformers import AutoConfig

    from xla2tpu_tracer import configs

    cfg = hf_types.BUILD[model_type]() if model_type in hf_types.BUILD else AutoConfig.for_model(model_type)
    cfg = configs.shrink(cfg, "tiny")
    configs.fix_query_image_token(cfg)
    configs.fix_vocab(cfg, hf_inputs.special_token_ids(cfg))
    return hf_types.fix_config(model_type, cfg, "tiny")


@pytest.mark.parametrize("model_type, cls_name, encoders", [
    ("gemma3", "Gemma3ForConditionalGeneration", {"vision_tower": 1}),
    ("gemma4", "Gemma4ForConditionalGeneration", {"vision_tower": 2, "audio_tower": 1}),  # image + video, audio
    ("gemma4_unified", "Gemma4UnifiedForConditionalGeneration", {"embed_vision": 2, "embed_audio": 1}),
    ("idefics3", "Idefics3ForConditionalGeneration", {"vision_model": 1}),
    ("smolvlm", "SmolVLMForConditionalGeneration", {"vision_model": 1}),
    ("llava_next", "LlavaNextForConditionalGeneration", {"vision_tower": 1}),
    ("llava_onevision", "LlavaOnevisionForConditionalGeneration", {"vision_tower": 1}),
    ("kimi_k25", "Kimi_K25ForConditionalGeneration", {"vision_tower": 1}),
    ("paddleocr_vl", "PaddleOCRVLForConditionalGeneration", {"visual": 1}),
    ("minicpmv4_6", "MiniCPMV4_6ForConditionalGeneration", {"vision_tower": 1}),
    ("inkling_mm_model", "InklingForConditionalGeneration", {"vision_tower": 1, "audio_tower": 1}),
])
def test_a_multimodal_recipe_runs_the_encoders_of_every_modality_it_notes(model_type, cls_name, encoders):
    """Issue 46: these VLMs' profiles traced the text path only (gemma4's default config has no
    vision or audio tower; the others' default pixel layout or grid was not their processor's).
    The recipe's inputs must reach every encoder, in one forward that also checks the placeholder
    counts against the encoders' features, and train."""
    import transformers

    torch.manual_seed(0)
    cfg = _tiny(model_type)
    model = getattr(transformers, cls_name)(cfg)
    calls = dict.fromkeys(encoders, 0)
    for name in encoders:
        def hook(*_, name=name):
            calls[name] += 1
        getattr(model.model, name).register_forward_hook(hook)
    kw = hf_types.build_inputs(model, cfg, "image_text_to_text", with_labels=True)
    calls.update(dict.fromkeys(encoders, 0))  # a recipe may run the tower to count the image tokens
    out = model(**kw)
    assert calls == encoders
    assert torch.isfinite(out.loss)
    out.loss.backward()
    assert model_type in hf_types.FEEDS_IMAGES
