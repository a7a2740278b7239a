"""Deterministic cells: one call fixes every random generator and the thread count.

Every chapter, from chapter 0 on, starts with it.

nbval compares stored outputs with a fresh run, so a chapter starts with
``seed_everything()``: Python's, NumPy's and PyTorch's generators are seeded and
PyTorch uses a fixed number of threads (parallel reductions may sum in a
different order with a different thread count, which moves the last digits).
"""

from __future__ import annotations

import random

import numpy as np
import torch

from pe_book._validate import validate_int

__all__ = ["seed_everything"]


def seed_everything(seed: int = 0, *, threads: int = 1) -> torch.Generator:
    """Seed ``random``, NumPy and PyTorch with ``seed``; use ``threads`` CPU threads.

    Returns a ``torch.Generator`` seeded with ``seed`` for code that wants its
    own stream. Deterministic algorithms are switched on, so an operation with
    no deterministic kernel raises instead of varying silently.
    """
    seed = validate_int("seed", seed, minimum=0)
    threads = validate_int("threads", threads, minimum=1)
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - legacy global generator, seeded for third-party code
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    return torch.Generator().manual_seed(seed)
