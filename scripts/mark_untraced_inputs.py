#!/usr/bin/env python3
"""Mark the transformers op profiles that traced the text path only (issue 46).

The tracer feeds an image to a class whose head is image-text-to-text / multimodal LM (or whose
config has an image token) and notes the outcome per class: "<Class>: image fed" or
"<Class>: text only (<why>)". A profile where some class went text-only and none was fed
recorded no op of the model's other encoders. Which inputs those are is not in the profile: it
is derived here from the config class of the traced model type, in the transformers version the
profile records (no model is built or run): its sub-configs and special tokens name the
inputs it takes (vision_config, image_token_id -> image; video_token_id -> video; audio_config,
audio_token_id, a speech codec -> audio; a protein encoder -> protein). A type that names none
(mistral4's ForCausalLM sits in the image-text-to-text mapping but has no vision tower) is not
marked. The result is written as `untraced_inputs` (sorted), which `xla2tpu sweep` reads to
judge such a model `partial`; stale marks are removed, so a re-run after a re-trace is exact.

    PYTHONPATH=tracer tracer/.venv/bin/python scripts/mark_untraced_inputs.py [corpus/ops corpus/ops-bf16]
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT_ONLY = re.compile(r"^\w+: text only \(")
IMAGE_FED = re.compile(r"^\w+: image fed$")


def declared_inputs(cfg) -> list[str]:
    """The non-text inputs a config names through its sub-configs and special tokens."""
    keys = set(cfg.to_dict()) | set(getattr(cfg, "sub_configs", {}) or {})
    found = set()
    for k in keys:
        if "vision" in k or k.startswith("image_token") or k in ("image_size", "patch_size"):
            found.add("image")
        if k.startswith("video_token"):
            found.add("video")
        if any(w in k for w in ("audio", "speech", "codec", "acoustic")):
            found.add("audio")
        if "protein" in k:
            found.add("protein")
    # A patch size alone (a text model's tokenizer setting) is not an image input.
    if found == {"image"} and not any("vision" in k or k.startswith("image") for k in keys):
        found.clear()
    return sorted(found)


def skipped(prof: dict) -> bool:
    notes = prof.get("notes", [])
    return any(TEXT_ONLY.match(n) for n in notes) and not any(IMAGE_FED.match(n) for n in notes)


def main(dirs: list[str]) -> int:
    import transformers
    from transformers import AutoConfig

    from xla2tpu_tracer.output import write_json

    marked = 0
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "transformers", "*.json"))):
            if os.path.basename(path) == "index.json":
                continue
            with open(path, encoding="utf-8") as f:
                prof = json.load(f)
            want: list[str] = []
            if skipped(prof):
                traced_with = prof.get("versions", {}).get("transformers")
                if traced_with != transformers.__version__:
                    sys.exit(f"{path}: traced with transformers {traced_with}, this venv has {transformers.__version__}")
                want = declared_inputs(AutoConfig.for_model(prof["name"]))
            if prof.get("untraced_inputs", []) == want:
                marked += bool(want)
                continue
            if want:
                prof["untraced_inputs"] = want
            else:
                prof.pop("untraced_inputs", None)
            write_json(path, prof)
            marked += bool(want)
            print(f"{os.path.relpath(path, ROOT)}: untraced_inputs {want}")
    print(f"{marked} profiles marked")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:] or [os.path.join(ROOT, "corpus", "ops"), os.path.join(ROOT, "corpus", "ops-bf16")]
    sys.exit(main(args))
