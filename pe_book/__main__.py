"""``python -m pe_book <command>``: the book's one command line (:mod:`pe_book.cli`)."""

import sys

from pe_book.cli import main

if __name__ == "__main__":
    sys.exit(main())
