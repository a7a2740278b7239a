"""pe_book.symbolic: prove() accepts true identities, refuses false ones; ties formulas to code."""

import itertools

import numpy as np
import pytest
import sympy as sp
import torch

from pe_book import attention as attn
from pe_book import symbolic


def test_prove_accepts_a_true_identity_and_returns_true():
    t = sp.Symbol("t", real=True)
    assert symbolic.prove(sp.sin(2 * t), 2 * sp.sin(t) * sp.cos(t), what="double angle") is True


def test_prove_refuses_a_false_identity_and_names_it():
    t = sp.Symbol("t", real=True)
    with pytest.raises(AssertionError, match="half angle does not hold"):
        symbolic.prove(sp.sin(2 * t), sp.sin(t) * sp.cos(t), what="half angle")


def test_prove_works_entrywise_on_matrices_and_checks_shapes():
    a = symbolic.matrix("a", 2, 2)
    assert symbolic.prove((a * a).T, a.T * a.T)
    with pytest.raises(
        AssertionError, match=r"entry 0 of lhs - rhs simplifies to a_01\*\*2 - a_10\*\*2"
    ):
        symbolic.prove(a * a.T, a.T * a)
    with pytest.raises(AssertionError, match="shapes differ"):
        symbolic.prove(a, symbolic.vector("b", 2))


def test_prove_on_matrices_of_symbolic_size():
    n = sp.Symbol("n", integer=True, positive=True)
    p, x = sp.MatrixSymbol("P", n, n), sp.MatrixSymbol("X", n, n)
    assert symbolic.prove((p * x).T, x.T * p.T)
    with pytest.raises(AssertionError, match="does not hold"):
        symbolic.prove(p * x, x * p)


def test_vector_and_matrix_make_distinct_symbols():
    v, m = symbolic.vector("v", 3), symbolic.matrix("w", 2, 3)
    assert v.shape == (3, 1) and m.shape == (2, 3)
    assert len(v.free_symbols | m.free_symbols) == 9
    with pytest.raises(ValueError, match="rows must be an int >= 1"):
        symbolic.matrix("w", 0, 2)


def test_symbolic_softmax_rows_sum_to_one():
    s = symbolic.matrix("s", 3, 3)
    out = symbolic.softmax(s)
    for row in range(3):
        assert sp.simplify(sum(out.row(row)) - 1) == 0


@pytest.mark.parametrize("causal", [False, True])
def test_symbolic_attention_matches_pe_book_attention(causal):
    """The tie between proof and code: lambdify the formula, compare with the fused kernel."""
    x, wq, wk, wv = (
        symbolic.matrix(name, *shape)
        for name, shape in [("x", (3, 2)), ("a", (2, 2)), ("b", (2, 2)), ("c", (2, 2))]
    )
    formula = symbolic.self_attention(x, wq, wk, wv, causal=causal)

    def numeric(x, wq, wk, wv):
        x, wq, wk, wv = (torch.from_numpy(t) for t in (x, wq, wk, wv))
        return attn.attention(x @ wq, x @ wk, x @ wv, causal=causal)

    assert (
        symbolic.compare_with_code(formula, numeric, [x, wq, wk, wv], trials=5, atol=1e-12) < 1e-12
    )


def test_symbolic_attention_is_equivariant_for_all_permutations_of_three():
    x = symbolic.matrix("x", 3, 1)
    w = [symbolic.matrix(name, 1, 1) for name in "abc"]
    out = symbolic.self_attention(x, *w)
    for perm in itertools.permutations(range(3)):
        p = sp.eye(3)[list(perm), :]
        assert symbolic.prove(symbolic.self_attention(p * x, *w), p * out)


def test_causal_symbolic_attention_first_row_is_the_first_value():
    x = symbolic.matrix("x", 2, 1)
    wq, wk, wv = (symbolic.matrix(name, 1, 1) for name in "abc")
    out = symbolic.self_attention(x, wq, wk, wv, causal=True)
    assert symbolic.prove(out[0, 0], wv[0, 0] * x[0, 0])


def test_check_against_catches_a_wrong_implementation():
    t = sp.Symbol("t")
    with pytest.raises(AssertionError, match="disagrees with the symbolic formula"):
        symbolic.compare_with_code(sp.sin(t), np.cos, [t])
    assert symbolic.compare_with_code(sp.sin(t), np.sin, [t]) == 0.0


def test_check_against_requires_every_free_symbol_and_matching_shapes():
    t, u = sp.symbols("t u")
    with pytest.raises(ValueError, match="missing"):
        symbolic.compare_with_code(t + u, lambda t: t, [t])
    m = symbolic.vector("m", 3)
    with pytest.raises(ValueError, match="shape"):
        symbolic.compare_with_code(m, lambda m: np.zeros(2), [m])


def test_check_against_uses_the_sampler():
    t = sp.Symbol("t", positive=True)
    worst = symbolic.compare_with_code(
        sp.log(t), np.log, [t], sampler=lambda rng, shape: rng.uniform(1, 2, shape)
    )
    assert worst < 1e-12


def test_generic_polynomial_has_one_coefficient_per_monomial():
    x, y = sp.symbols("x y")
    cubic = symbolic.generic_polynomial([x, y], 3)
    assert len(cubic.args) == 10  # 1 + 2 + 3 + 4 monomials
    assert sp.Poly(cubic, x, y).total_degree() == 3


def test_symbolic_taylor_terms_match_the_numeric_twin():
    from pe_book import taylor

    x_m, x_n, p_m, p_n = (symbolic.vector(name, 2) for name in ("a", "b", "p", "q"))
    f = (x_m.dot(x_n)) ** 2 + sp.sin(x_m[0])
    terms = sp.Matrix(symbolic.taylor_terms(f, x_m, x_n, p_m, p_n))

    def numeric(a, b, p, q):
        def g(u, v):
            return (u @ v) ** 2 + torch.sin(u[0])

        return taylor.taylor_terms(g, *(torch.from_numpy(t.ravel()) for t in (a, b, p, q)))

    symbolic.compare_with_code(terms, numeric, [x_m, x_n, p_m, p_n], atol=1e-10)
