"""``python -m pe_book``: one entry point, a --help for every command, clear errors, exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pe_book import cli


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_every_available_command_and_the_exit_codes(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name in cli.available():
        assert f"  {name} " in out, out
    assert "exit codes" in out


def test_no_command_is_a_usage_error(capsys):
    code, _, err = run(capsys)
    assert code == cli.USAGE_ERROR
    assert "usage: python -m pe_book <command>" in err


@pytest.mark.parametrize("name", ["study", "tasks", "cost", "bench"])
def test_every_command_has_its_own_help(capsys, name):
    code, out, _ = run(capsys, name, "--help")
    assert code == 0
    assert out.startswith(f"usage: python -m pe_book {name}"), out[:200]


def test_an_unknown_command_names_the_choices(capsys):
    code, _, err = run(capsys, "trian")
    assert code == cli.USAGE_ERROR
    assert "unknown command 'trian'" in err and "study" in err


def test_grade_has_its_place_and_is_listed_once_its_module_exists(capsys):
    assert cli.COMMANDS["grade"].module == "pe_book.grade"
    if "grade" in cli.available():
        assert run(capsys, "grade", "--help")[0] == 0
    else:
        code, _, err = run(capsys, "grade")
        assert code == cli.USAGE_ERROR and "not part of this version yet" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["study", "--seeds", "4-1"], "seeds must be a rising range"),
        (["study", "--seeds", "a"], "seeds must look like 0-4"),
        (["study", "--design", "huge"], "invalid choice: 'huge'"),
        (["study", "--positions", "rotary"], "invalid choice: 'rotary'"),
        (["study", "--threads", "0"], "threads"),
        (["tasks", "--threads", "0"], "threads"),
        (["tasks", "--tasks", "sort"], "invalid choice: 'sort'"),
        (["cost", "--fast"], "unrecognized arguments: --fast"),
        (["bench", "gelu"], "invalid choice: 'gelu'"),
        (["bench", "rope", "--dtype", "float16"], "invalid choice: 'float16'"),
        (["bench", "alibi", "--isa", "sse"], "invalid choice: 'sse'"),
    ],
)
def test_bad_arguments_fail_before_any_work_with_a_message_naming_them(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == cli.USAGE_ERROR, (code, out, err)
    assert message in err, err
    assert f"python -m pe_book {argv[0]}" in err, err


def test_the_entry_point_and_an_old_module_command_run_as_programs():
    for argv, usage in (
        (["-m", "pe_book", "--help"], "usage: python -m pe_book <command>"),
        (["-m", "pe_book", "bench", "nothing"], "usage: python -m pe_book bench"),
        (["-m", "pe_book.study", "--help"], "usage:"),  # the alias still works
    ):
        done = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
        assert usage in done.stdout + done.stderr, done
        assert done.returncode == (2 if "nothing" in argv else 0), done
