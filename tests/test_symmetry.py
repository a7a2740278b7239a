"""pe_book.symmetry: permutation matrices, the equivariance / invariance gaps, the BOS counter."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book import symmetry

perms = st.integers(1, 8).flatmap(lambda n: st.permutations(list(range(n))))


@given(perms)
def test_permutation_matrix_reorders_rows(perm):
    x = torch.randn(len(perm), 3, generator=torch.Generator().manual_seed(len(perm)))
    p = symmetry.permutation_matrix(perm)
    torch.testing.assert_close(p @ x, x[perm])


@given(perms)
def test_permutation_matrix_is_orthogonal(perm):
    p = symmetry.permutation_matrix(perm, dtype=torch.float64)
    torch.testing.assert_close(p.T @ p, torch.eye(len(perm), dtype=torch.float64))


@pytest.mark.parametrize(
    ("perm", "error", "message"),
    [
        ([0, 0, 1], ValueError, "permutation of 0..2"),
        ([1, 2], ValueError, "permutation of 0..1"),
        ([0, 1.0], TypeError, "perm must hold ints"),
        ("012", TypeError, "perm must be a sequence of ints"),
    ],
)
def test_bad_permutations_are_refused(perm, error, message):
    with pytest.raises(error, match=message):
        symmetry.permutation_matrix(perm)


def test_permutation_must_match_the_number_of_tokens():
    with pytest.raises(ValueError, match=r"permutation of 0\.\.3"):
        symmetry.equivariance_gap(lambda x: x, torch.zeros(4, 2), [1, 0, 2])


@given(perms)
def test_token_wise_maps_are_equivariant_and_pooling_is_invariant(perm):
    x = torch.randn(len(perm), 4, dtype=torch.float64)
    assert symmetry.equivariance_gap(torch.tanh, x, perm) == 0.0
    assert symmetry.invariance_gap(lambda t: t.sum(-2), x, perm) < 1e-12


def test_a_position_dependent_map_is_not_equivariant():
    weights = torch.arange(1.0, 5.0)[:, None]  # scales token m by m + 1
    x = torch.randn(4, 2)
    assert symmetry.equivariance_gap(lambda t: t * weights, x, [3, 2, 1, 0]) > 0.1


@given(st.integers(1, 40))
def test_bos_share_counts_positions_under_a_causal_mask(seq_len):
    m = torch.arange(seq_len, dtype=torch.float64)
    torch.testing.assert_close(symmetry.bos_share(seq_len), 1 / (m + 1))
    torch.testing.assert_close(
        symmetry.bos_share(seq_len, causal=False), torch.full_like(m, 1 / seq_len)
    )


def test_bos_share_rejects_empty_sequences():
    with pytest.raises(ValueError, match="seq_len must be an int >= 1"):
        symmetry.bos_share(0)


def test_gaps_without_perm_take_the_worst_order():
    weights = torch.tensor([[1.0], [1.0], [2.0]])  # only the last position is special
    x = torch.tensor([[1.0], [2.0], [3.0]])
    # moving token 3 away from the last place is the worst order
    assert symmetry.equivariance_gap(lambda t: t * weights, x) == 3.0
    assert symmetry.equivariance_gap(lambda t: t * weights, x, [1, 0, 2]) == 0.0
    assert symmetry.invariance_gap(lambda t: (t * weights).sum(-2), x) == 2.0


def test_all_orders_are_refused_for_long_sequences():
    with pytest.raises(ValueError, match="too many for 9 tokens"):
        symmetry.invariance_gap(lambda t: t.sum(-2), torch.zeros(9, 2))
