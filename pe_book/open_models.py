"""The position choices of today's open model families, quoted and read (chapter 13).

Two kinds of evidence, kept apart:

- **Quoted**: the table ``open-models-position`` in ``pe_book/data/papers.toml`` gives,
  for each family, the RoPE base b, the local layers' base, the context-extension
  scaling and its factor κ, the share of each head's q/k coordinates that rotate, how
  often a layer has no position at all, and the local attention window, each with the
  paper, model card or reference code it comes from. A cell that could not be verified
  is empty and its row says why (:func:`position_table`).
- **Read**: the defaults of Hugging Face transformers' configuration classes
  (:func:`config_defaults`; installed with the book's test extras, no weights and no
  network). A class's defaults describe one size of one release, or none, so
  :func:`cross_check` compares them with the quoted cells and reports agreement
  instead of assuming it.

:func:`kv_cache_bytes` prices a layer plan: local and chunked layers cache at most
their window, global layers every token (Gemma's 5 local : 1 global, chapter 13).
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pe_book import papers
from pe_book._validate import validate_choice, validate_int

__all__ = [
    "CROSS_CHECKS",
    "LAYER_KINDS",
    "SAME_SOURCE",
    "ConfigPositions",
    "CrossCheck",
    "class_checkpoint",
    "config_defaults",
    "cross_check",
    "kv_cache_bytes",
    "position_table",
    "rotated_share",
]

TABLE_ID = "open-models-position"
#: transformers' names of the attention kinds a layer plan lists (``config.layer_types``).
LAYER_KINDS = ("full_attention", "sliding_attention", "chunked_attention")


@dataclass(frozen=True)
class ConfigPositions:
    """What a transformers configuration class's defaults say about position.

    ``rope_theta`` is the base of the global (full-attention) layers and
    ``local_rope_theta`` that of the sliding-window layers when the class gives them
    their own (else None); ``factor`` is the scaling's κ (None for no scaling);
    ``rotated_share`` the share of each head's q/k coordinates that rotate;
    ``nope_every`` the interval of layers without position (None: none);
    ``window`` the sliding window or chunk size of the layers that ``window_layers``
    describes: "all", "-" (none), or "k in p" when the plan repeats k windowed layers
    then one global layer (Gemma 3's "5 in 6"; a last, cut-off period is allowed).
    """

    class_name: str
    rope_theta: float | None
    local_rope_theta: float | None
    rope_type: str
    factor: float | None
    rotated_share: float
    nope_every: int | None
    window: int | None
    window_layers: str
    n_layers: int

    def value(self, field: str) -> float | str | None:
        """The field as a number (``window_layers`` as its text)."""
        value = getattr(self, field)
        return value if value is None or isinstance(value, str) else float(value)


def _transformers() -> Any:
    try:
        return importlib.import_module("transformers")
    except ImportError as error:  # pragma: no cover - transformers is a test extra
        raise ImportError(
            "config_defaults reads transformers' configuration classes: install the book's"
            " extras (make env, or pip install 'pe_book[test]')"
        ) from error


def _rope(config: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(global rope parameters, local ones or None), for transformers 5.x and 4.x."""
    params = getattr(config, "rope_parameters", None)
    if isinstance(params, dict) and params and all(isinstance(v, dict) for v in params.values()):
        return params.get("full_attention", {}), params.get("sliding_attention")
    if isinstance(params, dict) and params:
        return params, None
    legacy = dict(getattr(config, "rope_scaling", None) or {})  # transformers 4.x
    legacy.setdefault("rope_theta", getattr(config, "rope_theta", None))
    local = getattr(config, "rope_local_base_freq", None)
    return legacy, ({"rope_theta": local} if local is not None else None)


def _rotated(config: Any, rope: dict[str, Any]) -> float:
    if getattr(config, "qk_rope_head_dim", None):  # MLA: decoupled rotary dims
        return config.qk_rope_head_dim / (config.qk_rope_head_dim + config.qk_nope_head_dim)
    share = rope.get("partial_rotary_factor", getattr(config, "partial_rotary_factor", None))
    return 1.0 if share is None else float(share)


def _pattern(kinds: list[str]) -> str:
    """ "k in p" if the plan is k windowed layers then one global, repeated; else a count."""
    if "full_attention" not in kinds:
        return "all"
    period = kinds.index("full_attention") + 1
    unit = kinds[:period]
    if all(kind == unit[i % period] for i, kind in enumerate(kinds)):
        return f"{period - 1} in {period}"
    return f"{len(kinds) - kinds.count('full_attention')} of {len(kinds)}"


def _windows(config: Any) -> tuple[int | None, str]:
    """(window or chunk, which layers use it)."""
    kinds = list(getattr(config, "layer_types", None) or [])
    chunk = getattr(config, "attention_chunk_size", None)
    if chunk and "chunked_attention" in kinds:
        return int(chunk), _pattern(kinds)
    window = getattr(config, "sliding_window", None)
    if not window or getattr(config, "use_sliding_window", True) is False:
        return None, "-"
    return int(window), _pattern(kinds) if kinds else "all"


def config_defaults(class_name: str) -> ConfigPositions:
    """The position fields of ``transformers.<class_name>()``'s defaults. Chapter 13.

    Instantiates the configuration class only: no weights, no network. Raises
    ValueError for a name transformers does not have.
    """
    transformers = _transformers()
    if not isinstance(class_name, str):
        raise TypeError(f"class_name must be a str, got {type(class_name).__name__}")
    cls = getattr(transformers, class_name, None)
    if cls is None or not class_name.endswith("Config"):
        raise ValueError(
            f"class_name must name a transformers configuration class, got {class_name!r}"
        )
    config = cls()
    rope, local = _rope(config)
    factor = rope.get("factor") if rope.get("rope_type", "default") != "default" else None
    local_theta = local.get("rope_theta") if local else None
    window, window_layers = _windows(config)
    return ConfigPositions(
        class_name=class_name,
        rope_theta=rope.get("rope_theta"),
        local_rope_theta=local_theta if local_theta != rope.get("rope_theta") else None,
        rope_type=str(rope.get("rope_type", rope.get("type", "default"))),
        factor=None if factor is None else float(factor),
        rotated_share=_rotated(config, rope),
        nope_every=getattr(config, "no_rope_layer_interval", None),
        window=window,
        window_layers=window_layers,
        n_layers=int(config.num_hidden_layers),
    )


def position_table() -> papers.PaperTable:
    """The quoted table of the families' position choices (``papers.toml``)."""
    return papers.get(TABLE_ID)


def rotated_share(cell: object) -> float:
    """A "rotated share" cell as a number: "all" is 1, "1/4" is 0.25, "64 of 192" is 1/3."""
    text = str(cell).split("(")[0].strip()
    if text.startswith("all"):
        return 1.0
    if " of " in text:
        part, whole = text.split(" of ")
        return int(part.split()[-1]) / int(whole.split()[0])
    return float(Fraction(text))


def _number(cell: object) -> float | None:
    if isinstance(cell, int | float) and not isinstance(cell, bool):
        return float(cell)
    return None


#: (family, table column, transformers class, ConfigPositions field): the quoted cells a
#: class's defaults can confirm. Chosen by the class's own docstring checkpoint.
CROSS_CHECKS: tuple[tuple[str, str, str, str], ...] = (
    ("Llama 3", "RoPE base", "LlamaConfig", "rope_theta"),
    ("Llama 4 Scout", "RoPE base", "Llama4TextConfig", "rope_theta"),
    ("Llama 4 Scout", "NoPE layer every", "Llama4TextConfig", "nope_every"),
    ("Llama 4 Scout", "window", "Llama4TextConfig", "window"),
    ("Llama 4 Scout", "window layers", "Llama4TextConfig", "window_layers"),
    ("Llama 4 Scout", "κ", "Llama4TextConfig", "factor"),
    ("Qwen2, Qwen2.5, Qwen3", "RoPE base", "Qwen2Config", "rope_theta"),
    ("Qwen2, Qwen2.5, Qwen3", "RoPE base", "Qwen3Config", "rope_theta"),
    ("Qwen2-VL", "RoPE base", "Qwen2VLTextConfig", "rope_theta"),
    ("Mistral 7B v0.1", "RoPE base", "MistralConfig", "rope_theta"),
    ("Mistral 7B v0.1", "window", "MistralConfig", "window"),
    ("Mixtral 8x7B", "RoPE base", "MixtralConfig", "rope_theta"),
    ("Gemma 2", "RoPE base", "Gemma2Config", "rope_theta"),
    ("Gemma 2", "window", "Gemma2Config", "window"),
    ("Gemma 2", "window layers", "Gemma2Config", "window_layers"),
    ("Gemma 3 (4B-27B)", "RoPE base", "Gemma3TextConfig", "rope_theta"),
    ("Gemma 3 (4B-27B)", "local layers' base", "Gemma3TextConfig", "local_rope_theta"),
    ("Gemma 3 (4B-27B)", "window", "Gemma3TextConfig", "window"),
    ("Gemma 3 (4B-27B)", "window layers", "Gemma3TextConfig", "window_layers"),
    ("Gemma 3 (4B-27B)", "κ", "Gemma3TextConfig", "factor"),
    ("DeepSeek-V2, V3", "RoPE base", "DeepseekV3Config", "rope_theta"),
    ("DeepSeek-V2, V3", "rotated share", "DeepseekV3Config", "rotated_share"),
    ("DeepSeek-V2, V3", "κ", "DeepseekV3Config", "factor"),
    ("gpt-oss", "RoPE base", "GptOssConfig", "rope_theta"),
    ("gpt-oss", "κ", "GptOssConfig", "factor"),
    ("gpt-oss", "window", "GptOssConfig", "window"),
    ("gpt-oss", "window layers", "GptOssConfig", "window_layers"),
    ("GPT-NeoX-20B", "rotated share", "GPTNeoXConfig", "rotated_share"),
    ("Phi-3-mini", "RoPE base", "Phi3Config", "rope_theta"),
)

#: (family, column) cells of CROSS_CHECKS whose quoted value was itself read from the class
#: it is checked against (the row's sources say so): their agreement cannot fail, so
#: :attr:`CrossCheck.independent` is False and chapter 13 counts them apart.
SAME_SOURCE: frozenset[tuple[str, str]] = frozenset(
    {
        ("Llama 4 Scout", "NoPE layer every"),
        ("Llama 4 Scout", "window"),
        ("Llama 4 Scout", "window layers"),
        ("Qwen2-VL", "RoPE base"),
        ("Mistral 7B v0.1", "RoPE base"),
        ("Mixtral 8x7B", "RoPE base"),
        ("Gemma 2", "RoPE base"),
        ("GPT-NeoX-20B", "rotated share"),
        ("Phi-3-mini", "RoPE base"),
    }
)


@dataclass(frozen=True)
class CrossCheck:
    """One quoted cell against one class default: ``agrees`` is None when either is absent.

    ``independent`` is False when the quoted cell was read from that same class
    (:data:`SAME_SOURCE`); ``checkpoint`` is the model the class's docstring names as
    its defaults' example (e.g. "meta-llama/Llama-2-7b-hf"), None if it names none.
    """

    family: str
    column: str
    quoted: object
    source: str  # "Class.field"
    default: float | str | None
    agrees: bool | None
    independent: bool = True
    checkpoint: str | None = None


def class_checkpoint(class_name: str) -> str | None:
    """The checkpoint a transformers configuration class's docstring says its defaults
    resemble (its first "[owner/name]" link), or None. Chapter 13."""
    config_defaults(class_name)  # validates the name
    doc = getattr(_transformers(), class_name).__doc__ or ""
    found = re.search(r"\[([\w.-]+/[\w.-]+)\]", doc)
    return found.group(1) if found else None


def _quoted_value(column: str, cell: object) -> float | str | None:
    if column == "rotated share":
        return rotated_share(cell)
    if column == "window layers":
        return str(cell).split("(")[0].strip()
    return _number(cell)


def cross_check(checks: Sequence[tuple[str, str, str, str]] = CROSS_CHECKS) -> list[CrossCheck]:
    """Each quoted cell of ``checks`` against its class default, to a relative 1e-9.

    "-" (absent) agrees with a default of None; a number agrees with an equal default.
    Chapter 13 counts the independent agreements apart from the cells quoted from the
    class itself, and prints the disagreements with the checkpoint each class describes.
    """
    table = position_table()
    rows = []
    for family, column, class_name, field in checks:
        validate_choice("column", column, table.columns)
        cell = table.row(family)[column]
        quoted = _quoted_value(column, cell)
        default = config_defaults(class_name).value(field)
        if cell == "-":
            agrees: bool | None = default in (None, "-")
        elif quoted is None or default is None:
            agrees = None if quoted is None else False
        elif isinstance(quoted, str) or isinstance(default, str):
            agrees = quoted == default
        else:
            agrees = math.isclose(quoted, default, rel_tol=1e-9)
        rows.append(
            CrossCheck(
                family,
                column,
                cell,
                f"{class_name}.{field}",
                default,
                agrees,
                independent=(family, column) not in SAME_SOURCE,
                checkpoint=class_checkpoint(class_name),
            )
        )
    return rows


def kv_cache_bytes(
    layer_types: Sequence[str],
    window: int,
    seq_len: int,
    n_kv_heads: int,
    d_head: int,
    bytes_per_number: int = 2,
) -> int:
    """Bytes of keys and values cached for ``seq_len`` tokens by a layer plan. Chapter 13.

        Σ_l min(L, W_l) · 2 · n_kv · d_h · bytes,   W_l = window (sliding or chunked), L (full)

    ``layer_types`` lists each layer's kind in transformers' names (:data:`LAYER_KINDS`),
    e.g. ``Gemma3TextConfig().layer_types``; a chunked layer (Llama 4) is counted at its
    largest, a whole chunk. ``n_kv_heads`` keys and values of ``d_head`` numbers per
    token (grouped-query attention; multi-head attention is n_kv = H), 2 bytes a number
    for bfloat16.
    """
    if isinstance(layer_types, str) or not isinstance(layer_types, Sequence):
        raise TypeError(f"layer_types must be a list of {LAYER_KINDS}, got {layer_types!r}")
    kinds = [
        validate_choice(f"layer_types[{i}]", k, LAYER_KINDS) for i, k in enumerate(layer_types)
    ]
    window = validate_int("window", window, minimum=1)
    seq_len = validate_int("seq_len", seq_len, minimum=0)
    per_token = (
        2
        * validate_int("n_kv_heads", n_kv_heads, minimum=1)
        * validate_int("d_head", d_head, minimum=1)
        * validate_int("bytes_per_number", bytes_per_number, minimum=1)
    )
    tokens = sum(seq_len if kind == "full_attention" else min(seq_len, window) for kind in kinds)
    return tokens * per_token
