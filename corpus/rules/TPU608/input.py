# TPU608 optimum-helpers: reported only
import os
from optimum.tpu import jetstream_pt_available
from optimum.tpu.generation import TokenSelector

os.environ["JETSTREAM_PT_DISABLE"] = "1"
if jetstream_pt_available():
    print("jetstream")
selector = TokenSelector.create(input_ids, generation_config, model, 256)
