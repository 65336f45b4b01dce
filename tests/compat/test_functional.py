"""The functional API (``entrypoint``, ``task``) on LangGraph 1.1.6 and pausepoint.

Every scenario counts how often each entrypoint and task body ran (``runs``), because
the point of ``@task`` is work that does not run again when the entrypoint (or a graph
node) re-executes on resume. Side-effect counts are part of the compared record.

The last section pins one deliberate difference: LangGraph silently runs whatever task a
re-execution calls at a recorded call position; pausepoint raises
``NondeterministicTaskError`` naming the position and both task names.
"""

import asyncio
import importlib
import operator
import re
import time
from collections import Counter
from types import ModuleType
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import LIBS, Lib, Scenarios, catch, exact, load_lib, thread, unordered

scenario = Scenarios()


def func(lib: Lib) -> ModuleType:
    """``langgraph.func`` or ``pausepoint.func``: the module a user imports."""
    return importlib.import_module(f"{lib.name}.func")


def interrupts(out: Any) -> list[Any]:
    return list(out.get("__interrupt__", ())) if isinstance(out, dict) else []


def fast_retry(lib: Lib, attempts: int = 3) -> Any:
    return lib.RetryPolicy(
        initial_interval=0.001, jitter=False, max_attempts=attempts, retry_on=ValueError
    )


class Logged(TypedDict):
    log: Annotated[list[Any], operator.add]


# --- returning values, previous, final ------------------------------------------------


@scenario
def entrypoint_returns_value(lib, drive):
    f, runs = func(lib), Counter()

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def greet(name: str) -> str:
        runs["greet"] += 1
        return f"hello {name}"

    return {
        "invoke": drive.invoke(greet, "ada", thread("a")),
        "stream": drive.stream(greet, "bob", thread("b")),
        "values": drive.stream(greet, "cy", thread("c"), stream_mode="values"),
        "state": drive.get_state(greet, thread("a")).values,
        "runs": dict(runs),
    }


@scenario
def entrypoint_without_checkpointer(lib, drive):
    f, runs = func(lib), Counter()

    @f.entrypoint()
    def echo(x: int, *, previous: Any = None) -> list[Any]:
        runs["echo"] += 1
        return [x, previous]

    return {
        "first": drive.invoke(echo, 1),
        "second": drive.invoke(echo, 2),
        "runs": dict(runs),
    }


@scenario
def previous_across_invocations(lib, drive):
    f, runs = func(lib), Counter()

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def total(x: int, *, previous: Any = None) -> int:
        runs["total"] += 1
        return (previous or 0) + x

    outs = [drive.invoke(total, x, thread()) for x in (1, 10, 100)]
    other = drive.invoke(total, 5, thread("other"))  # threads do not share `previous`
    return {
        "outs": outs,
        "other": other,
        "state": drive.get_state(total, thread()).values,
        "runs": dict(runs),
    }


@scenario
def final_separates_return_from_saved(lib, drive):
    f, runs = func(lib), Counter()

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def tally(word: str, *, previous: Any = None) -> Any:
        runs["tally"] += 1
        seen = [*(previous or []), word]
        return f.entrypoint.final(value=len(seen), save=seen)

    first = drive.invoke(tally, "a", thread())
    second = drive.stream(tally, "b", thread(), stream_mode=["updates", "values"])
    third = drive.invoke(tally, "c", thread())
    return {
        "outs": [first, second, third],
        "state": drive.get_state(tally, thread()).values,
        "runs": dict(runs),
    }


@scenario
def update_state_replaces_previous(lib, drive):
    f = func(lib)

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def total(x: int, *, previous: Any = None) -> int:
        return (previous or 0) + x

    drive.invoke(total, 1, thread())
    drive.update_state(total, thread(), 100)
    edited = drive.get_state(total, thread())
    return {
        "edited": (edited.values, edited.next, edited.metadata),
        "after": drive.invoke(total, 1, thread()),
    }


# --- interrupts in the entrypoint ------------------------------------------------------


@scenario
def interrupt_in_entrypoint_resumed(lib, drive):
    f, runs = func(lib), Counter()

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def approve(amount: int) -> dict[str, Any]:
        runs["approve"] += 1
        answer = lib.interrupt({"question": "pay?", "amount": amount})
        runs["approve answered"] += 1
        return {"amount": amount, "answer": answer}

    paused = drive.invoke(approve, 40, thread())
    state = drive.get_state(approve, thread())
    done = drive.invoke(approve, lib.Command(resume="yes"), thread())
    return {
        "paused": paused,
        "state": (state.values, state.next, state.interrupts, state.tasks),
        "done": done,
        "after": drive.get_state(approve, thread()).values,
        "runs": dict(runs),
    }


@scenario
def two_sequential_interrupts(lib, drive):
    f, runs = func(lib), Counter()

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def form(_: Any) -> list[str]:
        runs["form"] += 1
        name = lib.interrupt("name?")
        runs["after name"] += 1
        city = lib.interrupt(f"city of {name}?")
        return [name, city]

    first = drive.stream(form, {}, thread())
    second = drive.stream(form, lib.Command(resume="Ada"), thread())
    third = drive.stream(form, lib.Command(resume="London"), thread())
    same_id = interrupts(first[-1])[0].id == interrupts(second[-1])[0].id
    return {"chunks": [first, second, third], "same_id": same_id, "runs": dict(runs)}


# --- tasks: memoized across re-execution ------------------------------------------------


@scenario
def task_before_interrupt_runs_once(lib, drive):
    f, runs = func(lib), Counter()

    @f.task
    def send_email(to: str) -> str:
        runs["send_email"] += 1
        return f"sent to {to}"

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def onboard(user: str) -> dict[str, Any]:
        runs["onboard"] += 1
        runs["plain side effect"] += 1  # not a task: repeats on every re-execution
        receipt = send_email(user).result()
        first = lib.interrupt("first?")
        second = lib.interrupt("second?")
        return {"receipt": receipt, "answers": [first, second]}

    outs = [
        drive.invoke(onboard, "ada@example.com", thread()),
        drive.invoke(onboard, lib.Command(resume=1), thread()),
        drive.invoke(onboard, lib.Command(resume=2), thread()),
    ]
    return {"outs": outs, "runs": dict(runs)}


@scenario
def task_called_from_task(lib, drive):
    f, runs = func(lib), Counter()

    @f.task
    def inner(x: int) -> int:
        runs["inner"] += 1
        return x + 1

    @f.task
    def outer(x: int) -> int:
        runs["outer"] += 1
        return inner(x).result() * 10

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def flow(x: int) -> list[Any]:
        runs["flow"] += 1
        v = outer(x).result()
        return [v, lib.interrupt(v)]

    paused = drive.invoke(flow, 1, thread())
    return {
        "paused": paused,
        "done": drive.invoke(flow, lib.Command(resume="k"), thread()),
        "runs": dict(runs),
    }


@scenario
def parallel_tasks_gathered(lib, drive):
    f, runs = func(lib), Counter()

    @f.task
    def square(x: int) -> int:
        runs[f"square({x})"] += 1
        return x * x

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def squares(xs: list[int]) -> dict[str, Any]:
        runs["squares"] += 1
        futures = [square(x) for x in xs]
        values = [fut.result() for fut in futures]
        ok = lib.interrupt(sum(values))
        return {"values": values, "ok": ok}

    chunks = drive.stream(squares, [1, 2, 3, 4], thread())
    done = drive.invoke(squares, lib.Command(resume=True), thread())
    task_updates = unordered(c for c in chunks if "squares" not in c and "__interrupt__" not in c)
    rest = [c for c in chunks if "squares" in c or "__interrupt__" in c]
    return {"task_updates": task_updates, "rest": rest, "done": done, "runs": dict(runs)}


@scenario
def task_called_with_different_args_at_same_position(lib, drive):
    # The call is matched by position, not by arguments: the re-execution gets the
    # result recorded for the first arguments, and the task does not run again.
    f, runs, arg = func(lib), Counter(), {"x": 1}

    @f.task
    def double(x: int) -> int:
        runs[f"double({x})"] += 1
        return 2 * x

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def flow(_: Any) -> list[Any]:
        runs["flow"] += 1
        return [double(arg["x"]).result(), lib.interrupt("go?")]

    paused = drive.invoke(flow, {}, thread())
    arg["x"] = 5
    return {
        "paused": paused,
        "done": drive.invoke(flow, lib.Command(resume="y"), thread()),
        "runs": dict(runs),
    }


@scenario
def task_result_saved_before_crash_not_recomputed(lib, drive):
    f, runs, broken = func(lib), Counter(), {"on": True}

    @f.task
    def charge(amount: int) -> str:
        runs["charge"] += 1
        return f"charged {amount}"

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def checkout(amount: int) -> str:
        runs["checkout"] += 1
        receipt = charge(amount).result()
        if broken["on"]:
            raise RuntimeError("process died after the charge")
        return receipt

    crashed = catch(drive.invoke, checkout, 30, thread(), message=True)
    state = drive.get_state(checkout, thread())
    broken["on"] = False
    return {
        "crashed": crashed,
        "state": (state.values, state.next, [(t.name, t.error) for t in state.tasks]),
        "retried": drive.invoke(checkout, None, thread()),
        "runs": dict(runs),
    }


# --- interrupts inside tasks -----------------------------------------------------------


@scenario
def interrupting_task_resumed_by_value(lib, drive):
    f, runs = func(lib), Counter()

    @f.task
    def review(text: str) -> str:
        runs["review"] += 1
        verdict = lib.interrupt({"review": text})
        return f"{text}: {verdict}"

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def publish(text: str) -> str:
        runs["publish"] += 1
        return review(text).result().upper()

    paused = drive.invoke(publish, "essay", thread())
    state = drive.get_state(publish, thread())
    done = drive.stream(publish, lib.Command(resume="fine"), thread())
    return {
        "paused": paused,
        "pending": state.interrupts,
        "done": done,
        "runs": dict(runs),
    }


def _task_runs(b_runs: tuple[int, int, int]) -> Any:
    def check(rec: Any) -> None:
        assert [c.get("b", 0) for c in rec["runs"]] == list(b_runs), rec
        assert [c.get("a", 0) for c in rec["runs"]] == [1, 2, 2], rec
        assert [c["poll"] for c in rec["runs"]] == [1, 2, 3], rec
        assert rec["outs"][-1] == ["a=A", "b=B"], rec
        assert rec["distinct_ids"] is True, rec

    return check


# DESIGN §4.6 for task calls: answering "a" alone does not re-run the still-paused
# task "b" (LangGraph runs it again, and it asks again).
@scenario.differs(langgraph=_task_runs((1, 2, 3)), pausepoint=_task_runs((1, 1, 2)))
def parallel_interrupting_tasks_resumed_by_id(lib, drive):
    f, runs = func(lib), Counter()

    @f.task
    def ask(who: str) -> str:
        runs[who] += 1
        return f"{who}={lib.interrupt(f'{who}?')}"

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def poll(names: str) -> list[str]:
        runs["poll"] += 1
        futures = [ask(n) for n in names]
        return [fut.result() for fut in futures]

    # Runs are recorded after every invoke: a sibling task must not still be running
    # (or start) after invoke has returned.
    outs = [drive.invoke(poll, "ab", thread())]
    counts = [dict(runs)]
    for answer in ("A", "B"):
        pending = interrupts(outs[-1])
        cmd = lib.Command(resume={pending[0].id: answer})
        outs.append(drive.invoke(poll, cmd, thread()))
        counts.append(dict(runs))
    distinct = len({i.id for out in outs for i in interrupts(out)}) == 2
    return {"outs": outs, "distinct_ids": distinct, "runs": counts}


# --- tasks inside StateGraph nodes -----------------------------------------------------


def node_with_task(lib: Lib, runs: Counter[str], interrupts_: int = 3) -> Any:
    f = func(lib)

    @f.task
    def expensive(x: int) -> int:
        runs["expensive"] += 1
        return x * 10

    def node(state: Logged) -> dict[str, Any]:
        runs["node"] += 1
        value = expensive(3).result()
        answers = [lib.interrupt(f"q{i}") for i in range(interrupts_)]
        return {"log": [value, *answers]}

    b = lib.StateGraph(Logged)
    b.add_node("work", node)
    b.add_edge(lib.START, "work")
    return b.compile(checkpointer=lib.InMemorySaver())


@scenario
def task_in_graph_node_then_three_interrupts(lib, drive):
    runs: Counter[str] = Counter()
    g = node_with_task(lib, runs)
    outs = [drive.invoke(g, {"log": []}, thread())]
    outs += [drive.invoke(g, lib.Command(resume=r), thread()) for r in "xy"]
    outs.append(drive.stream(g, lib.Command(resume="z"), thread()))
    state = drive.get_state(g, thread())
    return {"outs": outs, "state": (state.values, state.next), "runs": dict(runs)}


# --- async -----------------------------------------------------------------------------


@scenario(drivers=("async",))
def async_entrypoint_with_async_tasks(lib, drive):
    f, runs = func(lib), Counter()

    @f.task
    async def bump(x: int) -> int:
        await asyncio.sleep(0.001 * (4 - x))  # finish out of call order
        runs[f"bump({x})"] += 1
        return x + 1

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    async def pipeline(xs: list[int], *, previous: Any = None) -> dict[str, Any]:
        runs["pipeline"] += 1
        values = await asyncio.gather(*(bump(x) for x in xs))
        ok = lib.interrupt(values)
        return {"values": values, "ok": ok, "previous": previous}

    paused = drive.invoke(pipeline, [1, 2, 3], thread())
    done = drive.invoke(pipeline, lib.Command(resume="ok"), thread())
    again = drive.stream(pipeline, [7], thread(), stream_mode="values")
    return {"paused": paused, "done": done, "again": again, "runs": dict(runs)}


@scenario
def sync_entrypoint_and_task_streamed(lib, drive):
    # A plain (sync) entrypoint and tasks also run under ainvoke/astream.
    f, runs = func(lib), Counter()

    @f.task
    def inc(x: int) -> int:
        runs["inc"] += 1
        return x + 1

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def flow(x: int) -> list[Any]:
        runs["flow"] += 1
        y = inc(x).result()
        return [y, lib.interrupt(y)]

    return {
        "paused": drive.stream(flow, 1, thread()),
        "done": drive.stream(flow, lib.Command(resume="r"), thread()),
        "runs": dict(runs),
    }


# --- retries and errors ----------------------------------------------------------------


@scenario
def retry_policy_on_task(lib, drive):
    f, runs = func(lib), Counter()

    @f.task(retry_policy=fast_retry(lib))
    def flaky(x: int) -> int:
        runs["flaky"] += 1
        if runs["flaky"] < 3:
            raise ValueError(f"attempt {runs['flaky']} failed")
        return x

    @f.task(retry_policy=fast_retry(lib, attempts=2))
    def hopeless(x: int) -> int:
        runs["hopeless"] += 1
        raise ValueError("never works")

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def flow(x: int) -> int:
        runs["flow"] += 1
        return flaky(x).result()

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def doomed(x: int) -> int:
        runs["doomed"] += 1
        return hopeless(x).result()

    return {
        "ok": drive.invoke(flow, 7, thread()),
        "gave_up": catch(drive.invoke, doomed, 7, thread(), message=True),
        "runs": dict(runs),
    }


@scenario
def task_exception_propagates(lib, drive):
    f, runs = func(lib), Counter()

    @f.task
    def lookup(key: str) -> str:
        runs["lookup"] += 1
        raise KeyError(key)

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def careless(key: str) -> str:
        runs["careless"] += 1
        return lookup(key).result()

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def careful(key: str) -> str:
        runs["careful"] += 1
        try:
            return lookup(key).result()
        except KeyError as exc:
            return f"missing {exc}"

    raised = catch(drive.invoke, careless, "k", thread(), message=True)
    streamed = drive.stream(careless, "s", thread("s"))
    state = drive.get_state(careless, thread())
    return {
        "raised": raised,
        "streamed": streamed,
        "state": (state.values, state.next, [(t.name, t.error) for t in state.tasks]),
        "caught": drive.invoke(careful, "k", thread("c")),
        "runs": dict(runs),
    }


# --- streaming and state ---------------------------------------------------------------


@scenario
def stream_modes_from_entrypoint(lib, drive):
    f, runs = func(lib), Counter()

    @f.task
    def shout(word: str) -> str:
        runs["shout"] += 1
        lib.get_stream_writer()({"shouting": word})
        return word.upper()

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def loud(word: str, *, previous: Any = None) -> Any:
        runs["loud"] += 1
        lib.get_stream_writer()("starting")
        said = shout(word).result()
        return f.entrypoint.final(value=said, save=len(said))

    modes: list[Any] = ["updates", "values", "custom", ["updates", "values", "custom"]]
    streams = [drive.stream(loud, "hi", thread(str(i)), stream_mode=m) for i, m in enumerate(modes)]
    return {"streams": streams, "runs": dict(runs)}


@scenario
def state_and_history_of_entrypoint_thread(lib, drive):
    f = func(lib)

    @f.task
    def note(x: int) -> int:
        return x * 2

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def keep(x: int, *, previous: Any = None) -> list[Any]:
        doubled = note(x).result()
        return [*(previous or []), doubled, lib.interrupt(doubled)]

    drive.invoke(keep, 1, thread())
    drive.invoke(keep, lib.Command(resume="a"), thread())
    drive.invoke(keep, 2, thread())
    state = drive.get_state(keep, thread())
    history = drive.history(keep, thread())
    return {
        "state": state,
        "history": [(h.values, h.next, h.metadata, [t.name for t in h.tasks]) for h in history],
        "limited": len(drive.history(keep, thread(), limit=2)),
    }


@scenario
def a_cancelled_task_future_is_done_and_raises(lib, drive):
    f = func(lib)

    @f.task
    def slow(x: int) -> int:
        time.sleep(0.05)
        return x

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def flow(n: int) -> Any:
        kept, dropped = slow(1), slow(2)
        seen = [dropped.cancel(), dropped.done(), dropped.cancel()]
        seen.append(exact(dropped.result))
        return [kept.result(), seen]

    return {"out": drive.invoke(flow, 2, thread())}


async def cancelled_in_async_entrypoint(lib: Lib) -> dict[str, Any]:
    """The reproducer's flow: an async entrypoint cancels one of two task calls."""
    f, log = func(lib), []

    @f.task
    async def slow(i: int) -> int:
        try:
            await asyncio.sleep(0.5)
        except asyncio.CancelledError:
            log.append(f"cancelled {i}")
            raise
        return i

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    async def flow(n: int) -> list[Any]:
        futures = [slow(i) for i in range(n)]
        await asyncio.sleep(0.05)
        dropped = futures.pop()
        seen = [dropped.cancel(), dropped.done(), dropped.cancelled()]
        try:
            await dropped
        except asyncio.CancelledError:
            seen.append("await: CancelledError")
        seen.append(dropped.cancel())
        return [list(await asyncio.gather(*futures)), seen]

    out = await flow.ainvoke(2, thread())
    history = [(h.metadata["step"], h.next) async for h in flow.aget_state_history(thread())]
    return {"out": out, "log": log, "history": history}


def test_task_future_cancel_in_an_async_entrypoint():
    records = {name: asyncio.run(cancelled_in_async_entrypoint(load_lib(name))) for name in LIBS}
    assert records["pausepoint"] == records["langgraph"]
    assert records["pausepoint"]["out"] == [[0], [True, True, True, "await: CancelledError", False]]
    assert records["pausepoint"]["log"] == ["cancelled 1"]


# --- deliberate difference: a different task at a recorded position -------------------


def swapped_task_entrypoint(lib: Lib, runs: Counter[str], pick: dict[str, str]) -> Any:
    f = func(lib)

    @f.task
    def fetch_quote(x: int) -> str:
        runs["fetch_quote"] += 1
        return f"quote {x}"

    @f.task
    def charge_card(x: int) -> str:
        runs["charge_card"] += 1
        return f"charged {x}"

    chosen = {"fetch_quote": fetch_quote, "charge_card": charge_card}

    @f.entrypoint(checkpointer=lib.InMemorySaver())
    def order(x: int) -> list[Any]:
        runs["order"] += 1
        first = fetch_quote(x).result()
        second = chosen[pick["second"]](x).result()  # position 1 changes between runs
        return [first, second, lib.interrupt("confirm?")]

    return order


_POSITION = re.compile(r"(?:position|call|#)\s*#?\s*(\d+)", re.IGNORECASE)


def raises_nondeterminism(recorded: str, new: str, at: int, runs: dict[str, int]) -> Any:
    """pausepoint's expectation: a clear error naming the call position (``at``, counted
    from 0 or from 1) and both task names, raised before the new task runs."""

    def check(record: Any) -> None:
        kind, name, message = record["resumed"]
        assert (kind, name) == ("raised", "NondeterministicTaskError"), record
        assert recorded in message, message
        assert new in message, message
        named = {int(n) for n in _POSITION.findall(message)}
        assert named & {at, at + 1}, f"no call position {at} in: {message}"
        assert record["runs"] == runs, record  # nothing new ran

    return check


@scenario.differs(
    langgraph={
        "paused": {"__interrupt__": [("Interrupt", "confirm?", "<id1>")]},
        "resumed": ["quote 2", "charged 2", "ok"],
        "runs": {"order": 2, "fetch_quote": 2, "charge_card": 1},
    },
    pausepoint=raises_nondeterminism(
        "fetch_quote", "charge_card", 1, {"order": 2, "fetch_quote": 2}
    ),
)
def different_task_at_recorded_position(lib, drive):
    # First run: fetch_quote at positions 0 and 1. The re-execution calls charge_card
    # at position 1. LangGraph runs it as a new task and drops the recorded result.
    runs: Counter[str] = Counter()
    pick = {"second": "fetch_quote"}
    order = swapped_task_entrypoint(lib, runs, pick)
    paused = drive.invoke(order, 2, thread())
    pick["second"] = "charge_card"
    resumed = exact(drive.invoke, order, lib.Command(resume="ok"), thread())
    return {"paused": paused, "resumed": resumed, "runs": dict(runs)}


@scenario.differs(
    langgraph={
        "paused": {"__interrupt__": [("Interrupt", "ready?", "<id1>")], "log": []},
        "resumed": {"log": ["shipped", "go"]},
        "runs": {"node": 2, "pack": 1, "ship": 1},
    },
    pausepoint=raises_nondeterminism("pack", "ship", 0, {"node": 2, "pack": 1}),
)
def different_task_at_recorded_position_in_graph_node(lib, drive):
    f, runs, use = func(lib), Counter(), {"task": "pack"}

    @f.task
    def pack(item: str) -> str:
        runs["pack"] += 1
        return "packed"

    @f.task
    def ship(item: str) -> str:
        runs["ship"] += 1
        return "shipped"

    tasks = {"pack": pack, "ship": ship}

    def node(state: Logged) -> dict[str, Any]:
        runs["node"] += 1
        done = tasks[use["task"]]("box").result()
        return {"log": [done, lib.interrupt("ready?")]}

    b = lib.StateGraph(Logged)
    b.add_node("work", node)
    b.add_edge(lib.START, "work")
    g = b.compile(checkpointer=lib.InMemorySaver())
    paused = drive.invoke(g, {"log": []}, thread())
    use["task"] = "ship"
    resumed = exact(drive.invoke, g, lib.Command(resume="go"), thread())
    return {"paused": paused, "resumed": resumed, "runs": dict(runs)}


test_functional = scenario.test()
