"""LangChain messages in checkpoints: every message type through the serializer and
every saver, by the fixed allowlist (never by importing a stored name)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from pausepoint import START, StateGraph, interrupt
from pausepoint.errors import CheckpointDecodeError
from pausepoint.graph.message import MessagesState
from pausepoint.serde import Serializer
from pausepoint.serde.messages import MESSAGE_CLASSES
from pausepoint.types import Command

from .test_state_methods import Env, env  # noqa: F401  (the fixture crossing every saver)

messages = pytest.importorskip("langchain_core.messages")

CALL = {"name": "search", "args": {"q": "x", "n": [1, 2]}, "id": "call-1"}
USAGE = {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
ONE_OF_EACH: dict[str, Any] = {
    "AIMessage": lambda: messages.AIMessage(
        [{"type": "text", "text": "hi"}], tool_calls=[CALL], usage_metadata=USAGE, id="a"
    ),
    "AIMessageChunk": lambda: messages.AIMessageChunk(
        "par", tool_call_chunks=[{"name": "search", "args": '{"q"', "id": "c", "index": 0}]
    ),
    "HumanMessage": lambda: messages.HumanMessage("hello", name="ada", id="h"),
    "HumanMessageChunk": lambda: messages.HumanMessageChunk("hel"),
    "SystemMessage": lambda: messages.SystemMessage("be brief", additional_kwargs={"k": 1}),
    "SystemMessageChunk": lambda: messages.SystemMessageChunk("be"),
    "ToolMessage": lambda: messages.ToolMessage(
        "found", tool_call_id="call-1", artifact={"rows": [1]}, status="error"
    ),
    "ToolMessageChunk": lambda: messages.ToolMessageChunk("fo", tool_call_id="call-1"),
    "FunctionMessage": lambda: messages.FunctionMessage("f", name="fn"),
    "FunctionMessageChunk": lambda: messages.FunctionMessageChunk("f", name="fn"),
    "ChatMessage": lambda: messages.ChatMessage("c", role="critic"),
    "ChatMessageChunk": lambda: messages.ChatMessageChunk("c", role="critic"),
    "RemoveMessage": lambda: messages.RemoveMessage(id="a"),
}


def test_the_allowlist_is_every_message_class_tested_here() -> None:
    assert set(ONE_OF_EACH) == MESSAGE_CLASSES


@pytest.mark.parametrize("name", sorted(ONE_OF_EACH))
def test_each_message_type_round_trips_with_no_registration(name: str) -> None:
    value = ONE_OF_EACH[name]()
    payload = Serializer().dumps({"messages": [value]})
    assert f'"langchain_core.messages.{name}"' in payload.decode()
    out = Serializer().loads(payload)["messages"][0]  # a fresh reader: nothing registered
    assert type(out) is type(value)
    assert out == value
    assert out.model_dump() == value.model_dump()


def test_extra_fields_of_a_message_are_kept() -> None:
    value = messages.AIMessage("x", id="a", model_hint={"k": (1, 2)})
    out = Serializer().loads(Serializer().dumps(value))
    assert out == value
    assert out.model_dump()["model_hint"] == {"k": (1, 2)}


def test_a_schema_naming_message_classes_stores_them_under_the_stable_names() -> None:
    ser = Serializer()
    ser.register_schema(dict[str, list[messages.AnyMessage]])
    payload = ser.dumps(messages.AIMessage("x")).decode()
    assert '"langchain_core.messages.AIMessage"' in payload
    assert "langchain_core.messages.ai." not in payload


def _tampered(name: str) -> bytes:
    fields = {"content": "x", "type": "ai"}
    return json.dumps({"__pp__": "pydantic", "v": [name, fields]}).encode()


@pytest.mark.parametrize(
    "name",
    [
        "langchain_core.messages.BaseMessage",  # real, exported, not on the list
        "langchain_core.messages.Evil",
        "langchain_core.messages.ai.AIMessage",  # the module path is not a stable name
        "os.system",
        "langchain_core.messages.",
    ],
)
def test_a_foreign_or_corrupt_name_is_refused_at_read(name: str) -> None:
    with pytest.raises(CheckpointDecodeError, match="allowlist"):
        Serializer().loads(_tampered(name))


def test_a_message_without_langchain_core_installed_is_a_decode_error() -> None:
    code = """
import sys
sys.modules["langchain_core"] = None  # as if not installed
from pausepoint.errors import CheckpointDecodeError
from pausepoint.serde import Serializer
payload = b'{"__pp__":"pydantic","v":["langchain_core.messages.AIMessage",{"content":"x"}]}'
try:
    Serializer().loads(payload)
except CheckpointDecodeError as exc:
    print("refused:", exc)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "refused:" in out
    assert "pausepoint[messages]" in out


def _agent(saver: Any) -> Any:
    """agent -> tools (asks for approval) -> agent, over MessagesState."""

    def agent(state: Any) -> dict[str, Any]:
        if isinstance(state["messages"][-1], messages.ToolMessage):
            return {"messages": [messages.AIMessage("done", id="final", usage_metadata=USAGE)]}
        return {"messages": [messages.AIMessage("", tool_calls=[CALL], id="ask")]}

    def tools(state: Any) -> dict[str, Any]:
        verdict = interrupt({"approve": CALL["name"]})
        return {"messages": [messages.ToolMessage(verdict, tool_call_id="call-1", id="tool")]}

    b = StateGraph(MessagesState)
    b.add_node("agent", agent)
    b.add_node("tools", tools)
    b.add_edge(START, "agent")
    b.add_conditional_edges(
        "agent", lambda s: "tools" if s["messages"][-1].tool_calls else "__end__"
    )
    b.add_edge("tools", "agent")
    return b.compile(checkpointer=saver)


def test_messages_survive_a_pause_and_resume_in_every_saver(env: Env) -> None:  # noqa: F811
    g = _agent(env.saver)
    cfg = {"configurable": {"thread_id": "chat"}}
    names = sorted(n for n in ONE_OF_EACH if n != "RemoveMessage")
    everything = [ONE_OF_EACH[n]() for n in names]
    everything.append(messages.HumanMessage("go", id="go"))
    paused = env.invoke(g, {"messages": everything}, cfg)
    assert paused["__interrupt__"][0].value == {"approve": "search"}
    stored = env.get_state(g, cfg).values["messages"]
    # Chunks became whole messages (add_messages); the others came back equal.
    kinds = [n.removesuffix("Chunk") for n in names] + ["HumanMessage", "AIMessage"]
    assert [type(m).__name__ for m in stored] == kinds
    for name, sent, got in zip(names, everything, stored, strict=False):
        assert name.endswith("Chunk") or got == sent
    assert stored[-1] == messages.AIMessage("", tool_calls=[CALL], id="ask")
    out = env.invoke(g, Command(resume="approved"), cfg)
    assert [m.id for m in out["messages"][-2:]] == ["tool", "final"]
    assert out["messages"][-1].usage_metadata == USAGE
    history = env.history(g, cfg)
    assert history[0].values == out
    assert history[-1].values == {"messages": []}  # the input checkpoint


def test_a_bad_removal_is_refused_and_the_thread_is_unchanged(env: Env) -> None:  # noqa: F811
    g = _agent(env.saver)
    cfg = {"configurable": {"thread_id": "chat"}}
    env.invoke(g, {"messages": [messages.HumanMessage("hi", id="h")]}, cfg)
    before = env.stored(cfg)
    with pytest.raises(Exception, match="doesn't exist \\('nope'\\)"):
        env.update_state(g, cfg, {"messages": [messages.RemoveMessage(id="nope")]})
    assert env.stored(cfg) == before
    env.update_state(g, cfg, {"messages": [messages.RemoveMessage(id="h")]})
    assert [m.id for m in env.get_state(g, cfg).values["messages"]] == ["ask"]
