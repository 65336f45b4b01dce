"""``threads.copy`` and ``threads.prune`` of the real ``langgraph-sdk`` client.

A copy of a paused thread waits on its own question (answering one leaves the other
waiting) with the same history; a prune with ``keep_latest`` spares a thread waiting on a
question and leaves a finished one its head; ``delete`` removes threads; bad requests
change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_sdk")
pytest.importorskip("uvicorn")

from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError
from langgraph_sdk.schema import Thread
from tests.server.serving import TOKEN, Served, pg_database, serve

QUESTION = {"question": "Approve deploy?"}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    where: Path = tmp_path_factory.mktemp("serve")
    if request.param == "sqlite":
        with serve(str(where / "serve.sqlite"), where / "serve.log") as s:
            yield s
        return
    for url in pg_database("sdk_copies"):
        with serve(url, where / "serve.log") as s:
            yield s


def _paused(client: Any) -> str:
    tid: str = client.threads.create(metadata={"owner": "ops"})["thread_id"]
    client.runs.wait(tid, "approval", input={"request": "deploy"})
    return tid


def _checkpoints(history: list[Any]) -> list[tuple[Any, ...]]:
    return [(h["values"], h["next"], h["metadata"].get("step")) for h in history]


def test_a_copy_waits_on_its_own_question(served: Served):
    with get_sync_client(url=served.url, api_key=TOKEN) as client:
        tid = _paused(client)
        copied: Thread = client.threads.copy(tid)  # pyright: ignore[reportAssignmentType]
        cid = copied["thread_id"]
        assert cid != tid
        assert copied["status"] == "interrupted"
        assert copied["values"] == {"request": "deploy"}
        assert copied["metadata"]["owner"] == "ops"
        assert copied["metadata"]["graph_id"] == "approval"
        [asked] = client.threads.get_state(tid)["interrupts"]  # pyright: ignore[reportGeneralTypeIssues]
        [asked_copy] = client.threads.get_state(cid)["interrupts"]  # pyright: ignore[reportGeneralTypeIssues]
        assert asked_copy["value"] == asked["value"] == QUESTION
        assert _checkpoints(client.threads.get_history(cid)) == _checkpoints(
            client.threads.get_history(tid)
        )

        final: Any = client.runs.wait(cid, "approval", command={"resume": "yes"})
        assert final == {"request": "deploy", "answer": "yes", "result": "deploy: yes"}
        assert client.threads.get(cid)["status"] == "idle"
        assert client.threads.get(tid)["status"] == "interrupted"
        again: Any = client.runs.wait(tid, "approval", command={"resume": "no"})
        assert again["result"] == "deploy: no"


def test_copy_of_an_unknown_thread_is_404(served: Served):
    with get_sync_client(url=served.url, api_key=TOKEN) as client:
        before = client.threads.count()
        with pytest.raises(NotFoundError):
            client.threads.copy("no-such-thread")
        assert client.threads.count() == before


def test_prune_keep_latest_spares_a_waiting_thread_and_truncates_a_finished_one(
    served: Served,
):
    with get_sync_client(url=served.url, api_key=TOKEN) as client:
        tid = _paused(client)
        history = _checkpoints(client.threads.get_history(tid))
        assert len(history) > 1
        # A thread waiting on a question is never truncated (the saver's prune rule).
        pruned = client.threads.prune([tid, "no-such-thread"], strategy="keep_latest")
        assert pruned == {"pruned_count": 0}
        assert _checkpoints(client.threads.get_history(tid)) == history
        final: Any = client.runs.wait(tid, "approval", command={"resume": "yes"})
        assert final["result"] == "deploy: yes"

        assert client.threads.prune([tid], strategy="keep_latest") == {"pruned_count": 1}
        [head] = client.threads.get_history(tid)
        assert head["values"] == final
        assert head["next"] == []
        assert client.threads.get(tid)["status"] == "idle"
        # Nothing left to drop.
        assert client.threads.prune([tid], strategy="keep_latest") == {"pruned_count": 0}


def test_prune_delete_removes_threads_and_their_checkpoints(served: Served):
    with get_sync_client(url=served.url, api_key=TOKEN) as client:
        first, second, kept = _paused(client), _paused(client), _paused(client)
        assert client.threads.prune([first, second, "no-such-thread"]) == {"pruned_count": 2}
        for gone in (first, second):
            with pytest.raises(NotFoundError):
                client.threads.get(gone)
            with pytest.raises(NotFoundError):
                client.threads.get_history(gone)
        assert client.threads.get(kept)["status"] == "interrupted"


@pytest.mark.parametrize(
    "body",
    [{}, {"thread_ids": "one"}, {"thread_ids": [1]}, {"thread_ids": [], "strategy": "all"}],
)
def test_a_bad_prune_request_is_422_and_changes_nothing(served: Served, body: dict[str, Any]):
    with get_sync_client(url=served.url, api_key=TOKEN) as client:
        tid = _paused(client)
        history = _checkpoints(client.threads.get_history(tid))
        with pytest.raises(UnprocessableEntityError):
            client.http.post("/threads/prune", json=body)
        assert _checkpoints(client.threads.get_history(tid)) == history
        assert client.threads.get(tid)["status"] == "interrupted"
