"""Shared test settings: hypothesis profiles and float64 helpers."""

import os

import torch
from hypothesis import settings

# In CI the examples are derandomized so a failure reproduces on the next run;
# locally hypothesis explores new examples every time.
settings.register_profile("ci", deadline=None, max_examples=60, derandomize=True)
settings.register_profile("dev", deadline=None, max_examples=60)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

torch.set_num_threads(1)
