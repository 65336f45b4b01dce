"""``stream_mode="messages"`` without langchain-core: a clear error naming the extra.

The import is blocked in a subprocess by a ``sys.meta_path`` finder, as if the
package were not installed; nothing is mocked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys

    class NoLangChain:
        def find_spec(self, name, path=None, target=None):
            if name == "langchain_core" or name.startswith("langchain_core."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoLangChain())

    import asyncio
    from typing import TypedDict
    from pausepoint import StateGraph, START, InMemorySaver

    class S(TypedDict):
        x: int

    ran = []
    saver = InMemorySaver()
    g = (StateGraph(S).add_node("n", lambda s: ran.append(1) or {"x": 1})
         .add_edge(START, "n").compile(checkpointer=saver))
    config = {"configurable": {"thread_id": "t"}}

    def check(run):
        try:
            run()
        except ImportError as exc:
            print("ImportError:", exc)
        else:
            print("no error")

    check(lambda: list(g.stream({"x": 0}, config, stream_mode="messages")))
    check(lambda: g.invoke({"x": 0}, config, stream_mode=["updates", "messages"]))

    async def astream():
        return [c async for c in g.astream({"x": 0}, config, stream_mode="messages")]

    check(lambda: asyncio.run(astream()))
    print("ran", len(ran), "saved", saver.get_tuple(config) is not None)
    print("updates", list(g.stream({"x": 0}, config, stream_mode="updates")))
    """
)


def test_messages_mode_without_langchain_core_names_the_extra() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 5, done.stdout
    for line in lines[:3]:
        assert line.startswith("ImportError: stream_mode='messages'"), line
        assert "pip install 'pausepoint[messages]'" in line
    # Refused before anything ran or was saved; other modes still work.
    assert lines[3] == "ran 0 saved False"
    assert lines[4] == "updates [{'n': {'x': 1}}]"
