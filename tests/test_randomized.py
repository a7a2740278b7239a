"""pe_book.randomized: sorted uniform samples of positions, and feeding them to sinusoids and RoPE.

The authors' code (google-deepmind/randomized_positional_encodings, JAX) is not
installed; its sampling (``jax.random.choice(replace=False)`` then ``sort``) is
checked here by its distribution, and its sinusoidal path (gather rows of the full
N-row table) by comparison with :func:`pe_book.sinusoidal.sinusoidal_table`.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book.randomized import (
    RandomizedRope,
    RandomizedSinusoidal,
    randomized_positions,
    randomized_rope,
    randomized_sinusoidal,
)
from pe_book.sinusoidal import sinusoidal_table


def generator(seed=0):
    return torch.Generator().manual_seed(seed)


@given(st.integers(1, 64), st.integers(0, 64), st.integers(0, 2**16), st.none() | st.integers(1, 4))
def test_positions_are_strictly_increasing_integers_in_range(max_len, extra, seed, batch):
    seq_len = max_len - extra % (max_len + 1)  # 0 <= seq_len <= max_len
    positions = randomized_positions(seq_len, max_len, generator(seed), batch)
    assert positions.dtype == torch.int64
    assert positions.shape == ((seq_len,) if batch is None else (batch, seq_len))
    assert bool((positions.diff(dim=-1) > 0).all())
    assert bool((positions >= 0).all()) and bool((positions < max_len).all())


@given(st.integers(1, 50), st.none() | st.integers(1, 3))
def test_the_whole_range_gives_0_to_n_minus_1(max_len, batch):
    positions = randomized_positions(max_len, max_len, generator(), batch)
    assert torch.equal(positions, torch.arange(max_len).expand_as(positions))


def test_a_generator_makes_the_sample_reproducible():
    first = randomized_positions(10, 1000, generator(7), batch=3)
    assert torch.equal(first, randomized_positions(10, 1000, generator(7), batch=3))
    assert not torch.equal(first, randomized_positions(10, 1000, generator(8), batch=3))
    assert not torch.equal(first[0], first[1])  # rows are independent samples


def test_every_position_is_drawn_with_probability_l_over_n():
    # Each of the N positions is in a sample with probability p = L/N, so over T samples
    # its count is Binomial(T, p): mean T p, standard deviation sqrt(T p (1 - p)).
    # With a fixed seed, 5 standard deviations per count (two-sided 6e-7 each, N = 20)
    # cannot fail by chance, while a sampler that favours some positions by 2 % can.
    seq_len, max_len, trials = 7, 20, 20000
    positions = randomized_positions(seq_len, max_len, generator(1), batch=trials)
    counts = torch.bincount(positions.flatten(), minlength=max_len).double()
    p = seq_len / max_len
    sd = math.sqrt(trials * p * (1 - p))
    assert float((counts - trials * p).abs().max()) < 5 * sd


def test_the_smallest_position_follows_its_exact_law():
    # P(m_0 = v) = C(N - 1 - v, L - 1) / C(N, L): the other L - 1 are all above v.
    # The count of each v is Binomial(T, P_v); 5 standard deviations, fixed seed.
    seq_len, max_len, trials = 4, 12, 20000
    first = randomized_positions(seq_len, max_len, generator(2), batch=trials)[:, 0]
    counts = torch.bincount(first, minlength=max_len).double()
    for v in range(max_len):
        law = math.comb(max_len - 1 - v, seq_len - 1) / math.comb(max_len, seq_len)
        sd = math.sqrt(trials * law * (1 - law))
        assert abs(float(counts[v]) - trials * law) <= 5 * sd + 1e-9


@given(st.integers(1, 40), st.integers(0, 2**16), st.sampled_from(["interleaved", "half"]))
def test_sinusoidal_rows_are_rows_of_the_full_table(max_len, seed, layout):
    # What the authors' code does: build N rows, gather the sampled ones.
    positions = randomized_positions(max(1, max_len // 2), max_len, generator(seed), batch=2)
    full = sinusoidal_table(max_len, 16, layout=layout, dtype=torch.float64)
    got = randomized_sinusoidal(positions, 16, layout=layout, dtype=torch.float64)
    assert torch.equal(got, full[positions])


def rotated_score(q, k, offset, base=10000.0):  # offset = r
    """q · R(r θ) k, interleaved pairs, as a complex sum: Re Σ_i q_i conj(k_i) e^{𝗂 r θ_i}."""
    dim = q.shape[-1]
    total = 0.0
    for i in range(dim // 2):
        theta = base ** (-2 * i / dim)
        qc, kc = complex(q[2 * i], q[2 * i + 1]), complex(k[2 * i], k[2 * i + 1])
        total += (
            qc * kc.conjugate() * complex(math.cos(offset * theta), math.sin(offset * theta))
        ).real
    return total


@settings(max_examples=20)
@given(st.integers(2, 8), st.integers(0, 2**16))
def test_rope_scores_depend_on_the_sampled_offset(seq_len, seed):
    q = torch.randn(seq_len, 8, generator=generator(seed), dtype=torch.float64)
    k = torch.randn(seq_len, 8, generator=generator(seed + 1), dtype=torch.float64)
    positions = randomized_positions(seq_len, 4096, generator(seed))
    scores = randomized_rope(q, positions) @ randomized_rope(k, positions).T
    for a in range(seq_len):
        for b in range(seq_len):
            offset = int(positions[a] - positions[b])
            assert math.isclose(
                float(scores[a, b]), rotated_score(q[a], k[b], offset), abs_tol=1e-9
            )


def test_batched_rope_positions_rotate_each_sequence_by_its_own_row():
    x = torch.randn(3, 2, 5, 8, generator=generator(), dtype=torch.float64)  # (B, H, L, d)
    positions = randomized_positions(5, 100, generator(3), batch=3)
    got = randomized_rope(x, positions, layout="half")
    for b in range(3):
        torch.testing.assert_close(got[b], randomized_rope(x[b], positions[b], layout="half"))


def test_modules_share_one_sample_per_sequence_and_add_the_sampled_rows():
    x = torch.zeros(4, 6, 8, dtype=torch.float64)
    layer = RandomizedSinusoidal(8, 50)
    out = layer(x, generator(5))
    positions = randomized_positions(6, 50, generator(5), batch=4)
    torch.testing.assert_close(out, sinusoidal_table(50, 8, dtype=torch.float64)[positions])
    shared = RandomizedSinusoidal(8, 50, per_sequence=False)(x, generator(5))
    assert torch.equal(shared[0], shared[3])
    q = torch.randn(4, 2, 6, 8, generator=generator(), dtype=torch.float64)
    rq, rk = RandomizedRope(8, 50)(q, q.clone(), generator(6))
    assert torch.equal(rq, rk)  # q and k turned by the same positions
    moved = randomized_rope(q, randomized_positions(6, 50, generator(6), batch=4))
    torch.testing.assert_close(rq, moved)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: randomized_positions(11, 10), ValueError, "seq_len"),
        (lambda: randomized_positions(-1, 10), ValueError, "seq_len"),
        (lambda: randomized_positions(3, 0), ValueError, "max_len"),
        (lambda: randomized_positions(3.0, 10), TypeError, "seq_len"),
        (lambda: randomized_positions(3, 10, batch=0), ValueError, "batch"),
        (lambda: randomized_positions(3, 10, generator=0), TypeError, "generator"),
        (lambda: randomized_sinusoidal(torch.tensor([0.5, 1.0]), 8), TypeError, "positions"),
        (lambda: randomized_sinusoidal(torch.zeros(2, 2, 2).long(), 8), ValueError, "positions"),
        (lambda: randomized_sinusoidal(torch.arange(3), 7), ValueError, "dim"),
        (lambda: randomized_rope(torch.zeros(3, 4, 8), torch.zeros(2, 4).long()), ValueError, "x"),
        (lambda: randomized_rope(torch.zeros(4, 8), torch.arange(3)), ValueError, "positions"),
        (lambda: RandomizedSinusoidal(8, 0), ValueError, "max_len"),
        (lambda: RandomizedSinusoidal(8, 5)(torch.zeros(6, 8)), ValueError, "seq_len"),
        (lambda: RandomizedRope(7, 5), ValueError, "dim"),
        (lambda: RandomizedRope(8, 5, layout="pairs"), ValueError, "layout"),
        (lambda: RandomizedRope(8, 5)(torch.zeros(3, 8), torch.zeros(4, 8)), ValueError, "q and k"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()
