"""FIRE: a learned function of a normalised relative distance as the attention bias. Chapter 10.

Li, You, Guruganesh, Ainslie, Ontanon, Zaheer, Sanghai, Yang, Kumar and
Bhojanapalli, *Functional Interpolation for Relative Positions Improves Long
Context Transformers* (ICLR 2024, arXiv 2310.04418, section 3). For a query at
position m and a key at n <= m (causal attention), head h adds

    b_h(m, n) = f_θ( ψ(m - n) / ψ(max(m, L)) )_h,        ψ(x) = log(c x + 1),

where f_θ : R -> R^H is a small MLP (one hidden layer of width 32, ReLU), c > 0
stretches short distances ("amplifying differences among local positions") and
L is a learned threshold. For m <= L the input ψ(m - n)/ψ(L) depends on m - n
only: a relative bias. Past L it is ψ(m - n)/ψ(m), which lies in [0, 1] however
long the text: the "progressive interpolation" that maps every context length
onto the inputs seen in training.

Details (values, eps, absolute values) follow the PyTorch listing published
with the paper, which we read as transcribed in public repositories (we could
not read the paper's own text through our tools): c starts at 0.1; L = |ℓ · L0|
with L0 = 512 fixed and a learned multiplier ℓ that starts at 1; c enters as
|c| (so ψ(x) = log(|c x| + 1)); the denominator gets + eps = 1e-6; the MLP is
``Linear(1, 32) -> ReLU -> Linear(32, H)`` with PyTorch's default initialisation.

Special case (the paper proves FIRE can represent KERPLE, among others): with a
linear f_h(x) = -w_h x and m <= L, b_h = -w_h log(1 + c (m - n)) / (ψ(L) + eps),
which is KERPLE's logarithmic bias with r1_h = w_h / (ψ(L) + eps) and r2 = c.
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

from pe_book._validate import validate_int, validate_positive_float, validate_tensor
from pe_book.attention import query_start
from pe_book.positions import ModelConfig, ScoreBiasMethod, register

__all__ = ["FireBias", "FirePositions", "fire_bias", "fire_input"]


def _scalar(name: str, value: object) -> torch.Tensor:
    """A finite number >= 0, as a 0-dim floating tensor (a Python number becomes float64)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = torch.tensor(float(value), dtype=torch.float64)
    validate_tensor(name, value, ndim=0, floating=True)
    if not bool(torch.isfinite(value)) or bool(value < 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value.item()}")
    return value  # type: ignore[return-value]


def fire_input(
    q_len: int,
    k_len: int,
    c: float | torch.Tensor,
    threshold: float | torch.Tensor,
    *,
    start: int | None = None,
    eps: float = 1e-6,
) -> torch.Tensor:
    """FIRE's normalised distance ψ(|m - n|) / (ψ(max(m, L)) + eps), shape (q_len, k_len).

    ψ(x) = log(c x + 1), c = ``c`` >= 0, L = ``threshold`` >= 0 (each a number or a
    0-dim floating tensor, which keeps its gradient). Query i sits at m = start + i,
    key j at n = j; the default ``start = k_len - q_len`` puts the queries at the
    end of the keys. For 0 <= n <= m the value lies in [0, 1]. Keys after the query
    (n > m) get the value of the mirrored offset |m - n|, as in the paper's listing
    (``abs``); it may exceed 1 there, stays finite, and is meant to be hidden by the
    causal mask. Computed in the dtype of c and L promoted to float32 or wider, from
    integer positions. arXiv 2310.04418, section 3.
    """
    q_len = validate_int("q_len", q_len, minimum=1)
    k_len = validate_int("k_len", k_len, minimum=1)
    c = _scalar("c", c)
    threshold = _scalar("threshold", threshold)
    eps = validate_positive_float("eps", eps)
    start = query_start(q_len, k_len, start)
    dtype = torch.promote_types(torch.promote_types(c.dtype, threshold.dtype), torch.float32)
    c, threshold = c.to(dtype), threshold.to(dtype)
    m = torch.arange(start, start + q_len)[:, None]  # (q_len, 1), int64
    n = torch.arange(k_len)[None, :]  # (1, k_len), int64
    distance = (m - n).abs().to(dtype=dtype, device=c.device)  # (q_len, k_len)
    normaliser = torch.maximum(m.to(dtype=dtype, device=c.device), threshold)  # (q_len, 1)
    return torch.log1p(c * distance) / (torch.log1p(c * normaliser) + eps)  # (q_len, k_len)


def fire_bias(
    q_len: int,
    k_len: int,
    mlp: nn.Module,
    c: float | torch.Tensor,
    threshold: float | torch.Tensor,
    *,
    start: int | None = None,
    eps: float = 1e-6,
) -> torch.Tensor:
    """FIRE bias b_h(m, n) = f_θ(ψ(m - n) / ψ(max(m, L)))_h, shape (H, q_len, k_len). Chapter 10.

    ``mlp`` is f_θ: a module mapping (..., 1) to (..., H); the input is
    :func:`fire_input` (same c, threshold, start, eps), cast to the dtype of the
    module's parameters. The result is in that dtype. Entries with n > m are
    finite and meant to be masked (see :func:`fire_input`). arXiv 2310.04418, section 3.
    """
    if not isinstance(mlp, nn.Module):
        raise TypeError(f"mlp must be a torch.nn.Module mapping (..., 1) to (..., H), got {mlp!r}")
    x = fire_input(q_len, k_len, c, threshold, start=start, eps=eps)  # (q_len, k_len)
    weight = next(mlp.parameters(), None)
    if weight is not None:
        x = x.to(weight.dtype)
    try:
        out = mlp(x.unsqueeze(-1))  # (q_len, k_len, 1) -> (q_len, k_len, H)
    except RuntimeError as error:  # e.g. a first layer that does not take one input feature
        raise ValueError(
            f"mlp must map (..., 1) to (..., H); on (q_len, k_len, 1) it failed: {error}"
        ) from error
    if not isinstance(out, torch.Tensor) or out.ndim != 3 or out.shape[:2] != x.shape:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"mlp must map (q_len, k_len, 1) to (q_len, k_len, H), got {shape}")
    if bool(torch.isnan(out).any()):
        raise ValueError("mlp output contains NaN (are its parameters finite?)")
    return out.permute(2, 0, 1)  # (H, q_len, k_len)


class FireBias(nn.Module):
    """FIRE's learnable bias: forward(q_len, k_len, start=None) -> (H, q_len, k_len). Chapter 10.

    Parameters as in the paper's PyTorch listing (arXiv 2310.04418), names kept so
    that its state dict loads here: ``mlp`` = Linear(1, hidden) -> ReLU ->
    Linear(hidden, n_heads); ``c`` (starts at ``init_c`` = 0.1); ``L_multiplier``
    ℓ (starts at 1) and the fixed ``init_L`` = L0 (``init_threshold`` = 512), with
    threshold L = |ℓ · L0|. Positivity is kept by absolute values, not by
    clamping: the bias uses |c| and |ℓ L0|, so a step that makes c or ℓ negative
    changes nothing but their sign. A causal model must mask the keys after each
    query; their entries hold the mirrored offset's bias (finite).
    """

    init_L: torch.Tensor

    def __init__(
        self,
        n_heads: int,
        hidden: int = 32,
        *,
        init_c: float = 0.1,
        init_threshold: float = 512.0,
        eps: float = 1e-6,
    ) -> None:
        super().__init__()
        self.n_heads = validate_int("n_heads", n_heads, minimum=1)
        self.hidden = validate_int("hidden", hidden, minimum=1)
        init_c = validate_positive_float("init_c", init_c)
        init_threshold = validate_positive_float("init_threshold", init_threshold)
        self.eps = validate_positive_float("eps", eps)
        self.mlp = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, n_heads))
        self.c = nn.Parameter(torch.tensor(init_c))
        self.register_buffer("init_L", torch.tensor(init_threshold))  # fixed L0
        self.L_multiplier = nn.Parameter(torch.tensor(1.0))  # learned ℓ

    @property
    def threshold(self) -> torch.Tensor:
        """The threshold L = |ℓ · L0| (0-dim, differentiable in ℓ)."""
        return (self.L_multiplier * self.init_L).abs()

    def forward(self, q_len: int, k_len: int, start: int | None = None) -> torch.Tensor:
        """The bias (n_heads, q_len, k_len) for queries at start .. start + q_len - 1."""
        return fire_bias(
            q_len, k_len, self.mlp, self.c.abs(), self.threshold, start=start, eps=self.eps
        )

    def table(self, k_len: int) -> torch.Tensor | None:
        """The bias per offset r = 0 .. k_len - 1, shape (n_heads, k_len), while every query
        position m < k_len stays within the threshold (m <= L, so the bias depends on
        m - n alone); None past it. The last query's row, reversed (chapter 12)."""
        threshold = self.threshold
        if float(threshold.detach()) < k_len - 1:
            return None
        row = fire_bias(
            1, k_len, self.mlp, self.c.abs(), threshold, start=k_len - 1, eps=self.eps
        )  # (H, 1, k_len)
        return row[:, 0].flip(-1)  # column r: offset r

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, hidden={self.hidden}, eps={self.eps}"


@register("fire")
class FirePositions(ScoreBiasMethod):
    """FIRE in chapter 11's model: one learned bias for all layers (chapter 10, section 10.3).

    The threshold T starts at the training length (``config.train_len``), so offsets
    inside the training window are relative and longer contexts are squeezed onto the
    inputs seen in training; the MLP has the paper's width, 32.
    """

    fast_path = "bias per offset (within its threshold) read in pe_book's kernel"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.bias = FireBias(config.n_heads, init_threshold=float(config.train_len))
