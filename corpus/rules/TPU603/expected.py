# TPU603 optimum-auto-model
import transformers

model = transformers.AutoModelForCausalLM.from_pretrained("google/gemma-2b").to("tpu").eval()
model2 = transformers.AutoModelForCausalLM.from_pretrained("google/gemma-2b").to("tpu").eval()  # TPU-only kwargs: reported
