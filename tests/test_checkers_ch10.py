"""Chapter 10's checkers pass a right answer written from the statement and reject the
wrong answers a reader is likely to give (one per slip the checker's docstring names)."""

import math

import pytest
import torch

from pe_book import exercises
from pe_book.rope_scaling import partial_rotary_frequencies

F64 = torch.float64


# ---- 10.1 KERPLE: the CPD margin ---------------------------------------------------------


def _margin(kernel, basis="orthonormal", what="zero-sum"):
    size = kernel.shape[0]
    if what == "all":  # K's own smallest eigenvalue
        return float(torch.linalg.eigvalsh(kernel)[0])
    if what == "centred":  # J K J has eigenvector 1 with eigenvalue 0
        centre = torch.eye(size, dtype=F64) - 1.0 / size
        return float(torch.linalg.eigvalsh(centre @ kernel @ centre)[0])
    differences = torch.eye(size, dtype=F64)[:, :-1]
    differences[-1] = -1.0
    if basis == "orthonormal":
        differences, _ = torch.linalg.qr(differences)
    return float(torch.linalg.eigvalsh(differences.T @ kernel @ differences)[0])


def _margin32(kernel):  # the right method, in float32
    differences = torch.eye(kernel.shape[0])[:, :-1]
    differences[-1] = -1.0
    basis, _ = torch.linalg.qr(differences)
    return torch.linalg.eigvalsh(basis.T @ kernel.float() @ basis)[0]


def _margin_by_sampling(kernel, count=500):
    vectors = torch.randn(count, kernel.shape[0], dtype=F64)
    vectors = vectors - vectors.mean(1, keepdim=True)
    vectors = vectors / vectors.norm(dim=1, keepdim=True)
    return float(((vectors @ kernel) * vectors).sum(1).min())


# ---- 10.2 p-RoPE -------------------------------------------------------------------------


def _p_rope(dim, p, base, pairs=math.floor, fastest=True, dtype=F64):
    theta = base ** (-torch.arange(0, dim, 2, dtype=dtype) / dim)
    kept = pairs(p * dim / 2)
    index = torch.arange(dim // 2)
    keep = index < kept if fastest else index >= dim // 2 - kept
    return torch.where(keep, theta, torch.zeros((), dtype=dtype)).to(F64)


# ---- 10.3 CoPE ---------------------------------------------------------------------------


def _cope(q, k, scale=True, gate=torch.sigmoid, order="to m", include_key=True):
    logits = q @ k.T / (math.sqrt(q.shape[-1]) if scale else 1.0)
    causal = torch.ones_like(logits, dtype=torch.bool).tril()
    if gate is torch.softmax:
        gates = torch.softmax(logits.masked_fill(~causal, -math.inf), -1)
    else:
        gates = gate(logits)
    if order != "future keys too":
        gates = gates * causal
    if order == "from the start":
        positions = gates.cumsum(-1)
    else:
        positions = gates.flip(-1).cumsum(-1).flip(-1)
    if not include_key:
        positions = positions - gates
    return positions * causal


RIGHT = {
    "cpd_margin": _margin,
    "p_rope_frequencies": _p_rope,
    "cope_positions": _cope,
}

WRONG = {
    "cpd_margin": [
        ("K's own smallest eigenvalue", lambda k: _margin(k, what="all")),
        ("the centred matrix J K J", lambda k: _margin(k, what="centred")),
        ("e_j - e_last, not orthonormalised", lambda k: _margin(k, basis="raw")),
        ("the smallest of 500 random zero-sum vectors", _margin_by_sampling),
    ],
    "p_rope_frequencies": [
        ("NeoX's partial rotary", lambda d, p, b: partial_rotary_frequencies(d, p, b)[0]),
        ("round, not floor", lambda d, p, b: _p_rope(d, p, b, pairs=round)),
        ("the slow pairs kept", lambda d, p, b: _p_rope(d, p, b, fastest=False)),
        ("ceil, not floor", lambda d, p, b: _p_rope(d, p, b, pairs=math.ceil)),
    ],
    "cope_positions": [
        ("counted from the start", lambda q, k: _cope(q, k, order="from the start")),
        ("future keys counted", lambda q, k: _cope(q, k, order="future keys too")),
        ("key n left out", lambda q, k: _cope(q, k, include_key=False)),
        ("no 1/sqrt(d)", lambda q, k: _cope(q, k, scale=False)),
        ("softmax, not sigmoid", lambda q, k: _cope(q, k, gate=torch.softmax)),
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


def test_the_margin_checker_accepts_any_number_type(capsys):
    exercises.check_cpd_margin(lambda k: torch.tensor(_margin(k), dtype=F64))
    exercises.check_cpd_margin(lambda k: torch.tensor(_margin(k), dtype=F64).numpy())
    assert capsys.readouterr().out.count("agree") == 2


def test_the_reader_cannot_change_the_checkers_inputs(capsys):
    def vandal(q, k):
        answer = _cope(q, k)
        q.zero_()
        k.zero_()
        return answer

    exercises.check_cope_positions(vandal)
    assert "agree" in capsys.readouterr().out


# ---- the book's answer policy (pe_book.exercises.policy) -------------------------------


def test_a_dtype_or_container_alone_never_fails(capsys):
    exercises.check_p_rope_frequencies(lambda d, p, b: _p_rope(d, p, b).tolist())
    exercises.check_p_rope_frequencies(lambda d, p, b: _p_rope(d, p, b).numpy())
    exercises.check_cope_positions(lambda q, k: _cope(q.float(), k.float()))  # float32
    assert capsys.readouterr().out.count("agree") == 3


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("cpd_margin", lambda k: _margin32(k)),
        ("p_rope_frequencies", lambda d, p, b: _p_rope(d, p, b, dtype=torch.float32)),
    ],
)
def test_float32_is_named_where_precision_is_the_point(name, answer):
    with pytest.raises(exercises.ExerciseMismatch, match="float32"):
        getattr(exercises, f"check_{name}")(answer)


def test_a_miss_is_located_without_printing_the_expected_values():
    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_cope_positions(lambda q, k: _cope(q, k, include_key=False))
    message = str(raised.value)
    assert "query m = 0, key n = 0" in message and "tensor(" not in message
