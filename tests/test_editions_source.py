"""An edition says which commit it was built from (second lecturer review, editions): a
student edition built at 16:23 sat in build/editions/ after later commits had changed
chapters and the grader, with nothing to tell a lecturer who copied it that it was stale.
tools/editions.py writes EDITION.txt (source commit, clean or dirty tree) into each
edition, and `check` warns when it is missing, names another commit than HEAD, or a
tree with changes."""

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import editions  # noqa: E402  (tools/editions.py)


def git(*args):
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("editions")
    assert editions.build(out, html=False) == 0
    return out


def test_each_edition_records_its_source_commit_and_tree(built):
    head = git("rev-parse", "HEAD").strip()
    changed = [line for line in git("status", "--porcelain").splitlines() if line.strip()]
    for edition in editions.EDITIONS:
        for folder in (built / edition, built / edition / "notebooks"):
            record = editions.read_record(folder)
            assert record["edition"] == edition
            assert record["source commit"] == head
            tree = record["working tree"]
            assert (tree == "clean") == (not changed), tree
            if changed:
                assert tree.startswith(f"dirty ({len(changed)} changed: ")


def test_check_warns_only_about_what_differs_from_head(built, tmp_path):
    head = editions.source()["commit"]
    clean = tmp_path / "clean"
    for edition in editions.EDITIONS:
        (clean / edition).mkdir(parents=True)
        editions.write_record(clean / edition, edition, {"commit": head, "changes": ""})
    assert editions.source_warnings(clean) == []

    old = tmp_path / "old"
    (old / "student").mkdir(parents=True)
    editions.write_record(old / "student", "student", {"commit": "0" * 40, "changes": "a.py"})
    (old / "instructor").mkdir()  # built before editions recorded their commit
    found = editions.source_warnings(old)
    assert any(
        w.startswith("student edition: built from commit 000000000000, but HEAD is")
        and head[:12] in w
        for w in found
    ), found
    assert any("student edition: built from a working tree with uncommitted changes,"
               " dirty (1 changed: a.py)" in w for w in found), found
    assert any(w.startswith("instructor edition: no EDITION.txt") for w in found), found


def test_the_check_command_prints_the_warning_and_still_passes_a_clean_edition(built):
    record = built / "student" / "EDITION.txt"
    saved = record.read_text(encoding="utf-8")
    try:
        record.write_text(saved.replace(editions.source()["commit"], "f" * 40), encoding="utf-8")
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors):
            code = editions.main(["check", "--out", str(built)])
        assert code == 0  # a warning, not a failure: the edition itself is sound
        assert "warning: student edition: built from commit ffffffffffff" in errors.getvalue()
    finally:
        record.write_text(saved, encoding="utf-8")
