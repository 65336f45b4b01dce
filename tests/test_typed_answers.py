"""Typed answers (issue 20): ``interrupt(value, response_schema=...)``.

A question may say what its answer looks like; a resume that does not match is
refused with ``InvalidAnswerError`` before anything is written, on every saver and
both drivers, whichever way the answer is sent. The schema is stored with the
question (it survives a process boundary), and the stored form of a question
without terms is LangGraph's, unchanged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from tests.conftest import Driver

from pausepoint import END, START, Command, InMemorySaver, StateGraph, interrupt
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.errors import (
    AlreadyAnsweredError,
    CheckpointDecodeError,
    InvalidAnswerError,
    ResumeError,
)
from pausepoint.questions import NOT_PENDING, aanswer, answer
from pausepoint.response_schema import AnswerProblem
from pausepoint.serde import Serializer
from pausepoint.types import Interrupt, Reanswer, TimeoutAnswer

ROOT = Path(__file__).resolve().parent.parent


class Approval(TypedDict):
    approved: bool
    note: str


@dataclasses.dataclass
class Refund:
    amount: int
    reason: str


class State(TypedDict, total=False):
    out: Any
    log: list[Any]


def approval_graph(saver: Any, schema: Any = Approval) -> Any:
    def ask(state: State) -> State:
        return {"out": interrupt("approve the refund?", response_schema=schema)}

    b = StateGraph(State)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    b.add_edge("ask", END)
    return b.compile(checkpointer=saver)


def two_question_graph(saver: Any) -> Any:
    def first(state: State) -> State:
        return {"out": interrupt("first?", response_schema={"type": "integer"})}

    def second(state: State) -> State:
        return {"log": [interrupt("second?", response_schema={"type": "string"})]}

    b = StateGraph(State)
    b.add_node("first", first)
    b.add_node("second", second)
    b.add_edge(START, "first")
    b.add_edge(START, "second")
    b.add_edge(["first", "second"], END)
    return b.compile(checkpointer=saver)


def config() -> Any:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


# --- savers --------------------------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """An InMemorySaver, a SqliteSaver on a real file, a PostgresSaver in its own schema."""
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as s:
            yield s
    else:
        yield from _postgres(request)


def _postgres(request: pytest.FixtureRequest) -> Iterator[Any]:
    import os

    import psycopg

    from pausepoint.checkpoint.postgres import PostgresSaver

    url = os.environ.get("PAUSEPOINT_PG_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI is set but PAUSEPOINT_PG_URL is not")
        pytest.skip("PAUSEPOINT_PG_URL is not set")
    schema = f"pp_t20_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    try:
        opts = f"-c search_path={schema}"
        with psycopg.connect(url, autocommit=True, prepare_threshold=0, options=opts) as conn:
            s = PostgresSaver(conn)
            s.setup()
            yield s
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]
    del request


def stored(saver: Any, cfg: Any) -> list[Any]:
    """Every checkpoint of the thread with its writes, as the saver returns them."""
    return [
        (t.config, t.checkpoint, t.metadata, t.parent_config, t.pending_writes)
        for t in saver.list({"configurable": {"thread_id": cfg["configurable"]["thread_id"]}})
    ]


def everything(graph: Any, saver: Any, cfg: Any) -> Any:
    """What a refused answer must leave as it was: rows, snapshot and history."""
    return (
        stored(saver, cfg),
        graph.get_state(cfg),
        list(graph.get_state_history(cfg)),
    )


# --- the schema is stored with the question ------------------------------------------------


def test_the_question_carries_its_schema_as_json_schema(saver: Any) -> None:
    graph, cfg = approval_graph(saver), config()
    asked = graph.invoke({"out": None}, cfg)["__interrupt__"][0]
    assert asked.response_schema["required"] == ["approved", "note"]
    again = graph.get_state(cfg).interrupts[0]
    assert again.response_schema == asked.response_schema
    assert again == asked  # the schema is not compared, as position is not
    assert "response_schema" not in repr(again)


def test_the_schema_survives_a_process_boundary(tmp_path: Path) -> None:
    """Asked in another process; this one (no class in sight) sees and enforces it."""
    db = tmp_path / "x.sqlite"
    script = textwrap.dedent(
        f"""
        from typing import TypedDict
        from pausepoint import StateGraph, START, END, interrupt
        from pausepoint.checkpoint.sqlite import SqliteSaver

        class Ticket(TypedDict):
            priority: int

        def ask(state):
            return {{"out": interrupt("priority?", response_schema=Ticket)}}

        class S(TypedDict, total=False):
            out: object

        b = StateGraph(S)
        b.add_node("ask", ask)
        b.add_edge(START, "ask")
        b.add_edge("ask", END)
        with SqliteSaver.from_conn_string({str(db)!r}) as saver:
            cfg = {{"configurable": {{"thread_id": "t"}}}}
            b.compile(checkpointer=saver).invoke({{"out": None}}, cfg)
        """
    )
    env = {"PYTHONPATH": str(ROOT / "src")}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=60)
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = approval_graph(saver, schema=None)  # the same node name; no schema here
        cfg = {"configurable": {"thread_id": "t"}}
        question = graph.get_state(cfg).interrupts[0]
        assert question.response_schema["properties"] == {"priority": {"type": "integer"}}
        with pytest.raises(InvalidAnswerError) as err:
            graph.invoke(Command(resume={"priority": "high"}), cfg)
        assert err.value.problems == [AnswerProblem("$.priority", "an integer", "'high'")]


# --- a refused answer writes nothing -------------------------------------------------------

BAD = {"approved": "yes", "extra": 1}


@pytest.mark.parametrize("form", ["plain", "by_id", "by_question_id", "reanswer"])
def test_a_bad_answer_is_refused_and_nothing_changes(saver: Any, form: str) -> None:
    graph, cfg = approval_graph(saver), config()
    question = graph.invoke({"out": None}, cfg)["__interrupt__"][0]
    before = everything(graph, saver, cfg)
    resume = {
        "plain": BAD,
        "by_id": {question.id: BAD},
        "by_question_id": {question.question_id: BAD},
        "reanswer": Reanswer(BAD),
    }[form]
    with pytest.raises(InvalidAnswerError) as err:
        graph.invoke(Command(resume=resume), cfg)
    assert isinstance(err.value, ResumeError)
    paths = sorted(p.path for p in err.value.problems)
    assert paths == ["$.approved", "$.extra", "$.note"]
    for problem in err.value.problems:
        assert f"{problem.path}: expected {problem.expected}, got {problem.got}" in str(err.value)
    assert err.value.interrupt == question
    assert everything(graph, saver, cfg) == before
    assert graph.get_state(cfg).interrupts == (question,)  # still waiting
    good = {"approved": True, "note": "ok"}
    assert graph.invoke(Command(resume=resume_like(form, question, good)), cfg) == {"out": good}


def resume_like(form: str, question: Interrupt, value: Any) -> Any:
    return {
        "plain": value,
        "by_id": {question.id: value},
        "by_question_id": {question.question_id: value},
        "reanswer": Reanswer(value),
    }[form]


def test_the_sqlite_file_is_byte_for_byte_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "raw.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph, cfg = approval_graph(saver), config()
        graph.invoke({"out": None}, cfg)
        before = _rows(db)
        with pytest.raises(InvalidAnswerError):
            graph.invoke(Command(resume=[1, 2]), cfg)
        assert _rows(db) == before


def _rows(db: Path) -> Any:
    with sqlite3.connect(db) as conn:
        return [
            conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2, 3").fetchall()
            for t in ("pausepoint_checkpoints", "pausepoint_writes")
        ]


def test_async_driver_refuses_the_same_way(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "a.sqlite")) as saver:
        graph, cfg = approval_graph(saver), config()
        asyncio.run(graph.ainvoke({"out": None}, cfg))
        before = stored(saver, cfg)
        with pytest.raises(InvalidAnswerError) as err:
            asyncio.run(graph.ainvoke(Command(resume={"approved": 1, "note": "x"}), cfg))
        assert [str(p) for p in err.value.problems] == ["$.approved: expected true or false, got 1"]
        assert stored(saver, cfg) == before


def test_one_bad_answer_in_a_map_refuses_the_whole_map(drive: Driver, saver: Any) -> None:
    graph, cfg = two_question_graph(saver), config()
    asked = drive.invoke(graph, {"out": None}, cfg)["__interrupt__"]
    by_value = {i.value: i for i in asked}
    before = stored(saver, cfg)
    resume = {by_value["first?"].id: 1, by_value["second?"].id: 2}
    with pytest.raises(InvalidAnswerError) as err:
        drive.invoke(graph, Command(resume=resume), cfg)
    assert err.value.interrupt.value == "second?"
    assert stored(saver, cfg) == before
    resume[by_value["second?"].id] = "two"  # pyright: ignore[reportArgumentType]
    assert drive.invoke(graph, Command(resume=resume), cfg) == {"out": 1, "log": ["two"]}


def test_a_conflict_is_reported_before_a_bad_shape(saver: Any) -> None:
    """A stale form's answer to an answered question is a conflict, not a schema error."""
    graph, cfg = two_question_graph(saver), config()
    asked = {i.value: i for i in graph.invoke({"out": None}, cfg)["__interrupt__"]}
    first = asked["first?"]
    graph.invoke(Command(resume={first.question_id: 1}), cfg)  # "second?" still waits
    with pytest.raises(AlreadyAnsweredError):
        graph.invoke(Command(resume={first.question_id: "not an integer"}), cfg)


def test_a_subgraph_question_is_checked_before_the_parent_writes(saver: Any) -> None:
    inner = approval_graph(None)

    b = StateGraph(State)
    b.add_node("inner", inner)
    b.add_edge(START, "inner")
    b.add_edge("inner", END)
    graph, cfg = b.compile(checkpointer=saver), config()
    graph.invoke({"out": None}, cfg)
    before = stored(saver, cfg)
    with pytest.raises(InvalidAnswerError):
        graph.invoke(Command(resume={"approved": None, "note": "x"}), cfg)
    assert stored(saver, cfg) == before
    assert graph.invoke(Command(resume={"approved": False, "note": "x"}), cfg)["out"] == {
        "approved": False,
        "note": "x",
    }


def test_the_answer_is_returned_as_sent_not_converted(saver: Any) -> None:
    """A dataclass schema checks the answer's shape; the node gets the dict and converts."""
    seen: list[Any] = []

    def ask(state: State) -> State:
        raw = interrupt("refund?", response_schema=Refund)
        seen.append(raw)
        return {"out": dataclasses.asdict(Refund(**raw))}

    b = StateGraph(State)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    b.add_edge("ask", END)
    graph, cfg = b.compile(checkpointer=saver), config()
    graph.invoke({"out": None}, cfg)
    graph.invoke(Command(resume={"amount": 5, "reason": "late"}), cfg)
    assert seen == [{"amount": 5, "reason": "late"}]


def test_without_a_schema_any_answer_goes_through(saver: Any) -> None:
    graph, cfg = approval_graph(saver, schema=None), config()
    question = graph.invoke({"out": None}, cfg)["__interrupt__"][0]
    assert question.response_schema is None
    assert question.deadline is None
    assert graph.invoke(Command(resume=BAD), cfg) == {"out": BAD}


def test_a_bad_schema_fails_the_node_when_asked(saver: Any) -> None:
    graph, cfg = approval_graph(saver, schema={"type": "integer", "colour": 1}), config()
    with pytest.raises(ValueError, match="colour"):
        graph.invoke({"out": None}, cfg)


# --- the answer API ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Asked:
    """What ``answer`` needs of a question (a ``PendingQuestion`` has more)."""

    thread_id: str
    question_id: str


def test_answer_resumes_by_question_id_and_reports_conflicts(saver: Any) -> None:
    graph, cfg = approval_graph(saver), config()
    question = graph.invoke({"out": None}, cfg)["__interrupt__"][0]
    asked = Asked(cfg["configurable"]["thread_id"], question.question_id)
    with pytest.raises(InvalidAnswerError):
        answer(graph, asked, {"approved": True})
    good = {"approved": True, "note": "fine"}
    assert answer(graph, asked, good, config={"recursion_limit": 5}) == {"out": good}
    with pytest.raises(NOT_PENDING):  # the thread finished: nothing waits any more
        answer(graph, asked, good)
    with pytest.raises(NOT_PENDING):
        answer(graph, asked, {"approved": False, "note": "late"})


def test_aanswer_is_answer_on_the_async_driver(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "a.sqlite")) as saver:
        graph, cfg = approval_graph(saver), config()
        question = graph.invoke({"out": None}, cfg)["__interrupt__"][0]
        asked = Asked(cfg["configurable"]["thread_id"], question.question_id)
        with pytest.raises(InvalidAnswerError):
            asyncio.run(aanswer(graph, asked, {"approved": "y", "note": ""}))
        good = {"approved": False, "note": "no"}
        assert asyncio.run(aanswer(graph, asked, good)) == {"out": good}


def test_a_thread_that_moved_on_is_not_pending(saver: Any) -> None:
    graph, cfg = approval_graph(saver), config()
    question = graph.invoke({"out": None}, cfg)["__interrupt__"][0]
    graph.invoke({"out": None}, cfg)  # new input: a new question, the old one is gone
    graph.invoke(Command(resume={"approved": True, "note": "x"}), cfg)
    with pytest.raises(NOT_PENDING):
        answer(graph, Asked(cfg["configurable"]["thread_id"], question.id + ":5"), 1)


# --- the stored form -----------------------------------------------------------------------


def _tree(data: bytes) -> Any:
    return json.loads(data)


def test_a_question_without_terms_is_stored_as_before() -> None:
    serde = Serializer()
    data = serde.dumps(Interrupt("q", "a" * 32))
    assert _tree(data) == {"__pp__": "interrupt", "v": ["q", "a" * 32]}


def test_terms_are_stored_in_a_third_element_and_read_back() -> None:
    import datetime

    serde = Serializer()
    deadline = datetime.datetime(
        2030, 5, 1, 12, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
    )
    asked = Interrupt(
        "q",
        "b" * 32,
        response_schema={"type": "object", "properties": {"__pp__": {"type": "integer"}}},
        deadline=deadline,
        on_timeout=TimeoutAnswer({"x": (1, 2)}),
    )
    tree = _tree(serde.dumps(asked))
    terms = tree["v"][2]
    assert terms["deadline"] == "2030-05-01T10:00:00+00:00"
    assert terms["on_timeout"]["answer"]["x"] == {"__pp__": "tuple", "v": [1, 2]}
    back = serde.loads(serde.dumps(asked))
    assert back.response_schema == asked.response_schema
    assert back.deadline == deadline
    assert back.deadline.tzinfo == datetime.UTC
    assert back.on_timeout == TimeoutAnswer({"x": (1, 2)})
    failing = serde.loads(
        serde.dumps(Interrupt("q", "c" * 32, deadline=deadline, on_timeout="fail"))
    )
    assert failing.on_timeout == "fail"
    assert failing.response_schema is None


@pytest.mark.parametrize(
    "third",
    [
        [],
        {},
        "schema",
        {"schema": [1]},
        {"colour": "red"},
        {"deadline": "tomorrow"},
        {"deadline": "2030-01-01T00:00:00"},  # no offset
        {"deadline": 5},
        {"deadline": "2030-01-01T00:00:00+00:00", "on_timeout": "explode"},
        {"deadline": "2030-01-01T00:00:00+00:00", "on_timeout": {"answer": 1, "x": 2}},
        {"position": -1},
        {"position": "0"},
        {"position": True},
        {"position": 1.0},
    ],
)
def test_a_malformed_third_element_is_a_decode_error(third: Any) -> None:
    node = {"__pp__": "interrupt", "v": ["q", "d" * 32, third]}
    with pytest.raises(CheckpointDecodeError):
        Serializer().loads(json.dumps(node).encode())


def test_a_known_position_is_a_term_the_own_question_keeps_langgraphs_form() -> None:
    """A subgraph's question held by its parent keeps its position (issue 41, item 3);
    a task's own question is stored without it (its ``__asked__`` write says it)."""
    from pausepoint.loop.pending import as_stored

    serde = Serializer()
    below = Interrupt("q", "e" * 32, position=1)
    assert _tree(serde.dumps(below)) == {
        "__pp__": "interrupt",
        "v": ["q", "e" * 32, {"position": 1}],
    }
    assert serde.loads(serde.dumps(below)).question_id == f"{'e' * 32}:1"
    deadline = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    typed = serde.loads(serde.dumps(Interrupt("q", "e" * 32, position=2, deadline=deadline)))
    assert (typed.position, typed.deadline) == (2, deadline)
    (own,) = as_stored((below,), 1)
    assert _tree(serde.dumps(own)) == {"__pp__": "interrupt", "v": ["q", "e" * 32]}
    assert below.position == 1  # the question shown to the caller keeps it
    assert as_stored((below,), None)[0] is below  # from below: stored with it


def test_a_stored_question_with_four_elements_is_a_decode_error() -> None:
    node = {"__pp__": "interrupt", "v": ["q", "d" * 32, {"schema": {}}, 4]}
    with pytest.raises(CheckpointDecodeError):
        Serializer().loads(json.dumps(node).encode())


def test_a_reanswer_after_a_failure_is_checked_too(saver: Any) -> None:
    """The node failed with a valid answer; replacing it with a bad one is refused."""

    def ask(state: State) -> State:
        got = interrupt("approve?", response_schema=Approval)
        if got["note"] == "boom":
            raise RuntimeError("the node failed after the answer")
        return {"out": got}

    b = StateGraph(State)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    b.add_edge("ask", END)
    graph, cfg = b.compile(checkpointer=saver), config()
    graph.invoke({"out": None}, cfg)
    with pytest.raises(RuntimeError, match="failed after"):
        graph.invoke(Command(resume={"approved": True, "note": "boom"}), cfg)
    before = stored(saver, cfg)
    with pytest.raises(InvalidAnswerError):
        graph.invoke(Command(resume=Reanswer({"approved": True})), cfg)
    assert stored(saver, cfg) == before
    fixed = {"approved": True, "note": "fine"}
    assert graph.invoke(Command(resume=Reanswer(fixed)), cfg) == {"out": fixed}


def test_a_question_in_a_task_call_is_checked(drive: Driver, tmp_path: Path) -> None:
    from pausepoint.func import entrypoint, task

    @task
    def approve(amount: int) -> Any:
        return interrupt(f"approve {amount}?", response_schema={"type": "boolean"})

    with SqliteSaver.from_conn_string(str(tmp_path / "f.sqlite")) as db_saver:

        @entrypoint(checkpointer=db_saver)
        def flow(amount: int) -> Any:
            return approve(amount).result()

        cfg = config()
        drive.invoke(flow, 5, cfg)
        before = stored(db_saver, cfg)
        with pytest.raises(InvalidAnswerError):
            drive.invoke(flow, Command(resume="yes"), cfg)
        assert stored(db_saver, cfg) == before
        assert drive.invoke(flow, Command(resume=True), cfg) is True


def test_a_forged_timeout_answer_is_checked_by_its_default(saver: Any) -> None:
    import datetime

    from pausepoint.types import TimedOut

    graph, cfg = approval_graph(saver), config()
    graph.invoke({"out": None}, cfg)
    now = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    forged = TimedOut(now, TimeoutAnswer({"approved": 1}), now, "x")
    with pytest.raises(InvalidAnswerError):
        graph.invoke(Command(resume=forged), cfg)


def test_a_fork_and_an_update_keep_the_schema_and_check_before_writing(saver: Any) -> None:
    graph, cfg = approval_graph(saver), config()
    graph.invoke({"out": None}, cfg)
    graph.update_state(cfg, {"log": ["noted"]})  # the waiting question is carried over
    question = graph.get_state(cfg).interrupts[0]
    assert question.response_schema is not None
    with pytest.raises(InvalidAnswerError):
        graph.invoke(Command(resume={"approved": 0}), cfg)
    graph.invoke(Command(resume={"approved": True, "note": "first"}), cfg)
    asked_at = next(s for s in graph.get_state_history(cfg) if s.interrupts)
    assert asked_at.interrupts[0].response_schema == question.response_schema
    history = list(graph.get_state_history(cfg))
    with pytest.raises(InvalidAnswerError):  # answering the old checkpoint forks: not this
        graph.invoke(Command(resume={"approved": "no"}), asked_at.config)
    assert list(graph.get_state_history(cfg)) == history
    forked = graph.invoke(Command(resume={"approved": False, "note": "fork"}), asked_at.config)
    assert forked["out"] == {"approved": False, "note": "fork"}
