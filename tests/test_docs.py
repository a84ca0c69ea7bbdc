"""The documentation as written: the rule pages are what `irlint explain` says today, every page is in
the site's nav, and the README is a quick start whose links lead to pages that exist."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from irlint.rule import example_text, load_rules

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = REPO / "README.md"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_rule_docs", REPO / "scripts" / "gen_rule_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_rule_pages_and_their_nav_are_up_to_date():
    gen = _generator()
    pages = gen.pages()
    stale = [str(p.relative_to(REPO)) for p, text in pages.items() if not p.is_file() or p.read_text("utf-8") != text]
    assert stale == [], "run: python scripts/gen_rule_docs.py"
    assert sorted((DOCS / "rules").glob("*.md")) == sorted(pages)  # no page of a rule that is gone
    mkdocs = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert gen.nav(mkdocs, pages) == mkdocs, "run: python scripts/gen_rule_docs.py"


def test_every_built_in_rule_has_a_page_with_its_four_parts_and_a_dump_it_reports():
    for cls in load_rules(plugins=False):
        page = (DOCS / "rules" / f"{cls.code}.md").read_text(encoding="utf-8")
        assert page.startswith(f"# {cls.code} `{cls.name}`\n"), cls.code
        headings = re.findall(r"^## (.+)$", page, re.M)
        assert headings[:4] == ["What it finds", "Why it matters", "How to fix", "Example"], (cls.code, headings)
        # the snippet the rule's own test reports, verbatim in a fence
        if cls.INVALID:
            assert "## A dump it reports" in page and example_text(cls.INVALID[0]).rstrip("\n") in page, cls.code
        else:  # a run-level rule whose finding needs several files names its fixture folder
            assert f"`tests/fixtures/{cls.INVALID_RUN}`" in page, cls.code
        assert f"[{cls.code}]({cls.code}.md)" in (DOCS / "rules" / "index.md").read_text(encoding="utf-8")


def test_markup_in_a_docstring_is_escaped_outside_code_spans():
    gen = _generator()
    assert gen._escape("keeps <Tensor> a*b `x * <y>` [1]") == r"keeps \<Tensor\> a\*b `x * <y>` \[1\]"
    # a reST literal block (`::`) becomes a fence, its text untouched
    assert gen._blocks("reads it::\n\n    %2 MatMul  -> *x*\n\nafter") == [
        "reads it:",
        "```text\n%2 MatMul  -> *x*\n```",
        "after",
    ]


def _nav_pages(mkdocs: str) -> set[str]:
    return set(re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w/.-]+\.md)\s*$", mkdocs, re.M))


def test_every_page_of_docs_is_in_the_nav_and_every_nav_entry_is_a_page():
    nav = _nav_pages((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert nav == pages


def test_the_readme_is_a_quick_start_whose_links_exist():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    links = re.findall(r"\]\(((?!https?:)[^)#\s]+)(?:#[^)]*)?\)", text)
    assert any(link.startswith("docs/") for link in links)
    assert [link for link in links if not (REPO / link).exists()] == []
    # every reference page is linked from it
    linked = {link for link in links if link.startswith("docs/")}
    for page in DOCS.glob("*.md"):
        if page.name != "index.md":
            assert f"docs/{page.name}" in linked, page.name
