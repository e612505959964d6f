"""The README and the docs site: short, linked, generated parts current, built strictly.

The README is the front page (at most 250 lines) and its test command is what CI runs; its first
example runs as printed; the docs' generated blocks equal what the code generates now; and
``mkdocs build --strict`` (broken links and anchors fail it) builds the site in CI, where the
``dev`` extra installs MkDocs.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sparklock.docs_pages import PAGES, render, stale_pages

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _example_blocks() -> tuple[str, str]:
    """The README's first example (the site includes it) and the output the README shows."""
    section = README.split("<!-- --8<-- [start:example] -->", 1)[1]
    section = section.split("<!-- --8<-- [end:example] -->", 1)[0]
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", section, re.S | re.M)
    assert [lang for lang, _ in blocks] == ["python", ""], "example: a python block, its output"
    return blocks[0][1], blocks[1][1]


def test_readme_fits_on_a_screen():
    assert len(README.splitlines()) <= 250


def test_readme_test_command_is_what_ci_runs():
    """The README's CI row and .ci/run's commands after the install are the same text."""
    row = re.search(r"^\| tests as CI runs them[^|]*\| `([^`]+)` \|$", README, re.M)
    assert row, "the README's command table lacks its 'tests as CI runs them' row"
    lines = [ln.strip() for ln in (REPO / ".ci" / "run").read_text().splitlines()]
    commands = [ln for ln in lines if ln and not ln.startswith(("#", "set ", "cd "))]
    installs = [i for i, ln in enumerate(commands) if " pip install " in ln]
    assert installs, ".ci/run no longer installs the project"
    assert row.group(1) == " && ".join(commands[installs[-1] + 1 :])


def test_readme_links_resolve():
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.*)$", README, re.M)
    }
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        if target.startswith(("http://", "https://")):
            continue
        if target.startswith("#"):
            assert target[1:] in anchors, f"README links to a missing section {target}"
        else:
            assert (REPO / target.split("#")[0]).exists(), f"README links to missing {target}"


def test_generated_pages_are_current():
    assert not stale_pages(), "stale generated docs: python3 -m sparklock.docs_pages --write"


def test_render_replaces_only_the_generated_block():
    marker, generate = next(iter(next(iter(PAGES.values())).items()))
    text = f"intro\n<!-- {marker}:start -->\nold\n<!-- {marker}:end -->\noutro\n"
    out = render(text, {marker: generate})
    assert out == f"intro\n<!-- {marker}:start -->\n{generate()}\n<!-- {marker}:end -->\noutro\n"
    with pytest.raises(ValueError, match="markers"):
        render("no markers here", {marker: generate})


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
    reason="MkDocs or its theme is not installed (the dev and docs extras install both)",
)
def test_docs_site_builds_strictly(tmp_path):
    """Every page, link and anchor resolves; a warning fails the build (``strict``)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml")]
    done = subprocess.run(
        [*cmd, "-d", str(tmp_path / "site")], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    index = (tmp_path / "site" / "index.html").read_text()
    assert "EXPLAIN LOCKS" in index, "the README's example did not reach the site's home page"


@pytest.mark.spark
def test_readme_example_runs_as_printed(tmp_path):
    """The README's first example, run as a user would, prints the tables the README shows."""
    code, shown = _example_blocks()
    script = tmp_path / "first_example.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for table in shown.strip().split("\n\n"):
        assert table in done.stdout, f"README shows\n{table}\nthe example printed\n{done.stdout}"
