"""Evidence for the claims about today's models (chapter 13).

Source 004 names LLaMA and GPT-NeoX as popular users of RoPE. The evidence runs the
rotary code of Hugging Face transformers' Llama and GPT-NeoX attention (their
``*RotaryEmbedding`` and ``apply_rotary_pos_emb``, on a small configuration built from
each class's defaults: no weights, no network) on random queries and keys, and
measures what makes a rotation RoPE: the scores change with the positions, depend on
the offset m - n only, each turned pair keeps its norm (a rotation, not a scaling such as
xPos's), and the rotated q equals :func:`pe_book.rope.apply_rope` at the class's base and
partial rotary factor (half layout).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch

from pe_book import rope
from pe_book.claims import Finding, evidence

Rotate = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
HEAD_DIM, HEADS, LENGTH, SHIFT = 32, 2, 12, 100
DEFAULT_ROPE = (10000.0, HEAD_DIM)  # (base, rotated coordinates) of plain RoPE


def class_rope(family: str) -> tuple[float, int]:
    """(base, rotated coordinates of a d = 32 head) from transformers' ``family`` config."""
    config_class = {"llama": "LlamaConfig", "gpt_neox": "GPTNeoXConfig"}[family]
    config = getattr(importlib.import_module("transformers"), config_class)()
    parameters = getattr(config, "rope_parameters", None) or {}
    base = parameters.get("rope_theta", getattr(config, "rope_theta", 10000.0))
    factor = parameters.get("partial_rotary_factor", getattr(config, "rotary_pct", 1.0))
    return float(base), int(HEAD_DIM * factor)


def transformers_rotation(family: str) -> Rotate:
    """(q, k, positions) -> rotated (q, k) by transformers' code for ``family``.

    ``family`` is "llama" or "gpt_neox"; q and k are (1, H, L, d) with d = 32: the
    class's defaults but for a hidden size of 64 and 2 heads.
    """
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    config_class = {"llama": "LlamaConfig", "gpt_neox": "GPTNeoXConfig"}[family]
    config = getattr(importlib.import_module("transformers"), config_class)(
        hidden_size=HEAD_DIM * HEADS, num_attention_heads=HEADS, intermediate_size=64
    )
    prefix = {"llama": "Llama", "gpt_neox": "GPTNeoX"}[family]
    rotary = getattr(module, f"{prefix}RotaryEmbedding")(config)

    def rotate(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor):
        cos, sin = rotary(q, positions[None])  # (1, L, d_rot) each
        return module.apply_rotary_pos_emb(q, k, cos, sin)

    return rotate


def _measure(rotate: Rotate, base: float, rotary_dim: int) -> tuple[float, ...]:
    """(largest score change under a shift, smallest change from the unrotated scores,
    share of each head's coordinates the rotation changes, largest change of a turned
    pair's norm (pairs (j, j + rotary_dim/2)), largest difference from apply_rope)."""
    generator = torch.Generator().manual_seed(13)
    q, k = torch.randn(2, 1, HEADS, LENGTH, HEAD_DIM, generator=generator)
    positions = torch.arange(LENGTH)
    q_rot, k_rot = rotate(q, k, positions)
    q_moved, k_moved = rotate(q, k, positions + SHIFT)
    scores = q_rot @ k_rot.transpose(-1, -2)
    shift_change = float((q_moved @ k_moved.transpose(-1, -2) - scores).abs().max())
    plain = q @ k.transpose(-1, -2)
    off_diagonal = ~torch.eye(LENGTH, dtype=torch.bool)  # the diagonal's offset is 0
    moved = float((scores - plain).abs()[..., off_diagonal].min())
    turned = (q_rot[..., 1:, :] - q[..., 1:, :]).abs().amax(dim=(0, 1, 2)) > 1e-6
    half = rotary_dim // 2

    def pair_norms(x: torch.Tensor) -> torch.Tensor:  # (..., half)
        return torch.hypot(x[..., :half], x[..., half:rotary_dim])

    norm_change = float((pair_norms(q_rot) - pair_norms(q)).abs().max())
    expected = torch.cat(
        [rope.apply_rope(q[..., :rotary_dim], positions, base=base, layout="half"),
         q[..., rotary_dim:]], dim=-1)  # fmt: skip
    off_rope = float((q_rot - expected).abs().max())
    return shift_change, moved, float(turned.double().mean()), norm_change, off_rope


@evidence("004-llama-neox-rope")
def llama_and_neox_use_rope(
    rotations: dict[str, Rotate] | None = None,
    reference: dict[str, tuple[float, int]] | None = None,
) -> Finding:
    """Each family's rotary code: scores relative (a shift by 100 changes none beyond
    float32 rounding), position-dependent (every score off the diagonal moves by more
    than 1e-3 from the unrotated q·k), a rotation (each turned pair keeps its norm to
    1e-4) and RoPE (q rotated equals apply_rope at the family's base and partial factor
    to 1e-4; ``reference`` maps a name to (base, rotated coordinates), plain RoPE's
    (10,000, all 32) by default). The share turned is shown: a partial rotation is
    still RoPE, so it is no caveat."""
    if rotations is None:
        rotations = {name: transformers_rotation(name) for name in ("llama", "gpt_neox")}
        reference = {name: class_rope(name) for name in rotations}
    shown, holds = [], True
    for name, rotate in rotations.items():
        base, rotary_dim = (reference or {}).get(name, DEFAULT_ROPE)
        shift_change, moved, share, norm_change, off_rope = _measure(rotate, base, rotary_dim)
        relative, positional = shift_change < 1e-4, moved > 1e-3
        rotation, is_rope = norm_change < 1e-4, off_rope < 1e-4
        holds = holds and relative and positional and rotation and is_rope
        shown.append(
            f"{name}: positions moved by {SHIFT}, largest score change {shift_change:.1e}"
            f" (absolute; {'below' if relative else 'not below'} 1e-4: the scores"
            f" {'depend on m - n only' if relative else 'depend on more than m - n'});"
            f" smallest change of a score off the diagonal from the unrotated q·k {moved:.1e}"
            f" ({'above' if positional else 'not above'} 1e-3, a threshold far above float32"
            f" rounding: {'position-dependent' if positional else 'position is not seen'});"
            f" share of each head's coordinates turned {share:.2f};"
            f" largest change of the norm of a turned pair (j, j + {rotary_dim // 2})"
            f" {norm_change:.1e} ({'below' if rotation else 'not below'} 1e-4:"
            f" {'a rotation' if rotation else 'not a rotation'} of those pairs);"
            f" largest difference from rope.apply_rope (half layout, base {base:,.0f},"
            f" {rotary_dim} of {HEAD_DIM} coordinates) {off_rope:.1e}"
            f" ({'below' if is_rope else 'not below'} 1e-4:"
            f" {'RoPE' if is_rope else 'not this RoPE'})"
        )
    return Finding(holds=holds, shown=tuple(shown))
