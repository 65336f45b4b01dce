"""Every ```python block of every docs page runs, so the docs cannot rot.

Each page is one story: its blocks run in order, in one namespace (a fresh module
per page), so a later block can use what an earlier one defined. A block whose
fence says ```python notest is shown to readers but not run (say why beside it).
A failing block fails the page's test, naming the page, the block's line and the
error; tracebacks point at the Markdown file's own line numbers.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import textwrap
import traceback
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"

# An opening fence: indentation (e.g. inside an admonition), ``` or ~~~, info string.
_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")


@dataclasses.dataclass(frozen=True, slots=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int  # 1-based line of the first line of code (after the opening fence)
    lang: str
    flags: tuple[str, ...]
    code: str

    @property
    def runs(self) -> bool:
        return self.lang == "python" and "notest" not in self.flags


def parse_blocks(page: Path) -> Iterator[Block]:
    """Yield the fenced blocks of ``page`` in order; an unclosed fence is an error."""
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        i += 1
        if not m:
            continue
        fence, indent = m["fence"], m["indent"]
        words = m["info"].replace("{", " ").replace("}", " ").split()
        lang = words[0].lstrip(".") if words else ""
        start, body = i, []
        while i < len(lines) and not _closes(lines[i], fence, indent):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{page.name}:{start}: unclosed ``` fence")
        i += 1
        code = textwrap.dedent("\n".join(body))
        yield Block(page, start + 1, lang, tuple(words[1:]), code)


def _closes(line: str, fence: str, indent: str) -> bool:
    stripped = line.strip()
    return (
        line.startswith(indent)
        and stripped.startswith(fence[0] * len(fence))
        and not stripped.strip(fence[0])
    )


def pages() -> list[Path]:
    # README.md is a page too: its quick example must keep working.
    return [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md"]


def run_page(page: Path) -> int:
    """Run the page's python blocks in one module namespace; return how many ran."""
    name = f"docs_{page.stem.replace('-', '_')}"
    module = types.ModuleType(name)
    module.__file__ = str(page)
    # Registered so that classes defined on the page resolve their annotations
    # (TypedDict, dataclasses, get_type_hints) the way they would in a real module.
    sys.modules[name] = module
    ran = 0
    try:
        for block in parse_blocks(page):
            if not block.runs:
                continue
            failure = _run_block(block, module)
            if failure:
                pytest.fail(failure, pytrace=False)
            ran += 1
    finally:
        sys.modules.pop(name, None)
    return ran


def _run_block(block: Block, module: types.ModuleType) -> str | None:
    """Run one block in the page's module; return a failure report, or None."""
    # Pad with newlines so tracebacks name the Markdown file's own lines.
    source = "\n" * (block.line - 1) + block.code
    try:
        exec(compile(source, str(block.page), "exec"), module.__dict__)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a GraphInterrupt escaping a page is a failure too
        detail = "".join(traceback.format_exception(exc))
        return (
            f"{block.page.name}: the block at line {block.line} failed with "
            f"{type(exc).__name__}: {exc}\n\n{detail}"
        )
    return None


def test_docs_exist() -> None:
    assert pages(), f"no Markdown pages under {DOCS}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_page_runs(page: Path) -> None:
    blocks = list(parse_blocks(page))
    if not any(b.runs for b in blocks):
        pytest.skip(f"{page.name} has no runnable python block")
    assert run_page(page) > 0


def test_notest_blocks_say_why() -> None:
    """A skipped block must be explained to the reader right above it."""
    for page in pages():
        lines = page.read_text(encoding="utf-8").splitlines()
        for block in parse_blocks(page):
            if block.lang != "python" or "notest" not in block.flags:
                continue
            before = "\n".join(lines[max(0, block.line - 8) : block.line - 1]).lower()
            assert "not yet" in before or "not run" in before, (
                f"{page.name}:{block.line}: a `python notest` block needs a note above it "
                "saying why it is not run (write 'not yet' or 'not run')"
            )
