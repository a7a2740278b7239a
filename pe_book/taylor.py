"""The Taylor-expansion view of position encoding (chapter 2, source 000).

Adding p_m and p_n to two inputs of a model f and expanding to second order,

    f(x_m + p_m, x_n + p_n) ≈ f + p_mᵀ∇_m f + p_nᵀ∇_n f
                              + ½ p_mᵀ H_mm p_m + ½ p_nᵀ H_nn p_n + p_mᵀ H_mn p_n,

with H_ab = ∂²f / ∂x_a ∂x_b at (x_m, x_n). The first term has no position in it,
the next four one position each (absolute), the last both (the interaction,
source 000's p_mᵀ𝓗p_n). :func:`taylor_terms` computes the six terms with
autograd for any f; :func:`attention_readout` is the concrete f the chapter
uses; :func:`circle_solution` is the explicit solution p_m = (cos mθ, sin mθ)
derived when 𝓗 = I.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.autograd.functional import hessian, jacobian

from pe_book._validate import validate_int, validate_tensor
from pe_book.attention import attention

__all__ = ["TERM_NAMES", "attention_readout", "circle_solution", "taylor_terms"]

#: The names of the six terms of the expansion, in order (chapter 2).
TERM_NAMES = (
    "f (no position)",
    "p_m·∇_m f",
    "p_n·∇_n f",
    "½ p_mᵀH_mm p_m",
    "½ p_nᵀH_nn p_n",
    "p_mᵀH_mn p_n",
)


def attention_readout(
    x_m: torch.Tensor,
    x_n: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    w_o: torch.Tensor,
) -> torch.Tensor:
    """f(x_m, x_n) = w_o · Attn([x_m; x_n])_0: a two-token attention layer read out at token m.

    Tokens are rows (the row convention of chapter 1): Q = X W_q, K = X W_k,
    V = X W_v, with X = [x_m; x_n] of shape (2, d); the output row of token m is
    projected on w_o (d,). A scalar, so its gradient and Hessian are the
    objects of the Taylor expansion. Chapter 2.
    """
    x = torch.stack((x_m, x_n))  # (2, d): token m, then token n
    out = attention(x @ w_q, x @ w_k, x @ w_v)  # (2, d)
    return out[0] @ w_o


def taylor_terms(
    f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    x_m: torch.Tensor,
    x_n: torch.Tensor,
    p_m: torch.Tensor,
    p_n: torch.Tensor,
) -> torch.Tensor:
    """The six terms of the second-order expansion of f(x_m + p_m, x_n + p_n), in TERM_NAMES order.

    Gradient and Hessian of f are taken at (x_m, x_n) by autograd, in float64.
    Returns a float64 tensor of shape (6,); its sum is the second-order
    approximation. Chapter 2.
    """
    for name, value in (("x_m", x_m), ("x_n", x_n), ("p_m", p_m), ("p_n", p_n)):
        validate_tensor(name, value, ndim=1, floating=True)
    if not (x_m.shape == x_n.shape == p_m.shape == p_n.shape):
        raise ValueError("x_m, x_n, p_m and p_n must have the same shape (d,)")
    d = x_m.shape[0]
    x = torch.cat((x_m, x_n)).to(torch.float64)  # (2d,)

    def joint(z: torch.Tensor) -> torch.Tensor:
        return f(z[:d], z[d:])

    grad = jacobian(joint, x)  # (2d,)
    hess = hessian(joint, x)  # (2d, 2d)
    p_m, p_n = p_m.to(torch.float64), p_n.to(torch.float64)
    return torch.stack(
        (
            joint(x).to(torch.float64),
            p_m @ grad[:d],
            p_n @ grad[d:],
            p_m @ hess[:d, :d] @ p_m / 2,
            p_n @ hess[d:, d:] @ p_n / 2,
            p_m @ hess[:d, d:] @ p_n,
        )
    )


def circle_solution(seq_len: int, theta: float) -> torch.Tensor:
    """p_m = e^{i m θ} as a real vector (cos mθ, sin mθ), for m = 0..L-1: shape (L, 2), float64.

    The solution of p_m·p_n = g(m - n) in two dimensions, derived in chapter 2;
    its dot products are cos((m - n)θ).
    """
    seq_len = validate_int("seq_len", seq_len, minimum=0)
    angle = torch.arange(seq_len, dtype=torch.float64) * float(theta)
    return torch.view_as_real(torch.polar(torch.ones_like(angle), angle))  # (L, 2)
