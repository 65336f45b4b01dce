"""Turning a task into something a driver can execute: body, context and retry policy."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from pausepoint.loop.calls import CallRequest, CallSite
from pausepoint.loop.effects import Call
from pausepoint.loop.node import node_body
from pausepoint.loop.tasks import Task
from pausepoint.scratchpad import NestInfo, Scratchpad, TaskContext
from pausepoint.types import RetryPolicy

if TYPE_CHECKING:
    from pausepoint.config import RunnableConfig
    from pausepoint.loop.run import _Run  # pyright: ignore[reportPrivateUsage]

__all__ = ["ExecTask", "prepare_for_execution"]


@dataclasses.dataclass(frozen=True, slots=True)
class ExecTask:
    """A task ready to run: a fresh body and context per attempt, and its retry policy."""

    task: Task
    body: Callable[[], Generator[Call, Any, list[tuple[str, Any]]]]
    context: Callable[[Callable[[CallRequest], Any]], TaskContext]
    """A fresh context per attempt, given the driver's way to start ``@task`` calls."""
    retry: tuple[RetryPolicy, ...]


def prepare_for_execution(run: _Run, task: Task) -> ExecTask:
    """Bind ``task`` to the run's channels, config and resume values."""
    config = task_config(run, task)
    rec = run.records.get(task.id)
    saved_resume = list(rec.resume or []) if rec is not None else []
    opts = run.opts
    nest = NestInfo(
        saver=opts.saver,
        thread_id=run.cfg.thread_id,
        durability=opts.durability,
        resume_map=run.resume.values if run.resume else {},
        resuming=run.resuming,
        sink=opts.sink,
        stream_modes=opts.stream_modes,
        stream_subgraphs=opts.stream_subgraphs,
        parents={
            **(opts.nest.parents if opts.nest else {}),
            run.cfg.checkpoint_ns: run.checkpoint["id"],
        },
    )
    sink = opts.sink
    ns = opts.ns
    writer: Callable[[Any], None] = _ignore
    if sink is not None and "custom" in opts.stream_modes:

        def write_custom(value: Any) -> None:
            sink(ns, "custom", value)

        writer = write_custom

    channels = run.channels
    spec = run.spec
    calls = CallSite(
        task.id,
        run.checkpoint["id"],
        run.cfg.checkpoint_ns,
        run.step,
        run.records,
        nest.resume_map,
        run.saved_config if run.opts.has_saver and run.opts.durability != "exit" else None,
    )
    if sink is not None and "updates" in opts.stream_modes:

        def report(update: dict[str, Any]) -> None:
            sink(ns, "updates", update)

        calls.emit = report

    def context(spawn: Callable[[CallRequest], Any]) -> TaskContext:
        return TaskContext(
            name=task.name,
            task_id=task.id,
            checkpoint_ns=task.ns,
            config=config,
            scratchpad=Scratchpad(list(saved_resume)),
            stream_writer=writer,
            nest=nest,
            calls=calls,
            spawn=spawn,
        )

    def body() -> Generator[Call, Any, list[tuple[str, Any]]]:
        return node_body(spec, task, config, channels)

    return ExecTask(task, body, context, task.node.retry)


def _ignore(_value: Any) -> None:
    return None


def task_config(run: _Run, task: Task) -> RunnableConfig:
    """The config a node receives (``config`` argument and ``get_config()``)."""
    cfg = run.cfg
    conf = {**cfg.configurable, "checkpoint_ns": task.ns, "thread_id": cfg.thread_id}
    conf.pop("checkpoint_id", None)
    metadata = {
        **cfg.metadata,
        "langgraph_step": run.step,
        "langgraph_node": task.name,
        "langgraph_triggers": task.triggers,
        "langgraph_path": task.path,
        "langgraph_checkpoint_ns": task.ns,
    }
    if cfg.thread_id is not None:
        metadata["thread_id"] = cfg.thread_id
    return {
        "configurable": conf,
        "metadata": metadata,
        "tags": list(cfg.tags),
        "recursion_limit": cfg.recursion_limit,
    }
