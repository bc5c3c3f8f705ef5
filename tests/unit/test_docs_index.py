"""The README stays short and every document is reachable from the docs index."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _links(page: Path) -> list[Path]:
    """The page's relative links, as paths (web addresses left out)."""
    return [
        (page.parent / target).resolve()
        for target in LINK.findall(page.read_text())
        if not target.startswith(("http:", "https:", "mailto:"))
    ]


def test_the_readme_is_under_200_lines_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 200
    assert "    make demo " in text
    assert "    make test " in text
    assert "## The seeds" in text


def test_the_docs_index_lists_every_document() -> None:
    index = ROOT / "docs" / "README.md"
    listed = {p.name for p in _links(index) if p.parent == index.parent}
    present = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert present - listed == set(), "documents the index does not list"
    assert listed - present == set(), "the index lists documents that do not exist"


def test_every_relative_link_of_the_readme_and_the_docs_resolves() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = [
        f"{page.relative_to(ROOT)} -> {target}"
        for page in pages
        for target in _links(page)
        if not target.exists()
    ]
    assert broken == []
