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
