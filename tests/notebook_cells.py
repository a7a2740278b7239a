"""Tiny notebook builders shared by the tests of pe_book.lecture and pe_book.syllabus."""

import json


def write(path, cells):
    """Write a minimal notebook holding ``cells`` to ``path``; returns the path."""
    path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    return path


def markdown(text):
    """A Markdown cell with ``text``."""
    return {"cell_type": "markdown", "source": [text], "metadata": {}}


def code(slide="-"):
    """A one-line code cell with the given reveal.js slide type."""
    return {"cell_type": "code", "source": ["1"], "metadata": {"slideshow": {"slide_type": slide}}}
