#!/bin/bash
# jax[tpu] still installs libtpu from its index: the index stays (reported)
pip install "jax[tpu]==0.4.30" -f https://storage.googleapis.com/jax-releases/libtpu_releases.html
pip install torch-tpu==0.2.0
