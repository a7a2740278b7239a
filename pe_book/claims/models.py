"""Evidence for the claims about today's models (chapter 13).

Source 004 names LLaMA and GPT-NeoX as popular users of RoPE. The evidence runs the
rotary code of Hugging Face transformers' Llama and GPT-NeoX attention (their
``*RotaryEmbedding`` and ``apply_rotary_pos_emb``, on a small configuration built from
each class's defaults: no weights, no network) on random queries and keys, and
measures what makes a rotation RoPE: the scores change with the positions, depend on
the offset m - n only, and how much of each head is turned.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch

from pe_book.claims import Finding, evidence

Rotate = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
HEAD_DIM, HEADS, LENGTH, SHIFT = 32, 2, 12, 100


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


def _measure(rotate: Rotate) -> tuple[float, float, float]:
    """(largest score change under a shift, smallest change from the unrotated scores,
    share of each head's coordinates the rotation changes)."""
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
    return shift_change, moved, float(turned.double().mean())


@evidence("004-llama-neox-rope")
def llama_and_neox_use_rope(rotations: dict[str, Rotate] | None = None) -> Finding:
    """Each family's rotary code: scores relative (a shift by 100 changes none beyond
    float32 rounding), position-dependent (every score off the diagonal moves by more
    than 1e-3 from the unrotated q·k), and the share of each head it turns (shown:
    a partial rotation is still RoPE, so it is no caveat)."""
    if rotations is None:
        rotations = {name: transformers_rotation(name) for name in ("llama", "gpt_neox")}
    shown, holds = [], True
    for name, rotate in rotations.items():
        shift_change, moved, share = _measure(rotate)
        relative, positional = shift_change < 1e-4, moved > 1e-3
        holds = holds and relative and positional
        shown.append(
            f"{name}: positions moved by {SHIFT}, largest score change {shift_change:.1e}"
            f" (absolute; {'below' if relative else 'not below'} 1e-4: the scores"
            f" {'depend on m - n only' if relative else 'depend on more than m - n'});"
            f" smallest change of a score off the diagonal from the unrotated q·k {moved:.1e}"
            f" ({'above' if positional else 'not above'} 1e-3, a threshold far above float32"
            f" rounding: {'position-dependent' if positional else 'position is not seen'});"
            f" share of each head's coordinates turned {share:.2f}"
        )
    return Finding(holds=holds, shown=tuple(shown))
