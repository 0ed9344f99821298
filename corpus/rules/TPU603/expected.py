# TPU603 optimum-auto-model
from optimum.tpu.modeling import AutoModelForCausalLM as OptimumAuto
import transformers

model = transformers.AutoModelForCausalLM.from_pretrained("google/gemma-2b").to("tpu").eval()
model2 = OptimumAuto.from_pretrained("google/gemma-2b", batch_size=4, sequence_length=256)  # TPU-only kwargs: reported
