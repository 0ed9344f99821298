"""Trace transformers model types."""

from __future__ import annotations

import time

import torch

from . import configs, hf_inputs, hf_types
from .output import phase_coverage
from .recorder import OpStats
from . import phases
from .phases import PhaseError, make_env, run_phases
from .recorder import OpRecorder

# Auto mappings in the order a task-head class is chosen from.
HEAD_PRIORITY = (
    "IMAGE_TEXT_TO_TEXT", "MULTIMODAL_LM", "SPEECH_SEQ_2_SEQ", "SEQ_TO_SEQ_CAUSAL_LM", "CAUSAL_LM",
    "MASKED_LM", "CTC", "IMAGE_CLASSIFICATION", "AUDIO_CLASSIFICATION", "VIDEO_CLASSIFICATION",
    "SEQUENCE_CLASSIFICATION", "TOKEN_CLASSIFICATION", "DEPTH_ESTIMATION", "SEMANTIC_SEGMENTATION",
    "OBJECT_DETECTION", "TIME_SERIES_PREDICTION", "TEXT_TO_SPECTROGRAM", "TEXT_TO_WAVEFORM",
)


def _mappings():
    from transformers.models.auto import modeling_auto as ma

    out = {}
    for name in dir(ma):
        if name.startswith("MODEL_") and name.endswith("_MAPPING_NAMES") and isinstance(getattr(ma, name), dict):
            kind = name[len("MODEL_"):-len("_MAPPING_NAMES")]
            kind = kind[len("FOR_"):] if kind.startswith("FOR_") else "BASE"
            out[kind] = getattr(ma, name)
    return out


def _first(v):
    return v[0] if isinstance(v, (list, tuple)) else v


def model_types() -> list[str]:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return sorted(CONFIG_MAPPING.keys())


def classes_for(model_type: str) -> tuple[tuple[str, str] | None, str | None]:
    """((head kind, head class name) or None, base class name or None)."""
    maps = _mappings()
    base = _first(maps["BASE"].get(model_type)) if "BASE" in maps else None
    order = list(HEAD_PRIORITY) + sorted(k for k in maps if k not in HEAD_PRIORITY and k not in ("BASE", "PRETRAINING", "BACKBONE")) + ["PRETRAINING", "BACKBONE"]
    for kind in order:
        m = maps.get(kind)
        if m and model_type in m:
            cls = _first(m[model_type])
            if cls and cls != base:
                return (kind.lower(), cls), base
    return None, base


def has_model_class(model_type: str) -> bool:
    head, base = classes_for(model_type)
    return bool(head or base)


def _resolve(cls_name: str):
    import transformers

    try:
        return getattr(transformers, cls_name)
    except AttributeError:
        pass
    # A class in an auto mapping that transformers does not export at the top level
    # (voxtral_realtime_text): it lives in the package of its config class.
    import importlib
    import pkgutil

    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    for mapping in _mappings().values():
        for model_type, names in mapping.items():
            if cls_name in (names if isinstance(names, (list, tuple)) else (names,)):
                package = importlib.import_module(CONFIG_MAPPING[model_type].__module__.rsplit(".", 1)[0])
                for info in pkgutil.iter_modules(package.__path__):
                    if info.name.startswith("modeling_"):
                        mod = importlib.import_module(f"{package.__name__}.{info.name}")
                        if hasattr(mod, cls_name):
                            return getattr(mod, cls_name)
    raise AttributeError(f"module transformers has no attribute {cls_name}")


# --------------------------------------------------------------------------- images in VLMs
def add_image_inputs(model, cfg, kw):
    """Feed a real image through a VLM: pixel_values + matching image tokens."""
    tok = hf_inputs.image_token_id(cfg)
    getter = getattr(model, "get_image_features", None)
    if getter is None and hasattr(model, "model"):
        getter = getattr(model.model, "get_image_features", None)
    if tok is None or getter is None:
        return False
    import inspect

    gparams = inspect.signature(getter).parameters
    extra = {}
    batch = hf_inputs.BATCH
    if "image_grid_thw" in gparams:
        # qwen2-vl style: flattened patches + (t, h, w) grid per image.
        v = hf_inputs._vision_cfg(cfg)
        ps = getattr(v, "patch_size", 14) or 14
        tps = getattr(v, "temporal_patch_size", 2) or 2
        ch = getattr(v, "in_channels", None) or getattr(v, "in_chans", None) or getattr(v, "num_channels", 3) or 3
        merge = getattr(v, "spatial_merge_size", 2) or 2
        side = 2 * merge
        extra["image_grid_thw"] = torch.tensor([[1, side, side]] * batch)
        pv = torch.randn(batch * side * side, ch * tps * ps * ps)
    else:
        pv = hf_inputs.pixel_values(cfg)
        if "image_sizes" in gparams:
            h, w = pv.shape[-2:]
            extra["image_sizes"] = torch.tensor([[h, w]] * batch)
    with torch.no_grad():
        feats = getter(**phases.on_model_device(model, dict(pixel_values=pv, **extra)))
    n = hf_inputs.count_image_tokens(feats, batch)
    kw.update(extra)
    text = hf_inputs.text_ids(cfg, length=8)
    img = torch.full((batch, n), tok, dtype=torch.long)
    ids = torch.cat([img, text], dim=1)
    kw["input_ids"] = ids
    kw["pixel_values"] = pv
    fparams = inspect.signature(model.forward).parameters
    for name in ("mm_token_type_ids", "token_type_ids"):
        if name in fparams:
            kw[name] = (ids == tok).long()
    if "attention_mask" in kw:
        kw["attention_mask"] = torch.ones_like(ids)
    if "labels" in kw:
        labels = ids.clone()
        labels[:, :n] = -100
        kw["labels"] = labels
    return True


# --------------------------------------------------------------------------- tracing
# layers/cpu (default widths, real tensors) comes before the fake-tensor attempts: fake and
# meta tensors follow transformers' compile-friendly branches and miss the ops of the real
# ones (.item() shortcuts, data-dependent paths), which the profiler crosscheck showed.
ATTEMPTS = (("tiny", "cpu"), ("layers", "cpu"), ("layers", "fake"), ("tiny", "fake"), ("tiny", "meta"))
# layers/cpu is skipped above this many parameters (per class): weights + grads + the
# CPU activations of a default-width model must stay under the runner's RSS cap.
MAX_REAL_PARAMS = 100_000_000


def _short(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


def _trace_class(cls, cfg, head_kind, env, recorder, notes, want_image, train=True):
    """Instantiate and run one class through the phases; returns (image fed, why not)."""
    cc = getattr(cls, "config_class", None)
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else None
    if isinstance(cc, type) and not isinstance(cfg, cc) and isinstance(text, cc):
        # A text-only head of a composite config (llama4's ForCausalLM) gets the text
        # sub-config, as the auto classes give it (auto_factory.py, _BaseAutoModelClass).
        cfg = text
    model = cls(cfg)
    # A type whose recipe builds its image inputs itself is not fed through add_image_inputs.
    recipe_images = getattr(cfg, "model_type", "") in hf_types.FEEDS_IMAGES
    state = {}

    def call(m, training):
        if "kw" not in state or state.get("training") != training:
            kw = hf_types.build_inputs(m, cfg, head_kind, with_labels=training and not state.get("no_labels"))
            if want_image and state.get("image", True) and not recipe_images:
                try:
                    state["image"] = add_image_inputs(m, cfg, kw)
                except Exception as e:  # noqa: BLE001
                    state["image"] = False
                    state["image_err"] = _short(e)
            state["kw"], state["training"] = kw, training
        kw = state["kw"]
        try:
            return m(**kw)
        except Exception as e:
            if phases.EXECUTOR is not None and next(iter(m.parameters())).device.type != "cpu":
                # On the device the CPU reference's choices (text only, no labels) are replayed,
                # never retried: a failure there is the device's.
                raise
            if state.get("image") and not training:
                # The image path failed inside the model (feature/token count checks of a
                # shrunk config): trace the class text-only rather than not at all.
                state["image"], state["image_err"] = False, _short(e)
                state["kw"] = hf_types.build_inputs(m, cfg, head_kind, with_labels=training)
                return m(**state["kw"])
            if training and "labels" in kw:
                # Retry without labels (generic loss); record the failure as a note.
                kw = dict(kw)
                kw.pop("labels")
                state["kw"], state["no_labels"] = kw, True
                notes.append(f"{cls.__name__}: labels rejected, used sum of outputs")
                return m(**kw)
            raise

    notes.extend(run_phases(model, call, recorder, env, train=train))
    if recipe_images:
        return True, None
    return state.get("image", False), state.get("image_err")


def trace(model_type: str, deadline: float) -> dict:
    head, base = classes_for(model_type)
    if not head and not base:
        return {"status": "no_model_class", "reason": "no class in any auto model mapping"}
    from transformers import AutoConfig

    class_list = []
    if head:
        class_list.append((head[0], head[1]))
    if base:
        class_list.append(("base", base))
    best = None
    real = None  # the best real-tensor attempt that recorded something
    first_reason = None
    for variant, env_kind in ATTEMPTS:
        if time.time() > deadline - 3:
            break
        res = _attempt(model_type, class_list, variant, env_kind)
        if first_reason is None and res.get("reason"):
            first_reason = res["reason"]
        if res["status"] == "ok" or (res["status"] == "partial" and res["severity"] <= 1):
            return _with_real_ops(res, real)
        if res["status"] == "partial" and (best is None or (res["severity"], -len(res["stats"])) < (best["severity"], -len(best["stats"]))):
            best = res
            from .runner import checkpoint

            checkpoint(best)
        if res["status"] == "partial" and env_kind == "cpu" and (real is None or res["severity"] < real["severity"]):
            real = res
    if best:
        return _with_real_ops(best, real)
    return {"status": "error", "reason": first_reason or "no attempt ran", "method": "/".join(ATTEMPTS[0])}


def _with_real_ops(res: dict, real: dict | None) -> dict:
    """A FakeTensor/meta result plus what a (partial) real-tensor attempt recorded. Fake and
    meta tensors take transformers' tracing-friendly branches and skip data-dependent ones
    (``.item()`` shortcuts, boolean masks), which real tensors run; both recordings are the
    same model code under the same recorder, so the profile keeps the union and says so."""
    if real is None or res is real or res["method"].endswith("/cpu"):
        return res
    res = dict(res, stats=dict(res["stats"]))
    for name, st in real["stats"].items():
        dst = res["stats"].setdefault(name, OpStats())
        dst.count += st.count
        dst.dtypes |= st.dtypes
        dst.phases |= st.phases
        dst.inner |= st.inner
    res["classes"] = sorted(set(res.get("classes", [])) | set(real.get("classes", [])))
    res["data_dependent"] = sorted(set(res.get("data_dependent", [])) | set(real.get("data_dependent", [])))
    res["notes"] = list(res.get("notes", [])) + [
        f"ops of the real-tensor attempt {real['method']} ({real['status']}) merged in: "
        "fake/meta tensors skip data-dependent paths"
    ]
    return res


def _too_big_for_cpu(class_list, cfg) -> str | None:
    """A reason to skip real tensors at default widths, or None. Counts parameters of
    each class built on the meta device (no memory, no data)."""
    for _, cls_name in class_list:
        try:
            with torch.device("meta"):
                n = sum(p.numel() for p in _resolve(cls_name)(cfg).parameters())
        except Exception:  # noqa: BLE001 - the real attempt will report the error
            continue
        if n > MAX_REAL_PARAMS:
            return f"{cls_name}: {n / 1e6:.0f}M parameters at default widths, too big for real tensors"
    return None


def _attempt(model_type, class_list, variant, env_kind, recorder_cls=OpRecorder) -> dict:
    from transformers import AutoConfig

    method = f"{variant}/{env_kind}"
    try:
        cfg = hf_types.BUILD[model_type]() if model_type in hf_types.BUILD else AutoConfig.for_model(model_type)
        if getattr(cfg, "lags_sequence", None) is not None and getattr(cfg, "prediction_length", 1) is None:
            # time-series configs derive feature_size at init: pass the lengths up front
            cfg = AutoConfig.for_model(model_type, prediction_length=4, context_length=8, num_time_features=1)
        cfg = configs.shrink(cfg, variant)
        configs.fix_query_image_token(cfg)
        configs.fix_vocab(cfg, hf_inputs.special_token_ids(cfg))
        hf_types.fix_config(model_type, cfg, variant)
    except Exception as e:  # noqa: BLE001
        return {"status": "error", "method": method, "reason": "config: " + _short(e)}
    if variant == "layers" and env_kind == "cpu":
        too_big = _too_big_for_cpu(class_list, cfg)
        if too_big:
            return {"status": "error", "method": method, "reason": too_big, "stats": {}}
    return _attempt_classes(cfg, class_list, method, env_kind, recorder_cls)


def _attempt_classes(cfg, class_list, method, env_kind, recorder_cls=OpRecorder) -> dict:
    """Every class of ``class_list`` through the three phases on ``cfg`` (also used by
    exact.py with a Hub config.json)."""
    env = make_env(env_kind)
    phases.ATTEMPT = method
    acc: dict = {}
    notes, failures, classes = [], [], []
    coverage = {}  # every class tried, including those that failed at import/init
    data_dep = set()
    hard_failures = 0  # classes that failed at init or inference
    for kind, cls_name in class_list:
        try:
            cls = _resolve(cls_name)
        except Exception as e:  # noqa: BLE001
            failures.append(f"{cls_name}: import: {_short(e)}")
            coverage[cls_name] = phase_coverage("import")
            continue
        recorder = recorder_cls()
        want_image = kind in ("image_text_to_text", "multimodal_lm") or (kind == "base" and hf_inputs.image_token_id(cfg) is not None)
        # Both classes run every phase: the base class is not always the head class minus
        # the head (BERT's pooler, for one, exists only in the base class).
        train = True
        try:
            with env():
                used_image, image_err = _trace_class(cls, cfg, kind, env, recorder, notes, want_image, train)
            if not train:
                notes.append(f"{cls_name}: inference only (training traced on the head class)")
            if want_image:
                notes.append(f"{cls_name}: image fed" if used_image else f"{cls_name}: text only ({image_err or 'no image path'})")
                # what else the type's input recipe feeds (video frames, audio clips)
                notes.extend(f"{cls_name}: {m} fed" for m in hf_types.FEEDS.get(getattr(cfg, "model_type", ""), ()))
        except PhaseError as e:
            failures.append(f"{cls_name}: {e.phase} failed: {_short(e.err)}")
            coverage[cls_name] = phase_coverage(e.phase)
            if e.phase == "inference":
                hard_failures += 1
        except Exception as e:  # noqa: BLE001
            failures.append(f"{cls_name}: init: {_short(e)}")
            coverage[cls_name] = phase_coverage("init")
            hard_failures += 1
        else:
            coverage[cls_name] = phase_coverage(None)
        if recorder.stats:
            classes.append(cls_name)
            recorder.merge_into(acc)
            data_dep |= recorder.data_dependent
    if not acc:
        return {"status": "error", "method": method, "reason": failures[0] if failures else "no ops recorded", "stats": {}}
    status = "partial" if failures else "ok"
    return {
        "status": status, "method": method, "classes": classes, "notes": notes + failures,
        "stats": acc, "data_dependent": sorted(data_dep), "coverage": coverage,
        "reason": failures[0] if failures else "",
        # 0 ok, 1 only training phases failed, 2 some class failed at inference, 3 all did
        "severity": 0 if not failures else (1 if hard_failures == 0 else (3 if hard_failures >= len(class_list) else 2)),
    }
