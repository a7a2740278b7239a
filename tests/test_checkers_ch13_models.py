"""Chapter 13's checkers (position in today's open models) pass a right answer written
from the statement and reject the wrong answers a reader is likely to give (one per
slip the checker's docstring names)."""

import math

import numpy as np
import pytest
import torch

from pe_book import exercises

# ---- 13.1 a layer plan's KV cache -----------------------------------------------------------


def _cache(layer_types, window, seq_len, n_kv_heads, d_head, size, rule="min", pairs=2):
    tokens = 0
    for kind in layer_types:
        if kind == "full_attention":
            tokens += seq_len
        elif rule == "min":
            tokens += min(seq_len, window)
        elif rule == "window":  # the window whatever the text's length
            tokens += window
        elif rule == "window + 1":
            tokens += min(seq_len, window + 1)
        else:  # "all": every layer caches every token
            tokens += seq_len
    return tokens * pairs * n_kv_heads * d_head * size


# ---- 13.2 M-RoPE's position ids -------------------------------------------------------------


def _ids(segments, step="max + 1", swap=False):
    columns, start = [], 0
    for kind, *sizes in segments:
        if kind == "text":
            block = [(start + j,) * 3 for j in range(sizes[0])]
        else:
            grid_t, grid_h, grid_w = sizes
            block = [
                (start + a, start + (x if swap else y), start + (y if swap else x))
                for a in range(grid_t)
                for y in range(grid_h)
                for x in range(grid_w)
            ]
        columns += block
        if step == "max + 1":
            start = max(max(c) for c in columns) + 1
        elif step == "tokens":  # 1-D counting: the next segment starts after the tokens
            start += len(block)
        elif step == "transformers":  # max(grid_h, grid_w) after a vision segment
            start = start + (sizes[0] if kind == "text" else max(sizes[1], sizes[2]))
    return torch.tensor(columns, dtype=torch.int64).T.reshape(3, -1)


# ---- 13.3 Llama 4's query temperature ---------------------------------------------------------


def _temperature(positions, floor_scale, attn_scale, rule="m + 1", log=math.log1p):
    m = torch.as_tensor(positions, dtype=torch.float64)
    numerator = m + 1 if rule == "m + 1" else m
    steps = numerator / floor_scale
    if rule != "no floor":
        steps = torch.floor(steps)
    values = []
    for step in steps.tolist():
        try:
            values.append(log(step))
        except ValueError:  # log(0)
            values.append(-math.inf)
    return 1 + attn_scale * torch.tensor(values, dtype=torch.float64)


# ---- 13.4 the gap a sink needs ------------------------------------------------------------------


def _gap(share, n_keys, rivals="n - 1"):
    if rivals == "n - 1":
        return math.log(share * (n_keys - 1) / (1 - share))
    if rivals == "n":
        return math.log(share * n_keys / (1 - share))
    if rivals == "none":
        return math.log(share / (1 - share))
    return math.log(share * n_keys)


RIGHT = {
    "kv_cache_bytes": _cache,
    "mrope_ids": _ids,
    "query_temperature": _temperature,
    "sink_gap": _gap,
}

WRONG = {
    "kv_cache_bytes": [
        ("the window even for a short text", lambda *a: _cache(*a, rule="window")),
        ("every layer caches every token", lambda *a: _cache(*a, rule="all")),
        ("one number per token, not a key and a value", lambda *a: _cache(*a, pairs=1)),
        ("window + 1 tokens", lambda *a: _cache(*a, rule="window + 1")),
    ],
    "mrope_ids": [
        ("segments start after the tokens", lambda s: _ids(s, step="tokens")),
        ("transformers' max(grid_h, grid_w) step", lambda s: _ids(s, step="transformers")),
        ("rows and columns swapped", lambda s: _ids(s, swap=True)),
    ],
    "query_temperature": [
        ("floor(m / F)", lambda p, f, a: _temperature(p, f, a, rule="m")),
        ("no floor", lambda p, f, a: _temperature(p, f, a, rule="no floor")),
        ("log, not log1p", lambda p, f, a: _temperature(p, f, a, log=math.log)),
        ("log base 2", lambda p, f, a: _temperature(p, f, a, log=lambda s: math.log2(1 + s))),
    ],
    "sink_gap": [
        ("all n keys as rivals", lambda w, n: _gap(w, n, rivals="n")),
        ("the plain log-odds", lambda w, n: _gap(w, n, rivals="none")),
        ("log(w n)", lambda w, n: _gap(w, n, rivals="log wn")),
    ],
}


def stub(*args):
    raise NotImplementedError


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_the_right_answer_passes(name, capsys):
    getattr(exercises, f"check_{name}")(RIGHT[name])
    out = capsys.readouterr().out
    assert out.startswith(f"{name}: all ") and "agree" in out, out


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_a_stub_is_not_attempted(name, capsys):
    getattr(exercises, f"check_{name}")(stub)
    assert capsys.readouterr().out.startswith(f"{name}: not attempted yet.")


@pytest.mark.parametrize(
    ("name", "label"), [(name, label) for name, answers in WRONG.items() for label, _ in answers]
)
def test_the_known_wrong_answer_fails(name, label):
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        getattr(exercises, f"check_{name}")(dict(WRONG[name])[label])
    assert str(raised.value).startswith(f"{name}: ")


def test_any_container_or_float_dtype_passes(capsys):
    exercises.check_mrope_ids(lambda s: _ids(s).tolist())
    exercises.check_mrope_ids(lambda s: _ids(s).numpy())
    exercises.check_query_temperature(lambda p, f, a: _temperature(p, f, a).float())
    exercises.check_kv_cache_bytes(lambda *a: float(_cache(*a)))
    exercises.check_sink_gap(lambda w, n: np.float64(_gap(w, n)))
    assert capsys.readouterr().out.count("agree") == 5


def test_a_miss_is_located_without_printing_the_expected_values():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_query_temperature(lambda p, f, a: _temperature(p, f, a, rule="m"))
    message = str(raised.value)
    assert "position m = 8,191" in message and "tensor(" not in message
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_mrope_ids(lambda s: _ids(s, swap=True))
    assert "component height" in str(raised.value) and "tensor(" not in str(raised.value)


def test_a_wrong_count_does_not_print_the_expected_bytes():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_kv_cache_bytes(lambda *a: _cache(*a, rule="window"))
    message = str(raised.value)
    assert "a text shorter than the window" in message
    plan = (["sliding_attention"] * 5 + ["full_attention"]) * 2
    assert f"{_cache(plan, 1024, 700, 4, 256, 2):,}" not in message
    assert str(_cache(plan, 1024, 700, 4, 256, 2)) not in message


def test_the_reader_cannot_change_the_checkers_inputs(capsys):
    def vandal(positions, floor_scale, attn_scale):
        answer = _temperature(positions, floor_scale, attn_scale)
        positions.zero_()
        return answer

    exercises.check_query_temperature(vandal)
    assert "agree" in capsys.readouterr().out
