"""The book's study commands under their first name (chapters 11 and 12).

``python -m pe_book.experiments extrapolation [--quick] [--seed N] ...`` is
``python -m pe_book.study ...`` (:mod:`pe_book.study`), and
``python -m pe_book.experiments cost [--quick]`` is
``python -m pe_book.cost ...`` (:mod:`pe_book.cost`).
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """``extrapolation`` runs :func:`pe_book.study.main`, ``cost`` :func:`pe_book.cost.main`."""
    if not argv or argv[0] not in ("extrapolation", "cost"):
        usage = "usage: python -m pe_book.experiments {extrapolation,cost} [options]"
        print(usage, file=sys.stderr)
        return 2
    if argv[0] == "cost":
        from pe_book import cost

        return cost.main(argv[1:])
    from pe_book import study

    return study.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
