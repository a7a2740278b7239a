"""The dev container (.devcontainer/devcontainer.json) runs the README's commands on Python 3.11."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / ".devcontainer" / "devcontainer.json"
LIFECYCLE = (
    "onCreateCommand",
    "updateContentCommand",
    "postCreateCommand",
    "postStartCommand",
    "postAttachCommand",
)


def devcontainer() -> dict:
    return json.loads(CONFIG.read_text(encoding="utf-8"))  # plain JSON: no comments


def readme_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^### In one step: a dev container.*?(?=^#)", readme, re.M | re.S)
    assert match, "README.md has no '### In one step: a dev container ...' section"
    return match.group(0)


def commands(value: object) -> list[str]:
    """A lifecycle command as the spec allows it: a string, a list, or named commands."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [" ".join(value)]
    if isinstance(value, dict):
        return [c for v in value.values() for c in commands(v)]
    return []


def test_the_container_is_python_3_11():
    image = devcontainer()["image"]
    assert re.search(r"python:[\w.-]*\b3\.11\b", image), image
    assert "Python 3.11" in readme_section()


def test_the_container_sets_up_the_book_with_make_env_on_create():
    assert commands(devcontainer().get("postCreateCommand")) == ["make env"]


def test_every_command_the_container_runs_is_shown_in_the_readme():
    section = readme_section()
    blocks = "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))
    shown = {line.split("#")[0].strip() for line in blocks.splitlines()}
    config = devcontainer()
    for key in LIFECYCLE:
        for command in commands(config.get(key)):
            assert command in shown, f"devcontainer.json's {key} {command!r} is not in the README"
    makefile = (ROOT / "Makefile").read_text()
    for command in shown - {""}:
        target = command.split()[1]
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"no make target {target}"


def test_jupyterlab_port_is_forwarded_and_documented():
    config = devcontainer()
    assert 8888 in config["forwardPorts"]
    assert config["portsAttributes"]["8888"]["label"] == "JupyterLab"
    assert "8888" in readme_section()
