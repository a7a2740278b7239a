"""A per-position table kept as non-persistent buffers and grown on demand.

The sinusoidal encoding (chapter 3) keeps its rows PE(0 .. L-1) and RoPE
(chapter 7) its cos/sin tables the same way: built once for ``max_len``
positions, rebuilt at the next power of two >= L when an input reaches past
them, never recomputed per call; non-persistent, so they follow
``.to(device)`` and stay out of checkpoints.
"""

from __future__ import annotations

import torch
from torch import nn

from pe_book._validate import validate_base, validate_int

__all__ = ["CachedTable"]


class CachedTable(nn.Module):
    """Base of :class:`~pe_book.sinusoidal.SinusoidalEncoding` and :class:`~pe_book.rope.Rope`.

    A subclass builds its buffers for a length in ``_tables(length)`` and calls
    ``_register_tables()`` at the end of its ``__init__``; ``_ensure(needed)``
    grows them. ``exact_length = True`` rebuilds for every new length instead
    (dynamic NTK, whose angles depend on the length itself).
    """

    exact_length = False
    #: keep the tables' own precision when the module is cast (RoPE, xPos, M-RoPE):
    #: ``model.to(torch.bfloat16)`` would otherwise round cached cos/sin to 16 bits (the
    #: precision bug of section 7.4); they are rebuilt on the buffers' new device instead.
    keeps_precision = False

    def __init__(self, dim: int, base: float, max_len: int) -> None:
        super().__init__()
        self.dim = validate_int("dim", dim, minimum=2, even=True)
        self.base = validate_base(base)
        self._length = validate_int("max_len", max_len, minimum=1)

    def _tables(self, length: int) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def _register_tables(self) -> None:
        for name, value in self._tables(self._length).items():
            self.register_buffer(name, value, persistent=False)

    def _ensure(self, needed: int) -> None:
        """Rebuild the tables if position ``needed - 1`` is past them (or, exact: any change)."""
        exact = self.exact_length
        if needed > self._length or (exact and needed != self._length):
            self._length = needed if exact else 1 << (needed - 1).bit_length()
            device = next(self.buffers()).device
            for name, value in self._tables(self._length).items():
                setattr(self, name, value.to(device))

    def _apply(self, fn, recurse: bool = True):  # type: ignore[no-untyped-def]
        """Follow ``.to(device)`` like any buffer; with ``keeps_precision``, rebuild, not round."""
        super()._apply(fn, recurse)
        device = next(self.buffers()).device
        if self.keeps_precision and device.type != "meta":
            for name, value in self._tables(self._length).items():
                setattr(self, name, value.to(device))
        return self
