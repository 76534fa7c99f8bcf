"""The documentation site (mkdocs.yml, docs/) builds strictly, and every link into it resolves.

``mkdocs build --strict`` with ``validation: anchors: warn`` (mkdocs.yml) fails on a link to a page that does not
exist and on a link to an ``#anchor`` the page does not have; the build here is the real mkdocs command line on the
real pages, into a temporary folder. README.md and CONTRIBUTING.md live outside the site, so their relative links
are checked against the repository and the built pages. Every command has a page, every option of a command is
named on its page, and the scale-out options, shared by every command, are listed once, on docs/scale-out.md.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from lerobot_tools.cli import COMMANDS, cli

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
#: the options every command that scales out shares (lerobot_tools/commands/_distributed.py), documented once
SCALE_OUT_PREFIXES = ("--shard", "--part-out", "--executor", "--tasks", "--workers", "--logging-dir", "--slurm-",
                      "--ray-")
#: [text](target) with a relative target (no scheme, not only an #anchor of the same file)
REL_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:)([^)\s#]+)(?:#([\w-]+))?\)")
SAME_PAGE_LINK = re.compile(r"\]\(#([\w-]+)\)")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=config.parent)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    run = _build(REPO / "mkdocs.yml", out)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    return out


def test_the_site_builds_strictly(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("index.html")}
    assert {"index.html", "commands/validate/index.html", "checks/index.html", "scale-out/index.html",
            "guarantees/index.html"} <= pages
    # the catalogue's per-check anchors, which `lrtool checks` output and the code point to
    assert 'id="s002"' in (site / "checks" / "index.html").read_text(encoding="utf-8")


def _copy_site_sources(tmp_path: Path) -> Path:
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    return tmp_path


BROKEN = {  # a link appended to a page -> what the strict build says about it
    "[a check that does not exist](checks.md#z999)": "does not contain an anchor '#z999'",
    "[a section that does not exist](#no-such-section)": "'#no-such-section'",
    "[a page that does not exist](commands/no-such-command.md)": "commands/no-such-command.md",
}


def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    root = _copy_site_sources(tmp_path)
    page = root / "docs" / "concepts.md"
    text = page.read_text(encoding="utf-8")
    assert _build(root / "mkdocs.yml", tmp_path / "site-ok").returncode == 0  # the copy builds as it is
    page.write_text(text + "".join(f"\nSee {link}.\n" for link in BROKEN), encoding="utf-8")
    run = _build(root / "mkdocs.yml", tmp_path / "site")
    assert run.returncode != 0
    assert [m for m in BROKEN.values() if m not in run.stdout + run.stderr] == []


def _github_anchors(text: str) -> set[str]:
    """GitHub's heading anchors of a Markdown file (and explicit ``id="..."`` ones)."""
    ids = set(re.findall(r'id="([\w-]+)"', text))
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, re.MULTILINE):
        ids.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return ids


def _html_ids(page: Path) -> set[str]:
    return set(re.findall(r'\sid="([^"]+)"', page.read_text(encoding="utf-8")))


def _site_page(site: Path, doc: Path) -> Path:
    rel = doc.relative_to(DOCS).with_suffix("")
    return site / "index.html" if rel.as_posix() == "index" else site / rel / "index.html"


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md"])
def test_links_outside_the_site_resolve(site, name):
    source = REPO / name
    text = source.read_text(encoding="utf-8")
    missing, seen = [], 0
    for m in REL_LINK.finditer(text):
        seen += 1
        target, anchor = (source.parent / m.group(1)).resolve(), m.group(2)
        if not target.exists():
            missing.append(f"{m.group(1)} does not exist")
        elif anchor and target.suffix == ".md" and DOCS in target.parents:
            if anchor not in _html_ids(_site_page(site, target)):
                missing.append(f"{m.group(1)}#{anchor}: no such anchor in the built page")
        elif anchor and target.suffix == ".md" and anchor not in _github_anchors(target.read_text(encoding="utf-8")):
            missing.append(f"{m.group(1)}#{anchor}: no such heading")
    for m in SAME_PAGE_LINK.finditer(text):
        seen += 1
        if m.group(1) not in _github_anchors(text):
            missing.append(f"#{m.group(1)}: no such heading")
    assert seen >= 5
    assert not missing, f"{name}: " + "; ".join(missing)


def test_the_link_check_detects_a_dead_link(site, tmp_path):
    # the checker above, on a file with one good and two dead links into the docs (spelt in two parts, so that
    # tests/test_sources.py, which checks every docs/ path in the tree, does not read them as links)
    d = "docs/"
    text = f"[ok]({d}checks.md#s002) [bad]({d}checks.md#z999) [gone]({d}nope.md)"
    bad = [m.group(0) for m in REL_LINK.finditer(text)
           if not (REPO / m.group(1)).exists() or m.group(2) not in _html_ids(_site_page(site, REPO / m.group(1)))]
    assert bad == [f"]({d}checks.md#z999)", f"]({d}nope.md)"]


def _options(name: str) -> list[str]:
    command = cli.get_command(click.Context(cli), name)
    return [opt for p in command.params if isinstance(p, click.Option) for opt in p.opts
            if opt.startswith("--") and opt != "--help"]


def test_every_command_has_a_page_in_the_nav():
    pages = {p.stem for p in (DOCS / "commands").glob("*.md")}
    assert pages == set(COMMANDS)
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(f"commands/{name}.md" in nav for name in COMMANDS)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_option_is_documented_once(name):
    page = (DOCS / "commands" / f"{name}.md").read_text(encoding="utf-8")
    scale_out = (DOCS / "scale-out.md").read_text(encoding="utf-8")
    options = _options(name)
    own = [o for o in options if not o.startswith(SCALE_OUT_PREFIXES)]
    shared = [o for o in options if o.startswith(SCALE_OUT_PREFIXES)]
    assert [o for o in own if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", page)] == []
    assert [o for o in shared if not re.search(rf"^\| `{re.escape(o)}(?![\w-])", scale_out, re.MULTILINE)] == []
    if shared:  # listed on the scale-out page, not in the command's own options table
        assert "../scale-out.md" in page
        assert not [o for o in shared if re.search(rf"^\| `{re.escape(o)}(?![\w-])", page, re.MULTILINE)]
