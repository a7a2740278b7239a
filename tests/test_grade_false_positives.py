"""Honest code the grader zeroed (second lecturer review, G3 and G4), the ctypes
cheats it must still mark, and the book read through ``traceback`` (G2).

G3: a comprehension's or a one-line formula's fingerprint matched a checker's or the
reference module's: the paper's slopes typed by hand (``_power_of_two_slopes`` is that
very line) and ``[float(x) for x in s]`` cost the point. G4: ``import transformers``
raises ``ctypes.dlopen`` from site-packages, which marked every exercise. Slow: one
kernel per submission (``python -m pe_book grade --batch``).
"""

import pytest
from grade_helpers import CORRECT, grade_batch

from pe_book.exercises import shim

STEM = "09_alibi"
SEED = "20261203"

FORMULA = """
def geometric(n):
    return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]


def my_slopes(n_heads):
    n0 = 1 << (n_heads.bit_length() - 1)
    return geometric(n0) + geometric(2 * n0)[0::2][: n_heads - n0]
"""

FLOATS = CORRECT[STEM]["my_slopes"].replace(
    "    return first + extra", "    s = first + extra\n    return [float(x) for x in s]"
)

HONEST = {
    "formula": {"my_slopes": FORMULA},
    "floats": {"my_slopes": FLOATS},
    "hfimport": {  # a cell that compares with BLOOM's slopes: transformers loads by ctypes
        "my_mean_distance": "from transformers.models.bloom import modeling_bloom\n\n"
        "bloom = modeling_bloom.build_alibi_tensor(torch.ones(1, 2), 8, torch.float32)\n"
        + CORRECT[STEM]["my_mean_distance"]
    },
}

MEMORY = "reached the interpreter's memory (ctypes)"
#: Cheats, each in a cell of its own, and their mark: the submission's own code reaches
#: memory or calls the C API by ctypes; it reads the book through ``traceback`` (G2).
CHEATS = {
    "peek": ("import ctypes\n\nPEEK = ctypes.string_at(id(alibi), 16)\n", MEMORY),
    "capi": ("import ctypes\n\nctypes.pythonapi.Py_IncRef(ctypes.py_object(alibi))\n", MEMORY),
    "tbread": (
        "import pathlib\nimport traceback\n\nimport pe_book\n\n"
        'PATH = pathlib.Path(pe_book.__file__).parents[1] / "notebooks" / "09_alibi.ipynb"\n'
        'LINE = traceback.FrameSummary(str(PATH), 3, "x").line\n',
        "read pe_book's or the book's source",
    ),
}


def test_a_formula_and_an_idiom_have_no_fingerprint():
    from pe_book import alibi

    namespace = {}
    exec(FORMULA + FLOATS, namespace)
    formula = namespace["geometric"].__code__
    assert shim.fingerprint(formula) is None  # the paper's line: too short to tell a copy
    assert shim.fingerprint(alibi._power_of_two_slopes.__code__) is None
    comprehensions = [c for c in namespace["my_slopes"].__code__.co_consts if hasattr(c, "co_code")]
    assert comprehensions and all(shim.fingerprint(c) is None for c in comprehensions)
    assert shim.fingerprint(alibi.alibi_slopes.__code__) is not None  # a whole function has one


@pytest.mark.slow
def test_honest_code_gets_full_points_and_the_cheats_are_marked(tmp_path):
    cheats = {s: {"my_bias": c + "\n\n" + CORRECT[STEM]["my_bias"]} for s, (c, _) in CHEATS.items()}
    submissions = {**HONEST, **cheats}.items()
    rows = grade_batch(tmp_path, [(s, STEM, {**CORRECT[STEM], **code}) for s, code in submissions])
    assert {r["student"] for r in rows} == set(HONEST) | set(CHEATS)
    for row in rows:
        if row["student"] in HONEST:
            assert row["status"] == "pass" and row["marks"] == "", row
            assert float(row["points"]) == float(row["max_points"]) > 0, row
        else:
            assert CHEATS[row["student"]][1] in row["marks"], row
            assert float(row["points"]) == 0, row
