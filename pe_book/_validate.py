"""Argument validation shared by every module: clear errors that name the argument.

The book's rule (shared design, "Bad input"): a wrong argument raises a
``TypeError`` (wrong kind of thing) or ``ValueError`` (right kind, bad value)
whose message names the argument and says what is accepted. Nothing is
clamped silently and no NaN is passed on.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

import torch

__all__ = [
    "validate_base",
    "validate_bool",
    "validate_broadcast",
    "validate_choice",
    "validate_dtype",
    "validate_finite",
    "validate_float_dtype",
    "validate_generator",
    "validate_int",
    "validate_mask",
    "validate_pairs",
    "validate_positions",
    "validate_positive_float",
    "validate_qkv",
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
    integer: bool = False,
    last_dim: int | None = None,
) -> torch.Tensor:
    """Return ``value`` after checking it is a tensor of an accepted rank (and dtype kind).

    ``floating``: a floating-point dtype; ``integer``: an integer dtype (not bool, float or
    complex: ids and positions are counted). ``last_dim``: the size its last dimension must
    have (the model or encoding ``dim``).
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
    if integer and (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool):
        raise TypeError(f"{name} must be an integer tensor, got dtype {value.dtype}")
    if last_dim is not None and value.shape[-1] != last_dim:
        raise ValueError(f"{name} must have last dimension dim={last_dim}, got {value.shape[-1]}")
    return value


def validate_base(base: object) -> float:
    """The base b of θ_i = b^(-2i/d): a finite number > 1 (chapter 3), else an error naming it."""
    return validate_positive_float("base", base, above=1.0)


def validate_finite(name: str, value: torch.Tensor, *, allow_inf: bool = True) -> torch.Tensor:
    """Return ``value`` after checking it holds no NaN (infinities are allowed: masks use -inf).

    ``allow_inf=False`` refuses ±inf too: for inputs whose products would turn inf into NaN.
    One reduction (min and max propagate NaN), ~10x faster than ``isnan(value).any()``.
    """
    if not value.is_floating_point() or value.numel() == 0:
        return value
    with torch.no_grad():
        low, high = (float(t) for t in torch.aminmax(value))
    if math.isnan(low) or math.isnan(high):
        raise ValueError(f"{name} contains NaN")
    if not allow_inf and not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"{name} must be finite, got an infinite entry")
    return value


def validate_float_dtype(name: str, value: object) -> torch.dtype:
    """Return ``value`` after checking it is a floating-point ``torch.dtype``."""
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise TypeError(f"{name} must be a floating-point torch.dtype, got {value!r}")
    return value


def validate_generator(value: object) -> torch.Generator | None:
    """Return ``value`` after checking it is a ``torch.Generator`` or None."""
    if value is not None and not isinstance(value, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {value!r}")
    return value


def validate_dtype(name: str, value: torch.Tensor, dtype: torch.dtype, owner: str) -> torch.Tensor:
    """Return ``value`` after checking its dtype is ``dtype``, that of ``owner`` (a layer's weights,
    another argument). Under autocast the layer casts its inputs itself, so any dtype passes."""
    if value.dtype != dtype and not torch.is_autocast_enabled(value.device.type):
        raise TypeError(
            f"{name} must have the dtype of {owner}, {dtype}, got {value.dtype} "
            "(convert one of them with .to(dtype))"
        )
    return value


def _broadcast(shapes: Sequence[Sequence[int]]) -> torch.Size | None:
    """NumPy's broadcasting rule for shapes, or None if they do not broadcast.

    (``torch.broadcast_shapes`` gives the same, some 100x slower: it guards symbolic sizes.)
    """
    out = [1] * max((len(shape) for shape in shapes), default=0)
    for shape in shapes:
        for j, size in enumerate(shape, len(out) - len(shape)):
            if size != 1:
                if out[j] not in (1, size):
                    return None
                out[j] = size
    return torch.Size(out)


def validate_broadcast(
    shapes: Mapping[str, Sequence[int]], what: str, *, target: Sequence[int] | None = None
) -> torch.Size:
    """The broadcast of the named shapes (into ``target`` if given), else a ValueError naming them.

    ``what`` completes "<names> must ...", e.g. "broadcast together".
    """
    shape = _broadcast([*shapes.values(), *(() if target is None else (target,))])
    if shape is None or (target is not None and shape != torch.Size(target)):
        names = list(shapes)
        named = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        got = ", ".join(f"{name} {tuple(shape)}" for name, shape in shapes.items())
        raise ValueError(f"{named} must {what}, got {got}")
    return shape


def validate_mask(name: str, value: object, scores: Sequence[int]) -> torch.Tensor:
    """A boolean attention mask (True = may attend) that broadcasts to the scores' shape
    (..., q_len, k_len), ends in (q_len, k_len) and leaves every query a key (else NaN)."""
    mask = validate_tensor(name, value, min_ndim=2)
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a boolean tensor (True = may attend), got {mask.dtype}")
    if mask.shape[-2:] != tuple(scores[-2:]):
        raise ValueError(
            f"{name} must end in (q_len, k_len) = {tuple(scores[-2:])}, got {tuple(mask.shape)}"
        )
    into = f"broadcast to the scores' shape {tuple(scores)}"
    validate_broadcast({name: mask.shape}, into, target=scores)
    if not bool(mask.any(-1).all()):
        raise ValueError(
            f"{name} leaves a query with no key to attend to (its softmax would be NaN)"
        )
    return mask


def validate_qkv(q: object, k: object, v: object = None, *, min_ndim: int = 2) -> torch.Size:
    """Queries (..., q_len, d), keys (..., k_len, d) and values (..., k_len, d_v), or v None.

    One floating dtype for all, q and k share d, k and v their length, and the leading
    (batch, head) dimensions broadcast together; else an error naming the argument.
    Returns the broadcast leading dimensions (those of the scores and of the output).
    """
    q = validate_tensor("q", q, min_ndim=min_ndim, floating=True)
    k = validate_tensor("k", k, min_ndim=min_ndim, floating=True)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share their last (feature) dimension, "
            f"got {q.shape[-1]} and {k.shape[-1]}"
        )
    tensors = {"q": q, "k": k}
    if v is not None:
        v = tensors["v"] = validate_tensor("v", v, min_ndim=min_ndim, floating=True)
        if v.shape[-2] != k.shape[-2]:
            raise ValueError(
                f"k and v must have the same length (dim -2), got {k.shape[-2]} and {v.shape[-2]}"
            )
    if len({t.dtype for t in tensors.values()}) > 1:
        names = " and ".join(tensors) if v is None else "q, k and v"
        dtypes = ", ".join(str(t.dtype) for t in tensors.values())
        raise TypeError(f"{names} must share one dtype, got {dtypes}")
    leading = {name: t.shape[:-2] for name, t in tensors.items()}
    return validate_broadcast(
        leading, "have leading (batch, head) dimensions that broadcast together"
    )


def validate_pairs(name: str, value: object) -> int:
    """The last dimension d of ``value``, a floating tensor (..., L, d) rotated in pairs: d even."""
    value = validate_tensor(name, value, min_ndim=2, floating=True)
    return validate_int(f"{name}'s last dimension dim", value.shape[-1], minimum=2, even=True)


def validate_positions(positions: int | torch.Tensor, *, name: str | None = None) -> torch.Tensor:
    """Positions as a 1-D integer tensor: a length L means 0..L-1 (int64).

    Positions are counted, not measured: a floating-point, complex or boolean tensor is a
    TypeError (angles m θ_i are formed later, in float64, from these integers). ``name``:
    the caller's argument, named for a tensor or for what is neither an int nor a tensor
    (default: "positions" and "seq_len"); a bad length is always "seq_len".
    """
    if isinstance(positions, torch.Tensor):
        validate_tensor(name or "positions", positions, ndim=1)
        if positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool:
            raise TypeError(
                f"{name or 'positions'} must be an integer tensor (positions are counted, "
                f"not measured), got dtype {positions.dtype}"
            )
        return positions
    if name is not None and (
        isinstance(positions, bool) or not isinstance(positions, numbers.Integral)
    ):
        raise TypeError(
            f"{name} must be a length L (an int) or a 1-D integer tensor, "
            f"got {type(positions).__name__}"
        )
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
