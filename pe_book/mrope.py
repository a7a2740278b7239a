"""M-RoPE, the multimodal rotary position embedding of Qwen2-VL (chapter 13).

Wang, Bai, Tan et al., *Qwen2-VL: Enhancing Vision-Language Model's Perception of
the World at Any Resolution* (2024, arXiv:2409.12191, section 2.1 and its M-RoPE
figure). A token has three position components p = (p_t, p_h, p_w): temporal,
height, width. The d/2 rotary pairs are cut into three consecutive sections
(Qwen2-VL's ``mrope_section``, [16, 24, 24] for d = 128) and pair i of section
c(i) ∈ {0: t, 1: h, 2: w} is turned by

    p_c(i) θ_i,        θ_i = b^(-2i/d)  (the whole head's frequencies, i = 0 .. d/2 - 1),

so the temporal component gets the fastest pairs and width the slowest. The score
q_m · k_n then depends on (Δt, Δh, Δw) = p_m - p_n only. Positions (section 2.1):

- text: p_t = p_h = p_w, counted one by one, so M-RoPE on text *is* 1-D RoPE;
- an image of (grid_t, grid_h, grid_w) tokens (after the 2x2 patch merge, the grid
  the language model sees): token (a, row, col) gets start + (a, row, col), so one
  frame's tokens share p_t; a Qwen2-VL video is the same with grid_t frames;
- every segment starts at the largest id so far + 1 (``start`` is 0 for the first).

Pairs are in the "half" layout (i, i + d/2) by default, as in Qwen2-VL's code
(``rotate_half``); the paper fixes neither the layout nor the sections. Left out:
Qwen2.5-VL's absolute-time temporal ids (p_t scaled by seconds per frame) and
Qwen3-VL's interleaved sections; position ids are one (3, L) tensor per sequence.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from pe_book._cached_table import CachedTable
from pe_book._validate import (
    validate_bool,
    validate_choice,
    validate_int,
    validate_pairs,
    validate_tensor,
)
from pe_book.rope import rope_angles, rope_cos_sin, rotate
from pe_book.sinusoidal import LAYOUTS

__all__ = [
    "COMPONENTS",
    "SEGMENT_KINDS",
    "MRope",
    "apply_mrope",
    "mrope_angles",
    "mrope_cos_sin",
    "mrope_position_ids",
    "section_components",
]

#: The three position components, in the order of a (3, L) position-id tensor.
COMPONENTS = ("temporal", "height", "width")
#: Segment kinds of :func:`mrope_position_ids`: ("text", n) or (kind, grid_t, grid_h, grid_w).
SEGMENT_KINDS = ("text", "image", "video")


def section_components(dim: int, sections: Sequence[int]) -> torch.Tensor:
    """c(i), the component (0 t, 1 h, 2 w) that turns pair i: int64, shape (dim/2,).

    ``sections`` = (pairs for t, for h, for w): three positive ints summing to d/2,
    e.g. (16, 24, 24) for d = 128 (Qwen2-VL's ``mrope_section``); pairs 0 .. 15 get t.
    """
    dim = validate_int("dim", dim, minimum=2, even=True)
    if isinstance(sections, (str, bytes)) or not isinstance(sections, Sequence):
        raise TypeError(f"sections must be a sequence of three ints, got {sections!r}")
    sizes = [validate_int(f"sections[{j}]", s, minimum=1) for j, s in enumerate(sections)]
    if len(sizes) != len(COMPONENTS) or sum(sizes) != dim // 2:
        raise ValueError(
            f"sections must be three positive ints {COMPONENTS} summing to dim/2 = {dim // 2}, "
            f"got {list(sizes)} (sum {sum(sizes)})"
        )
    return torch.repeat_interleave(torch.arange(len(COMPONENTS)), torch.tensor(sizes))


def _check_position_ids(position_ids: object) -> torch.Tensor:
    """A (3, L) tensor of non-negative integer ids, else an error naming ``position_ids``."""
    ids = validate_tensor("position_ids", position_ids, ndim=2)
    if ids.shape[0] != len(COMPONENTS):
        raise ValueError(
            f"position_ids must have shape (3, L), one row per component {COMPONENTS}, "
            f"got {tuple(ids.shape)}"
        )
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(
            f"position_ids must be an integer tensor (positions are counted), got {ids.dtype}"
        )
    if ids.numel() and int(ids.min()) < 0:
        raise ValueError(f"position_ids must be >= 0, got a minimum of {int(ids.min())}")
    return ids


def _check_segment(index: int, segment: object) -> tuple[str, list[int]]:
    name = f"segments[{index}]"
    if not isinstance(segment, (tuple, list)) or not segment:
        raise TypeError(
            f"{name} must be a tuple ('text', n) or ('image' | 'video', grid_t, grid_h, grid_w), "
            f"got {segment!r}"
        )
    kind = validate_choice(f"{name}[0]", segment[0], SEGMENT_KINDS)
    wanted = 1 if kind == "text" else 3
    if len(segment) != wanted + 1:
        raise ValueError(f"{name}: a {kind!r} segment takes {wanted} size(s), got {segment!r}")
    sizes = [validate_int(f"{name}[{j}]", s, minimum=1) for j, s in enumerate(segment[1:], 1)]
    return kind, sizes


def mrope_position_ids(segments: Sequence[tuple], start: int = 0) -> torch.Tensor:
    """The (3, L) int64 ids (t, h, w) of a sequence of text and image/video segments.

    ``segments``: e.g. [("text", 5), ("image", 1, 16, 20), ("text", 7)]; an image or
    video segment gives its token grid (grid_t, grid_h, grid_w) *after* the spatial
    merge, flattened frame by frame, row by row. Each segment starts at s = ``start``
    for the first, then at (largest id so far) + 1 (Qwen2-VL, section 2.1):

        text token j:            (s + j, s + j, s + j)
        image token (a, y, x):   (s + a, s + y, s + x)

    L is the number of tokens. To continue a sequence ``ids`` (decoding), pass
    ``start = int(ids.max()) + 1``. Differs from transformers 5.x ``get_rope_index``,
    which moves on by max(grid_h, grid_w) after a vision segment, only when grid_t
    exceeds both (a long video): the paper and Qwen2-VL's original code move past
    the last frame.
    """
    if isinstance(segments, (str, bytes)) or not isinstance(segments, Sequence):
        raise TypeError(f"segments must be a list of tuples, got {type(segments).__name__}")
    position = validate_int("start", start, minimum=0)
    parts = [torch.zeros(len(COMPONENTS), 0, dtype=torch.int64)]
    for index, segment in enumerate(segments):
        kind, sizes = _check_segment(index, segment)
        if kind == "text":
            block = torch.arange(sizes[0]).expand(len(COMPONENTS), -1)  # (3, n), t = h = w
        else:
            grids = torch.meshgrid(*(torch.arange(n) for n in sizes), indexing="ij")
            block = torch.stack(grids).reshape(len(COMPONENTS), -1)  # (3, grid_t*grid_h*grid_w)
        parts.append(block + position)
        position = int(parts[-1].max()) + 1
    return torch.cat(parts, dim=1)


def _by_section(tables: torch.Tensor, components: torch.Tensor) -> torch.Tensor:
    """out[l, i] = tables[c(i), l, i]: (3, L, d/2) per-component tables -> (L, d/2)."""
    index = components.to(tables.device).expand(1, tables.shape[1], -1)  # (1, L, d/2)
    return tables.gather(0, index)[0]


def mrope_angles(
    position_ids: torch.Tensor, dim: int, sections: Sequence[int], base: float = 10000.0
) -> torch.Tensor:
    """p_c(i) θ_i for each token and pair: float64, (L, dim/2); position_ids (3, L)."""
    components = section_components(dim, sections)
    ids = _check_position_ids(position_ids)
    per_component = torch.stack([rope_angles(row, dim, base) for row in ids])  # (3, L, d/2)
    return _by_section(per_component, components)


def mrope_cos_sin(
    position_ids: torch.Tensor,
    dim: int,
    sections: Sequence[int],
    base: float = 10000.0,
    *,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of :func:`mrope_angles`, each (L, dim/2), from float64, rounded once to dtype.

    Qwen2-VL's ``cos`` (L, d) is ``torch.cat((cos, cos), -1)`` of this (half layout).
    """
    components = section_components(dim, sections)
    ids = _check_position_ids(position_ids)
    tables = [rope_cos_sin(row, dim, base, dtype=dtype) for row in ids]  # 3 x (cos, sin)
    cos = _by_section(torch.stack([c for c, _ in tables]), components)
    sin = _by_section(torch.stack([s for _, s in tables]), components)
    return cos, sin


def _check_rows(ids: torch.Tensor, x: torch.Tensor) -> None:
    if ids.shape[1] != x.shape[-2]:
        raise ValueError(
            f"position_ids must have one column per row of x: {x.shape[-2]}, got {ids.shape[1]}"
        )


def apply_mrope(
    x: torch.Tensor,
    position_ids: torch.Tensor,
    sections: Sequence[int],
    *,
    base: float = 10000.0,
    layout: str = "half",
    fused: bool = True,
) -> torch.Tensor:
    """Turn pair i of each row of x (..., L, d) by p_c(i) θ_i; position_ids (3, L). Chapter 13.

    With t = h = w = 0 .. L-1 (text) this is :func:`pe_book.rope.apply_rope` exactly.
    Same dtype handling as ``apply_rope`` (angles in float64, rotation in float32 or wider).
    """
    dim = validate_pairs("x", x)
    layout = validate_choice("layout", layout, LAYOUTS)
    ids = _check_position_ids(position_ids)
    _check_rows(ids, x)
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = mrope_cos_sin(ids, dim, sections, base, dtype=work)
    return rotate(x, cos, sin, layout=layout, fused=fused)


class MRope(CachedTable):
    """M-RoPE with cached per-position cos/sin tables (non-persistent, grown on demand).

    ``forward(x, position_ids)`` rotates x (..., L, dim) with position_ids (3, L), as
    :func:`apply_mrope`: cos/sin of positions 0 .. max_len-1 are computed once, and
    each call only gathers row p_c(i) of column i. Chapter 13.
    """

    keeps_precision = True  # cos/sin stay float32/float64 under .half() (CachedTable)

    cos: torch.Tensor
    sin: torch.Tensor
    cos64: torch.Tensor
    sin64: torch.Tensor
    components: torch.Tensor

    def __init__(
        self,
        dim: int,
        sections: Sequence[int],
        base: float = 10000.0,
        layout: str = "half",
        *,
        max_len: int = 2048,
        fused: bool = True,
    ) -> None:
        super().__init__(dim, base, max_len)
        components = section_components(dim, sections)  # (dim/2,), validates sections
        self.sections = tuple(int(s) for s in sections)
        self.register_buffer("components", components, persistent=False)
        self.layout = validate_choice("layout", layout, LAYOUTS)
        self.fused = validate_bool("fused", fused)
        self._register_tables()

    def _tables(self, length: int) -> dict[str, torch.Tensor]:
        """cos/sin of m θ_i for m < length, (length, dim/2): float64 and float32 copies."""
        cos, sin = rope_cos_sin(length, self.dim, self.base, dtype=torch.float64)
        return {"cos": cos.float(), "sin": sin.float(), "cos64": cos, "sin64": sin}

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        validate_tensor("x", x, min_ndim=2, floating=True, last_dim=self.dim)
        ids = _check_position_ids(position_ids)
        _check_rows(ids, x)
        if ids.numel():
            self._ensure(int(ids.max()) + 1)
        cos, sin = (self.cos64, self.sin64) if x.dtype == torch.float64 else (self.cos, self.sin)
        ids = ids.to(device=cos.device, dtype=torch.int64)
        cos = _by_section(cos[ids], self.components)  # (3, L, d/2) -> (L, d/2)
        sin = _by_section(sin[ids], self.components)
        return rotate(x, cos, sin, layout=self.layout, fused=self.fused)
