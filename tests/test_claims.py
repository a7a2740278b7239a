"""pe_book.claims: one registry, verdicts from evidence, every claim decided in its chapter."""

import json
import re
from pathlib import Path

import pytest

from pe_book import claims
from pe_book.claims import Finding, Kind, Verdict

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def chapter_notebooks(chapter: str) -> list[Path]:
    """The chapter's notebook."""
    return sorted(NOTEBOOKS.glob(f"{chapter}_*.ipynb"))


def chapter_outputs(chapter: str) -> str:
    """Everything a chapter's code cells printed (stored outputs)."""
    cells = [
        cell
        for path in chapter_notebooks(chapter)
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
    ]
    return "\n".join(
        "".join(out.get("text", ""))
        for cell in cells
        if cell["cell_type"] == "code"
        for out in cell["outputs"]
    )


def chapter_headings(chapter: str) -> set[str]:
    """Section headings: ``## 7.5 The RoFormer bound`` gives "7.5 The RoFormer bound"."""
    cells = [
        cell
        for path in chapter_notebooks(chapter)
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
    ]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return {m.group(1).strip() for m in re.finditer(r"^##+ (.+)$", text, flags=re.M)}


def test_registry_loads_with_unique_ids_known_sources_and_kinds():
    registry = claims.registry()
    assert registry, "the registry is empty"
    for claim in registry.values():
        assert claim.source in claims.SOURCES or claim.source.startswith("paper:")
        assert claim.claim and claim.reason and claim.section
        assert isinstance(claim.verdict, Verdict) and isinstance(claim.kind, Kind)


@pytest.mark.parametrize("claim_id", sorted(claims.registry()))
def test_every_claim_is_decided_by_its_chapter(claim_id):
    # the chapter's stored outputs hold the line claims.check printed after asserting
    claim = claims.get(claim_id)
    line = f"[{claim_id}] {claim.verdict}: evidence and registry agree"
    assert line in " ".join(chapter_outputs(claim.chapter).split()), (
        f"chapter {claim.chapter} never decides {claim_id} (no '{line}' in its outputs);"
        " run claims.check there and re-execute the chapter (make execute NB=...)"
    )


@pytest.mark.parametrize("claim_id", sorted(claims.registry()))
def test_every_claim_names_sections_its_chapter_has(claim_id):
    # a renumbered or renamed section must not leave the registry pointing nowhere
    claim = claims.get(claim_id)
    headings = chapter_headings(claim.chapter)
    missing = [s.strip() for s in claim.section.split(";") if s.strip() not in headings]
    assert not missing, (
        f"claim {claim_id}: chapter {claim.chapter} has no section {missing}"
        f" (pe_book/data/claims.toml); its sections: {sorted(headings)}"
    )


def test_every_claim_has_an_evidence_function():
    assert claims.evidence_ids() == set(claims.registry())


def test_no_chapter_decides_a_claim_of_another_chapter():
    pattern = re.compile(r"\[([\w.-]+)\] [^\[]*?: evidence and registry agree")  # ids: no spaces
    for path in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"):
        printed = " ".join(chapter_outputs(path.name[:2]).split())
        for claim_id in pattern.findall(printed):
            assert claims.get(claim_id).chapter == path.name[:2], (claim_id, path.name)


def test_judge_turns_evidence_into_verdicts():
    assert claims.judge(holds=True) is Verdict.HOLDS
    assert claims.judge(holds=True, caveat="not under a causal mask") is Verdict.CAVEAT
    assert claims.judge(holds=False) is Verdict.FAILS
    assert claims.judge(holds=False, caveat="whatever") is Verdict.FAILS
    with pytest.raises(TypeError, match="holds must be a bool"):
        claims.judge(holds=1)


def test_a_finding_needs_a_bool_computed_from_evidence():
    with pytest.raises(TypeError, match="holds must be a bool"):
        Finding(holds=None)
    with pytest.raises(TypeError, match="caveat must be a str or None"):
        Finding(holds=True, caveat=3)
    assert Finding(holds=True, caveat="a caveat").verdict is Verdict.CAVEAT


def test_check_passes_when_evidence_agrees_and_fails_when_it_does_not(capsys, monkeypatch):
    finding = claims.check("001-table3")
    assert finding.verdict is Verdict.FAILS
    printed = capsys.readouterr().out
    assert "[001-table3] does not hold: evidence and registry agree" in printed
    assert "kind: quoted (" in printed
    monkeypatch.setitem(claims._EVIDENCE, "001-table3", lambda: Finding(holds=True))
    with pytest.raises(AssertionError, match="the evidence says 'holds', the registry says"):
        claims.check("001-table3")


def test_unknown_claims_list_the_known_ones():
    with pytest.raises(KeyError, match="known:"):
        claims.get("no-such-claim")
    with pytest.raises(KeyError, match="known:"):
        claims.run("no-such-claim")


def test_counts_split_by_kind_and_verdict():
    counts = claims.counts()
    assert sum(counts.values()) == len(claims.registry())
    assert counts[Kind.DEFINITION, Verdict.HOLDS] >= 1 and counts[Kind.MEASURED, Verdict.HOLDS] >= 1


def test_for_chapter_and_markdown_table():
    chapter_01 = claims.for_chapter("01")
    assert {c.id for c in chapter_01} >= {"000-full-symmetry", "001-cat-eats-fish"}
    table = claims.markdown_table(chapter_01)
    assert table.count("\n") == len(chapter_01) + 1
    assert "**holds with a caveat** | measured |" in table


def test_tables_cite_sources_by_number_never_by_file_name():
    table = claims.markdown_table(list(claims.registry().values()))
    for file_name in claims.SOURCES:
        assert file_name not in table and file_name.split("_")[1] not in table
    assert "| source 004 |" in table and "| source 001 |" in table
    papers = [c for c in claims.registry().values() if c.source.startswith("paper:")]
    assert all(c.source.removeprefix("paper:").strip() in table for c in papers)
    assert "paper:" not in table


def test_markdown_table_can_name_where_each_claim_is_decided():
    claim = claims.get("004-alibi-memory")
    plain = claims.markdown_table([claim]).splitlines()
    located = claims.markdown_table([claim], where=True).splitlines()
    assert plain[1].count("---") == 6 and located[1].count("---") == 7
    assert located[2].endswith("| chapter 9, 9.6 Memory |")
    assert "**holds with a caveat** | quoted |" in located[2]


def test_a_definition_cannot_fail(monkeypatch):
    text = claims.read_data_toml("claims.toml")
    first = next(c for c in text["claim"] if c.get("kind") == "by definition")
    broken = {"claim": [{**first, "verdict": "does not hold"}]}
    monkeypatch.setattr(claims, "read_data_toml", lambda name: broken)
    claims.registry.cache_clear()
    try:
        with pytest.raises(ValueError, match="cannot fail by definition"):
            claims.registry()
    finally:
        monkeypatch.undo()
        claims.registry.cache_clear()
