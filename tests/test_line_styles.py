"""pe_book.plotting.line_styles: one style per method, none alike (issue 27 review, item 6:
deck 11's figures of the study's fourteen methods repeated colours, so a line could not be
told from another of the same colour)."""

import pytest

from pe_book.plotting import line_styles
from pe_book.results import Runs

FOURTEEN = [f"m{i}" for i in range(14)]


def test_fourteen_methods_get_fourteen_distinct_lines():
    styles = line_styles(FOURTEEN)
    assert len({s["marker"] for s in styles.values()}) == 14
    assert len({(s["color"], s["ls"]) for s in styles.values()}) == 14
    assert all(s["color"] in {f"C{k}" for k in range(10)} for s in styles.values())


def test_the_study_s_methods_fit_and_keep_their_style_in_every_figure():
    methods = Runs.load("lm").methods
    styles = line_styles(methods)
    assert len(styles) == len(methods) <= 14
    assert line_styles(methods) == styles


def test_too_many_or_repeated_names_are_refused():
    with pytest.raises(ValueError, match="at most 14"):
        line_styles([f"m{i}" for i in range(15)])
    with pytest.raises(ValueError, match="distinct"):
        line_styles(["a", "a"])


def test_deck_11_draws_its_method_figures_with_them():
    from pathlib import Path

    source = (Path(__file__).parents[1] / "slides" / "11_extrapolation.md").read_text()
    assert source.count("**style[m]") == 3
    assert 'f"C{i % 10}' not in source
