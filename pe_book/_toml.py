"""The book's quoted data, read once from ``pe_book/data/*.toml`` (claims, papers, glossary)."""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any

__all__ = ["read_data_toml"]


def read_data_toml(name: str) -> dict[str, Any]:
    """The parsed TOML file ``pe_book/data/<name>`` shipped with the package."""
    text = resources.files("pe_book").joinpath("data", name).read_text(encoding="utf-8")
    return tomllib.loads(text)
