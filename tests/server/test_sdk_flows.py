"""The real ``langgraph-sdk`` client (async and sync) against ``pausepoint serve``.

One server process per module and database (a SQLite file, a PostgreSQL schema): a
run that pauses, the inbox search that finds it, the state that shows the question as
LangGraph's server does, resumes by ``wait`` and ``stream`` (also with ``input={}``
beside the command, as agent-chat-ui sends), history, ``update_state(as_node=...)``,
and Agent Inbox's request shapes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_sdk")
pytest.importorskip("uvicorn")

from langgraph_sdk import get_client, get_sync_client
from tests.server.serving import TOKEN, Served, pg_database, serve

QUESTION = {"question": "Approve deploy?"}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """One server per database kind: a SQLite file, then a PostgreSQL schema."""
    where: Path = tmp_path_factory.mktemp("serve")
    if request.param == "sqlite":
        with serve(str(where / "serve.sqlite"), where / "serve.log") as s:
            yield s
        return
    for url in pg_database("sdk_flows"):
        with serve(url, where / "serve.log") as s:
            yield s


def _ids(threads: list[Any]) -> list[str]:
    return [t["thread_id"] for t in threads]


@pytest.mark.asyncio
async def test_a_paused_run_is_found_inspected_and_resumed_async(served: Served):
    async with get_client(url=served.url, api_key=TOKEN) as client:
        thread = await client.threads.create()
        tid = thread["thread_id"]
        assert thread["status"] == "idle"

        paused: Any = await client.runs.wait(tid, "approval", input={"request": "deploy"})
        [question] = paused["__interrupt__"]
        assert question["value"] == QUESTION
        assert paused["request"] == "deploy"

        found = await client.threads.search(
            status="interrupted", metadata={"graph_id": "approval"}, limit=100
        )
        assert tid in _ids(found)
        listed = next(t for t in found if t["thread_id"] == tid)
        assert listed["values"] == {"request": "deploy"}
        assert listed["metadata"]["graph_id"] == "approval"

        state: Any = await client.threads.get_state(tid)
        assert state["next"] == ["ask"]
        [task] = state["tasks"]
        assert task["name"] == "ask"
        assert task["interrupts"] == [{"value": QUESTION, "id": question["id"]}]
        assert task["error"] is None
        assert state["interrupts"] == task["interrupts"]
        assert state["checkpoint"]["thread_id"] == tid
        assert state["checkpoint"]["checkpoint_id"]
        assert listed["interrupts"] == {task["id"]: task["interrupts"]}

        final: Any = await client.runs.wait(tid, "approval", input={}, command={"resume": "yes"})
        assert final == {"request": "deploy", "answer": "yes", "result": "deploy: yes"}
        after = await client.threads.get(tid)
        assert after["status"] == "idle"
        assert after["interrupts"] == {}
        runs = await client.runs.list(tid)
        assert [r["status"] for r in runs] == ["success", "success"]
        waiting = await client.threads.search(status="interrupted", limit=100)
        assert tid not in _ids(waiting)


def test_a_paused_run_is_streamed_and_resumed_by_stream_sync(served: Served):
    with get_sync_client(url=served.url, api_key=TOKEN) as client:
        tid = client.threads.create()["thread_id"]
        parts = list(
            client.runs.stream(
                tid, "approval", input={"request": "ship"}, stream_mode=["values", "updates"]
            )
        )
        assert parts[0].event == "metadata"
        assert set(parts[0].data) >= {"run_id"}
        values = [p.data for p in parts if p.event == "values"]
        updates = [p.data for p in parts if p.event == "updates"]
        assert values[0] == {"request": "ship"}
        assert values[-1]["__interrupt__"][0]["value"] == {"question": "Approve ship?"}
        assert updates[-1]["__interrupt__"][0]["value"] == {"question": "Approve ship?"}
        assert client.threads.get(tid)["status"] == "interrupted"

        parts = list(client.runs.stream(tid, "approval", command={"resume": "no"}))
        assert parts[0].event == "metadata"
        last = [p.data for p in parts if p.event == "values"][-1]
        assert last == {"request": "ship", "answer": "no", "result": "ship: no"}
        assert client.threads.get(tid)["status"] == "idle"


def test_history_and_update_state_as_node_sync(served: Served):
    with get_sync_client(url=served.url, api_key=TOKEN) as client:
        tid = client.threads.create()["thread_id"]
        client.runs.wait(tid, "approval", input={"request": "edit me"})
        history: Any = client.threads.get_history(tid)
        assert history[0]["next"] == ["ask"]
        assert history[-1]["next"] == ["__start__"]
        older = client.threads.get_history(tid, limit=1, before=history[0]["checkpoint"])
        assert older[0]["checkpoint"] == history[1]["checkpoint"]

        written: Any = client.threads.update_state(tid, {"answer": "by hand"}, as_node="ask")
        assert written["checkpoint"]["checkpoint_id"] != history[0]["checkpoint"]["checkpoint_id"]
        state: Any = client.threads.get_state(tid)
        assert state["next"] == ["finish"]
        assert state["values"]["answer"] == "by hand"

        at: Any = client.threads.get_state(
            tid, checkpoint_id=history[0]["checkpoint"]["checkpoint_id"]
        )
        assert at["next"] == ["ask"]
        final: Any = client.runs.wait(tid, "approval", input=None)
        assert final["result"] == "edit me: by hand"


@pytest.mark.asyncio
async def test_assistants_default_per_graph_and_created(served: Served):
    async with get_client(url=served.url, api_key=TOKEN) as client:
        default = await client.assistants.get("approval")
        assert default["graph_id"] == "approval"
        assert default["metadata"] == {"created_by": "system"}
        namespace = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
        assert default["assistant_id"] == str(uuid.uuid5(namespace, "approval"))
        same = await client.assistants.get(default["assistant_id"])
        assert same["assistant_id"] == default["assistant_id"]
        mine = await client.assistants.create("approval", config={"configurable": {}}, name="mine")
        found = await client.assistants.search(graph_id="approval", limit=100)
        assert mine["assistant_id"] in [a["assistant_id"] for a in found]

        tid = (await client.threads.create())["thread_id"]
        paused: Any = await client.runs.wait(tid, mine["assistant_id"], input={"request": "a"})
        assert "__interrupt__" in paused
        thread = await client.threads.get(tid)
        assert thread["metadata"]["assistant_id"] == mine["assistant_id"]
        assert thread["metadata"]["graph_id"] == "approval"


# --- Agent Inbox's request shapes ---------------------------------------------------------

ACCEPT = {"type": "accept", "args": {"action": "send_email", "args": {"subject": "hi"}}}


@pytest.mark.asyncio
async def test_agent_inbox_lists_and_accepts_with_events(served: Served):
    async with get_client(url=served.url, api_key=TOKEN) as client:
        tid = (await client.threads.create())["thread_id"]
        run = await client.runs.create(tid, "triage", input={"subject": "hi"})
        await client.runs.join(tid, run["run_id"])

        listed = await client.threads.search(
            offset=0, limit=100, status="interrupted", metadata={"graph_id": "triage"}
        )
        thread = next(t for t in listed if t["thread_id"] == tid)
        [questions] = thread["interrupts"].values()
        [request] = questions[0]["value"]
        assert request["action_request"]["action"] == "send_email"
        assert request["config"]["allow_accept"] is True

        events = [
            p
            async for p in client.runs.stream(
                tid, "triage", command={"resume": [ACCEPT]}, stream_mode="events"
            )
        ]
        starts = [
            p.data for p in events if p.event == "events" and p.data["event"] == "on_chain_start"
        ]
        nodes = [d.get("metadata", {}).get("langgraph_node") for d in starts]
        assert "review_email" in nodes
        assert not [p for p in events if p.event == "error"]
        state: Any = await client.threads.get_state(tid)
        assert state["values"]["outcome"] == "sent hi"


@pytest.mark.asyncio
async def test_agent_inbox_ignore_in_background_and_mark_resolved(served: Served):
    async with get_client(url=served.url, api_key=TOKEN) as client:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "triage", input={"subject": "spam"})
        run = await client.runs.create(
            tid, "triage", command={"resume": [{"type": "ignore", "args": None}]}
        )
        assert run["status"] == "pending"
        await client.runs.join(tid, run["run_id"])
        assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"
        state: Any = await client.threads.get_state(tid)
        assert state["values"]["outcome"] == "ignored"

        other = (await client.threads.create())["thread_id"]
        await client.runs.wait(other, "triage", input={"subject": "resolve me"})
        assert (await client.threads.get(other))["status"] == "interrupted"
        await client.threads.update_state(other, None, as_node="__end__")
        resolved: Any = await client.threads.get_state(other)
        assert resolved["next"] == []
        assert resolved["interrupts"] == []
        assert (await client.threads.get(other))["status"] == "idle"


@pytest.mark.asyncio
async def test_stateless_runs_wait_and_stream_on_a_thread_of_their_own(served: Served):
    async with get_client(url=served.url, api_key=TOKEN) as client:
        done: Any = await client.runs.wait(None, "ticker", input={"stop": 3})
        assert done == {"n": 3, "stop": 3}
        parts = [p async for p in client.runs.stream(None, "ticker", input={"stop": 2})]
        assert parts[0].event == "metadata"
        assert [p.data for p in parts if p.event == "values"][-1] == {"n": 2, "stop": 2}
        kept: Any = await client.runs.create(
            None, "ticker", input={"stop": 1}, on_completion="keep"
        )
        await client.runs.join(kept["thread_id"], kept["run_id"])
        state: Any = await client.threads.get_state(kept["thread_id"])
        assert state["values"] == {"n": 1, "stop": 1}


def test_agent_chat_ui_request_shape_sync(served: Served):
    """What agent-chat-ui's useStream sends: several modes, subgraphs, resumable,
    on_disconnect "continue", and ``input: {}`` beside the resume command."""
    with get_sync_client(url=served.url, api_key=TOKEN) as client:
        tid = client.threads.create()["thread_id"]
        flags: dict[str, Any] = {
            "stream_mode": ["values", "messages-tuple", "custom"],
            "stream_subgraphs": True,
            "stream_resumable": True,
            "on_disconnect": "continue",
        }
        first = list(client.runs.stream(tid, "approval", input={"request": "ui"}, **flags))
        values = [p.data for p in first if p.event == "values"]
        assert values[-1]["__interrupt__"][0]["value"] == {"question": "Approve ui?"}
        history: Any = client.threads.get_history(tid, limit=10)
        assert history[0]["tasks"][0]["interrupts"][0]["value"] == {"question": "Approve ui?"}
        resumed = list(
            client.runs.stream(tid, "approval", input={}, command={"resume": "ok"}, **flags)
        )
        assert [p.data for p in resumed if p.event == "values"][-1]["result"] == "ui: ok"
        assert not [p for p in resumed if p.event == "error"]
