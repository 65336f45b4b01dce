"""A chat graph for the ``messages`` stream mode (``--graph chat=...graphs_messages:chat``).

One node calls a LangChain fake chat model, which streams its answer a word at a time;
the answer's id is ``ai-<number of messages before it>``.
"""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from pausepoint import START, StateGraph
from pausepoint.graph.message import MessagesState


def reply(state: MessagesState) -> MessagesState:
    said = state["messages"]
    answer = AIMessage(f"you said: {said[-1].content}", id=f"ai-{len(said)}")
    model = GenericFakeChatModel(messages=iter([answer]))
    return {"messages": [model.invoke(said)]}


chat = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply").compile()
