"""Exceptions raised by pausepoint.

The tree:

    BaseException
    └── GraphBubbleUp                control flow, never an error (DESIGN §4.5)
        ├── GraphInterrupt           a task paused; the root graph swallows it
        │   └── NodeInterrupt        deprecated: use ``interrupt()``
        └── ParentCommand            ``Command(graph=Command.PARENT)`` on its way up
    Exception
    ├── GraphRecursionError          (RecursionError) more supersteps than ``recursion_limit``
    ├── InvalidUpdateError           a write the channel cannot take
    ├── EmptyInputError              a graph called with no usable input
    ├── EmptyChannelError            a channel read before it has a value
    └── PausepointError              pausepoint's own errors
        ├── GraphValidationError     (ValueError) a bad graph definition, all problems at once
        ├── CheckpointerRequiredError
        ├── ResumeError              a bad ``Command(resume=...)``
        │   ├── UnknownInterruptIdError
        │   ├── NothingToResumeError
        │   ├── AmbiguousResumeError (RuntimeError too, LangGraph's type)
        │   ├── AlreadyAnsweredError a different answer to a question already answered
        │   └── InvalidAnswerError   an answer its question's response schema refuses
        ├── DeadlineExpiredError     (TimeoutError too) a question's deadline passed
        ├── ThreadBusyError          another run is advancing the thread (single writer)
        ├── InvalidCommandError      (InvalidUpdateError and ValueError too)
        ├── UnknownBranchError       (InvalidUpdateError and KeyError too) a path_map miss
        ├── NondeterministicTaskError a re-run called other tasks than were recorded
        ├── SerializationError       a value that cannot be stored
        ├── CheckpointDecodeError    a stored row that cannot be read safely
        ├── GraphMismatchError       a stored thread the running graph cannot honour (a deploy)
        ├── MigrationError           a declared migration failed on a stored thread
        ├── LeaseLostError           a fenced write by a run that no longer holds the thread
        └── StaleCheckpointError     a head-conditional write to a checkpoint no longer newest

Control-flow signals derive from ``BaseException`` so that ``except Exception:``
in a node cannot swallow an interrupt (LangGraph derives them from ``Exception``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import datetime

    from pausepoint.response_schema import AnswerProblem
    from pausepoint.types import Command, Interrupt

__all__ = [
    "AlreadyAnsweredError",
    "AmbiguousResumeError",
    "CheckpointDecodeError",
    "CheckpointerRequiredError",
    "DeadlineExpiredError",
    "EmptyChannelError",
    "EmptyInputError",
    "GraphBubbleUp",
    "GraphInterrupt",
    "GraphRecursionError",
    "GraphValidationError",
    "InvalidAnswerError",
    "InvalidCommandError",
    "InvalidUpdateError",
    "NodeInterrupt",
    "NondeterministicTaskError",
    "NothingToResumeError",
    "ParentCommand",
    "PausepointError",
    "ResumeError",
    "SerializationError",
    "ThreadBusyError",
    "UnknownBranchError",
    "UnknownInterruptIdError",
]


class GraphBubbleUp(BaseException):
    """Base of control-flow signals that travel up through tasks and graphs."""


class GraphInterrupt(GraphBubbleUp):
    """A task paused with one or more interrupts.

    Raised by ``interrupt()`` inside a node (and by static breakpoints, with no
    interrupts). Subgraphs re-raise it to their parent; the root graph swallows it
    and reports the interrupts under ``"__interrupt__"``. Never catch it.
    """

    position: int | None = None
    """Which ``interrupt()`` call of its task raised it (0 for the first), when known.

    Set by ``interrupt()`` itself; the loop stores it with the question so that an
    answer is bound to this question, never to "the next ``interrupt()`` call".
    """

    def __init__(
        self, interrupts: Sequence[Interrupt] = (), *, position: int | None = None
    ) -> None:
        super().__init__(tuple(interrupts))
        if position is not None:
            self.position = position

    @property
    def interrupts(self) -> tuple[Interrupt, ...]:
        """The interrupts this signal carries (empty for a static breakpoint)."""
        first: tuple[Interrupt, ...] = self.args[0] if self.args else ()
        return first


class NodeInterrupt(GraphInterrupt):
    """Deprecated: raise ``interrupt(value)`` instead.

    Raising it still pauses the task, with one interrupt carrying ``value``.
    """

    def __init__(self, value: Any, id: str | None = None) -> None:
        warnings.warn(
            "NodeInterrupt is deprecated: call pausepoint.interrupt(value) inside the node "
            "instead, which also returns the resume value when the run continues.",
            DeprecationWarning,
            stacklevel=2,
        )
        from pausepoint.types import Interrupt

        self.value = value
        super().__init__([Interrupt(value=value, id=id or "")])


class ParentCommand(GraphBubbleUp):
    """Carries a ``Command(graph=Command.PARENT)`` from a subgraph to its parent."""

    def __init__(self, command: Command[Any], origin: str = "") -> None:
        super().__init__(command)
        self.origin = origin
        """Checkpoint namespace of the task whose node returned the command."""

    @property
    def command(self) -> Command[Any]:
        """The command to apply in the parent graph."""
        cmd: Command[Any] = self.args[0]
        return cmd


class GraphRecursionError(RecursionError):
    """The run took more supersteps than ``recursion_limit`` allows.

    Raise the limit with ``config={"recursion_limit": n}`` if the graph really needs
    more steps, or look for a cycle with no exit condition.
    """


class InvalidUpdateError(Exception):
    """A node wrote something its channel cannot accept.

    Typical causes: two nodes writing the same last-value key in one superstep
    (give the key a reducer with ``Annotated[T, reducer]``), or a node returning
    something other than a dict, ``None``, a ``Command`` or ``Send`` objects.
    """


class EmptyInputError(Exception):
    """The graph was called with input that starts nothing."""


class EmptyChannelError(Exception):
    """A channel was read before it holds a value."""


class PausepointError(Exception):
    """Base class of pausepoint's own errors (those with no LangGraph counterpart)."""


class GraphValidationError(PausepointError, ValueError):
    """A graph definition has problems; the message lists every one of them."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        n = len(self.problems)
        super().__init__(f"the graph has {n} problem{'s' if n != 1 else ''}:\n{lines}")


class CheckpointerRequiredError(PausepointError, RuntimeError):
    """An operation needs a checkpointer and the graph has none."""


class ResumeError(PausepointError):
    """A ``Command(resume=...)`` cannot be applied; the checkpoint is left unchanged."""


class UnknownInterruptIdError(ResumeError, KeyError):
    """A resume map names interrupt ids that are not pending."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class NothingToResumeError(ResumeError):
    """A resume was sent while no interrupt is pending."""


class AmbiguousResumeError(ResumeError, RuntimeError):
    """A plain resume value was sent while several interrupts are pending."""


class AlreadyAnsweredError(ResumeError):
    """A different answer was sent to a question that already has one; nothing was written.

    An answer is bound to the question it answers. Sending the *same* answer again (a
    client retry, a double submit) is harmless: the run continues with the stored
    answer. A *different* one would silently change what the person said, so it is
    refused. To replace a stored answer on purpose (the node failed with it), send
    ``Command(resume=Reanswer(value))``.

    Attributes:
        interrupt: The question (its value and id).
        position: Which ``interrupt()`` call of its task asked it (0 for the first).
        stored: The answer already stored for it.
        given: The answer that was refused.
    """

    def __init__(self, interrupt: Interrupt, position: int, stored: object, given: object) -> None:
        self.interrupt = interrupt
        self.position = position
        self.stored = stored
        self.given = given
        super().__init__(
            f"interrupt {interrupt.id!r} (question #{position + 1} of its task: "
            f"{interrupt.value!r}) already has the answer {stored!r}, so {given!r} was "
            "refused and nothing was written. Sending the same answer again continues "
            "the run with it (so does invoke(None)); to replace the stored answer, send "
            "Command(resume=Reanswer(value)) (pausepoint.types.Reanswer), or a map "
            "{interrupt_id: Reanswer(value)}."
        )


class InvalidAnswerError(ResumeError):
    """An answer that its question's ``response_schema`` refuses; nothing was written.

    The question still waits: send a corrected answer. The answer is checked as
    sent (JSON-shaped values), before anything is stored.

    Attributes:
        interrupt: The question (its value, id and ``response_schema``).
        given: The refused answer.
        problems: Every problem found, each an
            [`AnswerProblem`][pausepoint.response_schema.AnswerProblem] with ``path``
            (``$.items[0].qty``), ``expected`` and ``got``.
    """

    def __init__(
        self, interrupt: Interrupt, given: object, problems: Sequence[AnswerProblem]
    ) -> None:
        self.interrupt = interrupt
        self.given = given
        self.problems = list(problems)
        listed = "".join(f"\n  - {p}" for p in self.problems)
        super().__init__(
            f"the answer {given!r} to interrupt {interrupt.id!r} ({interrupt.value!r}) does "
            f"not match the question's response_schema, so it was refused and nothing was "
            f"written; the question still waits. Problems:{listed}\nSend an answer that "
            "fixes them (Interrupt.response_schema is the schema, as JSON Schema)."
        )


class DeadlineExpiredError(PausepointError, TimeoutError):
    """Raised by ``interrupt()`` when its question's deadline passed with ``on_timeout="fail"``.

    The sweeper (`pausepoint.questions.sweep`) stored the timeout as the question's
    answer; the node may catch this error and go on (e.g. escalate), otherwise its
    task fails after the answer, as `get_state` shows. Also a ``TimeoutError``, so
    the default retry policy does not retry it.

    Attributes:
        deadline: The question's deadline (aware, UTC).
        swept_at: The sweeper's time when it expired the question.
    """

    def __init__(self, deadline: datetime.datetime, swept_at: datetime.datetime) -> None:
        self.deadline = deadline
        self.swept_at = swept_at
        super().__init__(
            f"the question's deadline {deadline.isoformat()} passed (expired by the sweeper "
            f"at {swept_at.isoformat()}) and its on_timeout is 'fail'. Catch "
            "DeadlineExpiredError around interrupt() to handle it in the node, or give the "
            "question on_timeout=TimeoutAnswer(value) to answer a default instead."
        )


class ThreadBusyError(PausepointError):
    """Another run is advancing the thread: at most one run writes to a thread at a time.

    Raised when a run starts while another run (in this or another process) holds the
    thread's lease; nothing of this run was written. A resume that only answers
    questions still waiting first waits for the thread (``compile(lease_wait=...)``).

    Attributes:
        thread_id: The thread.
        until: When the other run's lease expires unless it is renewed (seconds since
            the epoch; it is renewed as that run saves). A worker that died on another
            machine holds the thread until then.
    """

    def __init__(self, thread_id: str, until: float) -> None:
        self.thread_id = thread_id
        self.until = until
        super().__init__(
            f"thread {thread_id!r} is busy: another run is advancing it (its lease runs "
            f"until {_iso(until)} unless renewed; a worker that died holds it until then); "
            "nothing was written. Try again when it has paused or finished: "
            "graph.get_state(config) shows what it waits for."
        )


def _iso(seconds: float) -> str:
    """Seconds since the epoch as ISO 8601 UTC, to the millisecond."""
    import datetime

    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="milliseconds")


class InvalidCommandError(PausepointError, InvalidUpdateError, ValueError):
    """A ``Command`` that cannot be applied where it was used.

    Also an ``InvalidUpdateError``, which LangGraph raises for a
    ``Command(graph=Command.PARENT)`` given to a graph that has no parent.
    """


class UnknownBranchError(PausepointError, InvalidUpdateError, KeyError):
    """A conditional edge returned a value that its ``path_map`` has no entry for.

    Also a ``KeyError``, which LangGraph raises for it (with only the value as its
    message), and an ``InvalidUpdateError``: the branch's output cannot be applied.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class NondeterministicTaskError(PausepointError, RuntimeError):
    """A re-run node called a different ``@task`` at a position whose result was saved.

    Saved task results are matched to calls by their order within the node, so a
    node must make the same task calls in the same order every time it runs.
    """


class SerializationError(PausepointError, TypeError):
    """A value cannot be written to a checkpoint; nothing was written."""


class CheckpointDecodeError(PausepointError, ValueError):
    """A stored checkpoint or write cannot be decoded safely; nothing was executed.

    Attributes:
        unknown_type: The stored type name the serializer's allowlist lacks, when that
            is why: registering the class (or reading through the graph whose state
            declares it) reads the value. None when the row is corrupt or foreign.
    """

    def __init__(self, message: str, *, unknown_type: str | None = None) -> None:
        super().__init__(message)
        self.unknown_type = unknown_type

    def with_message(self, message: str) -> CheckpointDecodeError:
        """The same error saying ``message`` (with more context); ``unknown_type`` kept."""
        return CheckpointDecodeError(message, unknown_type=self.unknown_type)


# Single-writer threads: the errors of the savers' leases and guarded writes.

if TYPE_CHECKING:
    from pausepoint.checkpoint.base import Lease


class LeaseLostError(PausepointError):
    """A fenced write by a run that no longer holds the thread's lease; nothing was written.

    Attributes:
        thread_id: The thread written to.
        owner: The lease owner the write was made for.
        holder: The thread's lease when the write was refused (``None``: there was
            none), possibly expired.
    """

    def __init__(self, thread_id: str, owner: str, holder: Lease | None, now: float) -> None:
        self.thread_id = thread_id
        self.owner = owner
        self.holder = holder
        if holder is None:
            why = "no run holds its lease (it was released, or the thread deleted)"
        elif holder.owner == owner:
            why = f"the lease of {owner!r} expired at {_when(holder.expires_at)}"
        elif holder.expires_at > now:
            why = f"its lease is held by {holder.owner!r} until {_when(holder.expires_at)}"
        else:
            why = (
                f"its lease was taken over by {holder.owner!r}, whose lease has expired "
                f"since {_when(holder.expires_at)}"
            )
        super().__init__(
            f"cannot write to thread {thread_id!r} for lease owner {owner!r}: {why}; nothing "
            "was written. Another run may have moved the thread on: stop this run, read the "
            "thread again and acquire its lease before writing (and renew a lease more often "
            "than its ttl while a run is slow)"
        )


class StaleCheckpointError(PausepointError):
    """A head-conditional write to a checkpoint that is no longer the newest; nothing written.

    Attributes:
        thread_id: The thread written to.
        checkpoint_ns: The checkpoint namespace.
        checkpoint_id: The checkpoint the write was for.
        head: The newest checkpoint of the thread and namespace now (``None``: none).
    """

    def __init__(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, head: str | None
    ) -> None:
        self.thread_id = thread_id
        self.checkpoint_ns = checkpoint_ns
        self.checkpoint_id = checkpoint_id
        self.head = head
        where = f"thread {thread_id!r}" + (f" namespace {checkpoint_ns!r}" if checkpoint_ns else "")
        now = f"the newest is {head!r}" if head else "it has no checkpoint at all"
        super().__init__(
            f"cannot write to checkpoint {checkpoint_id!r} of {where}: it is no longer the "
            f"newest checkpoint ({now}: a run moved the thread on after it was read); nothing "
            "was written. Read the thread again (get_state) and answer what it waits for now"
        )


def _when(seconds: float) -> str:
    """A time in seconds since the epoch as ISO 8601 UTC, to the millisecond."""
    import datetime

    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.isoformat(timespec="milliseconds")


__all__ += ["LeaseLostError", "StaleCheckpointError"]


class GraphMismatchError(PausepointError):
    """A stored thread waits on something the running graph cannot honour (a deploy).

    Raised where a thread is loaded (a resume, ``invoke(None)``, new input,
    ``update_state``) when the graph that wrote its newest checkpoint differs from
    the running one in a way the thread feels: a pending task, trigger, ``Send`` or
    question names a node the graph lacks, or a stored key has no channel or holds a
    value its new reducer or type cannot take. Nothing is written. ``get_state()``
    still shows the thread's questions, each task that cannot run carrying this
    error. See docs/deploys.md.

    Attributes:
        thread_id: The thread.
        checkpoint_id: Its checkpoint that was loaded.
        problems: What the running graph lacks, one entry per missing piece (each has
            ``kind``, ``name`` and ``detail``; ``str()`` is a sentence).
        applied: The declared migrations that ran before what remains was found.
    """

    def __init__(
        self,
        thread_id: str,
        checkpoint_id: str,
        problems: Sequence[Any],
        *,
        applied: Sequence[str] = (),
    ) -> None:
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id
        self.problems = tuple(problems)
        self.applied = tuple(applied)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        after = f" (after the declared migrations {', '.join(applied)})" if applied else ""
        super().__init__(
            f"thread {thread_id!r} cannot be loaded into this graph: its checkpoint "
            f"{checkpoint_id!r} was written by a graph this one differs from in ways the "
            f"thread depends on{after}:\n{lines}\nNothing was written. Fix: declare a "
            "migration for what is listed (compile(migrations=[...])), or deploy a graph "
            "that still has it (keep the old node or key alongside the new one until the "
            "thread finishes), or run the old graph to finish the thread; see "
            "docs/deploys.md"
        )


class MigrationError(PausepointError):
    """A declared migration raised while a stored thread was being moved (a deploy).

    Nothing is written: the thread stays as it was, on its old checkpoint. The
    message names the migration, the thread and the checkpoint; the migration's
    own exception is the ``__cause__``. See docs/deploys.md.

    Attributes:
        label: The migration, as declared (``rename_node('ask', 'approve')``).
    """

    def __init__(self, message: str, *, label: str) -> None:
        super().__init__(message)
        self.label = label


__all__ += ["GraphMismatchError", "MigrationError"]
