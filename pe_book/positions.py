"""What a position method may do to a Transformer, and the registry of methods by name.

Chapter 11's model (:class:`pe_book.model.CharLM`) asks its method, never its name,
where position enters. A method may do any of four things, each a hook whose
default does nothing:

- ``embed(x)``: add a vector to the token embeddings, ``x + p_m`` (sinusoidal,
  learned; chapters 3, 6);
- ``score_bias(q_len, k_len, dtype, start)``: a bias added to every layer's
  scores, (H, q_len, k_len), built once per call (T5, ALiBi; chapters 6, 9);
  a bias that depends on the offset r = m - n alone may also say so with
  ``relative_bias(k_len, dtype)``, one number per head and offset, which the model
  then reads inside its attention kernel (:mod:`pe_book.bias_attention`, chapter 12)
  instead of building the L × L bias (``ModelConfig(fused=False)`` keeps the plain path);
- ``rotate(q, k)``: turn queries and keys before their dot product (RoPE, ch. 7);
- ``make_attention(config)``: bring its own attention layer, and say with
  ``layer_inputs`` what each layer receives (Shaw et al.; chapter 6).

Inference-time RoPE scaling goes through the method too (``set_scaling``).

A new method is one module that subclasses :class:`PositionMethod` and registers
it with ``@register("name")``, listed once in :data:`METHOD_MODULES`, plus its tests.
``pe_book.positions`` itself registers "none" (NoPE: the causal mask alone).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch
from torch import nn

from pe_book._registry import add
from pe_book._validate import validate_bool, validate_choice, validate_int
from pe_book.attention import MultiHeadSelfAttention

__all__ = [
    "METHOD_MODULES",
    "ModelConfig",
    "PositionMethod",
    "ScoreBiasMethod",
    "build",
    "names",
    "register",
]

#: The modules that register methods, in the book's order of the methods.
METHOD_MODULES = (
    "pe_book.positions",  # none
    "pe_book.sinusoidal",  # sinusoidal
    "pe_book.learned",  # learned
    "pe_book.relative",  # shaw, t5
    "pe_book.rope",  # rope
    "pe_book.alibi",  # alibi
    "pe_book.kerple",  # kerple (chapter 10's methods from here on; not in the committed study)
    "pe_book.fire",  # fire
    "pe_book.xpos",  # xpos
    "pe_book.p_rope",  # p_rope
    "pe_book.cope",  # cope
    "pe_book.randomized",  # randomized_rope
    "pe_book.irope",  # irope
)

_REGISTRY: dict[str, type[PositionMethod]] = {}

Rotate = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class ModelConfig:
    """Size of the model and how it sees position (chapters 11-12).

    It lives here, with the interface, because every method is built from it;
    :mod:`pe_book.model` builds the model from it too.

    ``train_len`` sizes what must be sized: the learned table has exactly
    ``train_len`` rows (it cannot run longer inputs). ``shaw_max_offset`` is
    Shaw et al.'s clipping distance K; T5 uses 32 causal buckets up to
    ``t5_max_distance``. ``max_len`` is the longest input the model will be asked to
    run (at least ``train_len``); only randomized positions use it, sampling from
    0 .. max_len - 1 in training (chapter 10). ``fused=False`` makes every method take
    its plain, paper-faithful path instead of its fast one (chapter 12 times both).
    """

    position: str
    vocab_size: int
    dim: int = 128
    n_layers: int = 2
    n_heads: int = 4
    train_len: int = 64
    shaw_max_offset: int = 16
    t5_max_distance: int = 128
    max_len: int = 1024
    fused: bool = True

    def __post_init__(self) -> None:
        validate_choice("position", self.position, names())
        validate_int("vocab_size", self.vocab_size, minimum=1)
        validate_int("n_layers", self.n_layers, minimum=1)
        validate_int("n_heads", self.n_heads, minimum=1)
        validate_int("dim", self.dim, minimum=2)
        if self.dim % self.n_heads or (self.dim // self.n_heads) % 2:
            raise ValueError(
                f"dim / n_heads must be an even integer (RoPE pairs), got dim={self.dim}, "
                f"n_heads={self.n_heads}"
            )
        validate_int("train_len", self.train_len, minimum=1)
        validate_int("shaw_max_offset", self.shaw_max_offset, minimum=0)
        validate_int("t5_max_distance", self.t5_max_distance, minimum=1)
        validate_int("max_len", self.max_len, minimum=self.train_len)
        validate_bool("fused", self.fused)


class PositionMethod(nn.Module):
    """A position method for a ``ModelConfig``: every hook defaults to "nothing"."""

    name: str = ""
    #: whether ``set_scaling`` changes its angles at inference time (RoPE)
    scalable: bool = False
    #: what the method's fast path does differently from its plain one (chapter 12), or ""
    #: when it has one path only; ``ModelConfig(fused=False)`` selects the plain one
    fast_path: str = ""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.fused = getattr(config, "fused", True)  # a config without it: the fast paths

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Token embeddings with position added, (batch, L, dim) -> (batch, L, dim)."""
        return x

    def score_bias(
        self, q_len: int, k_len: int, dtype: torch.dtype, start: int | None = None
    ) -> torch.Tensor | None:
        """A bias (H, q_len, k_len) for every layer's scores, or None.

        ``start`` is the position of the first query (default ``k_len - q_len``:
        the queries are the last ones, as when decoding with a cache).
        """
        return None

    def relative_bias(self, k_len: int, dtype: torch.dtype) -> torch.Tensor | None:
        """The score bias as a table b[h, r] over offsets r = m - n = 0 .. nb - 1, or None.

        Shape (H, nb), nb <= k_len; every offset r >= nb - 1 takes b[h, nb - 1]. Only for
        a bias that depends on r alone (ALiBi, T5, KERPLE, FIRE within its threshold); it
        must equal ``score_bias`` wherever n <= m (tests/test_fast_paths.py). The model
        then reads it inside the attention kernel (chapter 12) and no L × L bias exists.
        """
        return None

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries and keys (batch, H, L, d_head) as the scores should see them."""
        return q, k

    def make_attention(self, config: ModelConfig) -> nn.Module:
        """One layer's attention; called once per layer, in order."""
        return MultiHeadSelfAttention(config.dim, config.n_heads)

    def layer_inputs(self, seq_len: int, dtype: torch.dtype) -> dict[str, object]:
        """What every layer's attention receives besides its input, for one forward call:
        the bias table when the method has one and may use it (``fused``), else the bias."""
        table = self.relative_bias(seq_len, dtype) if self.fused else None
        if table is not None:
            return {"table": table, "rotate": self.rotate}  # (H, nb), read in the kernel
        return {"bias": self.score_bias(seq_len, seq_len, dtype), "rotate": self.rotate}

    def set_scaling(self, scaling: object | None) -> None:
        """Change the angles at inference time: a scaling of :mod:`pe_book.rope_scaling`,
        or None for none (RoPE only; a method that can sets ``scalable``)."""
        raise ValueError(f"set_rope_scaling needs position='rope', not {self.name!r}")


class ScoreBiasMethod(PositionMethod):
    """A method whose one hook is a bias module shared by the layers (T5, KERPLE, FIRE).

    A subclass sets ``self.bias``, a module with ``forward(q_len, k_len, start)`` that
    returns (H, q_len, k_len) and ``table(k_len)`` that returns the same bias per offset,
    (H, nb), or None where it is not a function of the offset alone; ``score_bias`` and
    ``relative_bias`` cast them to the scores' dtype.
    """

    bias: nn.Module

    def score_bias(
        self, q_len: int, k_len: int, dtype: torch.dtype, start: int | None = None
    ) -> torch.Tensor:
        return self.bias(q_len, k_len, start).to(dtype)  # (H, q_len, k_len)

    def relative_bias(self, k_len: int, dtype: torch.dtype) -> torch.Tensor | None:
        table = self.bias.table(k_len)  # (H, nb) or None
        return None if table is None else table.to(dtype)


def register(name: str) -> Callable[[type[PositionMethod]], type[PositionMethod]]:
    """Class decorator: make the method available to ``build`` under ``name``."""

    def add_method(method: type[PositionMethod]) -> type[PositionMethod]:
        add(_REGISTRY, name, method, "position method")
        method.name = name
        return method

    return add_method


@cache
def _load() -> None:
    for module in METHOD_MODULES:
        importlib.import_module(module)


def names() -> tuple[str, ...]:
    """The registered methods, in the book's order: that of METHOD_MODULES, then of
    registration within a module (not of import, which depends on who imported first)."""
    _load()
    rank = {module: i for i, module in enumerate(METHOD_MODULES)}
    order = list(_REGISTRY)
    return tuple(
        sorted(order, key=lambda n: (rank.get(_REGISTRY[n].__module__, len(rank)), order.index(n)))
    )


def build(config: ModelConfig) -> PositionMethod:
    """The method ``config.position`` names, built for this config."""
    _load()
    if config.position not in _REGISTRY:
        raise ValueError(f"position must be one of {names()}, got {config.position!r}")
    return _REGISTRY[config.position](config)


@register("none")
class NoPositions(PositionMethod):
    """NoPE: position enters nowhere; only the causal mask tells tokens apart (chapter 1)."""
