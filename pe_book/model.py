"""A small decoder-only character LM whose only varying part is ``position=`` (chapters 11-12).

Every method comes from its chapter's module; nothing is implemented twice:

| position     | where it enters                         | module                      |
| ------------ | --------------------------------------- | --------------------------- |
| "none"       | nowhere (NoPE: only the causal mask)    | pe_book.positions           |
| "sinusoidal" | added to the token vectors              | pe_book.sinusoidal (ch. 3)  |
| "learned"    | added to the token vectors, a table     | pe_book.learned (ch. 6)     |
| "shaw"       | relative key/value embeddings, clipped  | pe_book.relative (ch. 6)    |
| "t5"         | a learned bias per bucket of m - n      | pe_book.relative (ch. 6)    |
| "rope"       | q and k rotated by m θ_i                | pe_book.rope (ch. 7)        |
| "alibi"      | the bias -s_h (m - n)                   | pe_book.alibi (ch. 8)       |

Architecture (identical for all): token embedding, ``n_layers`` pre-LayerNorm
blocks (causal multi-head attention, then a 4·dim GELU MLP, each with a
residual), a final LayerNorm and a linear read-out to the vocabulary.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from pe_book import positions
from pe_book._validate import validate_tensor
from pe_book.positions import ModelConfig
from pe_book.rope_scaling import Scaling

__all__ = ["POSITIONS", "CharLM", "ModelConfig"]

#: The position methods, in the book's order (the registry of ``pe_book.positions``).
POSITIONS = positions.names()


class _Block(nn.Module):
    """Pre-LayerNorm: x + attention(norm(x)), then x + MLP(norm(x))."""

    def __init__(self, config: ModelConfig, position: positions.PositionMethod) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(config.dim), nn.LayerNorm(config.dim)
        self.attn = position.make_attention(config)  # causal multi-head attention
        self.mlp = nn.Sequential(
            nn.Linear(config.dim, 4 * config.dim), nn.GELU(), nn.Linear(4 * config.dim, config.dim)
        )

    def forward(self, x: torch.Tensor, inputs: dict[str, object]) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), causal=True, **inputs)  # (batch, L, dim)
        return x + self.mlp(self.norm2(x))


class CharLM(nn.Module):
    """``forward(tokens)``: ids (batch, L) int64 -> logits (batch, L, vocab_size). Chapter 11.

    Position enters only through ``self.position``, the method ``config.position``
    names (:mod:`pe_book.positions`): it may add to the embeddings, give every layer a
    score bias or a rotation of q and k, or give each layer its own attention.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.dim)
        self.position = positions.build(config)
        self.blocks = nn.ModuleList(_Block(config, self.position) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.dim)
        self.head = nn.Linear(config.dim, config.vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        validate_tensor("tokens", tokens, ndim=2)
        if tokens.dtype != torch.int64:
            raise TypeError(f"tokens must be int64 ids, got {tokens.dtype}")
        x = self.position.embed(self.embed(tokens))  # (batch, L, dim)
        inputs = self.position.layer_inputs(tokens.shape[1], x.dtype)  # built once per call
        for block in self.blocks:
            x = block(x, inputs)
        return self.head(self.norm(x))  # (batch, L, vocab_size)

    def token_losses(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Cross-entropy in nats of each next-character prediction, shape (batch, L)."""
        logits = self.forward(inputs)
        return F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")

    def loss(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy (nats per character) over the batch."""
        return self.token_losses(inputs, targets).mean()

    def set_rope_scaling(self, scaling: Scaling | None) -> None:
        """Swap the RoPE angles for a context-extension method, no retraining (chapter 8)."""
        self.position.set_scaling(scaling)
