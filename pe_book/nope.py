"""NoPE: how a causal decoder with no position encoding recovers positions. Chapter 10.

Kazemnejad, Padhi, Natesan Ramamurthy, Das and Reddy, *The Impact of Positional
Encoding on Length Generalization in Transformers* (NeurIPS 2023, arXiv 2305.19466),
Theorem 1 (absolute encoding) and its proof in Appendix C.1, eqs. (17)-(27).

The construction, one attention head of the first layer:

- embeddings (eq. 17): coordinate 0 is 1 for every token, coordinate 1 is 1 for the
  BOS token at m = 0 only, coordinate 2 is 0, the rest arbitrary;
- W_K reads coordinate 0 into every row (eq. 18): all keys are equal, so every score
  q_m · k_n is the same whatever W_Q ("any arbitrary matrix"), and softmax over the
  m + 1 keys a causal mask lets query m see gives each the weight 1/(m + 1) (eq. 25);
- W_V reads coordinate 1 (BOS) into the value's first entry; W_O writes that entry
  to coordinate 2 (eq. 19). Only the BOS value is non-zero, so (eq. 27)

      output_m[2] = 1 / (m + 1),    m = round(1 / output_m[2] - 1).

The paper counts positions from 1 and writes 1/t; the book's m is t - 1. The
paper's feed-forward layer then turns 1/(m + 1) into m; :func:`recover_positions`
does it by hand. Without the causal mask every query sees all L keys and gets
1/L: the mask, not the weights, tells positions apart (chapter 1, where
``pe_book.symmetry.bos_share`` shows the same weights with hand-made q, k, v).

Exactness: with W_Q = 0 every score is exactly 0, softmax sums m + 1 ones, and the
output is 1/(m + 1) correctly rounded. Read back in float64, the float32 values
1/(m + 1) stay distinct and recover every m for L <= 11,864,338
(:data:`FLOAT32_MAX_LEN`); at m = 11,864,338 the value equals that of m - 1.
(Computing 1/v in float32 instead, round(1/v) - 1 goes wrong from m = 5,933,442.)
"""

from __future__ import annotations

import torch

from pe_book._validate import (
    validate_finite,
    validate_float_dtype,
    validate_generator,
    validate_int,
    validate_tensor,
)
from pe_book.attention import MultiHeadSelfAttention

__all__ = [
    "FLOAT32_MAX_LEN",
    "POSITION_COORD",
    "nope_embeddings",
    "nope_position_layer",
    "nope_position_weights",
    "recover_positions",
]

#: The construction's three coordinates (eq. 17): 1, "is BOS", and where the head writes 1/(m + 1).
ONES_COORD, BOS_COORD, POSITION_COORD = 0, 1, 2
#: The longest L whose float32 values 1/(m+1) recover every m (chapter 10).
FLOAT32_MAX_LEN = 11_864_338


def nope_embeddings(
    seq_len: int,
    dim: int,
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """The input of Theorem 1 (eq. 17): BOS at m = 0 and L - 1 other tokens, shape (L, dim).

    Column 0 is 1, column 1 is 1 at m = 0 only (BOS), column 2 is 0, columns 3 ..
    are standard normal (the paper's arbitrary e_{j,i}). dim >= 3.
    """
    seq_len = validate_int("seq_len", seq_len, minimum=1)
    dim = validate_int("dim", dim, minimum=3)
    dtype = validate_float_dtype("dtype", dtype)
    generator = validate_generator(generator)
    x = torch.randn(seq_len, dim, generator=generator, dtype=dtype)  # (L, dim)
    x[:, ONES_COORD] = 1.0
    x[:, BOS_COORD] = 0.0
    x[0, BOS_COORD] = 1.0
    x[:, POSITION_COORD] = 0.0
    return x


def nope_position_weights(
    dim: int, d_head: int, *, query: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """W_Q, W_K, W_V (each d_head × dim) and W_O (dim × d_head) of eqs. (18)-(19), float64.

    W_K[:, 0] = 1 (every key reads the all-ones coordinate), W_V[0, 1] = 1 (the value
    reads BOS), W_O[2, 0] = 1 (the output goes to coordinate 2), zero elsewhere.
    W_Q is ``query`` (any d_head × dim matrix, as the theorem allows) or zero.
    """
    dim = validate_int("dim", dim, minimum=3)
    d_head = validate_int("d_head", d_head, minimum=1)
    if query is None:
        w_q = torch.zeros(d_head, dim, dtype=torch.float64)
    else:
        validate_tensor("query", query, ndim=2, floating=True, last_dim=dim)
        if query.shape[0] != d_head:
            raise ValueError(
                f"query must be a (d_head, dim) = ({d_head}, {dim}) matrix, "
                f"got {tuple(query.shape)}"
            )
        validate_finite("query", query, allow_inf=False)
        w_q = query.to(torch.float64)
    w_k = torch.zeros(d_head, dim, dtype=torch.float64)
    w_k[:, ONES_COORD] = 1.0
    w_v = torch.zeros(d_head, dim, dtype=torch.float64)
    w_v[0, BOS_COORD] = 1.0
    w_o = torch.zeros(dim, d_head, dtype=torch.float64)
    w_o[POSITION_COORD, 0] = 1.0
    return w_q, w_k, w_v, w_o


def nope_position_layer(
    dim: int,
    n_heads: int = 1,
    *,
    query: torch.Tensor | None = None,
    dtype: torch.dtype = torch.float64,
) -> MultiHeadSelfAttention:
    """A :class:`~pe_book.attention.MultiHeadSelfAttention` whose head 0 is Theorem 1's head.

    Head 0 gets :func:`nope_position_weights` (d_head = dim / n_heads); the other
    heads keep their random initial weights, except that their part of W_O writes
    nothing to coordinates 0-2 (the paper: the other heads "can be arbitrary" as long
    as they do not override the first three dimensions). With
    ``layer(nope_embeddings(L, dim), causal=True)`` coordinate 2 of row m is 1/(m + 1).
    """
    layer = MultiHeadSelfAttention(dim, n_heads)  # validates dim and n_heads
    dtype = validate_float_dtype("dtype", dtype)
    d_head = dim // n_heads
    w_q, w_k, w_v, w_o = nope_position_weights(dim, d_head, query=query)
    with torch.no_grad():
        layer.to(torch.float64)
        qkv = layer.qkv.weight  # (3 dim, dim): W_q | W_k | W_v, head h in rows h d_head ..
        for offset, weight in zip((0, dim, 2 * dim), (w_q, w_k, w_v), strict=True):
            qkv[offset : offset + d_head] = weight
        layer.out.weight[: POSITION_COORD + 1, d_head:] = 0.0  # other heads: not dims 0-2
        layer.out.weight[:, :d_head] = w_o
    return layer.to(dtype)


def recover_positions(values: torch.Tensor) -> torch.Tensor:
    """Positions m = round(1/v - 1) from the values v = 1/(m + 1), int64, v's shape.

    Computed in float64 whatever v's dtype. Values must be finite and in (0, 1].
    """
    validate_tensor("values", values, min_ndim=1, floating=True)
    validate_finite("values", values)
    v = values.to(torch.float64)
    if not bool(((v > 0) & (v <= 1)).all()):
        raise ValueError("values must lie in (0, 1] (they are 1 / (m + 1))")
    return torch.round(1.0 / v - 1.0).to(torch.int64)
