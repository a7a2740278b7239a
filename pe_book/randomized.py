"""Randomized positions: a sorted random sample from a longer range of positions (Chapter 10).

Ruoss, Delétang, Genewein, Grau-Moya, Csordás, Bennani, Legg and Veness (2023),
"Randomized Positional Encodings Boost Length Generalization of Transformers",
ACL 2023, arXiv 2305.16843, section 3. A model trained on sequences of length
L <= N_train but tested on lengths up to N (``max_len``, N > N_train) never sees
positions N_train..N-1 in training. Instead, every sequence of length L gets the
positions

    m_0 < m_1 < ... < m_{L-1},   {m_0, ..., m_{L-1}} uniform among the L-subsets of {0, ..., N-1},

drawn without replacement and sorted, and any encoding that takes positions
(sinusoidal, learned, RoPE, ALiBi, ...) is evaluated there. Every position of a
test sequence has then been seen in training, and order is kept; the distance
m_{t+1} - m_t is no longer 1, so the model can rely on order, not on distance.

Test time: the paper samples the same way at evaluation (the positions of
Figure 1 are random at test time too; the authors confirm "we also randomize at
test time", google-deepmind/randomized_positional_encodings issue #1), so there
is no separate evaluation mode here. Their code (models/positional_encodings.py,
``noisy_fixed_positional_encodings``: ``jax.random.choice(..., replace=False)``,
then ``sort``) draws one sample per call, shared by the batch (``batch=None``);
the paper's Figure 1 gives one "to each training example" (``batch=B``).
Their noisy RoPE draws a new sample in every attention layer.
"""

from __future__ import annotations

import torch
from torch import nn

from pe_book._validate import (
    validate_bool,
    validate_choice,
    validate_generator,
    validate_int,
    validate_pairs,
    validate_tensor,
)
from pe_book.positions import ModelConfig, PositionMethod, register
from pe_book.rope import apply_rope, rope_cos_sin, rotate
from pe_book.sinusoidal import LAYOUTS, SinusoidalEncoding, sinusoidal_table

__all__ = [
    "RandomizedRope",
    "RandomizedRopePositions",
    "RandomizedSinusoidal",
    "randomized_positions",
    "randomized_rope",
    "randomized_sinusoidal",
]


def randomized_positions(
    seq_len: int,
    max_len: int,
    generator: torch.Generator | None = None,
    batch: int | None = None,
) -> torch.Tensor:
    """Sorted positions m_0 < ... < m_{L-1}: a uniform random L-subset of {0, ..., N-1}.

    L = ``seq_len``, N = ``max_len`` (the longest length expected at test time, N >= L;
    N = L gives 0..L-1). Each position is in the sample with probability L / N.
    Returns int64 (L,), or (batch, L) with an independent sample per row.
    ``generator`` makes it reproducible. Ruoss et al. (2023), section 3.
    """
    seq_len = validate_int("seq_len", seq_len, minimum=0)
    max_len = validate_int("max_len", max_len, minimum=1)
    if seq_len > max_len:
        raise ValueError(
            f"seq_len must be <= max_len (the range sampled from), got {seq_len} > {max_len}"
        )
    generator = validate_generator(generator)
    rows = 1 if batch is None else validate_int("batch", batch, minimum=1)
    # The first L entries of a uniform random permutation are a uniform L-subset.
    samples = [torch.randperm(max_len, generator=generator)[:seq_len] for _ in range(rows)]
    positions = torch.stack(samples).sort(dim=-1).values  # (rows, L), int64
    return positions[0] if batch is None else positions


def _check_positions(positions: object) -> torch.Tensor:
    return validate_tensor("positions", positions, ndim=(1, 2), integer=True)


def randomized_sinusoidal(
    positions: torch.Tensor,
    dim: int,
    base: float = 10000.0,
    layout: str = "interleaved",
    *,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The sinusoidal rows PE(m) for given integer positions: (L, dim), or (batch, L, dim).

    PE[m, 2i] = sin(m θ_i), PE[m, 2i+1] = cos(m θ_i), θ_i = b^(-2i/d) (interleaved; or the
    half layout), from :func:`pe_book.sinusoidal.sinusoidal_table` on the flattened
    positions: row m of the full N-row table, which is what the authors' code gathers
    (it uses the half layout). Ruoss et al. (2023), section 3; chapter 3 for PE.
    """
    positions = _check_positions(positions)
    table = sinusoidal_table(positions.reshape(-1), dim, base, layout, dtype=dtype)  # (B·L, d)
    return table.reshape(*positions.shape, table.shape[-1])


def randomized_rope(
    x: torch.Tensor,
    positions: torch.Tensor,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
) -> torch.Tensor:
    """Rotate x (..., L, d) by m θ_i with m the given positions, (L,) or (batch, L).

    (batch, L) positions rotate x[b] by row b (x's first dimension is the batch,
    e.g. (batch, H, L, d_head)). Rotate q and k with the *same* positions: then
    q_m · k_n depends on m - n only, the sampled offset. Uses
    :func:`pe_book.rope.apply_rope`. Ruoss et al. (2023), section 3; chapter 7.
    """
    positions = _check_positions(positions)
    validate_pairs("x", x)
    if positions.ndim == 1:
        return apply_rope(x, positions, base=base, layout=layout)
    if x.ndim < 3 or x.shape[0] != positions.shape[0]:
        raise ValueError(
            f"positions of shape {tuple(positions.shape)} need x of shape "
            f"(batch={positions.shape[0]}, ..., L, d), got {tuple(x.shape)}"
        )
    rows = [apply_rope(x[b], positions[b], base=base, layout=layout) for b in range(x.shape[0])]
    return torch.stack(rows)


class _RandomizedPositions(nn.Module):
    """What both randomized encodings hold: N = ``max_len``, base, layout, ``per_sequence``."""

    def __init__(
        self,
        dim: int,
        max_len: int,
        base: float = 10000.0,
        layout: str = "interleaved",
        *,
        per_sequence: bool = True,
    ) -> None:
        super().__init__()
        self.dim = validate_int("dim", dim, minimum=2, even=True)
        self.max_len = validate_int("max_len", max_len, minimum=1)
        self.base, self.layout = base, validate_choice("layout", layout, LAYOUTS)
        self.per_sequence = validate_bool("per_sequence", per_sequence)
        self._build()

    def _build(self) -> None:
        """What a subclass builds once from the validated arguments (default: nothing)."""

    def _sample(self, x: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """Positions for x (..., L, d): (batch, L) if x is batched and per_sequence, else (L,)."""
        batch = x.shape[0] if x.ndim >= 3 and self.per_sequence else None
        return randomized_positions(x.shape[-2], self.max_len, generator, batch)


class RandomizedSinusoidal(_RandomizedPositions):
    """x + PE[m_0..m_{L-1}] with fresh sorted random positions from {0, ..., max_len - 1}.

    The max_len rows are built once (:class:`~pe_book.sinusoidal.SinusoidalEncoding`'s
    cached table); each call samples positions and gathers rows, in training and
    evaluation alike (the paper). ``per_sequence=True``: one sample per sequence of a
    (batch, L, dim) input (the paper's "each training example"); False: one per call
    (the authors' code). Shapes: x (L, dim) or (batch, L, dim) -> same.
    Ruoss et al. (2023), arXiv 2305.16843.
    """

    def _build(self) -> None:
        self.encoding = SinusoidalEncoding(self.dim, self.base, self.layout, max_len=self.max_len)

    def forward(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        validate_tensor("x", x, ndim=(2, 3), floating=True, last_dim=self.dim)
        positions = self._sample(x, generator)
        table = self.encoding.positions(self.max_len)  # (max_len, dim), cached
        return x + table[positions.to(table.device)].to(x.dtype)  # rows m_0..m_{L-1}


class RandomizedRope(_RandomizedPositions):
    """RoPE at sorted random positions from {0, ..., max_len - 1}, one sample for q and k.

    ``forward(q, k, generator=None)``: q, k (batch, H, L, d_head) or (L, d_head); both
    turned by the same sampled positions, so q_m · k_n depends on the sampled offset.
    ``per_sequence`` as in :class:`RandomizedSinusoidal`. Ruoss et al. (2023).
    """

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        validate_tensor("q", q, min_ndim=2, floating=True, last_dim=self.dim)
        validate_tensor("k", k, min_ndim=2, floating=True, last_dim=self.dim)
        if q.shape[-2] != k.shape[-2]:
            raise ValueError(f"q and k must have one length, got {q.shape[-2]} and {k.shape[-2]}")
        if self.per_sequence and q.ndim >= 3 and (k.ndim < 3 or k.shape[0] != q.shape[0]):
            raise ValueError(
                "q and k must have one batch size (each sequence gets its own positions), "
                f"got shapes {tuple(q.shape)} and {tuple(k.shape)}"
            )
        positions = self._sample(q, generator)
        rotate = {"base": self.base, "layout": self.layout}
        return randomized_rope(q, positions, **rotate), randomized_rope(k, positions, **rotate)


@register("randomized_rope")
class RandomizedRopePositions(PositionMethod):
    """Randomized RoPE in chapter 11's model: q and k turned at sorted random positions.

    Every forward call draws m_0 < ... < m_{L-1} from 0 .. max_len - 1
    (``config.max_len``, the longest test length), one sample shared by the batch, as
    the authors' code shares it (``batch=None``), and by every layer (their noisy RoPE
    draws per layer; one draw keeps the layers consistent), in training and evaluation
    alike (the paper). cos/sin of all max_len positions are built once. An input longer
    than max_len raises ValueError. Ruoss et al. (2023), arXiv 2305.16843; chapter 10.
    """

    fast_path = "one pass in C (pe_book.rope_kernel)"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.max_len = config.max_len
        cos, sin = rope_cos_sin(config.max_len, config.dim // config.n_heads)
        self.register_buffer("cos", cos.float(), persistent=False)  # (max_len, d_head/2)
        self.register_buffer("sin", sin.float(), persistent=False)

    def layer_inputs(self, seq_len: int, dtype: torch.dtype) -> dict[str, object]:
        positions = randomized_positions(seq_len, self.max_len)  # (L,), sorted
        cos, sin = self.cos[positions], self.sin[positions]  # (L, d_head/2)

        def turn(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            for name, x in (("q", q), ("k", k)):
                validate_tensor(name, x, min_ndim=2, floating=True, last_dim=2 * cos.shape[-1])
                if x.shape[-2] != seq_len:
                    raise ValueError(
                        f"{name} must hold the seq_len = {seq_len} tokens positions were drawn "
                        f"for, got shape {tuple(x.shape)}"
                    )
            return rotate(q, cos, sin, fused=self.fused), rotate(k, cos, sin, fused=self.fused)

        return {"bias": None, "rotate": turn}
