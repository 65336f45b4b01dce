"""RunService on real SQLite and PostgreSQL: assistants, threads, runs to a question
and back, failures, streams and their replay, bad requests that write nothing."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.server.run_graphs import GRAPHS
from tests.server.service_fixtures import db_url, eventually, pg_schema, pg_url, service

from pausepoint.server.errors import ConflictError, InvalidRequestError, NotFoundError
from pausepoint.server.records import RunRequest
from pausepoint.server.service import RunService, default_assistant_id

__all__ = ["db_url", "pg_schema", "pg_url", "service"]

pytestmark = pytest.mark.asyncio


async def test_default_assistants_and_created_ones(service: RunService) -> None:
    by_name = await service.get_assistant("asker")
    assert by_name.assistant_id == default_assistant_id("asker")
    assert by_name.metadata == {"created_by": "system"}
    assert by_name.name == "asker"
    assert default_assistant_id("agent") == "fe096781-5601-53d2-b2f6-0d3403f7e9ca"
    made = await service.create_assistant(
        "asker", assistant_id="a1", config={"recursion_limit": 7}, metadata={"team": "x"}
    )
    assert (await service.get_assistant("a1")) == made
    with pytest.raises(ConflictError):
        await service.create_assistant("asker", assistant_id="a1")
    assert (
        await service.create_assistant("gated", assistant_id="a1", if_exists="do_nothing") == made
    )
    with pytest.raises(NotFoundError):
        await service.create_assistant("nope")
    with pytest.raises(NotFoundError):
        await service.get_assistant("nope")
    found, total = await service.search_assistants(graph_id="asker")
    assert total == 2
    assert {a.assistant_id for a in found} == {"a1", by_name.assistant_id}
    found, total = await service.search_assistants(metadata={"team": "x"})
    assert [a.assistant_id for a in found] == ["a1"]
    assert total == 1
    assert service.graph_for(made) is service.graphs["asker"]


async def test_threads_crud_and_search(service: RunService) -> None:
    t = await service.create_thread(thread_id="t1", metadata={"user": "ann"})
    assert (t.thread_id, t.status, t.metadata) == ("t1", "idle", {"user": "ann"})
    with pytest.raises(ConflictError):
        await service.create_thread(thread_id="t1")
    assert (await service.create_thread(thread_id="t1", if_exists="do_nothing")) == t
    patched = await service.patch_thread("t1", metadata={"team": "b"})
    assert patched.metadata == {"user": "ann", "team": "b"}
    other = await service.create_thread()
    uuid.UUID(other.thread_id)
    found, total = await service.search_threads(metadata={"user": "ann"})
    assert [x.thread_id for x in found] == ["t1"]
    assert total == 1
    assert await service.count_threads() == 2
    assert await service.count_threads(status="busy") == 0
    await service.delete_thread("t1")
    with pytest.raises(NotFoundError):
        await service.get_thread("t1")
    with pytest.raises(NotFoundError):
        await service.patch_thread("t1", metadata={})


async def test_a_run_pauses_then_a_command_resumes_it(service: RunService) -> None:
    run = await service.create_run(
        "t", RunRequest("asker", input={"request": "refund"}, if_not_exists="create")
    )
    assert run.status == "pending"
    assert run.kwargs["input"] == {"request": "refund"}
    body = await service.join_run("t", run.run_id)
    interrupts = body.pop("__interrupt__")
    assert body == {"request": "refund"}
    assert interrupts[0]["value"] == {"question": "Approve refund?"}
    assert interrupts[0]["id"]
    assert (await service.get_run("t", run.run_id)).status == "success"
    thread = await service.get_thread("t")
    assert thread.status == "interrupted"
    assert thread.metadata == {"graph_id": "asker", "assistant_id": default_assistant_id("asker")}
    found, _ = await service.search_threads(status="interrupted")
    assert [x.thread_id for x in found] == ["t"]
    assert service.graph_of_thread(thread) is service.graphs["asker"]

    # agent-chat-ui sends input: {} beside the command: the input is ignored
    again = await service.create_run("t", RunRequest("asker", input={}, command={"resume": "yes"}))
    body = await service.join_run("t", again.run_id)
    assert body == {"request": "refund", "answer": "yes", "result": "refund: yes"}
    assert (await service.get_thread("t")).status == "idle"
    runs = await service.list_runs("t")
    assert [r.run_id for r in runs] == [again.run_id, run.run_id]
    assert [r.run_id for r in await service.list_runs("t", status="success", limit=1)] == [
        again.run_id
    ]


async def test_a_failed_run_ends_error_with_an_error_event(service: RunService) -> None:
    first = await service.create_run(
        "t", RunRequest("asker", input={"request": "x"}, if_not_exists="create")
    )
    await service.join_run("t", first.run_id)
    run = await service.create_run(
        "t", RunRequest("asker", command={"resume": "boom"}, stream_mode=["updates"])
    )
    body = await service.join_run("t", run.run_id)
    assert body == {
        "__error__": {"error": "RuntimeError", "message": "boom: the side effect failed"}
    }
    assert (await service.get_run("t", run.run_id)).status == "error"
    assert (await service.get_thread("t")).status == "error"
    events = [e async for e in service.stream_run("t", run.run_id)]
    assert events[-1].event == "error"
    assert events[-1].data == body["__error__"]


async def test_streams_name_events_by_mode_and_replay_after_an_id(service: RunService) -> None:
    run = await service.create_run(
        "t",
        RunRequest(
            "asker",
            input={"request": "r"},
            stream_mode=["values", "updates", "events", "debug"],
            if_not_exists="create",
        ),
    )
    events = [e async for e in service.stream_run("t", run.run_id)]
    names = [e.event for e in events]
    assert {"values", "updates", "events", "debug"} <= set(names)
    assert [e.id for e in events] == [str(n) for n in range(1, len(events) + 1)]
    updates = [e.data for e in events if e.event == "updates"]
    assert updates[-1]["__interrupt__"][0]["value"] == {"question": "Approve r?"}
    chain = [e.data for e in events if e.event == "events"]
    assert chain[0]["event"] == "on_chain_start"
    assert chain[-1]["event"] == "on_chain_end"
    ask = [c for c in chain if c["metadata"].get("langgraph_node") == "ask"]
    assert ask
    assert ask[0]["event"] == "on_chain_start"
    again = [e async for e in service.stream_run("t", run.run_id, last_event_id="2")]
    assert again == events[2:]


async def test_bad_requests_write_nothing(service: RunService) -> None:
    with pytest.raises(NotFoundError):  # if_not_exists defaults to reject
        await service.create_run("t", RunRequest("asker", input={"request": "r"}))
    with pytest.raises(NotFoundError):
        await service.get_thread("t")
    await service.create_thread(thread_id="t")
    bad: list[RunRequest] = [
        RunRequest("asker", stream_mode=["values", "nope"]),
        RunRequest("asker", interrupt_before=["nope"]),
        RunRequest("asker", command={"resume": 1, "other": 2}),
        RunRequest("asker", command={"goto": "nope"}),
    ]
    for request in bad:
        with pytest.raises(InvalidRequestError):
            await service.create_run("t", request)
    with pytest.raises(NotFoundError):
        await service.create_run("t", RunRequest("no-such-assistant"))
    assert await service.list_runs("t") == []
    thread = await service.get_thread("t")
    assert (thread.status, thread.metadata) == ("idle", {})
    with pytest.raises(NotFoundError):
        await service.get_run("t", "nope")
    with pytest.raises(NotFoundError):
        await service.list_runs("nope")


async def test_interrupt_before_and_config_and_context(service: RunService) -> None:
    run = await service.create_run(
        "t",
        RunRequest(
            "asker", input={"request": "r"}, interrupt_before=["ask"], if_not_exists="create"
        ),
    )
    body = await service.join_run("t", run.run_id)
    assert body == {"request": "r"}
    assert (await service.get_thread("t")).status == "interrupted"
    state = await service.graphs["asker"].aget_state({"configurable": {"thread_id": "t"}})
    assert state.next == ("ask",)


async def test_cancel_a_running_run_and_wait(service: RunService, tmp_path: Path) -> None:
    gate, count = tmp_path / "gate", tmp_path / "count"
    inp: dict[str, Any] = {"item": "a", "gate": str(gate), "count": str(count)}
    run = await service.create_run("t", RunRequest("gated", input=inp, if_not_exists="create"))
    await eventually(lambda: _async(count.exists()))
    assert (await service.get_run("t", run.run_id)).status == "running"
    assert (await service.get_thread("t")).status == "busy"
    await service.cancel_run("t", run.run_id, wait=True)
    assert (await service.get_run("t", run.run_id)).status == "interrupted"
    assert (await service.get_thread("t")).status == "interrupted"  # work is next
    # a cancelled run's join answers with the values it kept
    body = await service.join_run("t", run.run_id)
    assert body["item"] == "a"
    assert not body.get("items")
    gate.touch()  # resumed from where it stopped, the run finishes
    again = await service.create_run("t", RunRequest("gated"))
    assert (await service.join_run("t", again.run_id))["items"] == ["a"]


async def _async(value: Any) -> Any:
    return value


async def test_close_requeues_runs_in_flight_and_they_run_after(
    db_url: str, tmp_path: Path
) -> None:
    gate, count = tmp_path / "gate", tmp_path / "count"
    inp: dict[str, Any] = {"item": "a", "gate": str(gate), "count": str(count)}
    first = await RunService.open(db_url, GRAPHS, workers=1, poll_seconds=0.05)
    await first.start()
    run = await first.create_run("t", RunRequest("gated", input=inp, if_not_exists="create"))
    await eventually(lambda: _async(count.exists()))
    await first.close()
    second = await RunService.open(db_url, GRAPHS, workers=1, poll_seconds=0.05)
    try:
        assert (await second.get_run("t", run.run_id)).status == "pending"
        gate.touch()
        await second.start()
        body = await second.join_run("t", run.run_id)
        assert body["items"] == ["a"]
        assert (await second.get_run("t", run.run_id)).status == "success"
    finally:
        await second.close()


async def test_subgraph_events_are_named_mode_and_namespace(service: RunService) -> None:
    run = await service.create_run(
        "t",
        RunRequest(
            "nested",
            input={"items": []},
            stream_mode=["updates"],
            stream_subgraphs=True,
            if_not_exists="create",
        ),
    )
    events = [e async for e in service.stream_run("t", run.run_id)]
    names = [e.event for e in events]
    assert "updates" in names
    inner = [e for e in events if e.event.startswith("updates|child:")]
    assert len(inner) == 1
    assert inner[0].data == {"inner": {"items": ["inner"]}}
    assert (await service.join_run("t", run.run_id)) == {"items": ["inner"]}


async def test_a_resume_the_engine_refuses_is_refused_at_once(service: RunService) -> None:
    from pausepoint.errors import NothingToResumeError, UnknownInterruptIdError

    paused = await service.create_run(
        "t", RunRequest("asker", input={"request": "r"}, if_not_exists="create")
    )
    await service.join_run("t", paused.run_id)
    with pytest.raises(UnknownInterruptIdError):
        await service.create_run("t", RunRequest("asker", command={"resume": {"0" * 32: "x"}}))
    assert [r.run_id for r in await service.list_runs("t")] == [paused.run_id]
    assert (await service.get_thread("t")).status == "interrupted"
    done = await service.create_run("t", RunRequest("asker", command={"resume": "yes"}))
    await service.join_run("t", done.run_id)
    with pytest.raises(NothingToResumeError):
        await service.create_run("t", RunRequest("asker", command={"resume": "again"}))
    assert len(await service.list_runs("t")) == 2


async def test_a_resume_of_a_thread_made_outside_the_server_is_checked_too(
    service: RunService,
) -> None:
    from pausepoint.errors import NothingToResumeError, UnknownInterruptIdError

    # The application ran the graph itself, on the server's database: no server record.
    graph = service.graphs["asker"]
    config: Any = {"configurable": {"thread_id": "outside"}}
    await graph.ainvoke({"request": "r"}, config)
    before = [t.config async for t in service.saver.alist(config)]
    with pytest.raises(UnknownInterruptIdError):
        await service.create_run(
            "outside",
            RunRequest("asker", command={"resume": {"0" * 32: "x"}}, if_not_exists="create"),
        )
    with pytest.raises(NothingToResumeError):
        await service.create_run(
            "fresh", RunRequest("asker", command={"resume": "x"}, if_not_exists="create")
        )
    # Refused before anything was written: no record, no run, the checkpoints as they were.
    for tid in ("outside", "fresh"):
        assert await service.store.get_thread(tid) is None
    assert [t.config async for t in service.saver.alist(config)] == before
    done = await service.create_run(
        "outside", RunRequest("asker", command={"resume": "yes"}, if_not_exists="create")
    )
    body = await service.join_run("outside", done.run_id)
    assert body["answer"] == "yes"


async def test_a_resume_queued_behind_a_busy_thread_fails_when_its_turn_comes(
    service: RunService, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    first = await service.create_run(
        "t",
        RunRequest("gated", input={"item": "a", "gate": str(gate)}, if_not_exists="create"),
    )

    async def running() -> bool:
        return (await service.get_run("t", first.run_id)).status == "running"

    await eventually(running)
    queued = await service.create_run("t", RunRequest("gated", command={"resume": "x"}))
    gate.touch()
    body = await service.join_run("t", queued.run_id)
    assert body["__error__"]["error"] == "NothingToResumeError"
    assert (await service.get_run("t", queued.run_id)).status == "error"
    assert (await service.get_thread("t")).status == "error"
