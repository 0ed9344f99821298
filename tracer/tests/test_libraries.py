"""The library recipes beyond transformers/diffusers/timm: each library's target list, and one
real trace per library that must record the ops its own code adds. Need tracer/.venv:

    tracer/.venv/bin/python -m pytest tracer/tests -q
"""

import os
import time

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from xla2tpu_tracer import cli, output, targets  # noqa: E402
from xla2tpu_tracer.recorder import ops_to_json  # noqa: E402
from xla2tpu_tracer.target import Target  # noqa: E402

NEW = ["sentence-transformers", "open_clip", "peft", "pyannote-audio", "speechbrain"]
# Import at collection, before any test runs: speechbrain sets torch.backends.cudnn flags on import,
# which torch refuses once test_api_ops' OpInfo import has disabled global flags.
targets.preload(NEW)


def _trace(lib, name):
    res = targets.trace(Target(lib, name), time.time() + 120)
    assert res["status"] == "ok", res.get("reason")
    ops, _, _ = ops_to_json(res["stats"])
    return res, {o["op"]: o for o in ops}


def test_every_library_is_a_cli_choice_with_a_version():
    assert set(NEW) <= set(targets.LIBRARIES)
    versions = targets.library_versions(NEW)
    # The versions recorded in profiles are the ones pinned in requirements.txt.
    req = open(os.path.join(os.path.dirname(__file__), "..", "requirements.txt"), encoding="utf-8").read()
    pins = {"sentence-transformers": "sentence-transformers", "open_clip": "open_clip_torch", "peft": "peft",
            "pyannote-audio": "pyannote.audio", "speechbrain": "speechbrain"}
    for lib in NEW:
        assert f"{pins[lib]}=={versions[lib]}\n" in req, lib
    # A profile keeps its own library's version, not the others'.
    kept = output.profile_versions(versions, "peft")
    assert kept["peft"] == versions["peft"] and not set(kept) & (set(NEW) - {"peft"})


def test_target_lists():
    assert set(targets.names("sentence-transformers")) == {"SentenceTransformer", "CrossEncoder"}
    assert {"vit", "resnet", "convnext", "coca", "hf_text", "siglip"} <= set(targets.names("open_clip"))
    kinds = set(targets.names("peft"))
    assert {"lora", "loha", "lokr", "ia3", "adalora", "oft", "boft", "vera", "prefix_tuning", "prompt_tuning",
            "p_tuning"} <= kinds
    assert "xlora" not in kinds  # needs trained LoRA adapters from disk
    assert set(targets.names("pyannote-audio")) == {"PyanNet", "PyanNet-powerset", "WeSpeakerResNet34",
                                                     "XVectorSincNet"}
    from xla2tpu_tracer import diffusers_models

    for comp in ("UNetSpatioTemporalConditionModel", "AutoencoderKLWan", "CogVideoXTransformer3DModel"):
        assert comp in diffusers_models.COMPONENTS


def test_sentence_transformer_records_pooling_normalize_and_the_loss():
    res, ops = _trace("sentence-transformers", "SentenceTransformer")
    assert "aten::linalg_vector_norm" in ops  # Normalize (and cos_sim in the loss)
    assert "aten::max.dim" in ops  # max pooling
    assert "aten::tanh_backward" in ops and "backward" in ops["aten::tanh_backward"]["phases"]  # Dense, trained
    assert "aten::logsumexp" in ops  # MultipleNegativesRankingLoss's cross entropy
    assert any("backbone" in n for n in res["notes"])


def test_peft_lora_adds_dropout_and_adapter_matmuls():
    _, lora = _trace("peft", "lora")
    _, prefix = _trace("peft", "prefix_tuning")
    assert "aten::bernoulli_.float" in lora  # lora_dropout=0.1 in training
    # Prefix tuning concatenates learned key/values to the cache: different ops from LoRA.
    assert set(prefix) != set(lora)


def test_open_clip_siglip_uses_its_sigmoid_loss():
    _, ops = _trace("open_clip", "siglip")
    assert any(op.startswith("aten::log_sigmoid") for op in ops), sorted(ops)


@pytest.mark.parametrize("lib,name,op", [
    ("pyannote-audio", "WeSpeakerResNet34", "aten::_fft_r2c"),  # Kaldi fbank front end
    ("speechbrain", "ECAPA_TDNN", "aten::_fft_r2c"),  # speechbrain Fbank (STFT)
])
def test_speech_models_trace_from_the_waveform(lib, name, op):
    _, ops = _trace(lib, name)
    assert op in ops, sorted(ops)


def test_pyannet_lstm_is_tagged_as_the_neutral_rnn():
    _, ops = _trace("pyannote-audio", "PyanNet")
    assert {o.get("neutral") for o in ops.values()} >= {"rnn", "rnn_backward"}
    assert "aten::sigmoid" in ops  # multi-label head
