#!/usr/bin/env python
# coding: utf-8
# A Kaggle notebook exported with `jupyter nbconvert --to script` (issue 43 item 19): its `%%time`
# cell became `get_ipython().run_cell_magic('time', '', code)` and its `%%writefile` cell a call
# that writes a whole torch_xla program. The code in those strings uses the imports above it
# (they must stay) and holds torch_xla calls (they must be reported, at the string).

# In[1]:


import torch
import torch_xla.core.xla_model as xm


# In[2]:


get_ipython().run_cell_magic('time', '', 'device = xm.xla_device()\nx = torch.randn(4, 4).to(device)\nprint(f"{x.sum().item():.6f}")\n')


# In[3]:


get_ipython().run_cell_magic('writefile', 'train.py', 'import torch\nimport torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n\ndef _mp_fn(index):\n    device = xm.xla_device()\n    print(index, torch.ones(2, device=device).sum().item())\n\n\nif __name__ == "__main__":\n    xmp.spawn(_mp_fn, args=())\n')


# In[4]:


get_ipython().system('python train.py')
