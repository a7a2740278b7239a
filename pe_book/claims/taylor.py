"""Evidence for the claims about the Taylor expansion of f(x_m + p_m, x_n + p_n) (chapter 2)."""

from __future__ import annotations

import math
from collections.abc import Callable

import sympy as sp
import torch

from pe_book import symbolic, taylor
from pe_book.claims import Finding, evidence

SymbolicTerms = Callable[..., list[sp.Expr]]
NumericTerms = Callable[..., torch.Tensor]


def remainder_powers(terms: SymbolicTerms, dim: int) -> list[int]:
    """Powers of ε in f(x + εp) minus the six terms, for a generic cubic f of 2·dim variables.

    [3] means the terms are exactly the second-order Taylor polynomial.
    """
    eps = sp.Symbol("epsilon")
    x_m, x_n = symbolic.vector("x_m", dim), symbolic.vector("x_n", dim)
    p_m, p_n = symbolic.vector("p_m", dim), symbolic.vector("p_n", dim)
    x, p_all = list(x_m) + list(x_n), list(p_m) + list(p_n)
    f = symbolic.generic_polynomial(x, 3)
    moved = f.subs({xi: xi + eps * pi for xi, pi in zip(x, p_all, strict=True)}, simultaneous=True)
    approximation = sum(terms(f, x_m, x_n, p_m, p_n)).subs({pi: eps * pi for pi in p_all})
    remainder = sp.expand(moved - approximation)
    return sorted({monomial[0] for monomial in sp.Poly(remainder, eps).monoms()})


def error_slope(terms: NumericTerms, dim: int = 4, seed: int = 0) -> float:
    """Log-log slope of |f(x + εp) − six terms| between ε = 1e-1 and 1e-4 (attention read-out)."""
    generator = torch.Generator().manual_seed(seed)

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, dtype=torch.float64, generator=generator)

    weights = [draw(dim, dim) / 2 for _ in range(3)]
    w_out = draw(dim)
    x_m, x_n, p_m, p_n = (draw(dim) for _ in range(4))

    def readout(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return taylor.attention_readout(a, b, *weights, w_out)

    errors = []
    for scale in (1e-1, 1e-4):
        six = terms(readout, x_m, x_n, scale * p_m, scale * p_n)
        exact = readout(x_m + scale * p_m, x_n + scale * p_n)
        errors.append(float((exact - six.sum()).abs()))
    return math.log(errors[1] / errors[0]) / math.log(1e-4 / 1e-1)


@evidence("000-taylor-expansion")
def taylor_expansion(
    terms: SymbolicTerms = symbolic.taylor_terms, numeric_terms: NumericTerms = taylor.taylor_terms
) -> Finding:
    """A proof: the six terms leave exactly the ε³ part of a generic cubic; the error ~ ε³."""
    powers = {dim: remainder_powers(terms, dim) for dim in (1, 2)}
    slope = error_slope(numeric_terms)
    exact = all(p == [3] for p in powers.values())
    return Finding(
        holds=exact and 2.9 < slope < 3.1,
        shown=(
            "SymPy, generic cubic f: powers of ε left in f(x + εp) minus the six terms: "
            + "; ".join(f"{p} for tokens of dimension {dim}" for dim, p in powers.items())
            + " (the second-order Taylor polynomial leaves exactly [3])",
            f"the code, attention read-out, d = 4: error slope between ε = 1e-1 and 1e-4:"
            f" {slope:.2f} (third order: 3, accepted 2.9 to 3.1)",
        ),
    )


@evidence("000-absolute-and-interaction-terms")
def absolute_and_interaction_terms(terms: SymbolicTerms = symbolic.taylor_terms) -> Finding:
    """Which position vectors each term contains: bookkeeping of how the terms are built."""
    dim = 2
    x_m, x_n = symbolic.vector("x_m", dim), symbolic.vector("x_n", dim)
    p_m, p_n = symbolic.vector("p_m", dim), symbolic.vector("p_n", dim)
    f = symbolic.generic_polynomial(list(x_m) + list(x_n), 3)
    content = [
        (bool(t.free_symbols & set(p_m)), bool(t.free_symbols & set(p_n)))
        for t in terms(f, x_m, x_n, p_m, p_n)
    ]
    as_stated = content == [
        (False, False),
        (True, False),
        (False, True),
        (True, False),
        (False, True),
        (True, True),
    ]
    return Finding(
        holds=as_stated,
        shown=(
            "(contains p_m, contains p_n) for the six terms: "
            + ", ".join(f"({int(a)}, {int(b)})" for a, b in content),
        ),
    )
