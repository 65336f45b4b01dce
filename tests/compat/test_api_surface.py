"""The LangGraph API surface around a run, on LangGraph 1.1.6 and pausepoint side by side.

``with_config``, ``batch``/``abatch``, ``get_subgraphs``, configs with a top-level
``thread_id``, compile-time checks of ``checkpointer``/``store`` and interrupt nodes,
and the small items (``StreamWriter``, ``Interrupt(ns=...)``, ``interrupt_id``,
``get_config()["recursion_limit"]``, ``get_stream_writer()`` outside a run, the
``durability`` warning). Each test runs on both libraries and asserts the same
observation, except where pausepoint deliberately refuses what LangGraph ignores.
"""

import asyncio
import importlib
import operator
import warnings
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

pytest.importorskip("langgraph")

from ._harness import LIBS, Lib, load_lib

pytestmark = pytest.mark.compat


@pytest.fixture(params=LIBS)
def lib(request: pytest.FixtureRequest) -> Lib:
    return load_lib(request.param)


class S(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]


class N(TypedDict, total=False):
    n: int


def counter(lib: Lib, saver: Any = None) -> Any:
    """``inc`` until n reaches 100: only a recursion limit stops it early."""
    b = lib.StateGraph(N)
    b.add_node("inc", lambda s: {"n": s["n"] + 1})
    b.add_edge(lib.START, "inc")
    b.add_conditional_edges("inc", lambda s: "inc" if s["n"] < 100 else lib.END)
    return b.compile(checkpointer=saver)


def one_node(lib: Lib, saver: Any = None, **compile_kw: Any) -> Any:
    b = lib.StateGraph(N)
    b.add_node("a", lambda s: {"n": s.get("n", 0) + 1})
    b.add_edge(lib.START, "a")
    return b.compile(checkpointer=saver, **compile_kw)


# --- with_config, batch, get_subgraphs ---------------------------------------------------


def test_with_config_binds_a_recursion_limit(lib: Lib):
    limited = counter(lib).with_config(recursion_limit=5)
    with pytest.raises(lib.errors.GraphRecursionError, match="Recursion limit of 5 reached"):
        limited.invoke({"n": 0})
    assert counter(lib).with_config(recursion_limit=500).invoke({"n": 95}) == {"n": 100}


def test_with_config_binds_a_thread_for_every_method(lib: Lib):
    g = one_node(lib, lib.InMemorySaver()).with_config(configurable={"thread_id": "bound"})
    assert g.invoke({"n": 1}) == {"n": 2}
    assert g.get_state({"configurable": {"thread_id": "bound"}}).values == {"n": 2}
    assert g.invoke({"n": 1}, {"configurable": {"thread_id": "other"}}) == {"n": 2}
    assert g.with_config(tags=["x"]).invoke({"n": 5}) == {"n": 6}  # still thread "bound"
    assert g.get_state({"configurable": {"thread_id": "bound"}}).values == {"n": 6}


def test_with_config_binds_a_thread_for_state_methods_too():
    # LangGraph's get_state/update_state raise KeyError('configurable') with a config
    # that has none; pausepoint merges the bound config as invoke does.
    lib = load_lib("pausepoint")
    g = one_node(lib, lib.InMemorySaver()).with_config(configurable={"thread_id": "bound"})
    g.invoke({"n": 1})
    assert g.get_state({}).values == {"n": 2}
    g.update_state({}, {"n": 7})
    assert g.get_state({"configurable": {"thread_id": "bound"}}).values == {"n": 7}


def test_batch_and_abatch_run_each_input(lib: Lib):
    g = one_node(lib)
    assert g.batch([{"n": 1}, {"n": 10}]) == [{"n": 2}, {"n": 11}]
    assert g.batch([{"n": 1}, {"n": 2}], {"max_concurrency": 1}) == [{"n": 2}, {"n": 3}]
    assert asyncio.run(g.abatch([{"n": 3}, {"n": 4}])) == [{"n": 4}, {"n": 5}]


def test_batch_with_a_config_per_input_keeps_threads_apart(lib: Lib):
    g = one_node(lib, lib.InMemorySaver())
    configs = [{"configurable": {"thread_id": t}} for t in ("x", "y")]
    assert g.batch([{"n": 1}, {"n": 5}], configs) == [{"n": 2}, {"n": 6}]
    assert g.get_state(configs[1]).values == {"n": 6}


def test_batch_return_exceptions(lib: Lib):
    b = lib.StateGraph(N)
    b.add_node("a", lambda s: {"n": 10 // s["n"]})
    b.add_edge(lib.START, "a")
    g = b.compile()
    out = g.batch([{"n": 5}, {"n": 0}], return_exceptions=True)
    assert out[0] == {"n": 2}
    assert isinstance(out[1], ZeroDivisionError)
    with pytest.raises(ZeroDivisionError):
        g.batch([{"n": 0}])
    mixed = asyncio.run(g.abatch([{"n": 0}, {"n": 1}], return_exceptions=True))
    assert isinstance(mixed[0], ZeroDivisionError)
    assert mixed[1] == {"n": 10}


def nested(lib: Lib) -> Any:
    inner = lib.StateGraph(S)
    inner.add_node("leaf", lambda s: {"log": ["leaf"]})
    inner.add_edge(lib.START, "leaf")
    mid = lib.StateGraph(S)
    mid.add_node("inner", inner.compile())
    mid.add_edge(lib.START, "inner")
    outer = lib.StateGraph(S)
    outer.add_node("mid", mid.compile())
    outer.add_node("plain", lambda s: {})
    outer.add_edge(lib.START, "mid")
    outer.add_edge("mid", "plain")
    return outer.compile()


def test_get_subgraphs(lib: Lib):
    g = nested(lib)
    assert [name for name, _ in g.get_subgraphs()] == ["mid"]
    assert [name for name, _ in g.get_subgraphs(recurse=True)] == ["mid", "mid|inner"]
    found = dict(g.get_subgraphs(namespace="mid|inner", recurse=True))
    assert list(found) == ["mid|inner"]
    assert found["mid|inner"].invoke({"log": []}) == {"log": ["leaf"]}

    async def collect() -> list[str]:
        return [name async for name, _ in g.aget_subgraphs(recurse=True)]

    assert asyncio.run(collect()) == ["mid", "mid|inner"]


# --- configs and keyword arguments -------------------------------------------------------


def test_a_top_level_thread_id_is_the_configurable_one(lib: Lib):
    g = one_node(lib, lib.InMemorySaver())
    assert g.invoke({"n": 1}, {"thread_id": "top"}) == {"n": 2}  # pyright: ignore[reportArgumentType]
    assert g.get_state({"configurable": {"thread_id": "top"}}).values == {"n": 2}
    # Given both ways, the top-level one wins.
    both = {"thread_id": "top2", "configurable": {"thread_id": "inner"}}
    g.invoke({"n": 1}, both)  # pyright: ignore[reportArgumentType]
    assert g.get_state({"configurable": {"thread_id": "top2"}}).values == {"n": 2}
    assert g.get_state({"configurable": {"thread_id": "inner"}}).values == {}


def test_get_state_with_a_top_level_thread_id():
    # LangGraph raises KeyError('configurable') here; pausepoint reads the thread.
    lib = load_lib("pausepoint")
    g = one_node(lib, lib.InMemorySaver())
    g.invoke({"n": 1}, {"thread_id": "top"})  # pyright: ignore[reportArgumentType]
    assert g.get_state({"thread_id": "top"}).values == {"n": 2}  # pyright: ignore[reportArgumentType]
    assert len(list(g.get_state_history({"thread_id": "top"}))) == 3  # pyright: ignore[reportArgumentType]


def test_a_misspelt_keyword_is_refused_with_the_closest_name():
    # LangGraph silently ignores `strem_mode=` and streams the default mode.
    lib = load_lib("pausepoint")
    g = one_node(lib)
    with pytest.raises(TypeError, match="'strem_mode'; did you mean 'stream_mode'"):
        g.invoke({"n": 1}, strem_mode="updates")
    with pytest.raises(TypeError, match=r"stream\(\) got an unexpected keyword .*'subgraph'"):
        list(g.stream({"n": 1}, subgraph=True))
    with pytest.raises(TypeError, match="'durabilty'; did you mean 'durability'"):
        asyncio.run(g.ainvoke({"n": 1}, durabilty="sync"))

    async def astream() -> None:
        async for _ in g.astream({"n": 1}, zzz=1):
            pass

    with pytest.raises(TypeError, match="astream\\(\\) got an unexpected keyword argument 'zzz'"):
        asyncio.run(astream())


def test_checkpoint_during_is_deprecated_durability(lib: Lib):
    g = one_node(lib, lib.InMemorySaver())
    with pytest.warns(DeprecationWarning, match="`checkpoint_during` is deprecated"):
        assert g.invoke({"n": 1}, {"configurable": {"thread_id": "d"}}, checkpoint_during=False)
    with (
        pytest.warns(DeprecationWarning, match="`checkpoint_during` is deprecated"),
        pytest.raises(ValueError, match="Cannot use both `checkpoint_during` and `durability`"),
    ):
        g.invoke({"n": 1}, {"thread_id": "d"}, checkpoint_during=True, durability="sync")


def test_durability_without_a_checkpointer_warns(lib: Lib):
    g = one_node(lib)
    for mode in ("async", "exit"):  # LangGraph crashes on "sync" (an AttributeError)
        with pytest.warns(UserWarning, match="`durability` has no effect when no checkpointer"):
            assert g.invoke({"n": 0}, durability=mode) == {"n": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert g.invoke({"n": 0}) == {"n": 1}


def test_durability_sync_without_a_checkpointer_runs():
    lib = load_lib("pausepoint")
    with pytest.warns(UserWarning, match="`durability` has no effect"):
        assert one_node(lib).invoke({"n": 0}, durability="sync") == {"n": 1}


# --- compile-time checks -----------------------------------------------------------------


class NotASaver:
    pass


def test_a_checkpointer_that_is_not_a_saver_fails_compile(lib: Lib):
    with pytest.raises(TypeError, match=r"Invalid checkpointer provided\. Expected an instance of"):
        one_node(lib, NotASaver())


def test_langgraphs_saver_is_refused_by_name():
    from langgraph.checkpoint.memory import InMemorySaver as LangGraphSaver

    with pytest.raises(TypeError, match="InMemorySaver is LangGraph's saver"):
        one_node(load_lib("pausepoint"), LangGraphSaver())


def test_a_store_is_not_supported():
    lib = load_lib("pausepoint")
    func = importlib.import_module("pausepoint.func")
    with pytest.raises(NotImplementedError, match="store= is not supported"):
        one_node(lib, store=object())
    with pytest.raises(NotImplementedError, match="no long-term memory store"):
        func.entrypoint(store=object())


def test_an_unknown_interrupt_node_fails_compile_with_langgraphs_text(lib: Lib):
    for kw in ("interrupt_before", "interrupt_after"):
        with pytest.raises(ValueError, match="Interrupt node `nope` not found"):
            one_node(lib, **{kw: ["nope"]})


# --- small items -------------------------------------------------------------------------


def test_stream_writer_annotation(lib: Lib):
    types = importlib.import_module(f"{lib.name}.types")

    def node(state: S, writer: types.StreamWriter) -> dict[str, Any]:
        writer("hello")
        return {"log": ["done"]}

    b = lib.StateGraph(S)
    b.add_node("node", node)
    b.add_edge(lib.START, "node")
    assert list(b.compile().stream({"log": []}, stream_mode="custom")) == ["hello"]


def test_interrupt_ns_keyword_and_interrupt_id(lib: Lib):
    made = lib.Interrupt(value="v", ns=["a", "b"])
    assert made.id == lib.Interrupt.from_ns("v", "a|b").id
    assert lib.Interrupt(value="v", id="given", ns=["a"]).id == "given"
    with pytest.warns(DeprecationWarning, match="`interrupt_id` is deprecated. Use `id` instead."):
        assert made.interrupt_id == made.id


def test_recursion_limit_in_get_config(lib: Lib):
    seen: list[Any] = []

    def node(state: S) -> dict[str, Any]:
        seen.append(lib.get_config().get("recursion_limit"))
        return {"n": 1}

    b = lib.StateGraph(S)
    b.add_node("n", node)
    b.add_edge(lib.START, "n")
    g = b.compile()
    g.invoke({"n": 0})
    g.invoke({"n": 0}, {"recursion_limit": 7})
    g.with_config(recursion_limit=9).invoke({"n": 0})
    assert seen == [None, 7, 9]


def test_get_stream_writer_and_get_config_outside_a_run_raise(lib: Lib):
    for fn in (lib.get_stream_writer, lib.get_config):
        with pytest.raises(RuntimeError, match="Called get_config outside of a runnable context"):
            fn()


def test_the_checkpointer_alias_names_the_savers(lib: Lib):
    """``types.Checkpointer``, for annotating what ``compile(checkpointer=)`` takes."""
    import typing

    alias = importlib.import_module(f"{lib.name}.types").Checkpointer

    def compile_with(checkpointer: alias) -> None: ...  # a variable alias: fine at run time

    # Resolved as a type checker and typing.get_type_hints see it.
    args = typing.get_args(typing.get_type_hints(compile_with)["checkpointer"])
    assert bool in args
    assert type(None) in args
    assert any(isinstance(a, type) and issubclass(lib.InMemorySaver, a) for a in args)
