"""``stream_mode="messages"`` through the real ``langgraph-sdk`` client.

The reference server's folding: ``messages/metadata`` once per message id, then
``messages/partial`` with the message so far after each token, and
``messages/complete`` for each message the state gains (the input's, the model's
whole answer) once; ``messages-tuple`` and ``values`` asked beside it are unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_sdk")
pytest.importorskip("uvicorn")
pytest.importorskip("langchain_core")

from langgraph_sdk import get_sync_client
from tests.server.serving import TOKEN, Served, serve

GRAPH = "chat=tests.server.graphs_messages:chat"
SAID = {"role": "user", "content": "hello there", "id": "u1"}
ANSWER = "you said: hello there"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    where: Path = tmp_path_factory.mktemp("serve")
    with serve(str(where / "serve.sqlite"), where / "serve.log", graphs=[GRAPH]) as s:
        yield s


def _stream(served: Served, modes: list[str]) -> list[tuple[str, Any]]:
    with get_sync_client(url=served.url, api_key=TOKEN) as client:
        tid = client.threads.create()["thread_id"]
        parts = client.runs.stream(tid, "chat", input={"messages": [SAID]}, stream_mode=modes)
        return [(p.event, p.data) for p in parts]


def test_messages_mode_folds_tokens_into_partials_and_completes_each_message(served: Served):
    events = _stream(served, ["messages"])
    names = [name for name, _ in events]
    assert names[0] == "metadata"
    assert set(names[1:]) == {"messages/metadata", "messages/partial", "messages/complete"}

    completes = [data for name, data in events if name == "messages/complete"]
    assert [[m["id"] for m in batch] for batch in completes] == [["u1"], ["ai-1"]]
    assert completes[0][0]["content"] == "hello there"
    assert completes[1][0]["content"] == ANSWER
    assert completes[1][0]["type"] == "ai"

    [meta] = [data for name, data in events if name == "messages/metadata"]
    assert list(meta) == ["ai-1"]
    assert meta["ai-1"]["metadata"]["langgraph_node"] == "reply"
    assert names.index("messages/metadata") < names.index("messages/partial")

    partials = [data for name, data in events if name == "messages/partial"]
    assert len(partials) > 2  # a word at a time
    contents = [batch[0]["content"] for batch in partials]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(contents))
    assert contents[-1] == ANSWER
    assert {batch[0]["id"] for batch in partials} == {"ai-1"}
    # The answer completes after its last token.
    assert names.index("messages/complete", names.index("messages/partial")) > max(
        i for i, n in enumerate(names) if n == "messages/partial"
    )


def test_messages_beside_values_and_tuples_leaves_them_as_they_were(served: Served):
    events = _stream(served, ["messages", "values", "messages-tuple"])
    values = [data for name, data in events if name == "values"]
    assert [len(v["messages"]) for v in values] == [1, 2]
    tuples = [data for name, data in events if name == "messages"]
    assert "".join(chunk["content"] for chunk, _ in tuples) == ANSWER
    assert [m["id"] for name, data in events if name == "messages/complete" for m in data] == [
        "u1",
        "ai-1",
    ]


def test_values_alone_streams_no_message_events(served: Served):
    events = _stream(served, ["values"])
    assert {name for name, _ in events} == {"metadata", "values"}
