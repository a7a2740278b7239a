"""Every checker rejects the wrong answers readers are known to give, and passes a right one.

One entry per checker of ``pe_book.exercises``: a right answer written from the
statement (not a call into the package where the exercise asks for the formula), and
the plausible wrong answers found by cold reads (issue 23) and by an audit of each
checker: a transposed matrix, an off-by-one, angles in float32, a strict inequality
at a boundary, a formula right only on symmetric inputs, a shorter search, the other
layout. A checker that lets one of them pass fails here.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np
import pytest
import torch

from pe_book import exercises, relative, sinusoidal

F64 = torch.float64


def _theta(dim, base, dtype=F64):
    return base ** (-torch.arange(0, dim, 2, dtype=dtype) / dim)


# ---- chapter 1 -----------------------------------------------------------------------


def _perm_matrix(perm, transpose=False, dtype=torch.float32):
    matrix = torch.zeros(len(perm), len(perm), dtype=dtype)
    for row, col in enumerate(perm):
        matrix[(col, row) if transpose else (row, col)] = 1.0
    return matrix


def _attention(q, k, v, causal, scale="d", mask="bottom-right", axis=-1):
    dim = {"d": q.shape[-1], "dv": v.shape[-1], "none": 1}[scale]
    scores = q @ k.T / dim**0.5
    if causal:
        q_len, k_len = scores.shape
        start = {"bottom-right": k_len - q_len, "top-left": 0, "strict": k_len - q_len - 1}[mask]
        visible = torch.arange(k_len)[None, :] <= torch.arange(q_len)[:, None] + start
        scores = scores.masked_fill(~visible, float("-inf"))
    return torch.softmax(scores, dim=axis) @ v


def _invisible(weight, seq_len, side="right", spacing=1.0):
    u, _, vh = torch.linalg.svd(weight)
    direction = vh[-1] if side == "right" else u[:, -1]  # "left": the null space of Wᵀ
    return spacing * torch.arange(seq_len, dtype=weight.dtype)[:, None] * direction


# ---- chapter 2 -----------------------------------------------------------------------


def _taylor(f, x_m, x_n, p_m, p_n, half=0.5, mixed="mn"):
    d = x_m.shape[0]

    def joint(z):
        return f(z[:d], z[d:])

    z = torch.cat((x_m, x_n))
    grad = torch.autograd.functional.jacobian(joint, z)
    hess = torch.autograd.functional.hessian(joint, z)
    block = hess[:d, d:] if mixed == "mn" else hess[d:, :d]
    return torch.stack(
        (
            joint(z),
            p_m @ grad[:d],
            p_n @ grad[d:],
            half * p_m @ hess[:d, :d] @ p_m,
            half * p_n @ hess[d:, d:] @ p_n,
            p_m @ block @ p_n,
        )
    )


def _circle(seq_len, theta, order="cos-sin", start=0, dtype=F64):
    angle = torch.arange(start, start + seq_len, dtype=dtype) * theta
    pair = (angle.cos(), angle.sin()) if order == "cos-sin" else (angle.sin(), angle.cos())
    return torch.stack(pair, -1)


# ---- chapter 3 -----------------------------------------------------------------------


def _table(seq_len, dim, base, angle_dtype=F64, layout="interleaved", exponent=2, start=0):
    pos = torch.arange(start, start + seq_len, dtype=angle_dtype)[:, None]
    angle = pos * base ** (-exponent * torch.arange(dim // 2, dtype=angle_dtype) / dim)
    if layout == "interleaved":
        return torch.stack((angle.sin(), angle.cos()), -1).flatten(-2)
    if layout == "cos-sin":
        return torch.stack((angle.cos(), angle.sin()), -1).flatten(-2)
    return torch.cat((angle.sin(), angle.cos()), -1)


def _turning(seq_len, dim, base, span="L-1", rounding=math.floor, which="turning"):
    steps = {"L-1": seq_len - 1, "L": seq_len}[span]
    if steps <= 0:
        count = 0
    else:  # 2π b^(2i/d) <= steps  <=>  i <= (d/2) log(steps / 2π) / log b
        last = (dim / 2) * math.log(steps / (2 * math.pi)) / math.log(base)
        count = min(max(rounding(last) + 1, 0), dim // 2) if last >= 0 else 0
    return dim // 2 - count if which == "still" else count


def _base(dim, longest, power="d/(d-2)", two_pi=True):
    target = longest / (2 * math.pi) if two_pi else longest
    exponent = dim / (dim - 2) if power == "d/(d-2)" else (dim - 2) / dim
    return target**exponent


# ---- chapter 4 -----------------------------------------------------------------------


def _shift(shift, dim, base, angle_dtype=F64, transpose=False, layout="interleaved"):
    angle = shift * _theta(dim, base, angle_dtype)
    cos, sin = angle.cos().double(), angle.sin().double()
    blocks = torch.stack((torch.stack((cos, sin), -1), torch.stack((-sin, cos), -1)), -2)
    matrix = torch.block_diag(*(b.T if transpose else b for b in blocks))
    if layout == "half":
        perm = sinusoidal.layout_permutation(dim)
        matrix = matrix[perm][:, perm]
    return matrix


def _bilinear(w, order="cos-sin"):
    (a11, a12), (a21, a22) = w.tolist()
    if order == "cos-sin":  # chapter 2's order, the exercise's
        return (a11 + a22) / 2, (a21 - a12) / 2, (a11 - a22) / 2, (a12 + a21) / 2
    return (a11 + a22) / 2, (a12 - a21) / 2, (a22 - a11) / 2, (a12 + a21) / 2  # section 4.3


# ---- chapters 5 and 7 ----------------------------------------------------------------


def _profile(offsets, dim, base, angle_dtype=F64, reduce="mean"):
    angles = offsets.to(angle_dtype)[:, None] * _theta(dim, base, angle_dtype)
    cosines = torch.cos(angles).double()
    return cosines.mean(-1) if reduce == "mean" else cosines.sum(-1)


def _integral(r, base, at_zero=True, log=True, order=1):
    import mpmath

    if r == 0 and at_zero:
        return 1.0
    value = order * (mpmath.ci(r) - mpmath.ci(r / base))
    return float(value / mpmath.log(base)) if log else float(value)


def _reach(dim, base, level, search=100_000, strict=False, missing=-1):
    from pe_book import decay

    values = decay.dot_profile(torch.arange(search + 1), dim, base)
    hits = torch.nonzero(values < level if strict else values <= level)
    return int(hits[0, 0]) if hits.numel() else missing


def _rope(x, positions, angle_dtype=F64, layout="interleaved", sign=1, ignore_positions=False):
    dim = x.shape[-1]
    pos = torch.arange(len(positions)) if ignore_positions else positions
    angle = (pos.to(angle_dtype)[:, None] * _theta(dim, 10000.0, angle_dtype)).double()
    cos, sin = angle.cos(), sign * angle.sin()
    if layout == "half":
        first, second = x[:, : dim // 2], x[:, dim // 2 :]
        return torch.cat((first * cos - second * sin, second * cos + first * sin), -1)
    even, odd = x[:, 0::2], x[:, 1::2]
    out = torch.empty_like(x)
    out[:, 0::2], out[:, 1::2] = even * cos - odd * sin, even * sin + odd * cos
    return out


def _to_interleaved(q):  # the exercise: half-layout q -> interleaved q
    dim = q.shape[-1]
    out = torch.empty_like(q)
    out[..., 0::2], out[..., 1::2] = q[..., : dim // 2], q[..., dim // 2 :]
    return out


def _bound(offsets, dim, base, angle_dtype=F64, partial="cumsum"):
    phases = (offsets.to(angle_dtype)[:, None] * _theta(dim, base, angle_dtype)).double()
    unit = torch.polar(torch.ones_like(phases), phases)
    if partial == "cumsum":
        return unit.cumsum(-1).abs().mean(-1)
    if partial == "with S_0":  # averages d/2 + 1 sums, S_0 = 0 included
        sums = torch.cat((torch.zeros_like(unit[:, :1]), unit.cumsum(-1)), -1)
        return sums.abs().mean(-1)
    return unit.sum(-1).abs().expand(len(offsets)) / 1.0


# ---- chapter 8 -----------------------------------------------------------------------


def _ntk(dim, base, factor, rule="ntk", dtype=F64):
    if rule == "linear":
        return _theta(dim, base, dtype) / factor
    grown = base * factor ** (dim / (dim - 2) if rule == "ntk" else 1.0)
    return _theta(dim, grown, dtype)


def _dynamic(dim, base, factor, original, seq_len, clamp=True, minus=True, fixed=False):
    grown = factor if fixed else factor * seq_len / original - ((factor - 1) if minus else 0)
    if clamp:
        grown = max(1.0, grown)
    if fixed and seq_len <= original:
        grown = 1.0
    return _theta(dim, base * grown ** (dim / (dim - 2)), F64)


def _llama3(dim, base, factor, original, blend="right", clamp=True):
    theta = _theta(dim, base)
    turns = original * theta / (2 * math.pi)
    g = (turns - 1.0) / 3.0
    g = g.clamp(0, 1) if clamp else g
    if blend == "reversed":
        return g * theta / factor + (1 - g) * theta
    return (1 - g) * theta / factor + g * theta


# ---- chapter 9 -----------------------------------------------------------------------


def _slopes(n_heads, rule="official"):
    def power_of_two(count):
        return [2 ** (-8 * (h + 1) / count) for h in range(count)]

    if rule == "formula":
        return [2 ** (-8 * (h + 1) / n_heads) for h in range(n_heads)]
    n0 = 2 ** math.floor(math.log2(n_heads))
    slopes = power_of_two(n0) + power_of_two(2 * n0)[0::2][: n_heads - n0]
    return sorted(slopes, reverse=True) if rule == "sorted" else slopes


def _decoding(q_len, k_len, slopes, start=None, sign=-1):
    first = k_len - q_len if start is None else start
    m = torch.arange(first, first + q_len, dtype=F64)[:, None]
    n = torch.arange(k_len, dtype=F64)[None, :]
    return sign * slopes[:, None, None] * (m - n)


def _mean_distance(slope, m, rule="softmax"):
    if rule == "softmax":
        r = torch.arange(m + 1, dtype=F64)
        return float((torch.softmax(-slope * r, 0) * r).sum())
    if slope == 0:
        return m / 2
    if rule == "closed form":  # chapter 9's finite sum, x = e^-s: cancels at tiny slopes
        x = math.exp(-slope)
        return x / (1 - x) - (m + 1) * x ** (m + 1) / (1 - x ** (m + 1))
    return 1 / math.expm1(slope)  # "limit": only right for large m


# ---- chapters 10 to 13 ---------------------------------------------------------------


def _offset_only(score, shifts=(1, 17, 1500), tol=1e-9, positions=(3, 40, 900)):
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 8, generator=generator, dtype=F64)
    for m in positions:
        for n in positions:
            for shift in shifts:
                if abs(score(q, k, m, n) - score(q, k, m + shift, n + shift)) > tol:
                    return False
    return True


def _extra(record, first_bin=False, sign=1.0, pooled=False):
    if record["full_by_bin"] is None:
        return None
    full = np.asarray(record["full_by_bin"])[:, 0 if first_bin else 1 :].mean(1)
    cost = sign * (full - np.asarray(record["capped_by_bin"]).mean(1))
    return float(cost.mean()) if pooled else cost


def _cheapest(extra, cost, tolerance, strict=False, absolute=False, ignore=False):
    def fits(loss):
        loss = abs(loss) if absolute else loss
        return ignore or (loss < tolerance if strict else loss <= tolerance)

    keepers = [method for method, loss in extra.items() if fits(loss)]
    return min(keepers, key=cost.get) if keepers else None


def _degradation(table, train_len, longest="largest"):
    if longest == "runs":
        table = {length: value for length, value in table.items() if value is not None}
    key = list(table)[-1] if longest == "last" else max(table, key=int)
    return None if table[key] is None else table[key] / table[str(train_len)]


def _from_zero(query_positions, key_positions, big_k):
    return RIGHT["relative_indices"](
        torch.arange(len(query_positions)), torch.arange(len(key_positions)), big_k
    )


def _perm(q):
    return sinusoidal.layout_permutation(q.shape[-1])


def _t5_own(offset, bidirectional, num_buckets, max_distance, cap=True, log_dtype=None):
    relative_position = -offset  # T5's memory minus query
    base = torch.zeros_like(offset)
    if bidirectional:
        num_buckets //= 2
        base = (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    scaled = torch.log(distance.to(log_dtype or torch.float32) / max_exact) / math.log(
        max_distance / max_exact
    )
    large = max_exact + (scaled * (num_buckets - max_exact)).long()
    large = large.clamp(max=num_buckets - 1) if cap else large
    return base + torch.where(distance < max_exact, distance, large)


def _dots(table):
    gram = table.double() @ table.double().T
    return torch.stack([gram.diagonal(r).mean() for r in range(len(table))])


def _rolled(table):
    unit = torch.nn.functional.normalize(table.double(), dim=-1)
    return torch.stack([(unit * unit.roll(-r, 0)).sum(-1).mean() for r in range(len(table))])


def _numpy_args(score):
    """The reader's own test written with NumPy vectors and NumPy integers."""
    return lambda q, k, m, n: score(np.asarray(q), np.asarray(k), np.int64(m), np.int64(n))


def learned_float32(table):
    unit = torch.nn.functional.normalize(table.float(), dim=-1)
    return torch.stack([(unit @ unit.T).diagonal(r).mean() for r in range(len(table))])


# ---- the table: right answer, then (what the mistake is, wrong answer) ---------------

RIGHT = {
    "permutation_matrix": _perm_matrix,
    "attention": _attention,
    "recover_positions": lambda share: 1 / share - 1,
    "invisible_positions": _invisible,
    "taylor_terms": _taylor,
    "circle_solution": _circle,
    "diagonal_leak": lambda h1, h2: ((h1 + h2) / 2, (h2 - h1) / 2),
    "sinusoidal_table": _table,
    "turning_pairs": _turning,
    "base_for_wavelength": _base,
    "layout_permutation": lambda dim: list(range(0, dim, 2)) + list(range(1, dim, 2)),
    "shift_matrix": _shift,
    "bilinear_terms": _bilinear,
    "direction_matrix": lambda: torch.tensor([[0.5, 0.75**0.5], [-(0.75**0.5), 0.5]]),  # R(-π/3)
    "dot_profile": _profile,
    "integral_profile": _integral,
    "reach": _reach,
    "relative_indices": lambda q, k, big_k: (q[:, None] - k[None, :]).clamp(-big_k, big_k) + big_k,
    "t5_bucket": _t5_own,
    "similarity_by_offset": lambda t: torch.stack(
        [
            torch.nn.functional.normalize(t.double(), dim=-1)
            .matmul(torch.nn.functional.normalize(t.double(), dim=-1).T)
            .diagonal(r)
            .mean()
            for r in range(len(t))
        ]
    ),
    "rope_rotation": _rope,
    "layout_conversion": _to_interleaved,
    "decay_bound": _bound,
    "ntk_frequencies": _ntk,
    "dynamic_frequencies": _dynamic,
    "llama3_frequencies": _llama3,
    "alibi_slopes": _slopes,
    "decoding_bias": _decoding,
    "mean_distance": _mean_distance,
    "mla_cache_ratio": lambda h, d, c, r: 2 * h * d / (c + r),
    "perplexity": lambda losses: math.exp(sum(losses) / len(losses)),
    "short_context_fraction": lambda n, c: min(c, n) / n,
    "degradation": _degradation,
    "shaw_parameters": lambda n, k, d, v: n * (2 if v else 1) * (2 * k + 1) * d,
    "shaw_table_bytes": lambda length, d: length * length * d * 4,
    "scaling_exponent": lambda t1, l1, t2, l2: math.log(t2 / t1) / math.log(l2 / l1),
    "offset_only": _offset_only,
    "extra_context": _extra,
    "cheapest_keeper": _cheapest,
}

# Right answers in another dtype or container: the policy judges values only.
ALSO_RIGHT = {
    "permutation_matrix": [
        ("float64", lambda p: _perm_matrix(p, dtype=F64)),
        ("int64", lambda p: _perm_matrix(p).long()),
    ],
    "recover_positions": [("float32 arithmetic", lambda share: 1 / share.float() - 1)],
    "invisible_positions": [("float32", lambda w, n: _invisible(w.float(), n))],
    "offset_only": [("NumPy vectors", lambda score: _offset_only(_numpy_args(score)))],
    "circle_solution": [
        ("float32", lambda n, t: _circle(n, t).float()),
        ("float32 angles", lambda n, t: _circle(n, t, dtype=torch.float32)),
    ],
    "sinusoidal_table": [
        ("a float32 table", lambda *a: _table(*a).float()),
        ("a NumPy array", lambda *a: _table(*a).numpy()),
    ],
    "shift_matrix": [("a float32 matrix", lambda *a: _shift(*a).float())],
    "dot_profile": [("a float32 result", lambda *a: _profile(*a).float())],
    "layout_permutation": [("a tensor", lambda dim: torch.arange(dim).reshape(-1, 2).T.flatten())],
    "relative_indices": [
        ("float", lambda q, k, big_k: RIGHT["relative_indices"](q, k, big_k).double())
    ],
    "similarity_by_offset": [("float32", lambda t: learned_float32(t))],
    "alibi_slopes": [("float32", lambda n: torch.tensor(_slopes(n), dtype=torch.float32))],
    "decoding_bias": [
        ("float32", lambda *a: _decoding(*a).float()),
        ("a NumPy array", lambda *a: _decoding(*a).numpy()),
    ],
    "mean_distance": [("a NumPy float", lambda s, m: np.float64(_mean_distance(s, m)))],
    "perplexity": [("a float32 0-d tensor", lambda losses: torch.tensor(losses).mean().exp())],
}


WRONG = {
    "permutation_matrix": [
        ("transposed: P⁻¹ instead of P", lambda p: _perm_matrix(p, transpose=True)),
        ("the identity", lambda p: torch.eye(len(p))),
    ],
    "attention": [
        ("no 1/√d", lambda *a: _attention(*a, scale="none")),
        ("1/√d_v instead of 1/√d", lambda *a: _attention(*a, scale="dv")),
        ("top-left mask", lambda *a: _attention(*a, mask="top-left")),
        ("strict mask: n < m", lambda *a: _attention(*a, mask="strict")),
        ("softmax over the queries", lambda *a: _attention(*a, axis=0)),
    ],
    "recover_positions": [
        ("off by one: 1/share", lambda share: 1 / share),
        ("the window's length only", lambda share: torch.arange(len(share), dtype=F64)),
    ],
    "invisible_positions": [
        ("transposed: the null space of Wᵀ", lambda w, n: _invisible(w, n, side="left")),
        ("rows 1e-4 apart", lambda w, n: _invisible(w, n, spacing=1e-4)),
        ("all rows equal", lambda w, n: torch.zeros(n, w.shape[0], dtype=F64)),
    ],
    "taylor_terms": [
        ("no 1/2 on the Hessian terms", lambda *a: _taylor(*a, half=1.0)),
        ("transposed mixed block", lambda *a: _taylor(*a, mixed="nm")),
    ],
    "circle_solution": [
        ("(sin, cos) order", lambda n, t: _circle(n, t, order="sin-cos")),
        ("off by one: m = 1..L", lambda n, t: _circle(n, t, start=1)),
    ],
    "diagonal_leak": [
        ("section 2.4's (cos, sin) answer", lambda h1, h2: ((h1 + h2) / 2, (h1 - h2) / 2)),
        ("no leak", lambda h1, h2: ((h1 + h2) / 2, 0.0)),
    ],
    "sinusoidal_table": [
        ("half layout", lambda *a: _table(*a, layout="half")),
        ("(cos, sin) in each pair", lambda *a: _table(*a, layout="cos-sin")),
        ("float32 angles", lambda *a: _table(*a, angle_dtype=torch.float32)),
        ("exponent i/d", lambda *a: _table(*a, exponent=1)),
        ("off by one: positions 1..L", lambda *a: _table(*a, start=1)),
    ],
    "turning_pairs": [
        ("off by one: L steps, not L - 1", lambda *a: _turning(*a, span="L")),
        ("ceil instead of floor", lambda *a: _turning(*a, rounding=math.ceil)),
        ("the pairs that do not turn", lambda *a: _turning(*a, which="still")),
    ],
    "base_for_wavelength": [
        ("the base equals the wavelength", lambda dim, longest: longest),
        ("exponent (d - 2)/d", lambda dim, longest: _base(dim, longest, power="(d-2)/d")),
        ("no 2π", lambda dim, longest: _base(dim, longest, two_pi=False)),
    ],
    "layout_permutation": [
        ("the inverse permutation", lambda dim: np.argsort(RIGHT["layout_permutation"](dim))),
        ("odd columns first", lambda dim: list(range(1, dim, 2)) + list(range(0, dim, 2))),
    ],
    "shift_matrix": [
        ("transposed: M_(-c)", lambda *a: _shift(*a, transpose=True)),
        ("half layout", lambda *a: _shift(*a, layout="half")),
        ("float32 angles", lambda *a: _shift(*a, angle_dtype=torch.float32)),
    ],
    "bilinear_terms": [
        ("section 4.3's (sin, cos) answer", lambda w: _bilinear(w, order="sin-cos")),
        ("transposed A", lambda w: _bilinear(w.T)),
        ("α only", lambda w: ((float(w[0, 0]) + float(w[1, 1])) / 2, 0.0, 0.0, 0.0)),
    ],
    "direction_matrix": [
        ("the other way: R(π/3)", lambda: torch.tensor([[0.5, -(0.75**0.5)], [0.75**0.5, 0.5]])),
        ("section 4.3's J: sin((m - n)θ)", lambda: torch.tensor([[0.0, 1.0], [-1.0, 0.0]])),
        ("the identity", lambda: torch.eye(2)),
    ],
    "dot_profile": [
        ("float32 angles", lambda *a: _profile(*a, angle_dtype=torch.float32)),
        ("sum, not mean", lambda *a: _profile(*a, reduce="sum")),
    ],
    "integral_profile": [
        ("Ci(0) left in", lambda r, b: _integral(r, b, at_zero=False)),
        ("no 1/ln b", lambda r, b: _integral(r, b, log=False)),
        ("Ci(r/b) - Ci(r)", lambda r, b: _integral(r, b, order=-1)),
    ],
    "reach": [
        ("strict <", lambda *a: _reach(*a, strict=True)),
        ("searches to 20,000 only", lambda *a: _reach(*a, search=20_000)),
        ("searches past 100,000", lambda *a: _reach(*a, search=200_000)),
        ("100,001 for 'never'", lambda *a: _reach(*a, missing=100_001)),
    ],
    "relative_indices": [
        ("n - m: the sign transposed", lambda q, k, kk: RIGHT["relative_indices"](k, q, kk).T),
        ("no + K", lambda q, k, kk: (q[:, None] - k[None, :]).clamp(-kk, kk)),
        ("keys × queries", lambda q, k, kk: RIGHT["relative_indices"](q, k, kk).T),
        ("positions 0..L-1 assumed", lambda q, k, kk: _from_zero(q, k, kk)),
    ],
    "t5_bucket": [
        ("T5's own sign: r, not -r", lambda r, *a: relative.t5_bucket(-r, *a)),
        ("no cap at the last bucket", lambda *a: _t5_own(*a, cap=False)),
        ("the logarithm in float64", lambda *a: _t5_own(*a, log_dtype=F64)),
    ],
    "similarity_by_offset": [
        ("dot products, not cosines", lambda t: _dots(t)),
        ("circular shift", lambda t: _rolled(t)),
    ],
    "rope_rotation": [
        ("half layout", lambda x, p: _rope(x, p, layout="half")),
        ("turns the other way", lambda x, p: _rope(x, p, sign=-1)),
        ("positions ignored", lambda x, p: _rope(x, p, ignore_positions=True)),
        ("float32 angles", lambda x, p: _rope(x, p, angle_dtype=torch.float32)),
    ],
    "layout_conversion": [
        ("the other direction: q[..., perm]", lambda q: q[..., _perm(q)]),
        ("no conversion", lambda q: q),
    ],
    "decay_bound": [
        ("float32 angles", lambda *a: _bound(*a, angle_dtype=torch.float32)),
        ("S_0 = 0 averaged in", lambda *a: _bound(*a, partial="with S_0")),
    ],
    "ntk_frequencies": [
        ("linear: θ/κ", lambda *a: _ntk(*a, rule="linear")),
        ("base · κ, no exponent", lambda *a: _ntk(*a, rule="base")),
        ("float32 frequencies", lambda *a: _ntk(*a, dtype=torch.float32)),
    ],
    "dynamic_frequencies": [
        ("no floor at 1", lambda *a: _dynamic(*a, clamp=False)),
        ("no - (κ - 1)", lambda *a: _dynamic(*a, minus=False)),
        ("κ past the original length", lambda *a: _dynamic(*a, fixed=True)),
    ],
    "llama3_frequencies": [
        ("the blend reversed", lambda *a: _llama3(*a, blend="reversed")),
        ("g not clamped", lambda *a: _llama3(*a, clamp=False)),
    ],
    "alibi_slopes": [
        ("2^(-8h/n) for every n", lambda n: _slopes(n, rule="formula")),
        ("sorted", lambda n: _slopes(n, rule="sorted")),
    ],
    "decoding_bias": [
        ("no KV offset", lambda q, k, s: _decoding(q, k, s, start=0)),
        ("the sign flipped", lambda q, k, s: _decoding(q, k, s, sign=1)),
        ("one head only", lambda q, k, s: _decoding(q, k, s)[0]),
        ("float16, exact only for power-of-two slopes", lambda *a: _decoding(*a).half()),
    ],
    "mean_distance": [
        ("the limit 1/(e^s - 1)", lambda s, m: _mean_distance(s, m, rule="limit")),
        ("the closed form, which cancels", lambda s, m: _mean_distance(s, m, "closed form")),
    ],
    "mla_cache_ratio": [
        ("no shared k^R", lambda h, d, c, r: 2 * h * d / c),
        ("a k^R per head", lambda h, d, c, r: 2 * h * d / (c + h * r)),
        ("keys only", lambda h, d, c, r: h * d / (c + r)),
    ],
    "perplexity": [
        ("mean of exp", lambda losses: sum(math.exp(x) for x in losses) / len(losses)),
        ("exp of the median", lambda losses: math.exp(statistics.median(losses))),
        ("exp of the midrange", lambda losses: math.exp((min(losses) + max(losses)) / 2)),
        ("exp of the sum", lambda losses: math.exp(sum(losses))),
    ],
    "short_context_fraction": [
        ("context / seq_len", lambda n, c: c / n),
        ("off by one: fewer than context", lambda n, c: min(max(c - 1, 0), n) / n),
    ],
    "degradation": [
        ("the last key, not the longest", lambda t, n: _degradation(t, n, "last")),
        ("the longest length that runs", lambda t, n: _degradation(t, n, "runs")),
    ],
    "shaw_parameters": [
        ("2K rows, not 2K + 1", lambda n, k, d, v: n * (2 if v else 1) * 2 * k * d),
        ("one layer", lambda n, k, d, v: (2 if v else 1) * (2 * k + 1) * d),
    ],
    "shaw_table_bytes": [
        ("the table, not the gather", lambda length, d: 33 * d * 4),
        ("8 bytes a number", lambda length, d: length * length * d * 8),
    ],
    "scaling_exponent": [
        ("ratio of ratios", lambda t1, l1, t2, l2: (t2 / t1) / (l2 / l1)),
        ("log2 of the time ratio", lambda t1, l1, t2, l2: math.log2(t2 / t1)),
    ],
    "offset_only": [
        ("always True", lambda score: True),
        ("shifts by one only", lambda score: _offset_only(score, shifts=(1,))),
        ("positions below 1,000 only", lambda score: _offset_only(score, shifts=(1, 17, 50))),
        ("exact equality", lambda score: _offset_only(score, tol=0.0)),
    ],
    "extra_context": [
        ("the first bin kept", lambda r: _extra(r, first_bin=True)),
        ("capped minus full", lambda r: _extra(r, sign=-1.0)),
        ("one mean for all segments", lambda r: _extra(r, pooled=True)),
    ],
    "cheapest_keeper": [
        ("strict <", lambda e, c, t: _cheapest(e, c, t, strict=True)),
        ("|extra| <= tolerance", lambda e, c, t: _cheapest(e, c, t, absolute=True)),
        ("ignores the tolerance", lambda e, c, t: _cheapest(e, c, t, ignore=True)),
    ],
}


ALL = sorted(name.removeprefix("check_") for name in exercises.__all__ if name[:6] == "check_")
#: Checkers whose right and known wrong answers are tested in a file of their own
#: (tests/test_checkers_ch10.py, ..._ch11.py, ...): named there as a key or called.
OWN_FILES = [
    path.read_text(encoding="utf-8")
    for path in sorted(Path(__file__).parent.glob("test_checkers_*.py"))
    if path.name != Path(__file__).name
]
ELSEWHERE = {
    name
    for name in ALL
    if any(f'"{name}":' in text or f"check_{name}(" in text for text in OWN_FILES)
}
CHECKERS = sorted(name for name in ALL if name not in ELSEWHERE)


def test_every_checker_has_a_right_answer_and_wrong_ones():
    assert set(CHECKERS) <= set(RIGHT), "checkers with no right answer here or elsewhere"
    assert set(RIGHT) == set(WRONG)
    assert all(len(WRONG[name]) >= 2 for name in RIGHT)


@pytest.mark.parametrize("name", CHECKERS)
def test_the_right_answer_passes(name, capsys):
    getattr(exercises, f"check_{name}")(RIGHT[name])
    out = capsys.readouterr().out
    assert out.startswith(f"{name}: ") and "not attempted" not in out, out


@pytest.mark.parametrize(
    ("name", "label"), [(name, label) for name, pairs in ALSO_RIGHT.items() for label, _ in pairs]
)
def test_a_dtype_or_container_alone_never_fails(name, label, capsys):
    getattr(exercises, f"check_{name}")(dict(ALSO_RIGHT[name])[label])
    out = capsys.readouterr().out
    assert out.startswith(f"{name}: ") and "not attempted" not in out, out


@pytest.mark.parametrize(
    ("name", "label"), [(name, label) for name, answers in WRONG.items() for label, _ in answers]
)
def test_the_known_wrong_answer_fails(name, label):
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        getattr(exercises, f"check_{name}")(dict(WRONG[name])[label])
    assert str(raised.value).startswith(f"{name}: ")


# ---- the policy's messages -------------------------------------------------------------


def test_a_miss_names_the_case_and_index_but_never_the_expected_values():
    from pe_book.exercises.policy import judge

    expected = torch.tensor([[0.123456, 0.654321], [0.777777, 0.888888]], dtype=F64)
    message = judge(
        expected,
        expected + torch.tensor([[0, 0], [0, 0.5]]),
        atol=1e-6,
        locate=lambda index: f"row {index[0]}",
    )
    assert "index [1, 1] (row 1)" in message and "largest error is between 0.1 and 1" in message
    for value in expected.flatten().tolist():
        assert f"{value:.4f}"[:5] not in message  # no expected entry, not even rounded
    message = judge(4.99999999, 10.0, atol=1e-9)
    assert "your answer 10.0" in message and "4.99" not in message and "5.0" not in message


def test_float32_is_named_only_when_it_is_the_likely_cause():
    from pe_book.exercises.policy import judge

    exact = torch.linspace(0, 1, 7, dtype=F64) / 3
    assert "float32, the likely cause: because" in judge(
        exact, exact.float(), atol=1e-12, float32="because"
    )
    assert "float32 numbers (converted" in judge(exact, exact.float().double(), atol=1e-12)
    assert judge(exact, exact.float(), atol=1e-6) is None  # a dtype alone never fails
    assert "float32" not in judge(exact, exact.float() + 1, atol=1e-6)  # not rounding


def test_a_wrong_answer_is_one_short_message_in_a_notebook():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_reach(lambda dim, base, level: 0)
    rendered = raised.value._render_traceback_()  # what IPython shows instead of a traceback
    assert rendered[0].startswith("reach: case ") and len(rendered) <= 4
    assert not any("Traceback" in line or 'File "' in line for line in rendered)


def test_a_crash_names_the_line_of_the_readers_code():
    def my_table(seq_len, dim, base):
        angle = torch.arange(seq_len)[:, None] * torch.ones(dim // 2 + 1)
        return angle.reshape(seq_len, dim)

    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_sinusoidal_table(my_table)
    message = str(raised.value)
    assert "raised RuntimeError" in message
    assert "(in my_table, line " in message and "angle.reshape(seq_len, dim)" in message


def test_scores_explain_arguments_of_the_wrong_type():
    with pytest.raises(exercises.ExerciseMismatch, match=r"q must be 8 numbers .* got str"):
        exercises.check_offset_only(lambda score: score("q", "k", 1, 2) > 0)
    with pytest.raises(exercises.ExerciseMismatch, match=r"m = 5000 is outside 0 \.\. 4095"):
        exercises.check_offset_only(lambda score: score(np.ones(8), np.ones(8), 5000, 2) > 0)


@pytest.mark.parametrize("name", CHECKERS)
def test_not_attempted_says_what_to_do_not_where_a_solution_is(name, capsys):
    def stub(*args):
        raise NotImplementedError

    getattr(exercises, f"check_{name}")(stub)
    out = capsys.readouterr().out
    assert "not attempted yet" in out and "raise NotImplementedError" in out
    advice = out.split("not attempted yet.")[1]
    assert "solution" not in advice and "collapsed" not in advice
