"""The cheats an independent lecturer used on the grader (chapter 9), each marked and 0.

Last session each of these passed chapter 9's exercises with full points, or with a
note only. Each is a submission here, graded in a batch with a correct one in fresh
kernels (``python -m pe_book grade --batch``): every cheat must pass the checker (so
the points hang on the mark alone), or, when it reaches a reference while graded (which
is blocked then: pe_book.exercises.blocking), raise; it must be marked and earn 0 points
for the exercise it cheats on, while the correct submission earns every point with no
mark. Slow: about two minutes on an idle machine (one kernel per submission).
"""

import pytest
from grade_helpers import CORRECT, grade_batch

from pe_book.exercises import fingerprints, shim

pytestmark = pytest.mark.slow

STEM = "09_alibi"
SEED = "20261203"

FIND_SHIM = 'import sys\n\nshim = sys.modules["pe_book.exercises.shim"]\n'

CHEATS = {
    # 1. the watch's state written from the submission (and, failing that, its report forged)
    "state": {
        "my_slopes": FIND_SHIM
        + """state = getattr(shim, "_state", None)
if isinstance(state, dict):
    state["depth"] = 1
    state["files"] = frozenset()


def my_slopes(n_heads):
    return alibi.alibi_slopes(n_heads).tolist()
""",
    },
    "forger": {  # no state to write: replace the shim's call and publish its own report
        "my_slopes": FIND_SHIM
        + """import json
import pickle
from IPython.display import display


def _forged(name, arguments, nonce=""):
    args = pickle.loads(arguments)
    answer = json.dumps({"list": [float(s) for s in alibi.alibi_slopes(*args)]})
    report = {"answer": answer, "hits": [], "tamper": [], "watching": True, "seconds": 0.0}
    display({shim.MIME: {"payload": json.dumps(report), "mac": "0" * 64}}, raw=True)


shim.call = _forged


def my_slopes(n_heads):
    return alibi.alibi_slopes(n_heads).tolist()
""",
    },
    # 2. the public sanctioning wrapper
    "sanctioned": {
        "my_slopes": """from pe_book.exercises import shim

wrap = getattr(shim, "_Sanctioned", lambda function: function)


def my_slopes(n_heads):
    return wrap(alibi.alibi_slopes)(n_heads).tolist()
""",
    },
    # 3. the reference's code object cloned under another file name
    "clone": {
        "my_slopes": """import types

code = alibi.alibi_slopes.__code__.replace(co_filename="/tmp/mine.py")
clone = types.FunctionType(code, vars(alibi))


def my_slopes(n_heads):
    return clone(n_heads).tolist()
""",
    },
    # 4. the reference module's other functions, not declared as references
    "helpers": {
        "my_slopes": """
def my_slopes(n_heads):
    n0 = 2 ** math.floor(math.log2(n_heads))
    twice = alibi._power_of_two_slopes(2 * n0)[0::2]
    return alibi._power_of_two_slopes(n0) + twice[: n_heads - n0]
""",
        "my_bias": """
def my_bias(q_len, k_len, slopes):
    row = alibi.row_constant_bias(k_len, slopes.double())
    m = torch.arange(k_len - q_len, k_len, dtype=torch.float64)
    return row - slopes.double()[:, None, None] * m[None, :, None]
""",
        "my_mean_distance": """
def my_mean_distance(slope, m):
    weights = alibi.bias_only_weights(torch.tensor([slope], dtype=torch.float64), m)[0]
    return float((weights * torch.arange(m + 1, dtype=torch.float64)).sum())
""",
    },
    # 5. the module's source read through its loader, exec'd in another cell
    "loader": {
        "my_slopes": """SOURCE = alibi.__loader__.get_data(alibi.__file__).decode()


def my_slopes(n_heads):
    return MINE["alibi_slopes"](n_heads).tolist()
""",
        "my_bias": """import ast

tree = ast.parse(SOURCE)
kept = [node for node in tree.body if not isinstance(node, ast.ClassDef)]
MINE = {"__name__": "mine"}
exec(compile(ast.Module(kept, []), "mine.py", "exec"), MINE)


def my_bias(q_len, k_len, slopes):
    return MINE["alibi_bias"](q_len, k_len, slopes)
""",
    },
    # 6. the book's solution cells read from the notebook at run time and exec'd
    "notebook": {
        "my_slopes": """import importlib.machinery
import json
import pathlib

import pe_book

PATH = str(pathlib.Path(pe_book.__file__).parents[1] / "notebooks" / "09_alibi.ipynb")
BOOK = json.loads(importlib.machinery.SourceFileLoader("book", PATH).get_data(PATH))


def solve(number):
    for cell in BOOK["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and text.startswith(f"# Solution {number}"):
            lines = [line for line in text.splitlines() if not line.startswith("exercises.")]
            exec("\\n".join(lines), globals())
""",
        "my_bias": 'solve("9.1")\nsolve("9.2")\n',
        "my_mean_distance": 'solve("9.3")\n',
    },
    # 7. answers tabulated from the reference in another cell, then looked up
    "table": {
        "my_slopes": """
def my_slopes(n_heads):
    return TABLE[n_heads]
""",
        "my_bias": "TABLE = {n: alibi.alibi_slopes(n).tolist() for n in range(1, 65)}\n\n\n"
        + CORRECT[STEM]["my_bias"],
    },
}

#: The exercises each cheat cheats on, and a word each of its marks must hold.
CHEATED = {
    "state": ({"alibi_slopes"}, "calls its reference pe_book.alibi.alibi_slopes"),
    "forger": ({"alibi_slopes"}, "not signed"),
    "sanctioned": ({"alibi_slopes"}, "calls its reference pe_book.alibi.alibi_slopes"),
    "clone": ({"alibi_slopes"}, "pe_book.alibi.alibi_slopes"),
    "helpers": ({"alibi_slopes", "decoding_bias", "mean_distance"}, "reference's module"),
    "loader": ({"alibi_slopes", "decoding_bias"}, "pe_book.alibi.alibi_"),
    "notebook": ({"alibi_slopes", "decoding_bias", "mean_distance"}, "runs the book's solution"),
    "table": ({"alibi_slopes"}, "calls its reference pe_book.alibi.alibi_slopes in cell"),
}


def _rows(tmp_path):
    submissions = [
        (s, STEM, {**CORRECT[STEM], **code}) for s, code in {"correct": {}, **CHEATS}.items()
    ]
    return {(r["student"], r["name"]): r for r in grade_batch(tmp_path, submissions, SEED)}


def test_each_cheat_is_marked_and_earns_nothing(tmp_path):
    rows = _rows(tmp_path)
    names = {name for _, name in rows}
    for name in names:
        row = rows["correct", name]
        assert row["status"] == "pass" and row["marks"] == "", row
        assert float(row["points"]) == float(row["max_points"]) > 0, row
    for student, (cheated, word) in CHEATED.items():
        for name in cheated:
            row = rows[student, name]
            assert row["status"] in ("pass", "error") and row["marks"], row
            assert word in row["marks"], (word, row)
            assert float(row["points"]) == 0, row
            if student != "forger":  # the forged report is an error; the rest pass the checker
                blocked = row["status"] == "error" and "the grader blocks" in row["message"]
                assert row["status"] == "pass" or blocked, row  # blocked: a reference raised
    for name in names - CHEATED["table"][0]:  # the table marks its own exercise only
        assert rows["table", name]["marks"] == "" and rows["table", name]["status"] == "pass"
    assert "took a reference's code object" in rows["clone", "alibi_slopes"]["marks"]
    for student in ("loader", "notebook"):
        assert (
            "read pe_book's or the book's source in cell" in rows[student, "mean_distance"]["marks"]
        )


def test_the_watch_has_nothing_to_write_by_name():
    """No state, no sanctioning wrapper among the shim's names: only functions and constants."""
    public = {name for name in vars(shim) if not name.startswith("__")}
    for name in public:
        value = getattr(shim, name)
        assert not isinstance(value, dict | list | set), name
    assert not hasattr(shim, "_Sanctioned") and not hasattr(shim, "_state")


def test_a_clone_has_the_references_fingerprint_and_a_student_function_does_not():
    import types

    from pe_book import alibi

    clone = alibi.alibi_slopes.__code__.replace(co_filename="x.py", co_firstlineno=3)
    assert shim.fingerprint(clone) == shim.fingerprint(alibi.alibi_slopes.__code__) is not None
    namespace = {}
    exec(CORRECT[STEM]["my_slopes"], namespace)
    mine = namespace["my_slopes"].__code__
    assert shim.fingerprint(mine) not in (None, shim.fingerprint(alibi.alibi_slopes.__code__))
    assert shim.fingerprint((lambda x: x).__code__) is None  # too small to tell a copy
    assert isinstance(types.FunctionType(clone, {}), types.FunctionType)


def test_names_set_after_import_do_not_reach_the_watch(monkeypatch):
    """What the watch reads was bound when the shim was imported: a submission that sets
    the shim's constants or the builtins it uses changes nothing it computes."""
    import builtins

    from pe_book import alibi

    code = alibi.alibi_slopes.__code__
    before = shim.fingerprint(code)
    monkeypatch.setattr(fingerprints, "MIN_INSTRUCTIONS", 10**9)
    monkeypatch.setattr(builtins, "sum", lambda *args: 0)
    monkeypatch.setattr(builtins, "repr", lambda value: "")
    assert shim.fingerprint(code) == before is not None
