"""Kinds of evidence and the one vocabulary of verdicts (issue 23).

Five kinds: measured and proved verdicts are findings (mutation-tested); by
definition, quoted and unverifiable are counted apart. Four verdicts, the same
for every kind; "cannot be checked" goes with "unverifiable" and only with it.
The kind is shown in its own column and line, never folded into the verdict.
"""

import json
import re
from pathlib import Path

import pytest

from pe_book import claims
from pe_book.claims import Finding, Kind, Verdict

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_only_measured_and_proved_verdicts_are_findings():
    assert {kind for kind in Kind if kind.is_finding} == {Kind.MEASURED, Kind.PROVED}
    assert all(kind.meaning for kind in Kind)


def test_the_vocabulary_is_four_verdicts():
    assert [str(v) for v in Verdict] == [
        "holds",
        "holds with a caveat",
        "does not hold",
        "cannot be checked",
    ]


def test_evidence_that_cannot_be_obtained_gives_cannot_be_checked():
    finding = Finding(holds=None, missing="the source's list is lost from our copy")
    assert finding.verdict is Verdict.UNCHECKABLE
    with pytest.raises(TypeError, match="None only with `missing`"):
        Finding(holds=None)
    with pytest.raises(TypeError, match="has no caveat"):
        Finding(holds=None, missing="lost", caveat="and a caveat")
    with pytest.raises(TypeError, match="only for evidence that cannot be obtained"):
        Finding(holds=True, missing="lost")


@pytest.mark.parametrize(
    ("kind", "verdict"),
    [("unverifiable", "holds"), ("measured", "cannot be checked"), ("quoted", "cannot be checked")],
)
def test_cannot_be_checked_goes_with_unverifiable_only(monkeypatch, kind, verdict):
    text = claims.read_data_toml("claims.toml")
    broken = {"claim": [{**text["claim"][0], "kind": kind, "verdict": verdict}]}
    monkeypatch.setattr(claims, "read_data_toml", lambda name: broken)
    claims.registry.cache_clear()
    try:
        with pytest.raises(ValueError, match="goes with the kind 'unverifiable' and only with it"):
            claims.registry()
    finally:
        monkeypatch.undo()
        claims.registry.cache_clear()


def test_every_kind_is_used_and_unverifiable_claims_say_what_is_missing():
    used = {c.kind for c in claims.registry().values()}
    assert used == set(Kind), f"kinds no claim has: {set(Kind) - used}"
    for claim in claims.registry().values():
        if claim.kind is Kind.UNVERIFIABLE:
            finding = claims.run(claim.id)
            assert finding.holds is None and finding.missing, claim.id


def test_check_prints_the_kind_apart_from_the_verdict(capsys):
    claims.check("004-alibi-8-heads")
    printed = capsys.readouterr().out
    assert printed.startswith("[004-alibi-8-heads] cannot be checked: evidence and registry agree")
    assert "kind: unverifiable (the evidence cannot be obtained" in printed
    assert "not available: " in printed
    claims.check("000-full-symmetry")  # measured, the default: no kind line
    assert "kind:" not in capsys.readouterr().out


def test_the_verdict_column_holds_only_verdicts_and_the_kind_its_own_column():
    table = claims.markdown_table(list(claims.registry().values())).splitlines()[2:]
    for row, claim in zip(table, claims.registry().values(), strict=True):
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert cells[3] == f"**{claim.verdict}**" and cells[4] == str(claim.kind), claim.id


def test_no_chapter_prints_an_old_verdict_label():
    # "true by definition" and "(quoted)" were verdict variants before the kinds had a column
    old = re.compile(r"\] (true by definition|[a-z ]+ \(quoted\)): evidence and registry agree")
    for path in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        printed = " ".join(
            "".join(out.get("text", "")) for cell in cells for out in cell.get("outputs", [])
        )
        assert not old.search(" ".join(printed.split())), path.name
