"""Message scenarios: ``MessagesState`` and ``add_messages`` in running graphs.

With langchain-core installed (it is, beside LangGraph), pausepoint's ``add_messages``
converts every message to a LangChain message as LangGraph's does, dicts included:
the same ids get assigned, replaced and removed, and the messages go through each
saver and come back equal. Message ids are random uuid4 strings; the normaliser
numbers them by first appearance, so both libraries must assign them in one order.
"""

import importlib
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import SAVERS, Scenarios, catch, thread

messages = pytest.importorskip("langchain_core.messages")

scenario = Scenarios(savers=SAVERS)


def _message_module(lib: Any) -> Any:
    return importlib.import_module(f"{lib.name}.graph.message")


def _chat(lib: Any, drive: Any, reply: Any, **compile_kw: Any) -> Any:
    """START -> bot (returns ``reply(state)``) over ``MessagesState``."""
    b = lib.StateGraph(_message_module(lib).MessagesState)
    b.add_node("bot", lambda s: {"messages": reply(s)})
    b.add_edge(lib.START, "bot")
    return b.compile(checkpointer=drive.saver(), **compile_kw)


def _everything(drive: Any, g: Any) -> dict[str, Any]:
    return {"state": drive.get_state(g, thread()), "history": drive.history(g, thread())}


@scenario
def dict_messages_become_langchain_messages_with_ids(lib, drive):
    g = _chat(lib, drive, lambda s: [{"role": "assistant", "content": f"{len(s['messages'])}"}])
    sent = [{"role": "user", "content": "hi"}, "and", {"role": "ai", "content": "x"}]
    out = drive.invoke(g, {"messages": sent}, thread())
    return {"out": out, **_everything(drive, g)}


@scenario
def langchain_messages_of_every_kind_round_trip(lib, drive):
    call = {"name": "search", "args": {"q": "x"}, "id": "call-1"}
    sent = [
        messages.SystemMessage("be brief", id="s"),
        messages.HumanMessage([{"type": "text", "text": "hi"}], name="ada", id="h"),
        messages.AIMessage("", tool_calls=[call], id="a"),
        messages.ToolMessage("found", tool_call_id="call-1", artifact={"k": [1]}, id="t"),
        messages.FunctionMessage("f", name="fn", id="f"),
        messages.ChatMessage("c", role="critic", id="c"),
        messages.AIMessageChunk("chunk", id="k"),  # becomes an AIMessage
    ]
    g = _chat(lib, drive, lambda s: [messages.AIMessage("done", id="z")])
    out = drive.invoke(g, {"messages": sent}, thread())
    return {
        "out": out,
        "types": [type(m).__name__ for m in out["messages"]],
        **_everything(drive, g),
    }


@scenario
def same_id_replaces_and_remove_message_removes(lib, drive):
    def reply(s: Any) -> list[Any]:
        first, second = s["messages"][0], s["messages"][1]
        return [
            messages.HumanMessage("edited", id=first.id),
            messages.RemoveMessage(id=second.id),
            {"role": "assistant", "content": "new", "id": "n1"},
        ]

    g = _chat(lib, drive, reply)
    out = drive.invoke(g, {"messages": ["one", "two", "three"]}, thread())
    return {"out": out, **_everything(drive, g)}


@scenario
def remove_all_messages_clears_what_came_before(lib, drive):
    remove_all = _message_module(lib).REMOVE_ALL_MESSAGES
    fresh = messages.AIMessage("fresh", id="f")
    g = _chat(lib, drive, lambda s: [messages.RemoveMessage(id=remove_all), fresh])
    out = drive.invoke(g, {"messages": ["a", "b"]}, thread())
    return {"out": out, **_everything(drive, g)}


@scenario
def removing_an_unknown_id_fails_the_step(lib, drive):
    g = _chat(lib, drive, lambda s: [messages.RemoveMessage(id="nope")])
    # LangGraph's get_state raises again after this (it applies the failed writes).
    return catch(drive.invoke, g, {"messages": ["a"]}, thread(), message=True)


@scenario
def messages_pause_for_tool_approval_and_resume(lib, drive):
    def agent(s: Any) -> dict[str, Any]:
        if isinstance(s["messages"][-1], messages.ToolMessage):
            return {"messages": [messages.AIMessage("sent", id="final")]}
        call = {"name": "send_email", "args": {"to": "bo"}, "id": "call-1"}
        return {"messages": [messages.AIMessage("", tool_calls=[call], id="ask")]}

    def tools(s: Any) -> dict[str, Any]:
        call = s["messages"][-1].tool_calls[0]
        verdict = lib.interrupt({"approve": call["name"], "args": call["args"]})
        return {"messages": [messages.ToolMessage(verdict, tool_call_id=call["id"], id="tool")]}

    def route(s: Any) -> str:
        return "tools" if getattr(s["messages"][-1], "tool_calls", None) else lib.END

    b = lib.StateGraph(_message_module(lib).MessagesState)
    b.add_node("agent", agent)
    b.add_node("tools", tools)
    b.add_edge(lib.START, "agent")
    b.add_conditional_edges("agent", route, ["tools", lib.END])
    b.add_edge("tools", "agent")
    g = b.compile(checkpointer=drive.saver())
    first = drive.stream(g, {"messages": ["mail bo"]}, thread(), stream_mode="updates")
    paused = drive.get_state(g, thread())
    rest = drive.stream(g, lib.Command(resume="approved"), thread(), stream_mode="values")
    return {"first": first, "paused": paused, "rest": rest, "history": drive.history(g, thread())}


@scenario
def add_messages_in_a_custom_state_and_update_state(lib, drive):
    add_messages = _message_module(lib).add_messages

    class Chat(TypedDict):
        messages: Annotated[list, add_messages]
        turns: int

    b = lib.StateGraph(Chat)
    # Tuples as messages are left out: LangGraph's serializer stores a tuple as a list
    # (pausepoint keeps it a tuple), which history would show in the tasks' writes.
    hello = {"role": "ai", "content": "hello"}
    b.add_node("bot", lambda s: {"messages": [hello], "turns": s.get("turns", 0) + 1})
    b.add_edge(lib.START, "bot")
    g = b.compile(checkpointer=drive.saver())
    drive.invoke(g, {"messages": ["hi"]}, thread())
    last = drive.get_state(g, thread()).values["messages"][-1]
    drive.update_state(g, thread(), {"messages": [messages.AIMessage("hey", id=last.id)]})
    return _everything(drive, g)


@scenario
def messages_annotated_as_a_sequence_are_converted_from_the_first_write(lib, drive):
    from collections.abc import Sequence

    class Chat(TypedDict):
        messages: Annotated[Sequence[Any], _message_module(lib).add_messages]

    b = lib.StateGraph(Chat)
    b.add_node("bot", lambda s: {"messages": [("ai", type(s["messages"][0]).__name__)]})
    b.add_edge(lib.START, "bot")
    g = b.compile(checkpointer=drive.saver())
    before = drive.get_state(g, thread()).values
    out = drive.invoke(g, {"messages": [{"role": "user", "content": "hi", "id": "h"}]}, thread())
    return {"before": before, "out": out}


@scenario
def deprecated_message_graph_keeps_a_bare_message_list(lib, drive):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b = _message_module(lib).MessageGraph()
    b.add_node("bot", lambda ms: [messages.AIMessage(f"{len(ms)} so far", id="r")])
    b.add_edge(lib.START, "bot")
    g = b.compile(checkpointer=drive.saver())
    out = drive.invoke(g, [messages.HumanMessage("hi", id="h")], thread())
    warned = [issubclass(w.category, DeprecationWarning) for w in caught]
    return {"warned": warned, "out": out, **_everything(drive, g)}


test_messages = scenario.test()
