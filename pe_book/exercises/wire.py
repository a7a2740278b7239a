"""What crosses the boundary between a graded submission's kernel and the grader.

The grader (``python -m pe_book grade``, the exercises of chapters 1-14) calls a
student's function in the student's own kernel and compares the answer in its own
process. Answers come back as JSON built by :func:`encode` and read by :func:`decode`,
which accepts only plain data: None, booleans, numbers, strings, lists, tuples,
dicts, and tensors, NumPy arrays and NumPy scalars of the numeric dtypes (raw bytes
in base64, checked against their shape). Anything else arrives as an
:class:`Opaque` stand-in that names its type, so an answer can never run code in
the grader (pickle would). The same format carries the arguments a student's code
passes to a callback the grader serves (a score function that stays in the grader).
"""

from __future__ import annotations

import base64
import builtins
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = ["PROMPT", "Callback", "Opaque", "WireError", "decode", "encode"]

#: Dtypes a tensor or array may have on the wire (bfloat16 travels as float32).
DTYPES = (
    "float64", "float32", "float16", "bfloat16", "complex64", "complex128",
    "int64", "int32", "int16", "int8", "uint8", "bool",
)  # fmt: skip
#: The largest answer accepted, in bytes of its values (a (100000, 64) float64 table is 51 MB).
MAX_BYTES = 64 * 2**20
#: How deep lists, tuples and dicts may nest.
MAX_DEPTH = 8
#: What a callback's stdin request starts with.
PROMPT = "pe_book-callback:"


class WireError(ValueError):
    """An answer that could not be read: malformed, too large or too deeply nested."""


class Opaque:
    """An answer of a type the wire does not carry (an object, a function, a generator).

    The policy sees it as what it is not: ``show()`` prints "an object of type X".
    """

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<an object of type {self.type_name}>"

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


def _array(array: np.ndarray, dtype: str) -> dict[str, Any]:
    data = np.ascontiguousarray(array)
    return {
        "dtype": dtype,
        "shape": list(data.shape),
        "data": base64.b64encode(data.tobytes()).decode("ascii"),
    }


def _tensor(value: torch.Tensor) -> dict[str, Any]:
    dtype = str(value.dtype).removeprefix("torch.")
    tensor = value.detach().cpu().resolve_conj().resolve_neg()
    if dtype == "bfloat16":
        tensor = tensor.float()
    elif dtype not in DTYPES:
        return {"t": "object", "type": f"tensor of dtype {dtype}"}
    return {"t": "tensor", **_array(tensor.numpy(), dtype)}


def _encode(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return {"t": "object", "type": "structure nested too deeply"}
    if value is None or isinstance(value, bool | str):
        return {"t": "plain", "v": value}
    if isinstance(value, int):
        return {"t": "int", "v": str(value)}
    if isinstance(value, float):
        return {"t": "float", "v": repr(value) if not math.isfinite(value) else value}
    if isinstance(value, torch.Tensor):
        return _tensor(value)
    if isinstance(value, np.ndarray | np.generic):
        name = str(value.dtype)
        if name not in DTYPES:
            return {"t": "object", "type": f"{type(value).__name__} of dtype {name}"}
        kind = "ndarray" if isinstance(value, np.ndarray) else "npscalar"
        return {"t": kind, **_array(np.asarray(value), name)}
    if isinstance(value, list | tuple):
        kind = "list" if isinstance(value, list) else "tuple"
        return {"t": kind, "v": [_encode(item, depth + 1) for item in value]}
    if isinstance(value, dict):
        items = [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in value.items()]
        return {"t": "dict", "v": items}
    return {"t": "object", "type": type(value).__name__}


def encode(value: Any) -> str:
    """``value`` as JSON the grader can read without running code (done in the kernel)."""
    return json.dumps(_encode(value, 0))


def _read_array(node: dict[str, Any]) -> np.ndarray:
    dtype, shape = node.get("dtype"), node.get("shape")
    if dtype not in DTYPES:
        raise WireError(f"dtype {dtype!r} is not carried")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise WireError("a malformed shape")
    stored = np.dtype("float32" if dtype == "bfloat16" else dtype)
    size = math.prod(shape) * stored.itemsize
    if size > MAX_BYTES:
        raise WireError(f"an answer of {size:,} bytes, more than the {MAX_BYTES:,} accepted")
    data = base64.b64decode(node.get("data", ""), validate=True)
    if len(data) != size:
        raise WireError("the bytes do not match the shape")
    return np.frombuffer(data, dtype=stored).reshape(shape).copy()


def _decode(node: Any, depth: int) -> Any:
    if depth > MAX_DEPTH + 1 or not isinstance(node, dict):
        raise WireError("a malformed answer")
    kind = node.get("t")
    if kind == "plain":
        value = node.get("v")
        if value is not None and not isinstance(value, bool | str):
            raise WireError("a malformed plain value")
        return value
    if kind == "int":
        text = node.get("v")
        if not isinstance(text, str) or len(text) > 4000:
            raise WireError("a malformed integer")
        return int(text)
    if kind == "float":
        value = node.get("v")
        if isinstance(value, str) and value in ("nan", "inf", "-inf"):
            return float(value)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise WireError("a malformed float")
        return float(value)
    if kind == "tensor":
        tensor = torch.from_numpy(_read_array(node))
        return tensor.to(torch.bfloat16) if node["dtype"] == "bfloat16" else tensor
    if kind == "ndarray":
        return _read_array(node)
    if kind == "npscalar":
        return _read_array(node)[()]
    if kind in ("list", "tuple"):
        items = [_decode(item, depth + 1) for item in _items(node)]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        pairs = [_pair(item, depth) for item in _items(node)]
        return dict(pairs)
    if kind == "object":
        return Opaque(str(node.get("type", "unknown"))[:80])
    raise WireError(f"an unknown kind {kind!r}")


def _items(node: dict[str, Any]) -> list[Any]:
    items = node.get("v")
    if not isinstance(items, list):
        raise WireError("a malformed sequence")
    return items


def _pair(item: Any, depth: int) -> tuple[Any, Any]:
    if not isinstance(item, list) or len(item) != 2:
        raise WireError("a malformed dict entry")
    key = _decode(item[0], depth + 1)
    try:
        hash(key)
    except TypeError as exc:
        raise WireError("a dict key that cannot be hashed") from exc
    return key, _decode(item[1], depth + 1)


def decode(text: str) -> Any:
    """The value :func:`encode` wrote; :class:`WireError` if ``text`` is not such JSON."""
    if len(text) > 2 * MAX_BYTES:
        raise WireError(f"an answer of {len(text):,} characters, more than accepted")
    try:
        node = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"not an encoded answer ({exc.__class__.__name__})") from exc
    return _decode(node, 0)


class Callback:
    """A function that stays in the grader: each call asks the grader over the kernel's
    stdin channel (``ask``), arguments and answer in this format."""

    def __init__(self, index: int, ask: Callable[[str], str]) -> None:
        self._index, self._ask = index, ask

    def __call__(self, *args: Any) -> Any:
        reply = json.loads(self._ask(PROMPT + json.dumps([self._index, encode(list(args))])))
        if "raised" in reply:
            kind = getattr(builtins, reply["raised"], None)
            kind = kind if isinstance(kind, type) and issubclass(kind, Exception) else RuntimeError
            raise kind(reply["message"])
        return decode(reply["value"])
