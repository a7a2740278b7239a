"""KERPLE: relative position biases from conditionally positive definite kernels. Chapter 10.

Chi, Fan, Ramadge and Rudnicky, *KERPLE: Kernelized Relative Positional
Embedding for Length Extrapolation* (NeurIPS 2022, arXiv 2205.09921, section 4).
Head h adds a bias that depends on the distance |m - n| only, with two
learnable positive numbers r1_h, r2_h per head:

    logarithmic:  bias_h(m, n) = -r1_h · log(1 + r2_h |m - n|)       r1_h, r2_h > 0
    power:        bias_h(m, n) = -r1_h · |m - n|^r2_h                r1_h > 0, 0 < r2_h <= 2

What the paper proves (section 3): each kernel k(m, n) = bias_h(m, n) is
*conditionally positive definite* (CPD): for any positions and any real c with
sum(c) = 0, sum_{m,n} c_m c_n k(m, n) >= 0 (the distance r1 log(1 + r2 |m-n|),
resp. r1 |m-n|^r2, is conditionally *negative* definite). A CPD kernel plus a
large enough constant is positive definite on a finite set, and softmax ignores
that constant: this is how KERPLE keeps the inner-product reading of attention.

The power kernel with r2 = 1 and r1 = s_h is ALiBi's bidirectional bias
-s_h |m - n| (the official code's "original" setting uses exactly this).
"""

from __future__ import annotations

import torch
from torch import nn

from pe_book._validate import (
    validate_choice,
    validate_int,
    validate_positive_float,
    validate_tensor,
)
from pe_book.attention import query_start
from pe_book.positions import ModelConfig, ScoreBiasMethod, register

__all__ = ["KERNELS", "KerpleBias", "KerplePositions", "cpd_margin", "kerple_bias"]

#: The two kernels of the paper, by the name ``kind`` takes.
KERNELS = ("log", "power")


def _check_parameter(name: str, value: object, n_heads: int | None) -> torch.Tensor:
    value = validate_tensor(name, value, ndim=1, floating=True)
    if n_heads is not None and value.shape[0] != n_heads:
        raise ValueError(
            f"{name} must have one entry per head: r1 has {n_heads}, got shape {tuple(value.shape)}"
        )
    if not bool(torch.isfinite(value).all()) or not bool((value > 0).all()):
        raise ValueError(f"{name} must be finite and > 0 (one per head), got {value.tolist()}")
    return value


def kerple_bias(
    q_len: int,
    k_len: int,
    r1: torch.Tensor,
    r2: torch.Tensor,
    kind: str = "log",
    start: int | None = None,
) -> torch.Tensor:
    """KERPLE bias of shape (H, q_len, k_len). Chapter 10; arXiv 2205.09921, section 4.

    kind="log":   -r1_h · log(1 + r2_h |m - n|)
    kind="power": -r1_h · |m - n|^r2_h, which needs 0 < r2_h <= 2

    r1 and r2 are 1-D floating tensors of shape (H,), every entry > 0. Query i
    sits at position m = start + i and key j at n = j; the default
    ``start = k_len - q_len`` puts the queries at the end of the keys (decoding
    with a KV cache), as :func:`pe_book.attention.causal_mask` does.

    Every entry uses |m - n|, as the paper's kernel does, so keys after the
    query (n > m) get the bias of the mirrored offset; a causal model hides them
    with its mask. (The official code writes 0 there instead: ``torch.tril`` of
    m - n; the two agree wherever n <= m.) Distances come from an integer range
    and the result is in the dtype of r1 and r2 promoted to float32 or wider.
    """
    q_len = validate_int("q_len", q_len, minimum=1)
    k_len = validate_int("k_len", k_len, minimum=1)
    kind = validate_choice("kind", kind, KERNELS)
    r1 = _check_parameter("r1", r1, None)
    r2 = _check_parameter("r2", r2, r1.shape[0])
    if kind == "power" and bool((r2 > 2).any()):
        raise ValueError(
            f"r2 must be <= 2 for the power kernel (else it is not CPD), got {r2.tolist()}"
        )
    start = query_start(q_len, k_len, start)
    dtype = torch.promote_types(torch.promote_types(r1.dtype, r2.dtype), torch.float32)
    m = torch.arange(start, start + q_len)[:, None]  # (q_len, 1), int64
    n = torch.arange(k_len)[None, :]  # (1, k_len), int64
    distance = (m - n).abs().to(dtype=dtype, device=r1.device)  # (q_len, k_len), |m - n|
    r1 = r1.to(dtype)[:, None, None]  # (H, 1, 1)
    r2 = r2.to(dtype)[:, None, None]  # (H, 1, 1)
    if kind == "log":
        return -r1 * torch.log1p(r2 * distance)  # (H, q_len, k_len)
    return -r1 * distance.pow(r2)  # (H, q_len, k_len); 0^r2 = 0 on the diagonal


def cpd_margin(kernel: torch.Tensor) -> float:
    """min aᵀ K a over unit vectors a with Σ a = 0: the smallest eigenvalue of K on the
    zero-sum subspace. Chapter 10.

    ``kernel`` is a symmetric (n, n) floating tensor, n >= 2 (K[m, n] = k(m, n) on n
    positions). K is *conditionally positive definite* on these positions when the
    margin is >= 0 (> 0: strictly), whatever K's own eigenvalues: a distance penalty
    such as ALiBi's -s|m - n| has a zero diagonal, so K has trace 0 and a negative
    eigenvalue, yet its margin is positive. Computed in float64 with an orthonormal
    basis Q of {a : Σ a = 0} (QR of the differences e_j - e_last): eigvalsh(Qᵀ K Q).
    """
    validate_tensor("kernel", kernel, ndim=2, floating=True)
    size = kernel.shape[0]
    if kernel.shape != (size, size) or size < 2:
        raise ValueError(f"kernel must be square with n >= 2, got shape {tuple(kernel.shape)}")
    matrix = kernel.detach().to(torch.float64)
    if not bool(torch.isfinite(matrix).all()):
        raise ValueError("kernel must be finite")
    if not torch.allclose(matrix, matrix.T, rtol=1e-10, atol=1e-12):
        raise ValueError("kernel must be symmetric (k(m, n) = k(n, m))")
    differences = torch.eye(size, dtype=torch.float64)[:, :-1]  # e_j ...
    differences[-1] = -1.0  # ... minus e_last: n - 1 columns spanning Σ a = 0
    basis, _ = torch.linalg.qr(differences)  # (n, n - 1), orthonormal
    return float(torch.linalg.eigvalsh(basis.T @ matrix @ basis)[0])


class KerpleBias(nn.Module):
    """KERPLE's learnable bias: forward(q_len, k_len, start=None) -> (H, q_len, k_len). Chapter 10.

    Parameters ``r1`` and ``r2``, each of shape (n_heads,), in the paper's
    notation (:func:`kerple_bias` gives the formulas; arXiv 2205.09921, section 4).
    Initialisation and positivity follow the official code (github.com/chijames/
    KERPLE, ``megatron/mpu/layers.py``, classes ParallelKerpleLog and
    ParallelKerplePower), whose parameter names differ:

    - kind="log": r1 = ``bias_p`` ~ U(0, 2), r2 = ``bias_a`` ~ U(0, 1) (drawn in that order);
    - kind="power": r2 = ``bias_p`` ~ U(0, 2), r1 = ``bias_a`` ~ U(0, 1) (drawn in that order).

    Positivity: like the official code, every forward call first *clamps the
    stored parameters in place* (``param.data = param.data.clamp(...)``):
    r1, r2 >= ``eps`` = 0.01, and r2 <= 2 for the power kernel. So an optimiser
    step may leave a parameter below ``eps``; the next forward call puts it
    back, a projected gradient step. The paper states open constraints
    (r1, r2 > 0; 0 < r2 <= 2 for the power kernel); the clamp enforces the closed
    bound eps = 0.01 instead of 0. Not implemented: the official power class's optional
    multiplicative kernel on the scores (``wei_a``, ``wei_p``), and its decoding
    path, which only supports one query (we take any ``start``).
    """

    r1: nn.Parameter
    r2: nn.Parameter

    def __init__(self, n_heads: int, kind: str = "log", *, eps: float = 1e-2) -> None:
        super().__init__()
        self.n_heads = validate_int("n_heads", n_heads, minimum=1)
        self.kind = validate_choice("kind", kind, KERNELS)
        self.eps = validate_positive_float("eps", eps)
        if kind == "power" and self.eps > 2:
            raise ValueError(f"eps must be <= 2 for the power kernel, got {eps}")
        first = torch.rand(self.n_heads) * 2  # the official bias_p, drawn first
        second = torch.rand(self.n_heads)  # the official bias_a
        if kind == "log":
            self.r1, self.r2 = nn.Parameter(first), nn.Parameter(second)
        else:
            self.r2, self.r1 = nn.Parameter(first), nn.Parameter(second)

    @torch.no_grad()
    def clamp_parameters(self) -> None:
        """Put r1, r2 back into [eps, inf) (r2 into [eps, 2] for the power kernel), in place."""
        self.r1.data = self.r1.data.clamp(min=self.eps)
        self.r2.data = self.r2.data.clamp(min=self.eps, max=2.0 if self.kind == "power" else None)

    def forward(self, q_len: int, k_len: int, start: int | None = None) -> torch.Tensor:
        """The bias (n_heads, q_len, k_len) after clamping the parameters, as the official code."""
        self.clamp_parameters()
        return kerple_bias(q_len, k_len, self.r1, self.r2, self.kind, start)

    def table(self, k_len: int) -> torch.Tensor:
        """The same bias per offset r = 0 .. k_len - 1, shape (n_heads, k_len), after the same
        clamp: the last query's row of :func:`kerple_bias`, reversed (chapter 12)."""
        self.clamp_parameters()
        row = kerple_bias(1, k_len, self.r1, self.r2, self.kind, start=k_len - 1)  # (H, 1, k_len)
        return row[:, 0].flip(-1)  # column r: offset r

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, kind={self.kind!r}, eps={self.eps}"


@register("kerple")
class KerplePositions(ScoreBiasMethod):
    """KERPLE in chapter 11's model: one bias for all layers, two parameters per head.

    The logarithmic kernel (of the paper's two, a choice of this book; chapter 10,
    section 10.2).
    """

    fast_path = "bias per offset read in pe_book's attention kernel"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.bias = KerpleBias(config.n_heads, kind="log")
