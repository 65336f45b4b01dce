"""``pausepoint serve``'s refusals, before any server starts (in-process, fast)."""

from __future__ import annotations

import pytest

pytest.importorskip("uvicorn")

from pausepoint.cli import main


def test_a_public_address_needs_a_token(capsys: pytest.CaptureFixture[str], tmp_path):
    db = str(tmp_path / "x.sqlite")
    args = ["serve", "--db", db, "--graph", "tests.server.graphs_http:approval"]
    assert main([*args, "--host", "0.0.0.0"]) == 2
    assert "without a token" in capsys.readouterr().err


def test_a_graph_that_does_not_import_is_refused(capsys: pytest.CaptureFixture[str], tmp_path):
    db = str(tmp_path / "x.sqlite")
    assert main(["serve", "--db", db, "--graph", "tests.server.nope:graph"]) == 2
    assert "cannot import module" in capsys.readouterr().err


def test_two_graphs_of_one_name_are_refused(capsys: pytest.CaptureFixture[str], tmp_path):
    db = str(tmp_path / "x.sqlite")
    spec = "tests.server.graphs_http:approval"
    assert main(["serve", "--db", db, "--graph", spec, "--graph", spec]) == 2
    assert "given twice" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "said"), [("--workers=-1", "--workers must be 0"), ("--keep-events=-5", "--keep")]
)
def test_negative_workers_or_retention_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path, option: str, said: str
):
    db = tmp_path / "x.sqlite"
    args = ["serve", "--db", str(db), "--graph", "tests.server.graphs_http:approval", option]
    assert main(args) == 2
    assert said in capsys.readouterr().err
    assert not db.exists()  # refused before anything is opened


def test_graph_names_default_to_the_attribute():
    from pausepoint.cli.serve import graph_specs

    graphs = graph_specs(["tests.server.graphs_http:approval", "g=tests.server.graphs_http:gated"])
    assert sorted(graphs) == ["approval", "g"]


def test_the_app_without_the_server_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the app with Starlette missing says which extra to install."""
    import importlib
    import sys

    for name in [m for m in sys.modules if m == "pausepoint.server.app"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "starlette", None)
    with pytest.raises(ImportError, match=r"'server' extra \(starlette is missing\)") as got:
        importlib.import_module("pausepoint.server.app")
    assert "pip install 'pausepoint[server]'" in str(got.value)
