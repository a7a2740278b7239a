"""The package stays one a reader can walk: every module mapped, none too long."""

import pkgutil
from pathlib import Path

import pe_book

PACKAGE = Path(pe_book.__file__).parent
MAX_MODULE_LINES = 400  # issue 16: the largest module <= 400 lines and <= 10% of the package


def test_the_package_docstring_maps_every_module():
    modules = sorted(m.name for m in pkgutil.iter_modules(pe_book.__path__) if m.name[0] != "_")
    missing = [m for m in modules if f"``pe_book.{m}``" not in pe_book.__doc__]
    assert not missing, f"pe_book/__init__.py's docstring does not map {missing}"


def test_no_module_is_too_long():
    lines = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    total = sum(lines.values())
    too_long = {
        name: n for name, n in lines.items() if n > min(MAX_MODULE_LINES, total // 10)
    }
    assert not too_long, (
        f"modules over {min(MAX_MODULE_LINES, total // 10)} lines (MAX_MODULE_LINES in"
        f" tests/test_package_layout.py, or 10% of the package's {total}): {too_long};"
        " split them by idea"
    )
