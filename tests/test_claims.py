"""pe_book.claims: one registry, verdicts from evidence, every claim confirmed by its chapter."""

import json
from pathlib import Path

import pytest

from pe_book import claims

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def chapter_sources(chapter: str) -> str:
    (path,) = NOTEBOOKS.glob(f"{chapter}_*.ipynb")
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_registry_loads_with_unique_ids_and_known_sources():
    registry = claims.registry()
    assert registry, "the registry is empty"
    for claim in registry.values():
        assert claim.source in claims.SOURCES or claim.source.startswith("paper:")
        assert claim.claim and claim.reason and claim.section
        assert isinstance(claim.verdict, claims.Verdict)


@pytest.mark.parametrize("claim_id", sorted(claims.registry()))
def test_every_claim_is_confirmed_by_a_cell_of_its_chapter(claim_id):
    claim = claims.get(claim_id)
    code = chapter_sources(claim.chapter)
    assert f'claims.confirm("{claim_id}"' in code, (
        f"chapter {claim.chapter} never confirms {claim_id}"
    )


def test_judge_turns_evidence_into_verdicts():
    assert claims.judge(holds=True) is claims.Verdict.HOLDS
    assert claims.judge(holds=True, caveat="not under a causal mask") is claims.Verdict.CAVEAT
    assert claims.judge(holds=False) is claims.Verdict.FAILS
    assert claims.judge(holds=False, caveat="whatever") is claims.Verdict.FAILS
    with pytest.raises(TypeError, match="holds must be a bool"):
        claims.judge(holds=1)


def test_confirm_passes_when_evidence_agrees_and_fails_when_it_does_not(capsys):
    claims.confirm("000-full-symmetry", holds=True, caveat="a causal mask breaks it")
    assert "evidence and registry agree" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="the evidence says 'holds', the registry says"):
        claims.confirm("000-full-symmetry", holds=True)


def test_unknown_claims_list_the_known_ones():
    with pytest.raises(KeyError, match="known:"):
        claims.get("no-such-claim")


def test_for_chapter_and_markdown_table():
    chapter_01 = claims.for_chapter("01")
    assert {c.id for c in chapter_01} >= {"000-full-symmetry", "001-cat-eats-fish"}
    table = claims.markdown_table(chapter_01)
    assert table.count("\n") == len(chapter_01) + 1
    assert "**holds with a caveat**" in table


def test_every_registry_claim_is_confirmed_by_a_cell_of_its_chapter():
    # A claim the registry lists must be judged by evidence in its own chapter:
    # some code cell there calls claims.confirm("<id>", ...).
    import re

    notebooks = Path(__file__).parents[1] / "notebooks"
    confirmed: dict[str, set[str]] = {}
    for path in notebooks.glob("[0-9][0-9]_*.ipynb"):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        for claim_id in re.findall(r'claims\.confirm\(\s*"([^"]+)"', code):
            confirmed.setdefault(claim_id, set()).add(path.name[:2])
    registry = claims.registry()
    missing = [
        f"{i} (chapter {c.chapter})"
        for i, c in registry.items()
        if c.chapter not in confirmed.get(i, set())
    ]
    assert not missing, f"claims with no confirming cell in their chapter: {missing}"
    assert set(confirmed) <= set(registry), set(confirmed) - set(registry)


def test_markdown_table_can_name_where_each_claim_is_decided():
    claim = claims.get("004-alibi-memory")
    plain = claims.markdown_table([claim]).splitlines()
    located = claims.markdown_table([claim], where=True).splitlines()
    assert plain[1].count("---") == 5 and located[1].count("---") == 6
    assert located[2].endswith("| chapter 8, 8.6 Memory and speed |")
