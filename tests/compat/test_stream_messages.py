"""``stream_mode="messages"``: chat-model tokens and node messages, as LangGraph streams them.

The chat model is LangChain's own fake one (``GenericFakeChatModel``), called inside
nodes through LangChain's callback API exactly as a real model would be.
"""

import importlib
import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")
pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from ._harness import Scenarios, thread

scenario = Scenarios()


class Chat(TypedDict):
    messages: Annotated[list[Any], operator.add]


def _model(*texts: str, **kw: Any) -> GenericFakeChatModel:
    replies = iter([AIMessage(content=t, id=f"m{i}") for i, t in enumerate(texts)])
    return GenericFakeChatModel(messages=replies, **kw)


def _chat(lib: Any, model: Any, *, is_async: bool = False) -> Any:
    """START -> chat (calls ``model``) -> canned (returns a message of its own)."""

    def chat(state: Chat) -> Chat:
        return {"messages": [model.invoke(state["messages"])]}

    async def achat(state: Chat) -> Chat:
        return {"messages": [await model.ainvoke(state["messages"])]}

    def canned(state: Chat) -> Chat:
        # The input's messages are not streamed again; the new one is.
        return {"messages": [*state["messages"], AIMessage(content="canned", id="c1")]}

    b = lib.StateGraph(Chat)
    b.add_node("chat", achat if is_async else chat)
    b.add_node("canned", canned)
    b.add_edge(lib.START, "chat")
    b.add_edge("chat", "canned")
    return b.compile(checkpointer=lib.InMemorySaver())


_HI = {"messages": [HumanMessage("hi", id="h1")]}
_CONFIG = {**thread(user="u", api_key="x"), "tags": ["tg"], "metadata": {"mm": 1}}


@scenario
def messages_stream_tokens_then_node_messages(lib, drive):
    g = _chat(lib, _model("hello big world"))
    return drive.stream(g, _HI, _CONFIG, stream_mode="messages")


@scenario
def messages_with_updates_in_order(lib, drive):
    g = _chat(lib, _model("hello world"))
    return drive.stream(g, _HI, _CONFIG, stream_mode=["messages", "updates"])


@scenario(drivers=("async",))
def messages_from_an_async_node(lib, drive):
    g = _chat(lib, _model("hello async world"), is_async=True)
    return drive.stream(g, _HI, _CONFIG, stream_mode="messages")


@scenario
def messages_of_a_model_that_does_not_stream(lib, drive):
    g = _chat(lib, _model("all at once", disable_streaming=True))
    return drive.stream(g, _HI, _CONFIG, stream_mode="messages")


@scenario
def messages_not_from_a_nostream_model(lib, drive):
    g = _chat(lib, _model("quiet please").with_config(tags=["nostream"]))
    return drive.stream(g, _HI, _CONFIG, stream_mode="messages")


@scenario
def messages_as_v2_parts(lib, drive):
    g = _chat(lib, _model("two words"))
    return drive.stream(g, _HI, _CONFIG, stream_mode="messages", version="v2")


def _nested(lib: Any) -> Any:
    model = _model("deep reply", "second reply")

    def inner(state: Chat) -> Chat:
        return {"messages": [model.invoke(state["messages"])]}

    ib = lib.StateGraph(Chat)
    ib.add_node("inner", inner)
    ib.add_edge(lib.START, "inner")
    b = lib.StateGraph(Chat)
    b.add_node("child", ib.compile())
    b.add_edge(lib.START, "child")
    return b.compile()


@scenario
def messages_from_a_subgraph(lib, drive):
    return {
        "subgraphs": drive.stream(_nested(lib), _HI, stream_mode="messages", subgraphs=True),
        "root only": drive.stream(_nested(lib), _HI, stream_mode="messages"),
    }


@scenario
def messages_of_an_entrypoint_and_its_task_calls(lib, drive):
    # A model called in a @task is not streamed token by token (its namespace is its
    # caller's child, as a subgraph's); the message the entrypoint returns is.
    func = importlib.import_module(f"{lib.name}.func")
    model = _model("hi there")

    @func.task
    def call_model(messages: list[Any]) -> Any:
        return model.invoke(messages)

    @func.entrypoint()
    def agent(messages: list[Any]) -> dict[str, Any]:
        return {"messages": [call_model(messages).result()]}

    return drive.stream(agent, [HumanMessage("hi", id="h1")], stream_mode="messages")


test_stream_messages = scenario.test()
