"""Argument validation shared by every module: clear errors that name the argument.

The book's rule (shared design, "Bad input"): a wrong argument raises a
``TypeError`` (wrong kind of thing) or ``ValueError`` (right kind, bad value)
whose message names the argument and says what is accepted. Nothing is
clamped silently and no NaN is passed on.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch

__all__ = [
    "validate_base",
    "validate_bool",
    "validate_choice",
    "validate_finite",
    "validate_int",
    "validate_positions",
    "validate_positive_float",
    "validate_real_vector",
    "validate_tensor",
]


def validate_int(
    name: str, value: object, *, minimum: int | None = None, even: bool = False
) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer >= ``minimum``.

    Booleans are refused (``True`` is an ``int`` in Python, never a length).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    if even and value % 2:
        raise ValueError(f"{name} must be even (dimensions come in (sin, cos) pairs), got {value}")
    return value


def validate_bool(name: str, value: object) -> bool:
    """Return ``value`` after checking it is a ``bool`` (not 0/1, not a string)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


def validate_positive_float(name: str, value: object, *, above: float = 0.0) -> float:
    """Return ``value`` as a ``float`` after checking it is finite and > ``above``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not (value > above) or value != value or value == float("inf"):
        raise ValueError(f"{name} must be a finite number > {above}, got {value}")
    return value


def validate_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """Return ``value`` after checking it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value  # type: ignore[return-value]


def validate_tensor(
    name: str,
    value: object,
    *,
    ndim: int | Sequence[int] | None = None,
    min_ndim: int | None = None,
    floating: bool = False,
    last_dim: int | None = None,
) -> torch.Tensor:
    """Return ``value`` after checking it is a tensor of an accepted rank (and dtype kind).

    ``last_dim``: the size its last dimension must have (the model or encoding ``dim``).
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if ndim is not None:
        accepted = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if value.ndim not in accepted:
            raise ValueError(
                f"{name} must have rank {' or '.join(map(str, accepted))}, "
                f"got shape {tuple(value.shape)}"
            )
    if min_ndim is not None and value.ndim < min_ndim:
        raise ValueError(f"{name} must have rank >= {min_ndim}, got shape {tuple(value.shape)}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    if last_dim is not None and value.shape[-1] != last_dim:
        raise ValueError(f"{name} must have last dimension dim={last_dim}, got {value.shape[-1]}")
    return value


def validate_base(base: object) -> float:
    """The base b of θ_i = b^(-2i/d): a finite number > 1 (chapter 3), else an error naming it."""
    return validate_positive_float("base", base, above=1.0)


def validate_finite(name: str, value: torch.Tensor) -> torch.Tensor:
    """Return ``value`` after checking it holds no NaN (infinities are allowed: masks use -inf)."""
    if value.is_floating_point() and bool(torch.isnan(value).any()):
        raise ValueError(f"{name} contains NaN")
    return value


def validate_positions(positions: int | torch.Tensor) -> torch.Tensor:
    """Positions as a 1-D integer tensor: a length L means 0..L-1 (int64).

    Positions are counted, not measured: a floating-point or boolean tensor is a
    TypeError (angles m θ_i are formed later, in float64, from these integers).
    """
    if isinstance(positions, torch.Tensor):
        validate_tensor("positions", positions, ndim=1)
        if positions.is_floating_point() or positions.dtype == torch.bool:
            raise TypeError(
                "positions must be an integer tensor (positions are counted, not measured), "
                f"got dtype {positions.dtype}"
            )
        return positions
    return torch.arange(validate_int("seq_len", positions, minimum=0))


def validate_real_vector(name: str, value: object) -> torch.Tensor:
    """``value`` (a number, a sequence of numbers or a 1-D tensor) as a finite 1-D float64 tensor.

    Python numbers go straight to float64 (``torch.as_tensor`` would make floats
    float32); booleans, complex numbers, strings and non-finite values are refused.
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, torch.Tensor):
        try:
            value = torch.tensor(value, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(
                f"{name} must be real numbers (a 1-D tensor or a sequence), got {value!r}"
            ) from error
    validate_tensor(name, value, ndim=1)
    if value.dtype == torch.bool or value.is_complex():
        raise TypeError(f"{name} must be real numbers, got dtype {value.dtype}")
    value = value.to(torch.float64)
    if not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} must be finite")
    return value
