"""The example notebooks in docs/notebooks run from top to bottom without an error.

Each notebook runs in a fresh kernel (nbclient + ipykernel, the ``dev`` extra) in a
temporary directory; a cell that raises fails the test, naming the notebook and cell.
The notebooks are stored with their outputs so they read well on a code host; a test
checks that they are. To refresh the stored outputs after editing a notebook::

    .venv/bin/python tests/test_notebooks.py
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "docs" / "notebooks"
CELL_TIMEOUT = 60  # seconds per cell; the whole set runs in well under a minute


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def _require(module: str) -> Any:
    """Import a notebook tool: skip without it locally, but fail when CI is set."""
    try:
        return importlib.import_module(module)
    except ImportError:
        how = "install the dev extra: pip install -e '.[dev]'"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {module} is not installed; {how}", pytrace=False)
        pytest.skip(f"{module} is not installed; {how}")


def execute(path: Path, workdir: Path) -> Any:
    """Run the notebook in a fresh kernel with ``workdir`` as its current directory."""
    nbformat = _require("nbformat")
    nbclient = _require("nbclient")
    _require("ipykernel")
    book = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        book,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()
    return book


def test_there_are_at_least_six_notebooks() -> None:
    assert len(notebooks()) >= 6


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.stem)
def test_notebook_runs(path: Path, tmp_path: Path) -> None:
    nbclient = _require("nbclient")
    try:
        execute(path, tmp_path)
    except nbclient.exceptions.CellExecutionError as exc:
        pytest.fail(f"{path.name}: a cell failed:\n{exc}", pytrace=False)


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.stem)
def test_notebook_is_saved_with_outputs(path: Path) -> None:
    nbformat = _require("nbformat")
    book = nbformat.read(path, as_version=4)
    code = [c for c in book.cells if c.cell_type == "code"]
    assert code, f"{path.name} has no code cells"
    unrun = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    assert not unrun, f"{path.name}: code cells {unrun} have no saved output; see this module"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name} is saved with an error output"


def _refresh() -> None:
    """Execute every notebook and save it with its outputs."""
    import nbformat

    for path in notebooks():
        with tempfile.TemporaryDirectory() as workdir:
            book = execute(path, Path(workdir))
        nbformat.write(book, path)
        print(f"saved {path.name}")


if __name__ == "__main__":
    sys.exit(_refresh())
