"""The secret cases graded mode draws for the exercises of chapters 1-14.

``python -m pe_book grade`` adds to each checker's fixed cases some drawn from the
grader's secret seed (:mod:`~.secret`), inside the domain the exercise's statement
promises: one function here per exercise (or per family of exercises that share their
inputs), named after it, taking the seeded generator and returning its :class:`Draw`
list. :data:`~.graded.EXERCISES` says which exercise uses which.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import torch

from pe_book import symmetry

__all__ = ["Draw"]


class Draw(NamedTuple):
    """One drawn case: its arguments, its input class, and its answer when no reference has it."""

    args: tuple[Any, ...]
    kind: str
    expected: Any = None


def _log(rng: np.random.Generator, low: float, high: float) -> float:
    """A number between low and high, uniform in its logarithm."""
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def _even(rng: np.random.Generator, low: int, high: int) -> int:
    """An even number in [low, high]."""
    return 2 * int(rng.integers(low // 2, high // 2 + 1))


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    return int(rng.integers(low, high + 1))


def _tensor(rng: np.random.Generator, *shape: int) -> torch.Tensor:
    return torch.from_numpy(rng.standard_normal(shape))


def _positions(rng: np.random.Generator, count: int, high: int) -> torch.Tensor:
    return torch.from_numpy(np.sort(rng.choice(high, size=count, replace=False))).long()


def permutation_matrix(rng: np.random.Generator) -> list[Draw]:
    return [Draw((rng.permutation(n).tolist(),), "a random permutation") for n in (4, 7, 9)]


def attention(rng: np.random.Generator) -> list[Draw]:
    draws = []
    for causal in (False, True):
        q_len = _int(rng, 1, 6)
        k_len, dim = _int(rng, q_len, 9), _int(rng, 2, 8)
        args = (_tensor(rng, q_len, dim), _tensor(rng, k_len, dim), _tensor(rng, k_len, dim + 1))
        draws.append(Draw((*args, causal), f"random q, k, v, causal={causal}"))
    return draws


def recover_positions(rng: np.random.Generator) -> list[Draw]:
    seq_len = _int(rng, 20, 200)
    start = _int(rng, 0, seq_len - 2)
    stop = _int(rng, start + 1, seq_len)
    window = symmetry.bos_share(seq_len)[start:stop]
    return [Draw((window,), "a random window", torch.arange(start, stop, dtype=torch.float64))]


def circle_solution(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_int(rng, 2, 40), float(rng.uniform(0.05, 3.0))), "random L and θ")]


def diagonal_leak(rng: np.random.Generator) -> list[Draw]:
    return [Draw(tuple(float(h) for h in rng.uniform(-3, 3, 2)), "random h1, h2") for _ in "ab"]


def sinusoidal_table(rng: np.random.Generator) -> list[Draw]:
    return [
        Draw((_int(rng, 2, 300), _even(rng, 2, 64), _log(rng, 50, 1e5)), "random L, d, base"),
        Draw((_int(rng, 1500, 3000), _even(rng, 8, 32), 10000.0), "positions in the thousands"),
    ]


def turning_pairs(rng: np.random.Generator) -> list[Draw]:
    return [
        Draw((int(_log(rng, 2, 200_000)), _even(rng, 2, 512), _log(rng, 100, 1e6)), "random")
        for _ in "ab"
    ]


def base_for_wavelength(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_even(rng, 4, 512), _log(rng, 100, 1e7)), "random d and wavelength")]


def layout_permutation(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_even(rng, 10, 40),), "a random even d")]


def shift_matrix(rng: np.random.Generator) -> list[Draw]:
    return [
        Draw((_int(rng, -50, 50), _even(rng, 2, 16), _log(rng, 100, 1e5)), "a random shift"),
        Draw((_int(rng, 5000, 20000), 16, _log(rng, 1e3, 1e5)), "a shift in the thousands"),
    ]


def offset_profile(rng: np.random.Generator) -> list[Draw]:
    offsets = torch.cat((torch.tensor([0]), _positions(rng, 9, 150_000)))
    return [Draw((offsets, _even(rng, 8, 256), _log(rng, 100, 1e6)), "random offsets, d, base")]


def integral_profile(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_log(rng, 0.1, 1e5), _log(rng, 100, 1e6)), "random r and base") for _ in "ab"]


def reach(rng: np.random.Generator) -> list[Draw]:
    args = (_even(rng, 16, 128), _log(rng, 100, 1e5), float(rng.uniform(-0.3, 0.9)))
    return [Draw(args, "a random level")]


def relative_indices(rng: np.random.Generator) -> list[Draw]:
    q_start, q_len, k_start, k_len = (_int(rng, low, high) for low, high in [(0, 20), (1, 8)] * 2)
    queries, keys = torch.arange(q_start, q_start + q_len), torch.arange(k_start, k_start + k_len)
    return [Draw((queries, keys, _int(rng, 0, 10)), "random positions and K")]


def t5_bucket(rng: np.random.Generator) -> list[Draw]:
    buckets = _even(rng, 4, 40)
    args = (torch.arange(-300, 301), bool(rng.integers(2)), buckets, _int(rng, buckets, 300))
    return [Draw(args, "random bucket settings")]


def similarity_by_offset(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_tensor(rng, _int(rng, 2, 50), _int(rng, 1, 16)),), "a random table")]


def rope_rotation(rng: np.random.Generator) -> list[Draw]:
    positions = _positions(rng, 6, 50_000)
    return [Draw((_tensor(rng, 6, _even(rng, 2, 32)), positions), "random x and positions")]


def ntk(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_even(rng, 4, 256), _log(rng, 100, 1e6), _log(rng, 1.5, 32)), "random")]


def dynamic(rng: np.random.Generator) -> list[Draw]:
    dim, base, factor = _even(rng, 4, 256), _log(rng, 100, 1e6), _log(rng, 1.5, 32)
    original = 2 ** _int(rng, 8, 13)
    longer = _int(rng, original + 1, int(original * factor * 2))
    return [
        Draw((dim, base, factor, original, longer), "longer than the original"),
        Draw((dim, base, factor, original, _int(rng, 1, original)), "within the original"),
    ]


def llama3(rng: np.random.Generator) -> list[Draw]:
    args = (_even(rng, 4, 256), _log(rng, 1e3, 1e6), _log(rng, 1.5, 32), 2 ** _int(rng, 8, 13))
    return [Draw(args, "random settings")]


def alibi_slopes(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_int(rng, 1, 64),), "a random number of heads") for _ in "ab"]


def decoding_bias(rng: np.random.Generator) -> list[Draw]:
    k_len = _int(rng, 2, 20)
    return [Draw((_int(rng, 1, k_len), k_len, _int(rng, 1, 16)), "random lengths and heads")]


def mean_distance(rng: np.random.Generator) -> list[Draw]:
    return [
        Draw((_log(rng, 1e-6, 1.0), _int(rng, 0, 10_000)), "a random slope and m") for _ in "ab"
    ]


def cpd_margin(rng: np.random.Generator) -> list[Draw]:
    size = _int(rng, 3, 15)
    positions = torch.arange(size, dtype=torch.float64)
    distance = (positions[:, None] - positions[None, :]).abs()
    power = -(distance ** float(rng.uniform(0.2, 1.9)))
    log = -float(rng.uniform(0.5, 3)) * torch.log1p(float(rng.uniform(0.1, 2)) * distance)
    return [Draw((power,), "a random power kernel"), Draw((log,), "a random log kernel")]


def p_rope(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_even(rng, 4, 256), float(rng.uniform(0, 1)), _log(rng, 100, 1e6)), "random")]


def mla_cache_ratio(rng: np.random.Generator) -> list[Draw]:
    args = (_int(rng, 1, 128), _even(rng, 8, 256), _even(rng, 8, 1024), _even(rng, 2, 128))
    return [Draw(args, "random sizes")]


def perplexity(rng: np.random.Generator) -> list[Draw]:
    return [Draw((rng.uniform(0, 5, _int(rng, 1, 20)).tolist(),), "random losses")]


def short_context_fraction(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_int(rng, 1, 5000), _int(rng, 0, 6000)), "random lengths") for _ in "ab"]


def degradation(rng: np.random.Generator) -> list[Draw]:
    lengths = sorted(rng.choice([32, 64, 128, 256, 512, 1024, 2048], 3, replace=False).tolist())
    table: dict[str, float | None] = {str(n): float(rng.uniform(1, 20)) for n in lengths[::-1]}
    cannot = {**table, str(lengths[-1]): None}
    return [
        Draw((table, lengths[0]), "random, longest first"),
        Draw((cannot, lengths[0]), "no long"),
    ]


def context_effect(rng: np.random.Generator) -> list[Draw]:
    draws = []
    for _ in range(3):
        low = float(rng.uniform(-0.1, 0.1))
        args = (low, low + float(rng.uniform(0.001, 0.1)), float(rng.uniform(0.001, 0.05)))
        draws.append(Draw(args, "a random interval and margin"))
    return draws


def shaw_parameters(rng: np.random.Generator) -> list[Draw]:
    args = (_int(rng, 1, 24), _int(rng, 0, 256), _even(rng, 2, 128), bool(rng.integers(2)))
    return [Draw(args, "random sizes")]


def shaw_table_bytes(rng: np.random.Generator) -> list[Draw]:
    return [Draw((_int(rng, 1, 400), _even(rng, 2, 64)), "random sizes")]


def scaling_exponent(rng: np.random.Generator) -> list[Draw]:
    short = _int(rng, 16, 4096)
    args = (_log(rng, 0.01, 100), short, _log(rng, 0.01, 100), short * _int(rng, 2, 64))
    return [Draw(args, "two random points")]


def kv_cache_bytes(rng: np.random.Generator) -> list[Draw]:
    kinds = ["sliding_attention", "full_attention", "chunked_attention"]
    plan = [kinds[int(i)] for i in rng.integers(0, 3, _int(rng, 1, 12))]
    args = (plan, _int(rng, 16, 8192), _int(rng, 1, 100_000), _int(rng, 1, 16), _even(rng, 8, 256))
    return [Draw((*args, int(rng.choice([1, 2, 4]))), "a random layer plan")]


def mrope_ids(rng: np.random.Generator) -> list[Draw]:
    segments: list[tuple[Any, ...]] = [
        ("text", _int(rng, 1, 5))
        if kind == "text"
        else (kind, 1 if kind == "image" else _int(rng, 2, 5), _int(rng, 1, 4), _int(rng, 1, 4))
        for kind in rng.choice(["text", "image", "video"], _int(rng, 2, 4)).tolist()
    ]
    return [Draw((segments,), "random segments")]


def query_temperature(rng: np.random.Generator) -> list[Draw]:
    """Llama 4's regime, where the statement's "float32 is enough" holds: a whole F and
    a <= 0.2 keep tau below 4.2, where float32's rounding (about 3e-7) is within 1e-6."""
    positions = _positions(rng, 8, 2**24)
    floor_scale = float(_int(rng, 2, 10_000))
    return [Draw((positions, floor_scale, float(rng.uniform(0, 0.2))), "random positions")]


def sink_gap(rng: np.random.Generator) -> list[Draw]:
    return [Draw((float(rng.uniform(0.01, 0.99)), int(_log(rng, 2, 1e6))), "random") for _ in "ab"]


def extra_context(rng: np.random.Generator) -> list[Draw]:
    segments, bins = _int(rng, 1, 4), _int(rng, 2, 5)
    full = rng.uniform(0.5, 3.0, (segments, bins)).tolist()
    capped = rng.uniform(0.5, 3.0, (segments, bins - 1)).tolist()
    return [
        Draw(({"full_by_bin": full, "capped_by_bin": capped},), "random losses by bin"),
        Draw(({"full_by_bin": None, "capped_by_bin": capped},), "no full context"),
    ]


def cheapest_keeper(rng: np.random.Generator) -> list[Draw]:
    methods = ["alibi", "shaw", "t5", "rope", "none", "kerple", "fire", "xpos"]
    extra = {m: float(rng.uniform(-0.1, 1.0)) for m in methods}
    cost = {m: float(rng.uniform(0.9, 8.0)) for m in methods}
    return [Draw((extra, cost, float(rng.uniform(0, 0.5))), "random losses and costs")]
