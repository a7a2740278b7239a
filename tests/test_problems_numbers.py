"""Every number a written problem's answer states is recomputed here, with pe_book where it has
the formula (pe_book/data/problems.toml; the instructor guide).

An answer's decimals, percentages and numbers with thousands separators must each appear in
CHECKS under the problem's label ("9.3", or "E6" for the exam bank), with the value that
pe_book (or plain arithmetic on the problem's data) gives; the stated number must be that
value rounded to the digits it shows. Section and problem references ("problem 11.2",
"section 12.7") are not numbers.
"""

import json
import math
import re
from pathlib import Path

import pytest
import torch

from pe_book import (
    alibi,
    attention,
    cost,
    decay,
    diagnostics,
    evaluation,
    fire,
    intervals,
    irope,
    kerple,
    mla,
    mrope,
    open_models,
    problems,
    relative,
    rope,
    rope_scaling,
    sinks,
    sinusoidal,
    symmetry,
    taylor,
    xpos,
)

TAU = 2 * math.pi
NUMBER = re.compile(
    r"(?<![\w.^{])(\d{1,3}(?:\{,\}\d{3})+(?:\.\d+)?|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+%?|\d+%)"
)
REFERENCE = re.compile(r"(?:problems?|sections?|exercises?|chapters?)\s+$", re.I)


def stated_numbers(text):
    """The numbers an answer states, as written (references to sections left out)."""
    found = []
    for match in NUMBER.finditer(text):
        if REFERENCE.search(text[max(0, match.start() - 12) : match.start()]):
            continue
        found.append(match.group(1).replace("{,}", "").replace(",", ""))
    return found


def bf16(x):
    return torch.tensor(float(x), dtype=torch.bfloat16).item()


def f16(x):
    return torch.tensor(float(x), dtype=torch.float16).item()


def rho(offset, theta):
    return float(decay.profile_from_frequencies(torch.tensor([offset]), theta)[0])


def causal_swap_difference():
    """Attn(PX)_0 - Attn(X)_1 for x = (0, 1), all weights 1, through pe_book's attention."""
    x = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    swapped = attention.attention(x.flip(0), x.flip(0), x.flip(0), causal=True)[0, 0]
    original = attention.attention(x, x, x, causal=True)[1, 0]
    return float(swapped - original)


def variance(sa, sb, se, seeds, segments):
    return sa**2 / seeds + sb**2 / segments + se**2 / (seeds * segments)


def check_1_2():
    causal, full = symmetry.bos_share(12), symmetry.bos_share(12, causal=False)
    return {"0.2": float(causal[4]), "0.1": float(causal[9]), "0.0833": float(full[0])}


def check_2_2():
    zigzag = taylor.circle_solution(2, 0.7)
    return {"0.7": 0.7, "0.7648": float(zigzag[0] @ zigzag[1])}


def check_2_4():
    table = sinusoidal.sinusoidal_table(8, 512, dtype=torch.float64)
    assert torch.allclose(table.norm(dim=1), torch.full((8,), 16.0, dtype=torch.float64))
    return {"22.6": math.sqrt(512)}


def check_3_1():
    lam = sinusoidal.wavelengths(512)
    return {
        "1.0366": float(lam[1] / lam[0]),
        "6.283": float(lam[0]),
        "60611.5": float(lam[-1]),
        "0.9647": float(lam[-1] / (TAU * 10000)),
    }


def check_3_2():
    base = (1e5 / TAU) ** (64 / 62)
    assert abs(float(sinusoidal.wavelengths(64, base)[-1]) - 1e5) < 1e-6
    assert torch.allclose(
        sinusoidal.wavelengths(12, 64.0)[1:] / sinusoidal.wavelengths(12, 64.0)[:-1],
        torch.full((5,), 2.0, dtype=torch.float64),
    )
    return {"21745": base}


def check_3_4():
    assert f16(2048) == 2048 and f16(2049) == 2048 and bf16(257) == 256
    assert f16(65519) == 65504 and math.isinf(f16(65520)) and 2.0**16 == 65536
    positions = torch.arange(100_000, dtype=torch.float32).to(torch.float16)
    nan_rows = int(torch.sin(positions.float()).isnan().sum())
    return {
        "65504": torch.finfo(torch.float16).max,
        "65536": 2.0**16,
        "65520": 65520,
        "99999": 99_999,
        "100000": 100_000,
        "34480": nan_rows,
    }


def check_3_5():
    column = [10000 ** (-2 * j / 100) for j in (98, 99)]  # answer 1's exponent, dimension j
    theta = float(sinusoidal.frequencies(100)[49])
    return {
        "7.84": 4 * 1.96,
        "1.45": column[0] / 1e-8,
        "7.92": 4 * 1.98,
        "1.20": [column[1] / 1e-8, theta / 1e-4],
        "3.92": 4 * 0.98,
    }


def check_4_4():
    angles = 5 * sinusoidal.frequencies(8)
    theta = sinusoidal.frequencies(8)
    return {
        "0.1": float(theta[1]),
        "0.01": float(theta[2]),
        "0.001": float(theta[3]),
        "0.5": float(angles[1]),
        "0.05": float(angles[2]),
        "0.005": float(angles[3]),
    }


def check_5_3():
    x0 = 0.6165055  # Ci(x0) = 0 (chapter 5's value, checked below)
    import mpmath

    assert abs(float(mpmath.ci(x0))) < 1e-6
    return {
        "0.5772": float(mpmath.euler),
        "4.6052": math.log(100),
        "9.2103": math.log(1e4),
        "0.437": 1 - (float(mpmath.euler) + math.log(100)) / math.log(1e4),
        "0.4368": float(decay.integral_profile(torch.tensor([100.0]), 1e4)[0]),
        "6165": x0 * 1e4,
        "6166": decay.integral_reach(0.0, 1e4),
    }


def check_5_4():
    offsets = torch.arange(1_000_000, 2_000_000, 7)
    rms = float(decay.dot_profile(offsets, 64).pow(2).mean().sqrt())
    return {"0.125": [1 / math.sqrt(64), rms]}


def check_6_1():
    layer = relative.ShawAttention(128, 4, 16)
    tables = sum(p.numel() for name, p in layer.named_parameters() if "table" in name)
    rows = relative.relative_indices(torch.tensor([100]), torch.tensor([96, 0]), 3)
    assert rows.tolist() == [[6, 6]]
    return {"2112": tables, "4224": 2 * tables}


def check_6_2():
    assert relative.t5_bucket(torch.tensor([90, 91]), bidirectional=True).tolist() == [14, 15]
    assert relative.t5_bucket(torch.tensor([112, 113]), bidirectional=False).tolist() == [30, 31]
    return {"90.5": 8 * 16 ** (7 / 8), "112.4": 16 * 8 ** (15 / 16)}


def check_6_3():
    short = int((sinusoidal.wavelengths(384) < 8.5).sum())
    assert short == 7
    return {"8.5": 8.5, "393216": 512 * 768, "0.36%": 100 * 512 * 768 / 110e6}


def check_7_3():
    spacing = 2.0 ** (13 - 7)
    return {
        "10000": 10000,
        "156.25": 10000 / spacing,
        "9984": bf16(10000),
        "32000": 32000,
        "1.9": 32000 * 2.0**-24 / 1e-3,
    }


def check_7_4():
    return {"32.5": float(decay.rope_decay_bound(torch.tensor([0]), 128)[0]), "4000": 4000}


def check_7_2():
    """Half-layout RoPE on q equals interleaved RoPE on q' with q'[perm[j]] = q[j]."""
    perm = sinusoidal.layout_permutation(8)
    assert perm == [0, 2, 4, 6, 1, 3, 5, 7]
    torch.manual_seed(0)
    q, k = torch.randn(2, 6, 8, dtype=torch.float64)
    q2, k2 = torch.empty_like(q), torch.empty_like(k)
    q2[:, perm], k2[:, perm] = q, k
    half = rope.apply_rope(q, layout="half") @ rope.apply_rope(k, layout="half").T
    inter = rope.apply_rope(q2) @ rope.apply_rope(k2).T
    assert torch.allclose(half, inter, atol=1e-10)
    return {}


def check_8_1():
    theta = sinusoidal.frequencies(128)
    scaled, _ = rope_scaling.scaled_frequencies(128, 1e4, rope_scaling.NTKScaling(4.0))
    assert abs(float(scaled[-1] / theta[-1]) - 0.25) < 1e-12
    return {"40890": 1e4 * 4 ** (128 / 126), "0.4945": float(scaled[32] / theta[32])}


def check_8_2():
    scaling = rope_scaling.DynamicNTKScaling(4.0, 2048)
    scaled, _ = rope_scaling.scaled_frequencies(128, 1e4, scaling, seq_len=4 * 2048)
    assert abs(float(sinusoidal.frequencies(128)[-1] / scaled[-1]) - 13) < 1e-9
    return {}


def check_8_3():
    theta2 = sinusoidal.frequencies(16, 1e4) ** 2
    paper = 16 / (8 * math.log(1e4))
    h = torch.ones(8, dtype=torch.complex128)
    corrected = rope_scaling.interpolation_bound(h, torch.tensor([0.5]), rule="corrected")
    assert abs(float(corrected[0]) - float(theta2.sum()) / 8) < 1e-12  # (1/2)(1/4) Σθ²
    return {
        "0.1": 1e4 ** (-4 / 16),
        "1.1111": float(theta2.sum()),
        "0.5556": float(theta2.sum()) / 2,
        "0.2171": paper,
        "2.56": float(theta2.sum()) / 2 / paper,
    }


def check_8_4():
    lam = sinusoidal.wavelengths(128, 500_000.0)
    kept, divided = int((lam <= 2048).sum()), int((lam >= 8192).sum())
    assert (kept, 64 - kept - divided, divided) == (29, 6, 29)
    scaled, _ = rope_scaling.scaled_frequencies(
        128, 500_000.0, rope_scaling.Llama3Scaling(factor=8.0, original_max_len=8192)
    )
    ratio = scaled / sinusoidal.frequencies(128, 500_000.0)
    assert torch.all(ratio[:29] == 1) and torch.allclose(
        ratio[35:], torch.full((29,), 0.125, dtype=torch.float64)
    )
    return {
        "500000": 500_000,
        "325.9": 2048 / TAU,
        "28.2": 64 * math.log(2048 / TAU) / math.log(500_000),
        "1303.8": 8192 / TAU,
        "34.98": 64 * math.log(8192 / TAU) / math.log(500_000),
    }


def check_8_5():
    theta, _ = rope_scaling.partial_rotary_frequencies(128, 0.25)
    profile = decay.profile_from_frequencies(torch.arange(8193), theta)
    return {"8.5": 8.5, "0.636": float(profile.min())}


def check_9_1():
    sixteen = alibi.alibi_slopes(16).log2()
    assert torch.allclose(sixteen, -0.5 * torch.arange(1, 17, dtype=sixteen.dtype))
    eight = alibi.alibi_slopes(8)
    assert torch.allclose(eight, 2.0 ** -torch.arange(1, 9, dtype=eight.dtype))
    return {"0.5": -float(sixteen[0])}


def check_9_2():
    slopes = alibi.alibi_slopes(12).log2()
    expected = [-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5]
    assert torch.allclose(slopes, torch.tensor(expected, dtype=slopes.dtype))
    return {"0.5": 0.5, "1.5": 1.5, "2.5": 2.5, "3.5": 3.5}


def check_9_3():
    far = alibi.mean_distance(torch.tensor([1 / 16, 1 / 2], dtype=torch.float64), 100_000)
    assert alibi.alibi_reach(torch.tensor([1 / 16, 1 / 2])).tolist() == [160, 20]
    return {"15.51": float(far[0]), "1.54": float(far[1])}


def check_9_4():
    largest = 0.5 * 8191
    assert bf16(largest) == 4096 and bf16(2048 + 16) == 2048 + 16 and bf16(2048 + 7) == 2048
    return {"4095.5": largest}


def check_9_5():
    assert 8 * 1024**2 * 4 == 32 * 2**20 and 8 * 16_384**2 * 4 == 8 * 2**30
    return {"16384": 16_384}


def check_10_2():
    beta, threshold = 0.1, 64.0
    near = fire.fire_input(1, 64, beta, threshold)[0, 63 - 16]  # m = 63, n = 47
    far = fire.fire_input(1, 1024, beta, threshold)[0, 1023 - 16]  # m = 1023, n = 1007
    return {
        "2.6": 2.6,
        "0.9555": math.log(2.6),
        "7.4": 7.4,
        "2.0015": math.log(7.4),
        "0.477": float(near),
        "103.3": 103.3,
        "4.6376": math.log(103.3),
        "0.206": float(far),
    }


def check_10_3():
    return {"0.737": 1 - (1 - 16 / 128) ** 10, "0.999": 1 - (1 - 16 / 128) ** 50}


def check_10_4():
    zeta0 = float(xpos.xpos_ratios(128)[0])
    limit = 512 * 126 * math.log(2) / math.log(1 / zeta0)
    return {
        "0.4": 0.4,
        "1.4": 1.4,
        "0.2857": zeta0,
        "1.2528": math.log(1 / zeta0),
        "35694": limit,
        "35695": xpos.xpos_position_limit(0.4, 512.0, torch.float32),
    }


def check_10_5():
    return {
        "5441": float(sinusoidal.wavelengths(128)[47]),
        "51862": float(sinusoidal.wavelengths(96)[47]),
    }


def check_11_1():
    return {
        "7.389": evaluation.perplexity([1.0, 2.0, 3.0]),
        "10.06": (math.e + math.e**2 + math.e**3) / 3,
        "1.386": math.log(4),
    }


def check_11_2():
    return {
        "0.25": evaluation.short_context_fraction(64, 16),
        "0.0156": evaluation.short_context_fraction(1024, 16),
        "1.6%": 100 * evaluation.short_context_fraction(1024, 16),
        "0.1": evaluation.short_context_fraction(1000, 100),
    }


def check_11_3():
    expected = ["keeps its quality", "hurt by it", "uses it", "inconclusive", "keeps its quality"]
    bounds = [(0.004, 0.008), (0.015, 0.023), (-0.031, -0.012), (-0.020, 0.015), (-0.005, 0.010)]
    for (low, high), verdict in zip(bounds, expected, strict=True):
        interval = intervals.Interval((low + high) / 2, low, high, 10.0, 0.95, "problem 11.3")
        assert intervals.context_effect(interval, 0.01) == verdict
    return {}


def check_11_4():
    one, five = variance(0.02, 0.1, 0.05, 1, 64), variance(0.02, 0.1, 0.05, 5, 64)
    return {
        "0.0004": 0.02**2,
        "0.00015625": 0.1**2 / 64,
        "0.0000390625": 0.05**2 / 64,
        "0.000595": one,
        "0.0244": math.sqrt(one),
        "0.00008": 0.02**2 / 5,
        "0.0000078125": 0.05**2 / 320,
        "0.000244": five,
        "0.0156": math.sqrt(five),
    }


def check_12_1():
    return {"134217728": 1024**2 * 32 * 4}


def check_12_2():
    d = 128
    ratio = 1024 * (12 * d + 1024) / (256 * (12 * d + 256))
    return {"1536": 12 * d, "5.714": ratio, "1.26": math.log(ratio) / math.log(4)}


def check_12_3():
    return {
        "269.2": 269.2,
        "46.7": 46.7,
        "1.26": cost.scaling_exponent(46.7, 256, 269.2, 1024),
        "1.5": cost.scaling_exponent(50.0, 256, 400.0, 1024),
    }


def check_12_4():
    return {"1.5": 1.5, "8192": 32 * 2**20 // 4096}


def check_13_1():
    plan = ["sliding_attention"] * 5 + ["full_attention"]
    total = open_models.kv_cache_bytes(plan, 1024, 32_768, 8, 128, 2)
    every = open_models.kv_cache_bytes(["full_attention"] * 6, 1024, 32_768, 8, 128, 2)
    per_token = open_models.kv_cache_bytes(["full_attention"], 1024, 1, 8, 128, 2)
    return {"4096": per_token, "32768": 32_768, "155189248": total, "19.3": 100 * total / every}


def check_13_2():
    ids = mrope.mrope_position_ids([("text", 2), ("image", 1, 2, 3), ("text", 2)])
    assert ids.tolist() == [
        [0, 1, 2, 2, 2, 2, 2, 2, 5, 6],
        [0, 1, 2, 2, 2, 3, 3, 3, 5, 6],
        [0, 1, 2, 3, 4, 2, 3, 4, 5, 6],
    ]
    return {}


def check_13_3():
    tau = irope.temperature_scale(torch.tensor([8190, 8191, 65_535]))
    plain = irope.focused_weight(12.0, torch.tensor([65_535]), tuned=False)
    tuned = irope.focused_weight(12.0, torch.tensor([65_535]))
    assert float(tau[0]) == 1.0
    return {
        "0.1": 0.1,
        "1.0693": float(tau[1]),
        "65536": 65_536,
        "1.2197": float(tau[2]),
        "162755": math.exp(12),
        "65535": 65_535,
        "0.713": float(plain[0]),
        "2.27": math.exp(float(tau[2]) * 12) / 1e6,
        "0.972": float(tuned[0]),
    }


def check_13_4():
    def cache_bytes(floats):
        return 2 * floats  # bfloat16

    mla_bytes = cache_bytes(mla.mla_cache_floats(512, 64))
    return {
        "1152": mla_bytes,
        "65536": cache_bytes(mla.mha_cache_floats(128, 128)),
        "4096": cache_bytes(mla.gqa_cache_floats(8, 128)),
        "2.25": mla.mla_cache_floats(512, 64) / mla.gqa_cache_floats(1, 128),
    }


def check_13_5():
    logits = torch.zeros(1, 1, 64, dtype=torch.float64)  # (H, q, k): one head, one query
    weights = sinks.softmax_with_sink(logits, torch.zeros(1, dtype=torch.float64))
    return {
        "0.9": 0.9,
        "0.1": 0.1,
        "6.34": sinks.sink_gap(0.9, 64),
        "13.98": sinks.sink_gap(0.9, 131_072),
        "0.985": float(weights.sum()),
    }


def check_14_3():
    theta = sinusoidal.frequencies(128)
    yarn = rope_scaling.YaRNScaling(4.0, 4096)
    return {
        "0.970": rho(1, theta),
        "0.998": rho(1, theta / 4),
        "0.1": 0.1,
        "1.1386": yarn.attention_factor,
        "16384": 16_384,
    }


def check_e2():
    base = 10 ** (5 * 128 / 126)
    assert abs(float(sinusoidal.wavelengths(128, base)[-1]) - TAU * 1e5) < 1e-6
    return {"120051": base, "74012": decay.integral_reach(0.0, base)}


def check_e4():
    buckets = relative.t5_bucket(torch.tensor([5, 100, -3]), bidirectional=False)
    assert buckets.tolist() == [5, 30, 0]
    return {
        "1.8326": math.log(100 / 16),
        "2.0794": math.log(8),
        "14.10": math.log(100 / 16) / math.log(8) * 16,
    }


def check_e5():
    theta = sinusoidal.frequencies(64)
    scaled, _ = rope_scaling.scaled_frequencies(64, 1e4, rope_scaling.NTKScaling(8.0))
    return {
        "85550": 1e4 * 8 ** (64 / 62),
        "0.3419": float(scaled[16] / theta[16]),
        "0.125": float(scaled[-1] / theta[-1]),
    }


def check_e6():
    slopes = alibi.alibi_slopes(4)
    assert torch.allclose(
        slopes, torch.tensor([1 / 4, 1 / 16, 1 / 64, 1 / 256], dtype=slopes.dtype)
    )
    reach = alibi.alibi_reach(slopes).tolist()
    assert reach == [40, 160, 640, 2560]
    far = alibi.mean_distance(slopes.double(), 100_000)
    return {"2560": reach[3], "3.52": float(far[0])}


def check_e7():
    bias = kerple.kerple_bias(1, 10, torch.tensor([2.0]), torch.tensor([1.0]), start=9)[0, 0]
    assert float(bias[9]) == 0.0  # distance 0
    return {"1.386": -float(bias[8]), "4.605": -float(bias[0])}


def check_e8():
    verdict = intervals.compare(intervals.Interval(0.002, -0.002, 0.006, 10.0, 0.95, "E8"), 0.01)
    assert verdict == "practically equal"
    return {
        "3.320": math.exp(1.20),
        "3.353": math.exp(1.21),
        "1.005%": 100 * math.expm1(0.01),
        "0.01": 0.01,
        "1%": 1,
    }


def check_e10():
    gqa = 32 * 32_768 * 2 * mla.gqa_cache_floats(8, 128)
    latent = 32 * 32_768 * 2 * mla.mla_cache_floats(512, 64)
    assert gqa == 4 * 2**30
    return {
        "4096": 2 * mla.gqa_cache_floats(8, 128),
        "1152": 2 * mla.mla_cache_floats(512, 64),
        "1.125": latent / 2**30,
    }


def check_e12():
    return {"16.5": float(decay.rope_decay_bound(torch.tensor([0]), 64)[0])}


def check_e13():
    assert sinks.streaming_cache_slots(12, 4, 4).tolist() == [0, 1, 2, 3, 8, 9, 10, 11]
    positions, query = sinks.cache_positions(12, 4, 4)
    assert positions.tolist() == list(range(8)) and query == 8
    return {}


def check_1_3():
    return {"0.2689": [1 / (1 + math.e), causal_swap_difference()]}


def check_2_3():
    scores = taylor.circle_solution(64, 0.2)
    leak = scores @ torch.diag(torch.tensor([1.5, 0.5], dtype=torch.float64)) @ scores.T
    assert abs(diagnostics.toeplitz_deviation(leak) - 1.0) < 1e-3
    return {}


def check_4_3():
    table = sinusoidal.sinusoidal_table(40, 2, dtype=torch.float64)  # (sin mθ, cos mθ), θ = 1
    a = torch.tensor([[2.0, -3.0], [3.0, 2.0]], dtype=torch.float64)
    offsets = (torch.arange(40)[:, None] - torch.arange(40)[None, :]).double()
    assert torch.allclose(table @ a @ table.T, 2 * offsets.cos() - 3 * offsets.sin(), atol=1e-12)
    return {}


def check_5_2():
    profile = decay.dot_profile(torch.arange(0, 40), 64)
    first_rise = int(torch.nonzero(profile[1:] > profile[:-1])[0]) + 1
    assert first_rise == 6
    return {}


CHECKS = {  # check_9_3 -> "9.3", check_e6 -> "E6"
    name.removeprefix("check_").replace("_", ".").upper(): check
    for name, check in dict(globals()).items()
    if name.startswith("check_")
}

ANSWERS = {p.label: p.answer for p in problems.problems()} | {
    q.label: q.answer for q in problems.exam()
}


def agrees(written, value):
    """The written number is ``value`` rounded to the digits it shows."""
    digits = len(written.rstrip("%").split(".")[1]) if "." in written else 0
    return abs(float(written.rstrip("%")) - value) <= 0.5 * 10.0**-digits + 1e-12


@pytest.mark.parametrize("label", sorted(ANSWERS, key=lambda s: (s[0] == "E", s)))
def test_every_number_an_answer_states_is_recomputed(label):
    computed = CHECKS[label]() if label in CHECKS else {}
    for written in stated_numbers(ANSWERS[label]):
        assert written in computed, (
            f"answer {label} states {written}: add it to CHECKS in {__file__} with the value"
            " pe_book gives"
        )
        values = computed[written] if isinstance(computed[written], list) else [computed[written]]
        for value in values:
            assert agrees(written, float(value)), f"answer {label}: {written} but computed {value}"


def test_every_check_belongs_to_a_problem():
    assert set(CHECKS) <= set(ANSWERS)


def test_the_number_finder_skips_references_and_reads_separators():
    text = "see problem 11.2 and section 12.7: 65{,}520 rows, 0.25 and 19.3% and 4,096"
    assert stated_numbers(text) == ["65520", "0.25", "19.3%", "4096"]


#: Numbers a question quotes from its chapter's stored outputs (the rest of a question's
#: numbers are data the question sets): problem -> the numbers, as the chapter prints them.
QUOTED = {"5.3": ["0.6165"], "5.5": ["7.8", "6.9", "5.8"], "6.3": ["4.7", "8.5"]}


@pytest.mark.parametrize("label", sorted(QUOTED))
def test_numbers_a_question_quotes_are_printed_by_its_chapter(label):
    chapter = int(label.split(".")[0])
    (path,) = (Path(__file__).parents[1] / "notebooks").glob(f"{chapter:02d}_*.ipynb")
    outputs = "\n".join(
        "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
        for out in cell.get("outputs", [])
    )
    question = next(p.question for p in problems.problems() if p.label == label)
    for number in QUOTED[label]:
        assert number in question, f"problem {label} no longer quotes {number}"
        assert re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", outputs), (
            f"problem {label} quotes {number}, which {path.name} no longer prints"
        )
