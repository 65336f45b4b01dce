"""``add_messages`` and ``MessagesState``: plain dict messages, LangChain messages, and
langchain-core staying an optional extra."""

from __future__ import annotations

import subprocess
import sys
import uuid
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from pausepoint import START, StateGraph
from pausepoint.graph import MessagesState as ReExported
from pausepoint.graph import add_messages as re_exported
from pausepoint.graph.message import (
    REMOVE_ALL_MESSAGES,
    MessageGraph,
    MessagesState,
    add_messages,
)


def dicts(left: Any, right: Any) -> list[dict[str, Any]]:
    return add_messages(left, right, format="dict")


def test_the_names_are_re_exported_where_langgraph_has_them() -> None:
    assert (ReExported, re_exported) == (MessagesState, add_messages)
    assert MessagesState.__annotations__.keys() == {"messages"}


def test_push_message_is_refused_with_a_reason() -> None:
    with pytest.raises(ImportError, match="push_message is not supported"):
        from pausepoint.graph.message import push_message  # noqa: F401


def test_message_graph_is_deprecated_and_keeps_one_list() -> None:
    with pytest.warns(DeprecationWarning, match="StateGraph\\(MessagesState\\)"):
        b = MessageGraph()
    b.add_node("bot", lambda ms: {"role": "assistant", "content": str(len(ms))})
    out = b.add_edge(START, "bot").compile().invoke("hi")
    assert [_content(m) for m in out] == ["hi", "1"]


def _content(m: Any) -> Any:
    return m["content"] if isinstance(m, dict) else m.content


def test_dict_messages_get_ids_and_are_copied_not_changed() -> None:
    sent = {"role": "user", "content": "hi"}
    out = dicts([], [sent, "plain", ("assistant", "yo")])
    assert sent == {"role": "user", "content": "hi"}  # the caller's dict is untouched
    assert [(m["role"], m["content"]) for m in out] == [
        ("user", "hi"),
        ("user", "plain"),
        ("assistant", "yo"),
    ]
    for m in out:
        assert str(uuid.UUID(m["id"])) == m["id"]


def test_dict_messages_replace_by_id_in_place_and_remove() -> None:
    old = [{"role": "user", "content": c, "id": c} for c in "abc"]
    out = dicts(
        old,
        [
            {"role": "user", "content": "B", "id": "b"},
            {"role": "remove", "id": "a"},
            {"role": "assistant", "content": "d", "id": "d"},
        ],
    )
    assert [(m["id"], m["content"]) for m in out] == [("b", "B"), ("c", "c"), ("d", "d")]
    assert old[1]["content"] == "b"  # the old list is not changed either


def test_a_message_sent_again_after_its_removal_stays() -> None:
    old = [{"role": "user", "content": "a", "id": "a"}]
    again = {"role": "user", "content": "A", "id": "a"}
    assert dicts(old, [{"role": "remove", "id": "a"}, again]) == [again]


def test_remove_all_keeps_only_what_follows_the_last_one() -> None:
    old = [{"role": "user", "content": "a", "id": "a"}]
    clear = {"role": "remove", "id": REMOVE_ALL_MESSAGES}
    later = {"role": "assistant", "content": "z", "id": "z"}
    assert dicts(old, [later, clear, later]) == [later]
    assert dicts(old, clear) == []


@pytest.mark.parametrize(
    ("right", "error", "match"),
    [
        ({"role": "remove", "id": "nope"}, ValueError, "doesn't exist \\('nope'\\)"),
        ({"role": "robot", "content": "x"}, ValueError, "Unexpected message role: 'robot'"),
        ({"role": "user"}, ValueError, "must contain 'role' and 'content'"),
        ({"content": "x"}, ValueError, "must contain 'role' and 'content'"),
        (42, TypeError, "cannot use int 42 as a message"),
    ],
)
def test_bad_dict_messages_are_refused(right: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        dicts([], right)


def test_one_side_missing_and_unknown_format_are_errors() -> None:
    with pytest.raises(ValueError, match="Only received: 'right'"):
        add_messages(None, [])
    with pytest.raises(ValueError, match="Unrecognized format='xml'"):
        add_messages([], [], format="xml")  # pyright: ignore[reportArgumentType]


def test_format_dict_reducer_in_a_graph(drive: Any, memory_or_sqlite: Any) -> None:
    class Chat(TypedDict):
        messages: Annotated[list[dict[str, Any]], add_messages(format="dict")]

    def bot(state: Chat) -> dict[str, Any]:
        first = state["messages"][0]
        edited = {**first, "content": first["content"].upper()}
        return {"messages": [edited, {"role": "assistant", "content": "ok", "id": "r"}]}

    g = StateGraph(Chat).add_node("bot", bot).add_edge(START, "bot")
    g = g.compile(checkpointer=memory_or_sqlite)
    cfg = {"configurable": {"thread_id": "t"}}
    out = drive.invoke(g, {"messages": ["hello"]}, cfg)
    assert [(m["role"], m["content"]) for m in out["messages"]] == [
        ("user", "HELLO"),
        ("assistant", "ok"),
    ]
    assert drive.get_state(g, cfg).values == out
    drive.update_state(g, cfg, {"messages": [{"role": "remove", "id": "r"}]})
    assert [m["content"] for m in drive.get_state(g, cfg).values["messages"]] == ["HELLO"]


def _python(code: str) -> str:
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return run.stdout


def test_importing_pausepoint_never_imports_langchain_core() -> None:
    out = _python(
        "import sys, pausepoint, pausepoint.graph, pausepoint.graph.message, pausepoint.managed\n"
        "from pausepoint.graph import MessagesState, add_messages\n"
        "StateGraph = pausepoint.StateGraph(MessagesState).compile\n"
        "print(sorted(m for m in sys.modules if m.startswith('langchain')))"
    )
    assert out.strip() == "[]"


def test_without_langchain_core_messages_are_dicts() -> None:
    out = _python(
        """
import sys
sys.modules["langchain_core"] = None  # as if not installed
from pausepoint import START, StateGraph
from pausepoint.graph.message import MessagesState, add_messages
g = StateGraph(MessagesState).add_node("bot", lambda s: {"messages": [("ai", "yo")]})
out = g.add_edge(START, "bot").compile().invoke({"messages": "hi"})
print([(m["role"], m["content"]) for m in out["messages"]])
for bad in ("from pausepoint.graph.message import RemoveMessage",
            "add_messages([], [], format='langchain-openai')"):
    try:
        exec(bad)
    except ImportError as exc:
        print("ImportError:", exc)
"""
    )
    lines = out.splitlines()
    assert lines[0] == "[('user', 'hi'), ('ai', 'yo')]"
    assert "{'role': 'remove', 'id': message_id}" in lines[1]
    assert all("pip install 'pausepoint[messages]'" in line for line in lines[1:3])


# --- with langchain-core: LangGraph's add_messages, call for call ----------------------


@pytest.fixture
def lc() -> Any:
    return pytest.importorskip("langchain_core.messages")


def _cases(lc: Any) -> list[tuple[Any, Any]]:
    return [
        ([lc.HumanMessage("a", id="1")], [lc.AIMessage("b", id="2")]),
        ([lc.HumanMessage("a", id="1")], lc.HumanMessage("A", id="1")),
        ([{"role": "user", "content": "a", "id": "1"}], [("ai", "b")]),
        ([lc.HumanMessage("a", id="1")], [lc.RemoveMessage(id="1"), lc.AIMessage("x", id="x")]),
        ([lc.HumanMessage("a", id="1")], [lc.RemoveMessage(id=REMOVE_ALL_MESSAGES)]),
        ([], [lc.AIMessageChunk("chunk", id="c")]),
        ([], [{"role": "assistant", "content": [{"type": "text", "text": "t"}], "id": "o"}]),
    ]


@pytest.mark.parametrize("fmt", [None, "langchain-openai"])
@pytest.mark.parametrize("case", range(7))
def test_langchain_messages_merge_as_langgraph_merges_them(lc: Any, case: int, fmt: Any) -> None:
    langgraph_message = pytest.importorskip("langgraph.graph.message")
    left, right = _cases(lc)[case]
    ours = add_messages(left, right, format=fmt)
    left, right = _cases(lc)[case]  # fresh objects: both set ids in place
    theirs = langgraph_message.add_messages(left, right, format=fmt)

    def shape(ms: list[Any]) -> list[Any]:
        # Ids given by the call are random: compare whether one was given, not its value.
        return [
            (type(m).__name__, m.model_dump(exclude={"id"}), m.id if len(m.id or "") < 8 else "?")
            for m in ms
        ]

    assert shape(ours) == shape(theirs)


def test_langchain_remove_message_is_importable_from_the_message_module(lc: Any) -> None:
    from pausepoint.graph.message import RemoveMessage

    assert RemoveMessage is lc.RemoveMessage
    with pytest.raises(ValueError, match="doesn't exist"):
        add_messages([lc.HumanMessage("a", id="1")], [RemoveMessage(id="2")])
