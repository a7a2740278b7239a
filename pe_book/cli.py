"""One command line for the book's studies: ``python -m pe_book <command> [options]``.

Each command is the ``main(argv)`` of one module, which keeps its own options and
``--help``:

- ``study``: train short, test long, the extrapolation study (:mod:`pe_book.study`,
  chapter 11; ``--design``, ``--seeds 0-4``, ``--positions``);
- ``tasks``: copy, reverse and addition with exact answers (:mod:`pe_book.tasks`, chapter 11);
- ``cost``: time and memory of every method (:mod:`pe_book.cost`, chapter 12);
- ``bench``: the RoPE and ALiBi kernel benchmarks and their speed targets
  (:mod:`pe_book.bench`, chapter 12; ``--check``);
- ``grade``: grade submitted chapter notebooks in fresh kernels, one row per student and
  exercise (:mod:`pe_book.grade`, chapters 1-14; ``--book`` the book with its solutions,
  required; ``--batch``, ``--out``, ``--seed``).

A module with ``main(argv) -> int`` is all a new command needs, one line in
:data:`COMMANDS`; a command whose module is absent is not listed.

Exit codes: 0 done; 1 a check failed (``bench --check`` missed its speed target,
``grade --strict`` an exercise not passed cleanly);
2 bad arguments (an unknown command or option, or a value the package refuses, with
a message naming it); 130 interrupted (Ctrl-C; a study resumes where it stopped).
The module commands (``python -m pe_book.study`` ...) remain as aliases.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from dataclasses import dataclass

__all__ = ["COMMANDS", "Command", "main"]

PROG = "python -m pe_book"
#: Exit code for bad arguments (argparse's own).
USAGE_ERROR = 2
#: Exit code after Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130


@dataclass(frozen=True)
class Command:
    """A subcommand: the module whose ``main(argv) -> int`` runs it, and one line of help."""

    module: str
    summary: str
    chapter: str


#: Every subcommand, in the order ``--help`` lists them.
COMMANDS: dict[str, Command] = {
    "study": Command("pe_book.study", "train short, test long: the extrapolation study", "ch. 11"),
    "tasks": Command("pe_book.tasks", "copy, reverse and addition with exact answers", "ch. 11"),
    "cost": Command("pe_book.cost", "time and memory of every position method", "ch. 12"),
    "bench": Command("pe_book.bench", "RoPE and ALiBi kernel benchmarks (--check)", "ch. 12"),
    "grade": Command("pe_book.grade", "grade submitted chapters in fresh kernels", "ch. 1-14"),
}


def available() -> dict[str, Command]:
    """The commands whose module exists (``grade`` arrives with :mod:`pe_book.grade`)."""
    return {
        name: command
        for name, command in COMMANDS.items()
        if importlib.util.find_spec(command.module) is not None
    }


def _parser(commands: dict[str, Command]) -> argparse.ArgumentParser:
    listing = "\n".join(
        f"  {name:<7} {command.summary} ({command.chapter})" for name, command in commands.items()
    )
    return argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} <command> [options]   ({PROG} <command> --help for its options)",
        description="The book's studies and benchmarks, one command each.",
        epilog=f"commands:\n{listing}\n\nexit codes: 0 done, 1 a check failed, "
        "2 bad arguments, 130 interrupted",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m pe_book`` with ``argv`` (default ``sys.argv[1:]``); return its exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = available()
    parser = _parser(commands)
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help(sys.stdout if argv else sys.stderr)
        return 0 if argv else USAGE_ERROR
    name, rest = argv[0], argv[1:]
    if name not in commands:
        later = " (not part of this version yet)" if name in COMMANDS else ""
        parser.print_usage(sys.stderr)
        print(
            f"{PROG}: error: unknown command {name!r}{later}; choose from {', '.join(commands)}",
            file=sys.stderr,
        )
        return USAGE_ERROR
    module = importlib.import_module(commands[name].module)
    saved = sys.argv[0]
    sys.argv[0] = f"{PROG} {name}"  # argparse names the command this way in usage and errors
    try:
        return int(module.main(rest) or 0)
    except SystemExit as exit_:  # argparse: --help (0) or a bad option (2)
        return exit_.code if isinstance(exit_.code, int) else USAGE_ERROR
    except (ValueError, TypeError) as error:  # the package's argument checks
        print(f"{PROG} {name}: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print(f"\n{PROG} {name}: interrupted", file=sys.stderr)
        return INTERRUPTED
    finally:
        sys.argv[0] = saved
