"""The grader's watch switched off from inside the kernel (second lecturer review, G1).

G1: ``sys.getprofile()`` returns the shim's profile hook, whose ``__closure__`` holds
the counter that makes it look away. Four lines set it, and the reference then ran
with full points and no mark. The same held for switching the counter on for the
reference only ("quiet"), and for clones of the reference module's functions made
while the counter was set ("preclone"). Now:

- while a student's function is graded, the functions of its references' modules are
  stubs that raise (:mod:`pe_book.exercises.blocking`), whatever happened to the hook;
- the grader reads the cells it runs, in its own process, and marks code that names the
  interpreter's frames, hooks or closures, or the grader's modules
  (:mod:`pe_book.exercises.tamper`);
- every report checks the watch's state (its counter is 0 between reports, its tables
  and hooks are as installed), and the shim's encoder is bound at import.

The review's C7 (the module's functions read through traceback's linecache, padded
and exec'd) is marked by the scan alone. Each attack gets 0 points and a mark on every
exercise. The honest probe (``sys``,
``inspect``) keeps full points with no mark. Slow: one kernel per submission.
"""

from pathlib import Path

import nbformat
import pytest
import torch
from grade_helpers import CORRECT, grade_batch

from pe_book import alibi, decay
from pe_book.exercises import blocking, tamper

SEED = "20261203"
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

#: The review's four lines (G1), verbatim.
CLOSURE = """import sys

_p = sys.getprofile(); cl = dict(zip(_p.__code__.co_freevars, (c.cell_contents for c in _p.__closure__))); cl["own"][0] = 10**6
"""  # noqa: E501

PLAIN = "\n\ndef REF(answer):\n    return answer()\n"

#: Each attack's cell, before the functions that copy the reference through REF.
ATTACKS = {
    "closure": CLOSURE + PLAIN,
    "quiet": """import sys


def REF(answer):  # the watch looks away for the reference only
    hook = sys.getprofile()
    own = dict(zip(hook.__code__.co_freevars, hook.__closure__))["own"].cell_contents
    own[0] += 10**6
    try:
        return answer()
    finally:
        own[0] -= 10**6
""",
    "unhook": "import sys\nimport threading\n\nsys.setprofile(None)\nthreading.setprofile(None)\n"
    + PLAIN,
    "gc": """import gc

for _f in gc.get_objects():
    if type(_f).__name__ == "function" and _f.__name__ == "profile" and _f.__closure__:
        _cells = dict(zip(_f.__code__.co_freevars, _f.__closure__))
        if "own" in _cells:
            _cells["own"].cell_contents[0] = 10**6
"""
    + PLAIN,
    "encode": """from pe_book.exercises import wire

_encode = wire.encode


def _my_encode(answer):  # the reference runs after the function, in the shim's encoding
    if isinstance(answer, tuple) and len(answer) == 2 and answer[0] == "REF":
        return _encode(answer[1]())
    return _encode(answer)


wire.encode = _my_encode


def REF(answer):
    return ("REF", answer)
""",
    "preclone": CLOSURE
    + """import types

_CLONES = {}
for _module in MODULES:
    _ns = dict(vars(_module))
    for _k, _v in list(_ns.items()):
        if isinstance(_v, types.FunctionType) and _v.__module__ == _module.__name__:
            _ns[_k] = types.FunctionType(_v.__code__, _ns, _v.__name__, _v.__defaults__)
            _ns[_k].__kwdefaults__ = _v.__kwdefaults__
            _CLONES[_v] = _ns[_k]


class _Module:  # a module whose functions are the clones
    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        value = getattr(self.module, name)
        return _CLONES.get(value, value)


def REF(answer):  # the copy runs with each module's name bound to its clones
    fake = {m.__name__.rpartition(".")[2]: _Module(m) for m in MODULES}
    globals_ = {**answer.__globals__, **fake}
    return types.FunctionType(answer.__code__, globals_, None, None, answer.__closure__)()
""",
}

#: Each chapter's copies of its references, and the modules they come from.
COPIES = {
    "03_sinusoidal": (
        "sinusoidal",
        {
            "my_table": "def my_table(seq_len, dim, base):\n    return REF(lambda:"
            " sinusoidal.sinusoidal_table(seq_len, dim, base, dtype=torch.float64))\n",
            "my_turning_pairs": "def my_turning_pairs(seq_len, dim, base):\n    return REF("
            "lambda: int((sinusoidal.wavelengths(dim, base) <= seq_len - 1).sum()))\n",
            "my_permutation": "def my_permutation(dim):\n"
            "    return REF(lambda: sinusoidal.layout_permutation(dim))\n",
        },
    ),
    "07_rope": (
        "decay, rope",
        {
            "my_rope": "def my_rope(x, positions):\n"
            "    return REF(lambda: rope.apply_rope(x, positions))\n",
            "my_bound": "def my_bound(offsets, dim, base):\n"
            "    return REF(lambda: decay.rope_decay_bound(offsets, dim, base))\n",
        },
    ),
    "09_alibi": (
        "alibi",
        {
            "my_slopes": "def my_slopes(n_heads):\n"
            "    return REF(lambda: alibi.alibi_slopes(n_heads).tolist())\n",
            "my_bias": "def my_bias(q_len, k_len, slopes):\n"
            "    return REF(lambda: alibi.alibi_bias(q_len, k_len, slopes))\n",
            "my_mean_distance": "def my_mean_distance(slope, m):\n"
            "    one = torch.tensor([slope], dtype=torch.float64)\n"
            "    return REF(lambda: float(alibi.mean_distance(one, m)[0]))\n",
        },
    ),
}

#: The review's C7: the reference module's functions read through traceback's linecache
#: (an exempt reader at run time), each padded so no fingerprint matches, and exec'd.
C7 = """import ast
import traceback

PATH = alibi.__file__
TEXT = "".join(traceback.linecache.getline(PATH, i) for i in range(1, 2000))
KEEP = [n for n in ast.parse(TEXT).body if isinstance(n, ast.FunctionDef | ast.Import | ast.ImportFrom)]
for node in KEEP:
    if isinstance(node, ast.FunctionDef):
        node.body.insert(0, ast.parse("_pad = 987654321").body[0])
        node.decorator_list = []
MINE = {"__name__": "mine"}
exec(compile(ast.fix_missing_locations(ast.Module(KEEP, [])), "mine.py", "exec"), MINE)


def my_slopes(n_heads):
    return MINE["alibi_slopes"](n_heads).tolist()
"""  # noqa: E501

#: An honest student: sys and inspect for what they are for.
HONEST = """import inspect
import sys

SIZE = sys.getsizeof([1, 2, 3])
PARAMETERS = list(inspect.signature(sorted).parameters)
"""


def cheat(stem, attack):
    """Chapter ``stem``'s correct submission, with ``attack``'s cell and the copies."""
    modules, copies = COPIES[stem]
    code = dict(copies)
    first = next(iter(code))
    prelude = f"from pe_book import {modules}\n" + ATTACKS[attack].replace(
        "MODULES", f"({modules},)"
    )
    code[first] = prelude + "\n\n" + code[first]
    return {**CORRECT[stem], **code}


#: The submissions graded: (student, chapter, functions).
SUBMISSIONS = [
    *((f"closure{stem[:2]}", stem, cheat(stem, "closure")) for stem in COPIES),
    *((attack, "09_alibi", cheat("09_alibi", attack)) for attack in ATTACKS if attack != "closure"),
    ("c7", "09_alibi", {**CORRECT["09_alibi"], "my_slopes": C7}),
    ("honest", "09_alibi", {**CORRECT["09_alibi"], "my_slopes": HONEST + "\n\n"
                                                   + CORRECT["09_alibi"]["my_slopes"]}),
]  # fmt: skip


def test_the_scan_marks_each_attack_and_no_honest_code():
    for attack, text in ATTACKS.items():
        assert tamper.scan([(0, text)]), attack
    marks = {mark for _, mark in tamper.scan([(0, CLOSURE)])}
    for word in ("getprofile", "__closure__", "cell_contents", "__code__"):
        assert any(f"({word})" in mark for mark in marks), (word, marks)
    assert tamper.scan([(0, HONEST)]) == []
    for functions in CORRECT.values():
        assert tamper.scan(list(enumerate(functions.values()))) == []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):  # the book's own code is honest code
        nb = nbformat.read(path, as_version=4)
        cells = [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        assert tamper.scan(cells) == [], path.name


@pytest.mark.parametrize(
    "text",
    [
        'getattr(sys, "".join(map(chr, [103, 101, 116])))',  # a name built in the call
        "reach = getattr",  # getattr as a value
        "eval(text)",
        "import ctypes",
        "from pe_book.exercises import shim",
        'sys.modules["pe_book.exercises.shim"]',
        "code.replace(co_filename='mine.py')",
        "traceback.FrameSummary(path, 1, 'x').line",
    ],
)
def test_the_scan_marks_the_roads_around_it(text):
    assert tamper.scan([(0, text)]), text


def test_blocked_functions_raise_and_come_back():
    """In-process: the stubs raise by any alias; what is allowed, and what it calls, runs;
    restore puts back the code seen at register, even code a submission swapped."""
    register, block, restore = blocking.make()
    register("pe_book.alibi", alibi)
    register("pe_book.decay", decay)
    alias, slopes = alibi.alibi_slopes, alibi.alibi_slopes(8)
    original = alibi.mean_distance.__code__
    offsets = torch.arange(4)
    try:
        alibi.mean_distance.__code__ = (lambda slopes, m: 0).__code__  # swapped by a cheat
        block(["pe_book.alibi"], [], [])
        with pytest.raises(RuntimeError, match=r"the grader blocks pe_book\.alibi\.alibi_slopes"):
            alias(8)
        with pytest.raises(RuntimeError, match=r"pe_book\.alibi\.AlibiPositions\.__init__"):
            alibi.AlibiPositions(None)  # a method with a __class__ cell
        block(["pe_book.decay"], ["pe_book.decay.dot_profile"], [])  # 5.3 may use dot_profile
        assert torch.equal(alias(8), slopes)  # the earlier block was put back first
        profile = decay.dot_profile(offsets, 8)  # allowed, with what it calls
        with pytest.raises(RuntimeError, match="first_offset_at_or_below"):
            decay.first_offset_at_or_below(offsets, profile, 0.5)
    finally:
        restore()
    assert alibi.mean_distance.__code__ is original
    assert torch.equal(alibi.alibi_slopes(8), slopes)
    assert decay.first_offset_at_or_below(offsets, decay.dot_profile(offsets, 8), 0.5) is not None


@pytest.mark.slow
def test_each_way_off_the_watch_is_marked_and_earns_nothing(tmp_path):
    rows = grade_batch(tmp_path, SUBMISSIONS)
    assert {r["student"] for r in rows} == {student for student, _, _ in SUBMISSIONS}
    for row in rows:
        if row["student"] == "honest":
            assert row["status"] == "pass" and row["marks"] == "", row
            assert float(row["points"]) == float(row["max_points"]) > 0, row
        else:
            assert row["marks"] and float(row["points"]) == 0, row
    closure = [r for r in rows if r["student"].startswith("closure")]
    assert {r["chapter"] for r in closure} == set(COPIES)
    for row in closure:  # the review's four lines: seen in the cell and in the watch's state
        assert "(__closure__) in cell" in row["marks"], row
        assert "changed the grader's watch (its state)" in row["marks"], row
    for row in (r for r in rows if r["student"] == "c7"):  # no run-time mark: the source's
        assert "reads source through linecache" in row["marks"], row
    for row in rows:  # a copy that reached its blocked reference says which one
        if row["student"] in ("closure09", "quiet", "unhook", "gc"):
            assert "calls its reference pe_book.alibi." in row["marks"], row
