"""Check that the pins install away from this project's machines: PyPI alone serves them.

    python tools/check_lock.py                 # every pin but torch, from https://pypi.org/simple
    python tools/check_lock.py --torch         # and torch's CPU build from PyTorch's CPU index
    make check-lock                            # the same through the venv (needs the network)

The project's machines install from a local wheel folder and extra local indexes
(pip's configuration files and PIP_* variables). A fresh GitHub runner or a
student's laptop has none of those, so this check runs pip with every pip
configuration file and PIP_* variable switched off (PIP_CERT aside: it only names
the certificate authorities to trust) and no cache, against one index. For each pin
of requirements/lock.txt and requirements/build.txt it asks pip to resolve exactly
that version for this interpreter and platform (``pip install --dry-run --no-deps
--ignore-installed --report``: metadata only, nothing is installed), and fails
(exit 1) naming each pin the index does not serve. torch's CPU build (``+cpu``) is
served only by PyTorch's own index, which the Makefile falls back to; ``--torch``
checks it there.

Not part of ``make test``: it needs the network.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINS = [ROOT / "requirements" / "build.txt", ROOT / "requirements" / "lock.txt"]
PYPI = "https://pypi.org/simple"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
KEPT_VARIABLES = {"PIP_CERT", "PIP_DEFAULT_TIMEOUT"}  # trust and patience, not sources


def pins(paths: list[Path] | None = None) -> list[str]:
    """Every ``name==version`` line of the pin files, in order (comments dropped)."""
    found = []
    for path in PINS if paths is None else paths:
        for line in path.read_text().splitlines():
            line = line.split("#")[0].strip()
            if line:
                found.append(line)
    return found


def bare_environment() -> dict[str, str]:
    """This process's environment without pip configuration: no files, no PIP_* sources."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in KEPT_VARIABLES}
    env["PIP_CONFIG_FILE"] = os.devnull  # pip then reads no configuration file at all
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def resolve(requirements: list[str], index: str) -> tuple[int, dict, str]:
    """Run pip's dry run for ``requirements``; (exit code, its JSON report, its stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        listed = Path(tmp) / "requirements.txt"
        listed.write_text("\n".join(requirements) + "\n")
        report = Path(tmp) / "report.json"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--dry-run",
                "--no-deps",
                "--ignore-installed",
                "--no-cache-dir",
                "--quiet",
                "--index-url",
                index,
                "--report",
                str(report),
                "-r",
                str(listed),
            ],
            env=bare_environment(),
            capture_output=True,
            text=True,
            check=False,
        )
        data = json.loads(report.read_text()) if report.is_file() else {}
    return done.returncode, data, done.stderr


def last_error(stderr: str) -> str:
    """pip's own reason, in one line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["no output"])[-1]


def check(index: str, with_torch: bool) -> int:
    """Print what resolved from where; 0 when every pin (torch aside) did."""
    wanted = pins()
    torch = [p for p in wanted if p.lower().startswith("torch==")]
    others = [p for p in wanted if p not in torch]
    print(f"check-lock: {len(others)} pins from {', '.join(p.name for p in PINS)} against {index}")
    print("check-lock: pip configuration files and PIP_* sources off, no cache, no local wheels")
    code, report, _ = resolve(others, index)
    failures: dict[str, str] = {}
    if code != 0:
        # One pass stops at the first failure: ask again pin by pin to name them all.
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = dict(
                zip(others, pool.map(lambda p: resolve([p], index), others), strict=True)
            )
        failures = {pin: last_error(err) for pin, (rc, _, err) in results.items() if rc}
        items = [item for _, rep, _ in results.values() for item in rep.get("install", [])]
    else:
        items = report.get("install", [])
    urls = {
        f"{i['metadata']['name']}=={i['metadata']['version']}": i["download_info"]["url"]
        for i in items
    }
    local = {pin: url for pin, url in urls.items() if url.startswith("file:")}
    sdists = sorted(pin for pin, url in urls.items() if not url.endswith(".whl"))
    hosts = sorted({url.split("/")[2] for url in urls.values() if "://" in url})
    print(f"check-lock: {len(urls)} of {len(others)} pins resolved, files served by {hosts}")
    if sdists:
        print(f"check-lock: {len(sdists)} only as source (built at install): {', '.join(sdists)}")
    for pin, reason in sorted(failures.items()):
        print(f"check-lock: FAILED {pin}: {reason}", file=sys.stderr)
    for pin, url in sorted(local.items()):
        print(f"check-lock: FAILED {pin} came from a local file {url}", file=sys.stderr)
    bad = len(failures) + len(local)
    if with_torch:
        for pin in torch:
            rc, rep, err = resolve([pin], TORCH_INDEX)
            if rc:
                print(
                    f"check-lock: FAILED {pin} from {TORCH_INDEX}: {last_error(err)}",
                    file=sys.stderr,
                )
                bad += 1
            else:
                url = rep["install"][0]["download_info"]["url"]
                print(f"check-lock: {pin} resolved from {TORCH_INDEX} ({url.split('/')[-1]})")
    else:
        print(f"check-lock: not checked here: {', '.join(torch)} (PyTorch's CPU index; --torch)")
    if bad:
        print(
            f"check-lock: {bad} pins do not install from the index alone: re-run `make lock`"
            " (it resolves from pyproject.toml's ranges) or pin versions the index serves",
            file=sys.stderr,
        )
        return 1
    print(f"check-lock: all {len(others)} pins but torch install from {index} alone")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--index-url", default=PYPI, help=f"the index to check (default {PYPI})")
    parser.add_argument(
        "--torch", action="store_true", help=f"also check torch's CPU build on {TORCH_INDEX}"
    )
    args = parser.parse_args(argv)
    return check(args.index_url, args.torch)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
