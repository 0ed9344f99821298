# TPU606 optimum-model-classes: reported only
from optimum.tpu.modeling_llama import LlamaForCausalLM
from optimum.tpu.static_cache_xla import StaticCacheXla

model = LlamaForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
cache = StaticCacheXla(config=model.config, max_batch_size=1, max_cache_len=256, device="xla", dtype=model.dtype)
