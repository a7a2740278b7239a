"""Mutation test of the claims registry: evidence that can fail, shown failing.

Every *measured* or *proved* claim's evidence function (``pe_book.claims.<topic>``)
is run twice: with the book's defaults it must give the registry's verdict, and on
a counterfactual (a wrong implementation, the other layout, swapped results, a
broken mask, a wrong expression handed to the proof) it must give a different one.
A claim whose evidence survives every counterfactual would be true by
construction: it belongs to the kind "by definition". A proved claim must also
have a counterfactual that breaks its proof, not only the code it is tied to.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import pytest
import sympy as sp
import torch

from pe_book import alibi, exhibits, relative, rope, rope_scaling, sinusoidal, symbolic
from pe_book.claims import Kind, get, registry, run
from pe_book.claims import relative as relative_evidence
from pe_book.claims import study as study_evidence
from pe_book.claims import symmetry as symmetry_evidence
from pe_book.claims.cost import committed_rows
from pe_book.claims.rotation import source_identities
from pe_book.results import Runs

# ---- counterfactual implementations ---------------------------------------------------


def absolute_positions(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor):
    """Sinusoidal vectors added to q and k: position-dependent, but not relative."""
    table = sinusoidal.sinusoidal_table(int(positions.max()) + 1, q.shape[-1])[positions]
    return q + table, k + table


def scaled_positions(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor):
    """q times 1.05^m, k times 1.05^-n: relative and position-dependent, but no rotation."""
    z = (1.05 ** positions.double())[:, None].to(q.dtype)
    return q * z, k / z


def positional_layer() -> Callable[..., torch.Tensor]:
    """Chapter 1's layer with sinusoidal positions added to its input: it sees order."""
    layer = symmetry_evidence.default_layer()
    table = 0.5 * sinusoidal.sinusoidal_table(8, symmetry_evidence.DIM, dtype=torch.float64)
    return lambda x, causal=False: layer(x + table[: x.shape[0]], causal=causal)


def constant_positions() -> torch.Tensor:
    """One and the same vector at every position."""
    vector = torch.randn(1, symmetry_evidence.DIM, dtype=torch.float64)
    return vector.expand(len(symmetry_evidence.SENTENCE_A), -1)


def terms_without_halves(*args: object) -> list[sp.Expr]:
    """The six Taylor terms with the ½ of the pure second-order terms dropped."""
    terms = symbolic.taylor_terms(*args)
    return [2 * t if i in (3, 4) else t for i, t in enumerate(terms)]


def tensor2tensor(seq_len: int, dim: int) -> torch.Tensor:
    return torch.from_numpy(exhibits.tensor2tensor_timing_signal(seq_len, dim))


def reversed_pairs(seq_len: int, dim: int) -> torch.Tensor:
    """The paper's table with its pairs in reverse order: the slowest pair first."""
    table = sinusoidal.sinusoidal_table(seq_len, dim, dtype=torch.float64)
    return table.view(seq_len, dim // 2, 2).flip(1).reshape(seq_len, dim)


def base_1e8_table(seq_len: int, dim: int) -> torch.Tensor:
    """The paper's table with b = 10^8: the upper half turns at least 100 times slower."""
    return sinusoidal.sinusoidal_table(seq_len, dim, 1e8, dtype=torch.float64)


def wrapped_distances(offsets: torch.Tensor) -> torch.Tensor:
    """A table cached for 1,000 positions and indexed modulo its length (a wrap-around bug)."""
    return sinusoidal.offset_distances(offsets % 1000, 512)


def question_indexing(dim: int) -> torch.Tensor:
    """The question's frequencies: one per dimension j < d, 10000^(-2j/d)."""
    return 10000.0 ** (-2 * torch.arange(dim, dtype=torch.float64) / dim)


def fixed_answer1(seq_len: int, dim: int) -> np.ndarray:
    """Answer 1 with the pair index 2*(j//2)/d and the paper's row 0."""
    return sinusoidal.sinusoidal_table(seq_len, dim, dtype=torch.float64).numpy()


def answer1_rows(positions: torch.Tensor, dim: int) -> torch.Tensor:
    table = exhibits.answer1_table(int(positions.max()) + 1, dim)
    return torch.from_numpy(table)[positions]


def stretched_cos(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Each pair's cosine column doubled: the shift map is linear but no rotation."""
    table = sinusoidal.sinusoidal_table(positions, dim, dtype=torch.float64)
    table[:, 1::2] *= 2
    return table


def one_frequency(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Every pair turning at pair 0's frequency: one global rotation."""
    table = sinusoidal.sinusoidal_table(positions, 2, dtype=torch.float64)
    return table.repeat(1, dim // 2)


def odd_identity_with_wrong_sign() -> tuple[sp.Expr, sp.Expr]:
    even, odd = source_identities()
    return even, -odd


def periodic_profile(offsets: torch.Tensor, dim: int) -> torch.Tensor:
    """A 'profile' whose pairs all share one frequency: it never decays."""
    return torch.cos(torch.as_tensor(offsets, dtype=torch.float64) * 0.01)


def finite_sum_as_integral(offsets: torch.Tensor) -> torch.Tensor:
    """The d = 64 sum passed off as the integral."""
    from pe_book import decay

    return decay.dot_profile(offsets, 64)


def clipped_buckets(offsets: torch.Tensor) -> torch.Tensor:
    return offsets.abs().clamp(max=16)


def rope_with_squared_positions(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    return rope.apply_rope(x, positions**2 % 100_003)


def corrected_chord_bound(coefficients: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Theorem 2.1 with the constant its proof supports, Σθ_i²/2 (section 8.3): it holds."""
    return rope_scaling.interpolation_bound(coefficients, positions, rule="corrected")


def log_bias(q_len: int, k_len: int, slopes: torch.Tensor) -> torch.Tensor:
    distance = (torch.arange(q_len)[:, None] - torch.arange(k_len)[None, :]).double()
    return -slopes[:, None, None] * torch.log1p(distance.abs())


def symmetric_bias(q_len: int, k_len: int, slopes: torch.Tensor) -> torch.Tensor:
    return alibi.alibi_bias(q_len, k_len, slopes, causal=False)


def arithmetic_slopes(n_heads: int) -> torch.Tensor:
    return torch.arange(n_heads, 0, -1, dtype=torch.float64) / (2 * n_heads)


def equal_slopes(n_heads: int) -> torch.Tensor:
    return torch.full((n_heads,), 0.5, dtype=torch.float64)


def runs_with(**replace: str) -> Runs:
    """The base study with some methods' runs replaced by others' (target=source)."""
    base = study_evidence.base_study()
    records = {m: by_seed for m, by_seed in base.records.items()}
    for target, source in replace.items():
        records[target] = {
            seed: {**record, "position": target} for seed, record in base.records[source].items()
        }
    return Runs(base.design, records)


def kept(*methods: str) -> Runs:
    """The base study with ``methods`` made to keep their quality exactly: on every seed,
    the full-context loss past the first unit equals the capped one (extra-context cost 0).
    A counterfactual that no new seed can move, unlike borrowing a method that kept its
    quality in one seed (KERPLE did with one seed and is inconclusive with two)."""
    base = study_evidence.base_study()
    records = dict(base.records)
    for method in methods:
        records[method] = {}
        for seed, record in base.records[method].items():
            full = [
                row[:1] + list(capped)
                for row, capped in zip(record["full_by_bin"], record["capped_by_bin"], strict=True)
            ]
            records[method][seed] = {**record, "full_by_bin": full}
    return Runs(base.design, records)


def lowered(method: str, nats: float) -> Runs:
    """The base study with ``method``'s loss in the longest windows, and its full-context
    loss past the first unit, lowered by ``nats`` on every seed: a method that reads long
    inputs better than every other."""
    base = study_evidence.base_study()
    records, top = dict(base.records), str(max(base.lengths))
    records[method] = {}
    for seed, record in base.records[method].items():
        segment = {**record["segment_loss"], top: [v - nats for v in record["segment_loss"][top]]}
        full = [row[:1] + [v - nats for v in row[1:]] for row in record["full_by_bin"]]
        records[method][seed] = {**record, "segment_loss": segment, "full_by_bin": full}
    return Runs(base.design, records)


def swapped(a: str, b: str) -> Runs:
    return runs_with(**{a: b, b: a})


def long_with(**replace: str) -> Runs:
    """The train-long reference with some methods' runs replaced by others'."""
    base = study_evidence.long_study()
    records = dict(base.records)
    for target, source in replace.items():
        records[target] = base.records[source]
    return Runs(base.design, records)


def rows_with(position: str, seq_len: int, **fields: float) -> list:
    return [
        dataclasses.replace(row, **fields)
        if row.position == position and row.seq_len == seq_len
        else row
        for row in committed_rows()
    ]


def t5_as_cheap_as_sinusoidal() -> list:
    rows = committed_rows()
    sinusoidal_1024 = next(r for r in rows if r.position == "sinusoidal" and r.seq_len == 1024)
    return rows_with("t5", 1024, train_ms=sinusoidal_1024.train_ms)


def nope_linear() -> list:
    """NoPE's step as long at every length as at 256: each step holds the same tokens, so the
    time per sequence grows exactly as L, with no L² part at all."""
    rows = committed_rows()
    nope_256 = next(r for r in rows if r.position == "none" and r.seq_len == 256)
    return [
        dataclasses.replace(row, train_ms=nope_256.train_ms) if row.position == "none" else row
        for row in rows
    ]


def base_100_table(seq_len: int, dim: int, base: float) -> torch.Tensor:
    """A table that ignores the base it is asked for and uses b = 100."""
    return sinusoidal.sinusoidal_table(seq_len, dim, 100.0, dtype=torch.float64)


def position_blind_shaw() -> Callable[..., torch.Tensor]:
    """Shaw et al. clipped at K = 0: every offset shares one embedding, no position is left."""
    layer = relative.ShawAttention(dim=16, n_heads=2, max_offset=0).double()

    def forward(
        x: torch.Tensor, positions: torch.Tensor | None = None, causal: bool = False
    ) -> torch.Tensor:
        with torch.no_grad():
            return layer(x, positions=positions, causal=causal)

    return forward


def absolute_shaw() -> Callable[..., torch.Tensor]:
    """Shaw's layer with a random vector added to each position's input: an absolute code,
    so the first token stays far from the others at any length."""
    layer = relative_evidence.shaw_layer()
    table = torch.randn(200, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    return lambda x, positions=None, causal=False: layer(
        x + table[: len(x)], positions=positions, causal=causal
    )


def learned_work_scaled(factor: float) -> Callable[[str], relative_evidence.StepWork]:
    """The learned model's step counted as ``factor`` times the sinusoidal one's."""

    def work(position: str) -> relative_evidence.StepWork:
        fixed = relative_evidence.step_work("sinusoidal")
        if position != "learned":
            return fixed
        return fixed._replace(flops=int(fixed.flops * factor))

    return work


def squared_angle_rotation(angle: sp.Expr) -> sp.Matrix:
    """A 'rotation' by the square of the angle: the proof must find m and n apart."""
    return symbolic.rotation(angle**2)


#: claim id -> counterfactual inputs (each a zero-argument factory, so that nothing heavy
#: runs at import). Every measured or proved claim needs at least one.
COUNTERFACTUALS: dict[str, list[Callable[[], dict[str, object]]]] = {
    "000-full-symmetry": [lambda: {"layer": positional_layer()}],
    "000-distinct-vectors-break-symmetry": [lambda: {"positions": constant_positions()}],
    "001-cat-eats-fish": [lambda: {"layer": positional_layer()}],
    "004-unordered-set": [lambda: {"layer": positional_layer()}],
    "000-taylor-expansion": [lambda: {"terms": terms_without_halves}],
    "vaswani-wavelength-range": [lambda: {"table": tensor2tensor, "layout": "half"}],
    "001-low-dims-fast-high-dims-slow": [lambda: {"table": reversed_pairs}],
    "001-tens-of-thousands": [lambda: {"distances": wrapped_distances}],
    "004-unique-representation": [lambda: {"distances": wrapped_distances}],
    "001-base-margin": [lambda: {"table": base_100_table}],
    "003-question-code": [lambda: {"table": fixed_answer1}],
    "003-answer1-code": [lambda: {"table": fixed_answer1}],
    "003-answer2-frequency-range": [lambda: {"frequencies": question_indexing}],
    "003-answer2-high-dims-insensitive": [
        lambda: {"table": reversed_pairs},
        lambda: {"table": base_1e8_table},  # the upper half still: no caveat
    ],
    "000-component-identities": [
        lambda: {"identities": odd_identity_with_wrong_sign()},
        lambda: {"table": stretched_cos},
    ],
    "001-shift-is-linear": [lambda: {"table": answer1_rows}],
    "001-rotation-matrix": [lambda: {"table": stretched_cos}],
    "001-no-global-rotation": [lambda: {"table": one_frequency}],
    "000-near-large-far-decays": [lambda: {"profile": periodic_profile}],
    "000-oscillatory-integral": [lambda: {"integral": finite_sum_as_integral}],
    "004-relative-loses-absolute": [
        lambda: {"layer": position_blind_shaw()},
        lambda: {"layer": absolute_shaw()},
    ],
    "004-learned-cost": [
        lambda: {"work": learned_work_scaled(1.1)},  # a tenth more: no caveat
        lambda: {"work": learned_work_scaled(1.0)},  # no more computation: does not hold
    ],
    "004-t5-clipped-relative": [
        lambda: {
            "bucket": clipped_buckets,
            "bias_table": torch.zeros(33, 64),
            "txl_vectors": lambda offsets: torch.ones(len(offsets), 16),  # clipped too
        }
    ],
    "001-rope-rotates-qk": [
        lambda: {"rotate": rope_with_squared_positions},
        lambda: {"rotation": squared_angle_rotation},
        # no rotation at all (NoPE): shift-invariant, but m − n never enters the score
        lambda: {"rotate": lambda x, positions: x, "rotation": lambda angle: sp.eye(2)},
        lambda: {"rotation": lambda angle: sp.eye(2)},
    ],
    "004-rope-values-no-position": [lambda: {"rotate": lambda x, positions: x}],  # no rotation
    "roformer-long-term-decay": [lambda: {"base": 1 + 1e-6}],  # one frequency for all pairs
    "001-alibi-linear-bias": [lambda: {"bias": log_bias}],
    "001-alibi-simple": [lambda: {"bias": symmetric_bias}],
    "004-alibi-penalty-form": [lambda: {"slopes": arithmetic_slopes}],
    "chen2023-theorem-2.1": [lambda: {"bound": corrected_chord_bound}],
    "004-alibi-head-reach": [lambda: {"slopes": equal_slopes}],
    "004-sinusoidal-poor": [lambda: {"runs": runs_with(sinusoidal="alibi")}],
    "001-sinusoidal-degrades": [lambda: {"runs": runs_with(sinusoidal="alibi")}],
    "001-sinusoidal-runs-longer": [lambda: {"runs": kept("sinusoidal")}],
    "004-rope-better-not-enough": [lambda: {"runs": swapped("rope", "sinusoidal")}],
    "004-t5-better-than-rope": [lambda: {"runs": swapped("t5", "rope")}],
    "004-alibi-best": [lambda: {"runs": swapped("alibi", "sinusoidal")}],
    "004-relative-extrapolate": [lambda: {"runs": kept("shaw", "t5", "rope", "alibi")}],
    "001-rope-extrapolates-better": [lambda: {"runs": swapped("rope", "sinusoidal")}],
    "001-alibi-extrapolates-far": [lambda: {"runs": kept("alibi")}],
    "004-clipping-extrapolates": [lambda: {"runs": kept("shaw")}],
    "004-position-bottleneck": [  # the method matters no more when ALiBi is sinusoidal
        lambda: {"runs": runs_with(alibi="sinusoidal")},
        lambda: {"runs": swapped("alibi", "sinusoidal")},
    ],
    "chi2022-kerple-beats-alibi": [lambda: {"runs": swapped("kerple", "alibi")}],
    "li2024-fire-beats-its-special-cases": [lambda: {"runs": lowered("fire", 1.0)}],
    "press-alibi-short-matches-long": [
        lambda: {"runs": runs_with(alibi="sinusoidal")},
        lambda: {"long": long_with(sinusoidal="alibi")},
    ],
    "004-t5-costly": [lambda: {"rows": t5_as_cheap_as_sinusoidal()}],
    "004-quadratic-cost": [lambda: {"rows": nope_linear()}],
    "004-llama-neox-rope": [
        lambda: {"rotations": {"absolute": absolute_positions}},
        lambda: {"rotations": {"unrotated": lambda q, k, positions: (q, k)}},  # no position
        lambda: {"rotations": {"scale only": scaled_positions}},  # relative, not a rotation
    ],
}

#: For each proved claim, the input that holds what its SymPy proof proves.
PROOF_INPUTS = {
    "000-taylor-expansion": "terms",
    "000-component-identities": "identities",
    "001-rope-rotates-qk": "rotation",
}

FINDINGS = sorted(i for i, c in registry().items() if c.kind.is_finding)
CASES = [
    pytest.param(claim_id, k, id=f"{claim_id}-{k}")
    for claim_id in sorted(COUNTERFACTUALS)
    for k in range(len(COUNTERFACTUALS[claim_id]))
]


def test_every_measured_or_proved_claim_has_a_counterfactual():
    missing = [i for i in FINDINGS if i not in COUNTERFACTUALS]
    assert not missing, f"measured or proved claims with no counterfactual: {missing}"


def test_only_measured_or_proved_claims_are_mutated():
    other = [i for i in COUNTERFACTUALS if not get(i).kind.is_finding]
    assert not other, f"claims that are not findings cannot fail by design: {other}"


def test_every_proof_has_a_counterfactual_that_breaks_the_proof_itself():
    proved = {i for i, c in registry().items() if c.kind is Kind.PROVED}
    assert proved == set(PROOF_INPUTS), "PROOF_INPUTS must name every proved claim's proof input"
    for claim_id, name in PROOF_INPUTS.items():
        assert any(name in factory() for factory in COUNTERFACTUALS[claim_id]), (
            f"{claim_id}: no counterfactual hands its proof a wrong '{name}'"
        )


@pytest.mark.parametrize("claim_id", FINDINGS)
def test_evidence_gives_the_registry_verdict(claim_id):
    assert run(claim_id).verdict == get(claim_id).verdict


@pytest.mark.parametrize(("claim_id", "case"), CASES)
def test_a_counterfactual_changes_the_verdict(claim_id, case):
    counterfactual = COUNTERFACTUALS[claim_id][case]()
    found = run(claim_id, **counterfactual).verdict
    assert found != get(claim_id).verdict, (
        f"{claim_id}: the evidence gives '{found}' on the counterfactual too"
    )


def test_counterfactual_helpers_are_what_they_say():
    # the wrap-around bug puts position 1000 exactly on position 0
    assert float(wrapped_distances(torch.tensor([1000]))[0]) == 0.0
    # reversed pairs: the first pair is now the slowest
    slow = math.atan2(*reversed_pairs(2, 8)[1, :2].tolist())
    assert 0 < slow < 0.01
