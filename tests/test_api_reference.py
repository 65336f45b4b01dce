"""The API reference covers the public surface; the errors page covers every exception.

These checks read the sources and the Markdown, so they run without MkDocs; the
checks on the built site are in tests/test_docs_site.py.
"""

from __future__ import annotations

import re

from api_surface import (
    PAGES,
    ROOT,
    SPHINX_ROLE,
    SRC,
    all_modules,
    page_reason,
    public_exceptions,
)

API = ROOT / "docs" / "api"


def test_every_module_has_a_page_or_a_reason() -> None:
    unclassified = [m for m in all_modules() if m not in PAGES and page_reason(m) is None]
    assert unclassified == [], "add each to PAGES (with a page) or NOT_PAGES in api_surface.py"
    both = [m for m in PAGES if page_reason(m) is not None]
    assert both == []


def test_each_public_module_has_its_page_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for module_name, page in PAGES.items():
        text = (API / f"{page}.md").read_text(encoding="utf-8")
        assert re.search(rf"^::: {re.escape(module_name)}$", text, re.M), page
        assert f"api/{page}.md" in nav, f"api/{page}.md is not in mkdocs.yml's nav"
    assert sorted(p.stem for p in API.glob("*.md")) == sorted(PAGES.values())


def test_no_sphinx_roles_in_docstrings() -> None:
    # mkdocstrings renders docstrings as Markdown, where :class:`X` shows as written.
    # Write [`X`][pausepoint.module.X] (a link into the reference) or `X` instead.
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SPHINX_ROLE.search(line)
    ]
    assert found == []


def test_the_role_pattern_catches_roles() -> None:
    for role in (":class:`X`", ":meth:`~a.B.c`", ":py:func:`f`", ":exc:`E`", ":mod:`m`"):
        assert SPHINX_ROLE.search(role), role
    assert not SPHINX_ROLE.search("[`X`][pausepoint.types.X] and `x: int`")


def test_every_public_exception_is_in_the_errors_page() -> None:
    # Documented means a heading or a bold entry naming it, as the page's entries are.
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    headings = re.findall(r"^#+ .*?`(\w+)`", text, re.M)
    bold = re.findall(r"\*\*`(\w+)`\*\*", text)
    tree = text.split("```text", 1)[1].split("```", 1)[0]
    exceptions = public_exceptions()
    assert len(exceptions) > 20  # the discovery still finds them
    missing = sorted(set(exceptions) - set(headings) - set(bold))
    assert missing == [], "document each in docs/errors.md"
    not_drawn = sorted(name for name in exceptions if not re.search(rf"\b{name}\b", tree))
    assert not_drawn == [], "add each to the tree at the top of docs/errors.md"
