"""Numbers in the chapters' prose come from what the chapters print.

A result typed into the text by hand drifts when the code changes (the book had
several such drifts). So every *result-like* number in a chapter's Markdown (a
decimal such as 1.29, a number with thousands separators such as 2,560, a
percentage such as 0.6%) must appear in that chapter's stored outputs, which
nbval re-computes on every test run, or be quoted from ``pe_book/data/papers.toml``,
or be listed below as a constant of the text with the reason it is not a result.
Section, exercise, chapter, table and version numbers are not results, nor is
the References list. A number may be written without the thousands separators
the output has (or with them), a percentage as the fraction a cell prints
(69% for 0.69), and a number after "about" (or ≈) as a rounding of a printed
one (about 0.4 for 0.401). Otherwise words ("about two and a half times") are
the way to state a result loosely.

The preface and the review chapter summarise the others: their numbers may
come from any chapter's outputs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
    (ROOT / "notebooks").glob("appendix_*.ipynb")
)
NOTEBOOKS += sorted((ROOT / "notebooks").glob("instructor_*.ipynb"))
PAPERS = (ROOT / "pe_book" / "data" / "papers.toml").read_text(encoding="utf-8")

#: a decimal, a number with thousands separators, or either followed by %; also an
#: integer percentage. Not part of a longer token (a name, a version, a path).
NUMBER = re.compile(
    r"(?<![\w.^_{\\/=])(?<![\w.)}]-)(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+(?=\s?%))(\s?%)?(?![\w.]\d)"
)
#: what a reference looks like just before its number
REFERENCE = re.compile(
    r"(sections?|exercises?|chapters?|tables?|figures?|appendix|appendices|§|llama|python|"
    r"torch|version|solution|question|q|eq\.?|equation|abramowitz and stegun)"
    r"(\s+\d+(\.\d+)*(\s*(,|and|to|–|-)\s*)?)*\s*[(\[]?$",
    re.IGNORECASE,
)

#: Constants of the text, not results: chapter -> {number as written: why}.
CONSTANTS: dict[str, dict[str, str]] = {
    "04": {"12,345": "the largest shift exercise 4.1's checker tests (a test input)"},
    "05": {"123,456": "the largest offset exercise 5.1's checker tests (a test input)"},
    "07": {
        "123,456": "the largest offset exercise 7.3's checker tests (a test input)",
        "32,768": "the position at which tests/test_rope.py checks bfloat16 rotation",
    },
    "11": {
        "1,000": "the ALiBi paper's Appendix B example, quoted in exercise 11.2",
        "2,000": "the ALiBi paper's Appendix B example, quoted in exercise 11.2",
    },
    "12": {
        "16,384": "one-thread threshold of pe_book/_rope_kernel.c (see test_rope_kernel)",
        "5%": "an allowance the text sets for noise, stated as such, not a measurement",
    },
    "14": {"2,000": "the range of positions exercise 14.1's checker draws from (a test input)"},
}


def outputs_of(path: Path) -> str:
    """Every text output of a chapter, except the claims tables (rendered from the registry)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    texts = []
    for cell in cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                texts.append("".join(out["text"]))
            for kind in ("text/plain", "text/markdown", "text/latex"):
                value = "".join(out.get("data", {}).get(kind, ""))
                if kind == "text/markdown" and value.startswith("| claim |"):
                    continue
                texts.append(value)
    return "\n".join(texts)


def prose_of(path: Path) -> list[str]:
    """The Markdown cells, without headings, code spans, links' targets and References."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    blocks = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"]).split("## References")[0]
        text = re.sub(r"`[^`]*`", "", text)  # code spans name things, they report nothing
        text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
        blocks.append("\n".join(line for line in text.splitlines() if not line.startswith("#")))
    return blocks


APPROXIMATE = re.compile(
    r"(about|≈|\\approx|approximately|roughly|around|nearly|near)\s*\$?\s*[+−-]?$"
)


def result_numbers(text: str) -> list[str]:
    """The result-like numbers of a text; "~" marks one stated as approximate."""
    found = []
    for match in NUMBER.finditer(text):
        before = text[max(0, match.start() - 40) : match.start()]
        if REFERENCE.search(before):
            continue
        after = text[match.end() : match.end() + 2]
        if re.fullmatch(r"\d{1,2}\.\d", match.group(1)) and (
            after.startswith(("–", ")")) or before.endswith(("–", "("))
        ):
            continue  # a range or a bracketed list of section numbers
        approximate = "~" if APPROXIMATE.search(before) else ""
        sign = "−" if re.search(r"(^|[^\w)}\]])[−-]$", before) else ""  # not a subtraction
        found.append(approximate + sign + match.group(1) + ("%" if match.group(2) else ""))
    return found


def _occurs(number: str, haystack: str) -> bool:
    return re.search(r"(?<![\d.,])" + re.escape(number) + r"(?![\d]|,\d)", haystack) is not None


def _value(number: str) -> float:
    return float(number.replace(",", "").rstrip("%"))


def _decimals(number: str) -> int:
    digits = number.replace(",", "").rstrip("%")
    return len(digits.split(".")[1]) if "." in digits else 0


PRINTED_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")


def printed(number: str, haystack: str) -> bool:
    """Whether ``number`` (as :func:`result_numbers` gives it) is printed in ``haystack``."""
    approximate = number.startswith("~")
    number = number.lstrip("~")
    if number.startswith("−"):  # a negative result: printed with its sign, ASCII or not
        unsigned = number[1:]
        return any(
            printed(("~" if approximate else "") + unsigned, line[m.start() :])
            for line in haystack.splitlines()
            for m in re.finditer(r"[-−](?=\d)", line)
        )
    percent = number.endswith("%")
    plain = number.rstrip("%")
    forms = {plain, plain.replace(",", "")}
    if "." not in plain:
        forms.add(f"{int(plain.replace(',', '')):,}")  # 1024 written, 1,024 printed
    if percent:
        forms = {f + "%" for f in forms} | {f + " %" for f in forms}
        forms.add(f"{_value(number) / 100:.{_decimals(number) + 2}f}")  # 69% <-> 0.69
    if any(_occurs(form, haystack) for form in forms):
        return True
    if not approximate:
        return False
    scale = 100 if percent else 1  # about 31% may be a rounded 0.312
    places = _decimals(number) + (2 if percent else 0)
    digits = plain.replace(",", "")
    if "." not in digits and not percent:  # about 60,000: rounded to its last non-zero digit
        places = -(len(digits) - len(digits.rstrip("0")))
    target = round(_value(number) / scale, places)
    for token in PRINTED_NUMBER.findall(haystack):
        mantissa = token.split("e")[0]  # 4.54e-05 also reads as 4.54 (× 10^-5 in the prose)
        for text in {token, mantissa}:
            try:
                value = float(text.replace(",", ""))
            except ValueError:
                continue
            if round(value, places) == target:
                return True
    return False


ALL_OUTPUTS = "\n".join(outputs_of(p) for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_result_in_the_prose_is_printed_by_the_chapter(path):
    chapter = path.stem[:2]
    summary = chapter in ("00", "11")
    haystack = (ALL_OUTPUTS if summary else outputs_of(path)) + "\n" + PAPERS
    allowed = CONSTANTS.get(chapter, {})
    missing = sorted(
        {
            number
            for block in prose_of(path)
            for number in result_numbers(block)
            if number not in allowed and not printed(number, haystack)
        }
    )
    assert not missing, (
        f"{path.name}: numbers in the prose that no cell of the chapter prints: {missing}. "
        "Print them from the computation, say them in words, or (for a constant of the "
        "text, not a result) list them in CONSTANTS in tests/test_prose_numbers.py with why."
    )


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("ALiBi costs 1.29 times NoPE and 40% more", ["1.29", "40%"]),
        ("section 11.2 and sections 1.2 to 1.5; exercise 3.1", []),
        ("heads reach 2,560 positions (Table 3)", ["2,560"]),
        ("torch 2.13.0 and Python 3.11", []),
        ("exercises 1.1–1.2 in class (1.3–1.4 as homework)", []),
        ("10^{-4} and d = 512", []),
        ("about 0.4 for d = 64; e^{-10} \\approx 4.5", ["~0.4", "~4.5"]),
    ],
)
def test_result_numbers_are_told_from_references(text, numbers):
    assert result_numbers(text) == numbers


def test_printed_matches_whole_numbers_only():
    assert printed("1.29", "ratio 1.29×") and printed("0.019", "+0.019 nats")
    assert not printed("1.2", "1.29") and not printed("29", "1.29")
    assert printed("0.6%", "by 0.6% to 2.3%") and printed("69%", "share 0.69")
    assert printed("1,024", "d = 1024") and printed("1024", "1,024 rows")
    assert printed("~0.4", "k=3: 0.401") and not printed("0.4", "k=3: 0.401")
    assert printed("~4.5", "4.54e-05") and printed("~31%", "total 0.312")
    assert printed("~60,000", "λ = 60611.477") and not printed("~60,000", "λ = 65611.477")
    assert printed("−0.025", "gap: -0.025") and not printed("−0.025", "gap: 0.025")
    assert result_numbers("falls to −0.029 and $-0.5$") == ["−0.029", "−0.5"]


def test_every_result_in_a_claims_reason_is_printed_by_its_chapter():
    """A reason's numbers come from the deciding chapter's outputs (the check prints them)."""
    from pe_book import claims

    by_chapter = {p.stem[:2]: outputs_of(p) + "\n" + PAPERS for p in NOTEBOOKS}
    missing = {
        claim.id: numbers
        for claim in claims.registry().values()
        if (
            numbers := [
                n for n in result_numbers(claim.reason) if not printed(n, by_chapter[claim.chapter])
            ]
        )
    }
    assert not missing, (
        f"numbers in claims' reasons that their chapter does not print: {missing}. Use words, "
        "or print the number from the evidence (its Finding.shown lines)."
    )
