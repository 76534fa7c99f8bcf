"""Every source the project cites can be opened by a reader.

Docstrings, comments, the check catalogue and the docs cite public sources (upstream source files, vendor and Hub
documentation, upstream issues as ``owner/repo#N``) or a page under ``docs/`` of this repository. These tests keep
it so: no reference to notes that live outside the repository, no reference to this project's own issue tracker,
and every page of ``docs/`` mentioned anywhere (with its ``#anchor``) exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED = ["lerobot_tools", "docs", "README.md", "CONTRIBUTING.md", "CHANGELOG.md", "mkdocs.yml", "benchmarks",
           "scripts", "tests", "fixtures", ".ci/run"]
TEXT_SUFFIXES = {".py", ".md", ".json", ".jsonl", ".sh", ".toml", ".txt", ".cfg", ".yaml", ".yml", ".ini"}
SIZE_CAP = 2_000_000  # bytes; committed fixture metadata is far smaller

# Names of notes kept outside the repository; split so this file does not match itself.
FORBIDDEN = [
    "../" + "shared",
    "lerobot" + "-format",
    "pit" + "fall",
    "hub" + "-downloads",
    "reference" + " notes",
    "video-decode" + " survey",
    "survey" + " §",
    "format" + " notes",
]
#: "issue 12", "issues #3", "Issue 7": this project's tracker (upstream issues are written owner/repo#N).
ISSUE_WORD = re.compile(r"\bissues?\s+#?\d+\b", re.IGNORECASE)
#: a bare "#12" not glued to an owner/repo, a word, a path or a format spec (``:#04x``).
BARE_NUMBER = re.compile(r"(?<![\w/.&:\-\[{'\"#])#\d{1,3}\b")
#: a docs page path, optionally #anchor or " (#a, #b)" (not a path inside another repository: no / before it)
DOC_LINK = re.compile(r"(?<![\w/])docs/([\w.-]+?\.md)(?:#([\w-]+)|\s+\((#[\w-]+(?:,\s*#[\w-]+)*)\))?")
#: relative links inside docs pages: [text](name.md#anchor) and [text](#anchor)
MD_LINK = re.compile(r"\]\(([\w.-]+\.md)?(?:#([\w-]+))?\)")


def _files() -> list[Path]:
    out = []
    for name in SCANNED:
        p = REPO / name
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            out += [f for f in sorted(p.rglob("*")) if f.is_file() and f.suffix in TEXT_SUFFIXES
                    and "__pycache__" not in f.parts and f.stat().st_size <= SIZE_CAP]
    return out


FILES = _files()
#: this file spells out the patterns it forbids
OTHERS = [p for p in FILES if p != Path(__file__).resolve()]


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _anchors(page: Path) -> set[str]:
    """Explicit ``id="..."`` anchors and GitHub heading slugs of a Markdown page."""
    text = _text(page)
    ids = set(re.findall(r'id="([\w-]+)"', text))
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        ids.add(slug)
    return ids


def test_the_scan_sees_the_tree():
    names = {p.relative_to(REPO).as_posix() for p in FILES}
    assert {"lerobot_tools/checks/catalogue.py", "docs/checks.md", "docs/commands/repair.md", "README.md",
            "CONTRIBUTING.md", "mkdocs.yml", "tests/sources/test_sources.py"} <= names
    assert len(FILES) > 100


@pytest.mark.parametrize("needle", FORBIDDEN)
def test_no_reference_to_notes_outside_the_repository(needle):
    hits = [f"{p.relative_to(REPO)}:{n}" for p in OTHERS
            for n, line in enumerate(_text(p).splitlines(), 1) if needle.lower() in line.lower()]
    assert not hits, f"{needle!r} cites notes outside the repository; cite a public source or a docs/ page: {hits[:10]}"


def test_no_reference_to_this_projects_issues():
    hits = []
    for p in OTHERS:
        for n, line in enumerate(_text(p).splitlines(), 1):
            for rx in (ISSUE_WORD, BARE_NUMBER):
                m = rx.search(line)
                if m:
                    hits.append(f"{p.relative_to(REPO)}:{n}: {m.group(0)!r}")
    assert not hits, "issue numbers of this project in the tree (write upstream ones as owner/repo#N): " + \
        "; ".join(hits[:10])


def test_every_docs_page_mentioned_exists_with_its_anchors():
    docs = REPO / "docs"
    anchors: dict[str, set[str]] = {}
    missing = []
    seen = 0
    for p in FILES:
        text = re.sub(r"\s+", " ", _text(p))  # a citation may wrap across lines
        for m in DOC_LINK.finditer(text):
            seen += 1
            page, anchor, anchor_list = m.group(1), m.group(2), m.group(3)
            target = docs / page
            if not target.is_file():
                missing.append(f"{p.relative_to(REPO)}: docs/{page} does not exist")
                continue
            wanted = [anchor] if anchor else [a.strip().lstrip("#") for a in (anchor_list or "").split(",") if a.strip()]
            have = anchors.setdefault(page, _anchors(target))
            missing += [f"{p.relative_to(REPO)}: docs/{page}#{a} has no such anchor" for a in wanted if a not in have]
    assert seen > 50  # the catalogue and the docstrings do cite the docs pages
    assert not missing, "; ".join(missing[:10])


def test_links_between_docs_pages_resolve():
    missing = []
    for page in sorted((REPO / "docs").glob("*.md")):
        for m in MD_LINK.finditer(_text(page)):
            name, anchor = m.group(1), m.group(2)
            target = page.parent / name if name else page
            if not target.is_file():
                missing.append(f"{page.name}: {name} does not exist")
            elif anchor and anchor not in _anchors(target):
                missing.append(f"{page.name}: {target.name}#{anchor} has no such anchor")
    assert not missing, "; ".join(missing[:10])


def test_the_checks_detect_what_they_forbid(tmp_path):
    # the detectors themselves: a forbidden note name, an issue of this project, a dead docs link
    assert any(n in "see the lerobot" + "-format notes" for n in FORBIDDEN)
    assert ISSUE_WORD.search("fixed in issue 12") and ISSUE_WORD.search("Issue #7")
    assert BARE_NUMBER.search("as agreed in #12 ") and not BARE_NUMBER.search("huggingface/lerobot#1919")
    assert not BARE_NUMBER.search("f'{x:#04x}'") and not BARE_NUMBER.search("meta-pytorch/torchcodec#442")
    m = DOC_LINK.search("see docs/failure-modes.md (#camera-names, #counters) and more")
    assert m and m.group(1) == "failure-modes.md" and "#counters" in m.group(3)
    page = tmp_path / "p.md"
    page.write_text('# A Title\n\n<a id="x1"></a>\n')
    assert {"a-title", "x1"} <= _anchors(page)
