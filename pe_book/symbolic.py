"""SymPy helpers every proof in the book shares (chapters 1-7 and 9).

A proof cell states an identity for symbolic positions, frequencies and
dimensions, then calls :func:`prove`, which simplifies ``lhs - rhs`` and
asserts that it is exactly zero. :func:`compare_with_code` then ties the symbolic
side to the numeric code in ``pe_book`` (lambdify, evaluate both on random
inputs, compare), so a bug in the package breaks the proof cell too.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np
import sympy as sp

from pe_book._validate import validate_int

__all__ = [
    "compare_with_code",
    "generic_polynomial",
    "identity_holds",
    "matrix",
    "prove",
    "rotation",
    "self_attention",
    "shift_block",
    "sinusoidal_pair",
    "sinusoidal_vector",
    "softmax",
    "taylor_terms",
    "vector",
]

Expr = sp.Expr | sp.MatrixBase


def vector(name: str, n: int, **assumptions: bool) -> sp.Matrix:
    """Column vector (n × 1) of fresh symbols ``name_0 … name_{n-1}``."""
    n = validate_int("n", n, minimum=1)
    return sp.Matrix(n, 1, sp.symbols(f"{name}_0:{n}", **assumptions))


def matrix(name: str, rows: int, cols: int, **assumptions: bool) -> sp.Matrix:
    """Matrix (rows × cols) of fresh symbols ``name_{ij}`` (row i, column j)."""
    rows = validate_int("rows", rows, minimum=1)
    cols = validate_int("cols", cols, minimum=1)
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}{j}", **assumptions))


def _is_zero(expr: sp.Expr) -> bool:
    """Exact zero test: cheap expansion first, full simplification only if needed."""
    if expr == 0 or sp.expand(expr) == 0:
        return True
    return sp.simplify(expr) == 0


def prove(lhs: Expr, rhs: Expr, *, what: str = "identity") -> bool:
    """Assert ``lhs == rhs`` exactly, by simplifying ``lhs - rhs`` to zero.

    Works entry-wise for explicit matrices, and on whole expressions for
    matrices of symbolic size (``sp.MatrixSymbol``). Returns True, so a cell can end in
    ``assert prove(...)``; raises AssertionError naming ``what`` and showing the
    first non-zero residual otherwise.
    """
    symbolic_shape = (sp.MatrixExpr,)
    if isinstance(lhs, symbolic_shape) or isinstance(rhs, symbolic_shape):
        # matrices of symbolic size (MatrixSymbol products): compare as expressions
        residual = sp.simplify((lhs - rhs).doit())
        if not (isinstance(residual, sp.ZeroMatrix) or residual == 0):
            raise AssertionError(f"{what} does not hold: lhs - rhs simplifies to {residual}, not 0")
        return True
    if isinstance(lhs, sp.MatrixBase) or isinstance(rhs, sp.MatrixBase):
        lhs_m, rhs_m = sp.Matrix(lhs), sp.Matrix(rhs)
        if lhs_m.shape != rhs_m.shape:
            raise AssertionError(f"{what}: shapes differ, {lhs_m.shape} vs {rhs_m.shape}")
        pairs = list(zip(lhs_m, rhs_m, strict=True))
    else:
        pairs = [(sp.sympify(lhs), sp.sympify(rhs))]
    for index, (a, b) in enumerate(pairs):
        if not _is_zero(a - b):
            residual = sp.simplify(a - b)
            raise AssertionError(
                f"{what} does not hold: entry {index} of lhs - rhs simplifies to "
                f"{str(residual)[:300]}, not 0"
            )
    return True


def identity_holds(lhs: Expr, rhs: Expr) -> bool:
    """True if :func:`prove` succeeds, False if it finds a non-zero residual.

    For evidence in *Claims checked* cells, where a failed identity must turn
    into the verdict "does not hold" instead of an error.
    """
    try:
        return prove(lhs, rhs)
    except AssertionError:
        return False


def softmax(scores: sp.MatrixBase) -> sp.Matrix:
    """Row-wise softmax of a symbolic matrix: exp(s_ij) / Σ_j exp(s_ij)."""
    scores = sp.Matrix(scores)
    out = sp.zeros(*scores.shape)
    for row in range(scores.rows):
        exps = [sp.exp(s) for s in scores.row(row)]
        total = sp.Add(*exps)
        for col, e in enumerate(exps):
            out[row, col] = e / total
    return out


def self_attention(
    x: sp.MatrixBase,
    w_q: sp.MatrixBase,
    w_k: sp.MatrixBase,
    w_v: sp.MatrixBase,
    *,
    causal: bool = False,
) -> sp.Matrix:
    """Single-head self-attention, symbolically: softmax(Q Kᵀ / √d + M) V.

    x is (n_tokens × d_model), one token per row; Q = x W_q, K = x W_k, V = x W_v;
    d is the number of columns of W_q. With ``causal=True``, M is -∞ above the
    diagonal (token i sees tokens j <= i), so those weights are exactly 0.
    The symbolic twin of ``pe_book.attention.attention``. Chapter 1.
    """
    q, k, v = x * w_q, x * w_k, x * w_v
    scores = (q * k.T) / sp.sqrt(w_q.shape[1])
    if causal:
        for i in range(scores.rows):
            for j in range(i + 1, scores.cols):
                scores[i, j] = -sp.oo
    return softmax(scores) * v


def rotation(angle: sp.Expr) -> sp.Matrix:
    """R(φ) = [[cos φ, -sin φ], [sin φ, cos φ]]: turns a point (x, y) counter-clockwise by φ."""
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


def sinusoidal_pair(position: sp.Expr, theta: sp.Expr) -> sp.Matrix:
    """One pair of the paper's encoding, in its (sin, cos) order: (sin mθ, cos mθ)ᵀ. Chapter 3."""
    return sp.Matrix([sp.sin(position * theta), sp.cos(position * theta)])


def sinusoidal_vector(position: sp.Expr, thetas: list[sp.Expr]) -> sp.Matrix:
    """PE(m) in the interleaved layout: the pairs for θ_0, θ_1, ... stacked, shape (2·len, 1)."""
    return sp.Matrix.vstack(*(sinusoidal_pair(position, theta) for theta in thetas))


def shift_block(shift: sp.Expr, theta: sp.Expr) -> sp.Matrix:
    """[[cos cθ, sin cθ], [-sin cθ, cos cθ]] = R(-cθ): maps the pair of m to the pair of m + c.

    ``shift`` is c, the shift applied to every position. In the (sin, cos) order of
    the paper the shift turns the pair by -cθ. Chapter 4.
    """
    return rotation(-shift * theta)


def generic_polynomial(variables: list[sp.Symbol], degree: int, name: str = "c") -> sp.Expr:
    """Σ c_k · monomial_k over every monomial of total degree <= ``degree``, one symbol each.

    A stand-in for "any polynomial": an identity that holds for it holds for
    every polynomial of that degree. Chapter 2 uses the cubic.
    """
    degree = validate_int("degree", degree, minimum=0)
    monomials = [
        sp.Mul(*combo)
        for k in range(degree + 1)
        for combo in itertools.combinations_with_replacement(variables, k)
    ]
    coefficients = sp.symbols(f"{name}_0:{len(monomials)}")
    return sp.Add(*(c * mono for c, mono in zip(coefficients, monomials, strict=True)))


def taylor_terms(
    f: sp.Expr, x_m: sp.MatrixBase, x_n: sp.MatrixBase, p_m: sp.MatrixBase, p_n: sp.MatrixBase
) -> list[sp.Expr]:
    """The six terms of the second-order expansion of f(x_m + p_m, x_n + p_n), symbolically.

    [f, p_mᵀ∇_m f, p_nᵀ∇_n f, ½ p_mᵀH_mm p_m, ½ p_nᵀH_nn p_n, p_mᵀH_mn p_n], derivatives
    at (x_m, x_n); the SymPy twin of ``pe_book.taylor.taylor_terms``. Chapter 2.
    """
    grad_m = sp.Matrix([sp.diff(f, coordinate) for coordinate in x_m])
    grad_n = sp.Matrix([sp.diff(f, coordinate) for coordinate in x_n])

    def mixed(row: int, col: int) -> sp.Expr:  # coordinate row of x_m, col of x_n
        return sp.diff(f, x_m[row], x_n[col])

    h_mn = sp.Matrix(len(x_m), len(x_n), mixed)
    return [
        f,
        (p_m.T * grad_m)[0],
        (p_n.T * grad_n)[0],
        (p_m.T * sp.hessian(f, list(x_m)) * p_m)[0] / 2,
        (p_n.T * sp.hessian(f, list(x_n)) * p_n)[0] / 2,
        (p_m.T * h_mn * p_n)[0],
    ]


def _flat_symbols(item: sp.Symbol | sp.MatrixBase) -> list[sp.Symbol]:
    return list(item) if isinstance(item, sp.MatrixBase) else [item]


def compare_with_code(
    expr: Expr,
    numeric: Callable[..., object],
    inputs: Sequence[sp.Symbol | sp.MatrixBase],
    *,
    trials: int = 10,
    seed: int = 0,
    atol: float = 1e-9,
    sampler: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray] | None = None,
    modules: str = "numpy",
) -> float:
    """Compare a symbolic expression with numeric code on random inputs.

    Each entry of ``inputs`` (a Symbol or a Matrix of symbols) gets random
    float64 values of its shape (standard normal unless ``sampler`` says
    otherwise); ``expr`` is lambdified and evaluated, ``numeric(*arrays)`` is
    called with the same values (a Symbol as a float, a Matrix as an ndarray of
    its shape; ``modules="mpmath"`` for special functions NumPy lacks, such as Ci).
    Returns the largest absolute difference over all trials and
    raises AssertionError if it exceeds ``atol``. This is a numeric check of
    the code against the proven formula, not a proof.
    """
    trials = validate_int("trials", trials, minimum=1)
    flat = [s for item in inputs for s in _flat_symbols(item)]
    free = sp.sympify(expr).free_symbols
    missing = free - set(flat)
    if missing:
        raise ValueError(
            f"inputs must cover every free symbol of expr; missing {sorted(map(str, missing))}"
        )
    evaluate = sp.lambdify(flat, expr, modules=modules)
    rng = np.random.default_rng(seed)
    draw = sampler or (lambda generator, shape: generator.standard_normal(shape))
    worst = 0.0
    for _ in range(trials):
        arrays = []
        for item in inputs:
            shape = tuple(item.shape) if isinstance(item, sp.MatrixBase) else ()
            arrays.append(np.asarray(draw(rng, shape), dtype=np.float64))
        flat_values = [float(v) for a in arrays for v in np.ravel(a)]
        expected = np.asarray(evaluate(*flat_values)).astype(np.float64)
        got = np.asarray(numeric(*[a if a.ndim else float(a) for a in arrays]), dtype=np.float64)
        if got.squeeze().shape != expected.squeeze().shape:
            raise ValueError(
                f"numeric returned shape {got.shape}, the formula has shape {expected.shape}"
            )
        expected, got = expected.squeeze(), got.squeeze()
        worst = max(worst, float(np.max(np.abs(expected - got))))
    if worst > atol:
        raise AssertionError(
            f"numeric code disagrees with the symbolic formula: max |difference| = {worst:.3g} "
            f"> atol = {atol:g}"
        )
    return worst
