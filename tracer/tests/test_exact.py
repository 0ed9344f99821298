"""`exact`: per-config tracing, locally and on a real Ray head started on 127.0.0.1.

The Ray test runs on the session's own Ray head (the `ray_head` fixture in conftest.py).
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from xla2tpu_tracer import cli, exact


BERT = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 32, "num_hidden_layers": 5,
        "num_attention_heads": 4, "intermediate_size": 37, "vocab_size": 1124, "max_position_embeddings": 128,
        "type_vocab_size": 2, "transformers_version": "4.40.0", "torch_dtype": "float32"}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
         "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 4, "vocab_size": 1000,
         "max_position_embeddings": 256, "torch_dtype": "bfloat16", "transformers_version": "4.45.0",
         "_name_or_path": "meta/tiny-llama"}
CONFIGS = {
    "hf-internal/tiny-bert": BERT,
    "meta/tiny-llama": LLAMA,
    # the same config saved by another transformers version in another dtype: traced once
    "other/llama-copy": {**LLAMA, "torch_dtype": "float16", "transformers_version": "4.50.0",
                         "_name_or_path": "other/llama-copy"},
    "acme/custom": {"model_type": "acme_net", "architectures": ["AcmeModel"],
                    "auto_map": {"AutoModel": "modeling_acme.AcmeModel"}},
    "broken": "{\"model_type\": \"bert\", ",  # ownerless id, malformed JSON
}
MEMORY_MB = "2000"  # same for both runs: it picks real vs fake tensors


def write_configs(root):
    for mid, cfg in CONFIGS.items():
        d = os.path.join(root, *mid.split("/"))
        os.makedirs(d)
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(cfg if isinstance(cfg, str) else json.dumps(cfg))


def tree(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def test_key_ignores_provenance_and_dtype_only():
    a = exact.config_key(LLAMA)
    assert a == exact.config_key(CONFIGS["other/llama-copy"])
    assert a != exact.config_key({**LLAMA, "hidden_size": 128})
    assert a != exact.config_key({**LLAMA, "architectures": ["LlamaModel"]})
    nested = {"model_type": "llava", "text_config": {**LLAMA, "_name_or_path": "x"}}
    assert exact.config_key(nested) == exact.config_key({**nested, "text_config": {**LLAMA, "_name_or_path": "y"}})


def test_discover_owner_and_ownerless(tmp_path):
    write_configs(tmp_path)
    os.makedirs(tmp_path / "a" / "b" / "c")
    (tmp_path / "a" / "b" / "c" / "config.json").write_text("{}")  # deeper than a Hub id: ignored
    assert [m for m, _ in exact.discover(str(tmp_path))] == sorted(CONFIGS)


def test_depth_only_reduction():
    cfg = exact.build_config(LLAMA)
    src = exact.reduce_depth(cfg)
    assert src == "hub config.json, depth reduced to 2 (num_hidden_layers 4 -> 2)"
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size) == (2, 64, 128, 1000)
    with pytest.raises(exact.Unsupported, match="custom code only"):
        exact.build_config(CONFIGS["acme/custom"])


def test_merger_resumes_shares_and_drops_orphans(tmp_path):
    v = {"python": "3", "torch": "2", "tracer": "0", "transformers": "5"}
    op = {"op": "aten::mm", "count": 1, "dtypes": ["float32"], "phases": ["inference"]}

    def ok(name):
        return {"status": "ok", "ops": [op], "name": name, "method": "exact/cpu", "config_source": "s",
                "worker_versions": v}

    def prof(key):
        with open(tmp_path / "profiles" / f"{key}.json") as f:
            return json.load(f)

    m = exact.Merger(str(tmp_path), v, {"a/x": "k1", "b/y": "k1"}, {})
    assert m.todo(["k1"]) == ["k1"]
    m.add("k1", ok("bert"))
    m.finish()
    assert prof("k1")["models"] == ["a/x", "b/y"] and prof("k1")["id"] == "config/k1"
    # a/x's config changed: only the new config is traced; b/y keeps k1
    m = exact.Merger(str(tmp_path), v, {"a/x": "k2"}, {})
    assert m.todo(["k2"]) == ["k2"]
    m.add("k2", ok("bert"))
    m.finish()
    assert (prof("k1")["models"], prof("k2")["models"]) == (["b/y"], ["a/x"])
    # b/y now shares k2: nothing to trace, and k1 is used by no model any more
    m = exact.Merger(str(tmp_path), v, {"b/y": "k2"}, {})
    assert m.todo(["k2"]) == []
    m.finish()
    assert prof("k2")["models"] == ["a/x", "b/y"]
    assert not (tmp_path / "profiles" / "k1.json").exists()
    # a result traced with other versions is an error, not a profile
    m = exact.Merger(str(tmp_path), v, {"c/z": "k3"}, {})
    assert m.add("k3", {**ok("gpt2"), "worker_versions": {**v, "torch": "9"}}) == "error"
    assert not (tmp_path / "profiles" / "k3.json").exists()
    # another tracer version: everything is traced again
    m = exact.Merger(str(tmp_path), {**v, "tracer": "1"}, {"a/x": "k2"}, {})
    assert m.todo(["k2"]) == ["k2"]


def test_local_and_ray_write_identical_trees(tmp_path, capsys, ray_head):
    cfgs, local, remote = tmp_path / "configs", tmp_path / "local", tmp_path / "ray"
    write_configs(cfgs)
    common = ["--configs", str(cfgs), "--memory-mb", MEMORY_MB, "--timeout", "120", "--log-dir", str(tmp_path / "logs")]

    t0 = time.time()
    assert cli.main(["exact", "--out", str(local), "--jobs", "2"] + common) == 0
    local_s = time.time() - t0
    with open(local / "index.json") as f:
        index = json.load(f)
    models = index["models"]
    assert {m: e["status"] for m, e in models.items()} == {
        "hf-internal/tiny-bert": "ok", "meta/tiny-llama": "ok", "other/llama-copy": "ok",
        "acme/custom": "unsupported", "broken": "error"}
    assert models["meta/tiny-llama"]["config"] == models["other/llama-copy"]["config"]
    assert models["broken"]["config"] is None and "JSONDecodeError" in models["broken"]["reason"]
    assert "custom code" in models["acme/custom"]["reason"]
    assert set(index["versions"]) == {"python", "torch", "tracer", "transformers"}
    key = models["meta/tiny-llama"]["config"]
    with open(local / "profiles" / f"{key}.json") as f:
        prof = json.load(f)
    assert prof["id"] == f"config/{key}" and prof["library"] == "transformers" and prof["name"] == "llama"
    assert prof["models"] == ["meta/tiny-llama", "other/llama-copy"]
    assert prof["classes"] == ["LlamaForCausalLM", "LlamaModel"] and prof["method"] == "exact/cpu"
    assert prof["config_source"] == "hub config.json, depth reduced to 2 (num_hidden_layers 4 -> 2)"
    assert {"aten::mm", "aten::embedding"} <= {o["op"] for o in prof["ops"]}
    assert sorted(os.listdir(local / "profiles")) == sorted(
        f"{models[m]['config']}.json" for m in ("hf-internal/tiny-bert", "meta/tiny-llama"))

    # Resumable: a second run traces nothing and changes no byte.
    before = tree(local)
    assert cli.main(["exact", "--out", str(local)] + common) == 0
    assert "0 to trace" in capsys.readouterr().out
    assert tree(local) == before

    t2 = time.time()
    assert cli.main(["exact", "--out", str(remote), "--ray", ray_head] + common) == 0
    ray_s = time.time() - t2
    assert tree(remote) == tree(local), "Ray and local runs wrote different trees"
    print(f"timings: local {local_s:.1f}s, ray run {ray_s:.1f}s", file=sys.stderr)
