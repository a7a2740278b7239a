"""Rotary position embedding, RoPE (Su et al., RoFormer, 2021; chapter 7).

Pair i of a query or key at position m is turned by the angle m θ_i, θ_i = b^(-2i/d):

    (x_a, x_b) -> (x_a cos mθ_i - x_b sin mθ_i,  x_a sin mθ_i + x_b cos mθ_i),

so q_m · k_n depends on m - n only. Two layouts decide which coordinates form pair i:

- ``"interleaved"``: (2i, 2i+1), as in RoFormer and GPT-J;
- ``"half"``: (i, i + d/2), as in GPT-NeoX and Hugging Face's Llama ``rotate_half``
  (Meta's reference Llama code is interleaved).

Both are computed by a fused C loop (:mod:`pe_book.rope_kernel`) for CPU float32, float64
and bfloat16 inputs; otherwise, or with ``fused=False``, the interleaved layout as a
complex multiply x_pair · e^{𝗂 m θ_i} on a complex view of x and the half layout as
x·cos over whole rows plus one in-place multiply-add per half.

Angles come from integer positions and float64 frequencies, whatever the input
dtype; cos and sin are rounded once to float32 (bfloat16/float16 inputs are
rotated in float32 and rounded back), which avoids the precision bugs of
transformers PR #29285 and gpt-neox issue #1003.

Context extension (``scaling=``): the dataclasses of :mod:`pe_book.rope_scaling`
(Position Interpolation, NTK, dynamic NTK, YaRN, Llama 3).
"""

from __future__ import annotations

import torch

from pe_book._cached_table import CachedTable
from pe_book._validate import (
    validate_bool,
    validate_choice,
    validate_int,
    validate_positions,
    validate_tensor,
)
from pe_book.positions import ModelConfig, PositionMethod, register
from pe_book.rope_kernel import can_fuse, rotate_fused
from pe_book.rope_scaling import (
    DynamicNTKScaling,
    LongRoPEScaling,
    Scaling,
    scaled_frequencies,
)
from pe_book.sinusoidal import LAYOUTS

__all__ = [
    "Rope",
    "apply_rope",
    "rope_angles",
    "rope_cos_sin",
    "rotate",
]


def rope_angles(
    positions: torch.Tensor | int, dim: int, base: float = 10000.0, scaling: Scaling | None = None
) -> torch.Tensor:
    """m θ_i for each position m (integer tensor, or a length L for 0..L-1): float64, (L, d/2)."""
    m = validate_positions(positions)
    seq_len = int(m.max()) + 1 if m.numel() else 0
    theta, _ = scaled_frequencies(dim, base, scaling, seq_len=seq_len)
    return m.to(torch.float64)[:, None] * theta[None, :]


def rope_cos_sin(
    positions: torch.Tensor | int,
    dim: int,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    *,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the angles (times the attention factor), each (L, d/2).

    Computed in float64 and rounded once to ``dtype`` (float32 or float64).
    """
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    m = validate_positions(positions)
    seq_len = int(m.max()) + 1 if m.numel() else 0
    _, attention_factor = scaled_frequencies(dim, base, scaling, seq_len=seq_len)
    angles = rope_angles(m, dim, base, scaling)
    return (
        (torch.cos(angles) * attention_factor).to(dtype),
        (torch.sin(angles) * attention_factor).to(dtype),
    )


def _complex_viewable(x: torch.Tensor) -> bool:
    """Whether view_as_complex can pair x's last dimension in place (what it requires)."""
    return (
        x.stride(-1) == 1
        and x.storage_offset() % 2 == 0
        and all(
            stride % 2 == 0
            for size, stride in zip(x.shape[:-1], x.stride()[:-1], strict=True)
            if size > 1
        )
    )


def _rotate(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, fused: bool = True
) -> torch.Tensor:
    """Rotate x (..., L, d) with cos, sin (L, d/2) in float32 or wider; returns x's dtype.

    ``fused``: one pass in C (:mod:`pe_book.rope_kernel`) when the input suits it; otherwise,
    and with ``fused=False``, the plain PyTorch path below."""
    wide = torch.float64 if x.dtype == torch.float64 else torch.float32
    if fused and can_fuse(x, cos.to(wide), sin.to(wide)):  # bfloat16 too, rotated in float32
        return rotate_fused(x, cos.to(wide), sin.to(wide), layout)
    work = x if x.dtype in (torch.float32, torch.float64) else x.float()
    cos, sin = cos.to(work.dtype), sin.to(work.dtype)
    half = x.shape[-1] // 2
    if layout == "interleaved":  # pairs (2i, 2i+1): multiply by e^{𝗂 m θ}
        if not _complex_viewable(work):  # e.g. a slice starting at an odd column
            work = work.contiguous()
        pairs = torch.view_as_complex(work.reshape(*work.shape[:-1], half, 2))
        rotated = torch.view_as_real(pairs * torch.complex(cos, sin)).flatten(-2)
    else:  # pairs (i, i + d/2): one full pass of x cos, then a multiply-add per half
        x1, x2 = work[..., :half], work[..., half:]
        rotated = work * torch.cat((cos, cos), dim=-1)  # x cos, both halves
        rotated[..., :half].addcmul_(x2, sin, value=-1)  # x1 cos - x2 sin
        rotated[..., half:].addcmul_(x1, sin)  # x2 cos + x1 sin
    return rotated.to(x.dtype)


def rotate(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    layout: str = "interleaved",
    fused: bool = True,
) -> torch.Tensor:
    """Rotate pair i of row m of x (..., L, d) by the angle whose cos, sin are given.

    ``cos``, ``sin`` (L, d/2), e.g. from :func:`rope_cos_sin`, or any per-pair angles
    (chapter 10's M-RoPE and randomized positions): pair i of row m becomes
    (x₁ cos − x₂ sin, x₂ cos + x₁ sin). Done in float32 or wider; returns x's dtype.
    Chapter 7.
    """
    validate_tensor("x", x, min_ndim=2, floating=True)
    layout = validate_choice("layout", layout, LAYOUTS)
    validate_int("dim", x.shape[-1], minimum=2, even=True)
    expected = (x.shape[-2], x.shape[-1] // 2)
    for name, value in (("cos", cos), ("sin", sin)):
        validate_tensor(name, value, ndim=2, floating=True)
        if tuple(value.shape) != expected:
            raise ValueError(
                f"{name} must have shape (L, d/2) = {expected}, got {tuple(value.shape)}"
            )
    return _rotate(x, cos.to(x.device), sin.to(x.device), layout, validate_bool("fused", fused))


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
    scaling: Scaling | None = None,
    fused: bool = True,
) -> torch.Tensor:
    """Rotate every pair of x (..., L, d) by m θ_i, m = positions (default 0..L-1). Chapter 7.

    ``fused=False`` keeps either layout on the plain PyTorch path instead of the C
    loop of :mod:`pe_book.rope_kernel` (same numbers to rounding; for comparison).
    """
    validate_tensor("x", x, min_ndim=2, floating=True)
    layout = validate_choice("layout", layout, LAYOUTS)
    validate_int("dim", x.shape[-1], minimum=2, even=True)
    fused = validate_bool("fused", fused)
    if positions is None:
        positions = torch.arange(x.shape[-2])
    positions = validate_positions(positions)
    if positions.shape[0] != x.shape[-2]:
        raise ValueError(
            f"positions must have one entry per row of x: {x.shape[-2]}, got {positions.shape[0]}"
        )
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rope_cos_sin(positions, x.shape[-1], base, scaling, dtype=work)
    return rotate(x, cos, sin, layout=layout, fused=fused)


class Rope(CachedTable):
    """RoPE with cached cos/sin (non-persistent buffers, grown on demand) and a start position.

    ``forward(x, start=0)`` rotates x (..., L, dim) as positions start .. start + L - 1,
    e.g. the newest tokens while decoding with a KV cache. Angles are computed once,
    not per call. DynamicNTKScaling and LongRoPEScaling depend on the current length:
    their cache is rebuilt whenever the length needed changes. ``fused`` as in
    :func:`apply_rope`. Chapter 7.
    """

    keeps_precision = True  # cos/sin stay float32/float64 under .half() (CachedTable)

    cos: torch.Tensor
    sin: torch.Tensor
    cos64: torch.Tensor
    sin64: torch.Tensor

    def __init__(
        self,
        dim: int,
        base: float = 10000.0,
        layout: str = "interleaved",
        scaling: Scaling | None = None,
        *,
        max_len: int = 2048,
        fused: bool = True,
    ) -> None:
        super().__init__(dim, base, max_len)
        self.fused = validate_bool("fused", fused)
        self.layout = validate_choice("layout", layout, LAYOUTS)
        self.scaling = scaling
        self.exact_length = isinstance(scaling, (DynamicNTKScaling, LongRoPEScaling))
        scaled_frequencies(dim, base, scaling)  # validates the scaling
        self._register_tables()

    def _tables(self, length: int) -> dict[str, torch.Tensor]:
        """float64 cos/sin for float64 inputs, float32 for everything else."""
        cos, sin = rope_cos_sin(length, self.dim, self.base, self.scaling, dtype=torch.float64)
        return {"cos": cos.float(), "sin": sin.float(), "cos64": cos, "sin64": sin}

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        validate_tensor("x", x, min_ndim=2, floating=True, last_dim=self.dim)
        start = validate_int("start", start, minimum=0)
        end = start + x.shape[-2]
        self._ensure(end)
        cos, sin = (self.cos64, self.sin64) if x.dtype == torch.float64 else (self.cos, self.sin)
        return _rotate(x, cos[start:end], sin[start:end], self.layout, self.fused)


@register("rope")
class RotaryPositions(PositionMethod):
    """RoPE in chapter 11's model: q and k of every layer turned by one cached Rope."""

    scalable = True
    fast_path = "one pass in C (pe_book.rope_kernel)"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.d_head = config.dim // config.n_heads
        self.rope = Rope(self.d_head, fused=self.fused)

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.rope(q), self.rope(k)

    def set_scaling(self, scaling: Scaling | None) -> None:
        """New angles for inference (Position Interpolation, NTK, YaRN, ...), no retraining."""
        self.rope = Rope(self.d_head, scaling=scaling, fused=self.fused)
