"""``Serializer``: the typed, allowlist-only serializer savers store values with.

There is no pickle and no import-by-name: a payload is JSON whose non-JSON values
carry type tags (see `pausepoint.serde.encoder`), and decoding builds only
built-in types, pausepoint's own types and the classes registered with the
serializer. An unsupported value fails when it is *written*, naming where it is;
a corrupt or crafted payload fails when it is *read*, and runs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, TypeVar, cast, runtime_checkable

from pausepoint.errors import CheckpointDecodeError, SerializationError
from pausepoint.serde.decoder import make_object_hook
from pausepoint.serde.encoder import TAG, Encoder, NeedsFrame, Unencodable
from pausepoint.serde.fast import FALLBACK, orjson_enabled, orjson_load, orjson_plain, orjson_text
from pausepoint.serde.frames import BLOB_FROM, FRAMED, MAGIC, Ranges, frame, reading, unframe
from pausepoint.serde.plain import (
    FLAT_VALUES,
    dump_bytes,
    is_flat_json,
    load_bytes,
)
from pausepoint.serde.registry import TypeRegistry, type_name
from pausepoint.serde.schema import types_in_schema

if TYPE_CHECKING:
    from pausepoint.serde.plain import Json

__all__ = ["FORMAT", "FRAMED", "Serializer", "SerializerProtocol", "dumps", "loads"]

FORMAT = "ppjson/1"
"""The type string of payloads written by [`Serializer`][] (versioned).

A payload holding bytes of 64 KiB or more is framed instead (the JSON, then those
bytes raw) and stored under [`FRAMED`][]; see docs/format.md.
"""

_TOP_BLOB = b'{"__pp__":"blob","v":[0,%d]}'

T = TypeVar("T", bound=type)


_json_string: Callable[[str], str] = json.encoder.encode_basestring_ascii
_UNTAGGED_FROM = 4096  # bytes: below, looking for tags costs more than it saves
_TAG_TEXT = TAG.encode("ascii")


def _untagged(data: bytes | str) -> TypeGuard[bytes]:
    r"""Whether a large payload holds no tagged node: it then decodes without the hook.

    The object hook is a Python call per JSON object (500,000 of them in 50 MB of
    records). Without the tag key in the text, spelled out or with its letters
    escaped (``\u005f`` is ``_``, ``\u0070`` is ``p``), no object can be a tagged
    node, and the hook would return each one as it is.

    Each search is a scan of the whole text when it finds nothing (~1.5 instructions
    a byte for the tag, ~1.8 for each escape). A one-byte search is ``memchr`` (~0.15
    a byte, and it stops at the first find): without an underscore there is no tag
    spelled out, and without a backslash no escape, so those are looked for first
    (5.1 M instructions a cold read of a 1.1 MB chat went to these searches: 0.3 M
    now; benchmarks/README.md, serde43).
    """
    if type(data) is not bytes:
        return False
    if b"_" in data and _TAG_TEXT in data:
        return False
    return b"\\" not in data or (b"\\u005" not in data and b"\\u0070" not in data)


def _dumps_bytes(data: bytes) -> bytes:
    """A bytes value: raw after a one-node JSON if large, else base64 in its tagged node."""
    if len(data) < BLOB_FROM:
        return dump_bytes(data)
    ranges = Ranges()
    ranges.add(data)
    return frame(_TOP_BLOB % len(data), ranges)


def _text_encoder(settings: json.JSONEncoder) -> Callable[[Json], str]:
    """``settings.encode`` for a JSON-native tree, made once.

    ``JSONEncoder.encode`` builds its C encoder again on every call, which was half
    the cost of encoding a small value such as a checkpoint's metadata; this builds it
    once (benchmarks/README.md, "Figures behind the comments"). Falls back to
    ``encode`` where the C accelerator is missing.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has it
        return settings.encode
    one = make(
        None,  # no circular-reference markers (check_circular=False)
        settings.default,
        json.encoder.encode_basestring_ascii,  # ensure_ascii=True
        None,  # no indent
        settings.key_separator,
        settings.item_separator,
        settings.sort_keys,
        settings.skipkeys,
        settings.allow_nan,
    )

    def encode(tree: Json) -> str:
        return "".join(one(tree, 0))

    return encode


@runtime_checkable
class SerializerProtocol(Protocol):
    """What a saver needs from a serializer (LangGraph's method names)."""

    def dumps_typed(self, obj: object) -> tuple[str, bytes]:
        """Encode ``obj`` as ``(type string, bytes)``."""
        ...

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Decode what [`dumps_typed`][] returned."""
        ...


class Serializer:
    """Encodes values to tagged JSON bytes and back, for an allowlist of classes.

    Built-in types round-trip without registration: None, bool, int, float (nan and
    infinities too), str, bytes, bytearray, list, tuple, set, frozenset, dict (any
    hashable keys), datetime, date, time, timedelta, timezone, ZoneInfo, UUID,
    Decimal, pathlib paths, pausepoint's ``Interrupt``, ``Send``, ``Command`` and
    ``Overwrite``, and exceptions (read back as
    [`StoredError`][pausepoint.serde.StoredError], type name and message only).
    Enums, dataclasses, NamedTuples and Pydantic v2 models must be registered.

    Args:
        allowed_types: Classes to register, each a class or ``(class, stable_name)``.

    Example:
        >>> ser = Serializer(allowed_types=[MyState])
        >>> ser.loads(ser.dumps(MyState(x=1)))
        MyState(x=1)

    """

    __slots__ = (
        "_decoder",
        "_encoder",
        "_fast",
        "_json",
        "_plain_scan",
        "_scan",
        "_text",
        "_values",
        "registry",
    )

    def __init__(self, allowed_types: Iterable[type | tuple[type, str]] = ()) -> None:
        self.registry = TypeRegistry(allowed_types)
        self._encoder = Encoder(self.registry)
        self._values = Encoder(self.registry, frames=True)  # stored values: may be framed
        self._json = json.JSONEncoder(
            ensure_ascii=True, allow_nan=False, check_circular=False, separators=(",", ":")
        )
        self._text = _text_encoder(self._json)
        # orjson, with the extra installed (serde/fast.py): the same bytes, sooner.
        self._fast = orjson_enabled()
        self._decoder = json.JSONDecoder(object_hook=make_object_hook(self.registry))
        # Set by JSONDecoder.__init__ (the C scanner when available); not in its stubs.
        self._scan: Callable[[str, int], tuple[object, int]] = getattr(self._decoder, "scan_once")  # noqa: B009
        self._plain_scan: Callable[[str, int], tuple[object, int]] = getattr(  # noqa: B009
            json.JSONDecoder(), "scan_once"
        )

    def register(self, cls: T, *, name: str | None = None) -> T:
        """Allow ``cls`` (Enum, dataclass, NamedTuple, Pydantic model); usable as a decorator.

        Args:
            cls: The class to allow.
            name: The stable name stored in payloads; ``module.QualName`` by default.
                Give one explicitly to be free to move or rename the class later.

        Returns:
            ``cls`` itself.

        Raises:
            TypeError: ``cls`` is of another kind, or ``name`` is already taken.

        """
        self.registry.register(cls, name=name)
        return cls

    def register_schema(self, schema: object) -> list[type[object]]:
        """Allow every Enum, dataclass, NamedTuple and Pydantic class ``schema`` declares.

        The engine calls this with a graph's state, input and output schemas, so the
        types a user declares work with no explicit registration.

        Returns:
            The classes registered.
        """
        found = types_in_schema(schema)
        for cls in found:
            if self.registry.for_type(cls) is None:
                self.registry.register(cls)
        return found

    def to_tree(self, obj: object, *, label: str = "value") -> Json:
        """Return the JSON-native tagged tree of ``obj`` (what [`dumps`][] writes as JSON).

        Raises:
            SerializationError: ``obj`` holds a value of an unsupported type.

        """
        return self._tree(self._encoder, obj, label)

    def _tree(self, encoder: Encoder, obj: object, label: str) -> Json:
        try:
            return encoder.encode(obj)
        except Unencodable:
            raise self._explain(obj, label) from None
        except RecursionError:
            raise SerializationError(
                f"cannot serialize {label}: it is nested too deeply or contains a "
                "reference to itself; store a flatter value"
            ) from None

    def _explain(self, obj: object, label: str) -> SerializationError:
        found = self._encoder.locate(obj)
        path, bad = found if found is not None else ("", obj)
        bad_type = type(bad)
        name, cls = type_name(bad_type), bad_type.__qualname__
        at = f", at {path}" if path else ""
        return SerializationError(
            f"cannot serialize {label}{at}: values of type {name!r} are not supported, "
            "so nothing was written. If it is an Enum, dataclass, NamedTuple or Pydantic "
            "model, declare it in the graph's state schema (compile() allows the types a "
            "schema declares) or register it on the saver's serializer before running the "
            f"graph: saver.serde.register({cls}) (or pass serde=Serializer(allowed_types="
            f"[{cls}]) to the saver); otherwise convert it to built-in data (dict, list, "
            "str, ...) before storing it"
        )

    def dumps(self, obj: Any, *, label: str = "value") -> bytes:
        """Encode ``obj`` to bytes (ASCII JSON).

        Args:
            obj: The value to encode.
            label: What the value is, for error messages (e.g. ``"channel 'foo'"``).

        Raises:
            SerializationError: ``obj`` holds a value of an unsupported type, or one
                that cannot be written as JSON (an int with more digits than Python
                converts to text, say).

        """
        try:
            return self._dumps(obj, label)
        except ValueError as exc:
            where = self._failing_part(obj, label)
            raise SerializationError(f"{where} cannot be stored: {exc}") from None

    def _failing_part(self, obj: object, label: str) -> str:
        """The path (``label['key'][0]``) of the innermost part that fails to encode."""
        parts: list[tuple[object, object]] = []
        if isinstance(obj, dict):
            parts = list(cast(dict[object, object], obj).items())
        elif isinstance(obj, list | tuple):
            parts = list(enumerate(cast(Sequence[object], obj)))
        for key, value in parts:
            try:
                self._dumps(value, label)
            except ValueError:
                return self._failing_part(value, f"{label}[{key!r}]")
            except SerializationError:
                continue
        return label

    def _dumps(self, obj: Any, label: str) -> bytes:
        if obj is None:  # the commonest pending write: an edge trigger's value
            return b"null"
        kind: type[Any] = type(obj)  # pyright: ignore[reportUnknownVariableType]
        if kind is str:  # JSON as they are: no tree to walk
            return _json_string(obj).encode("ascii")
        if kind is int:
            return int.__repr__(obj).encode("ascii")
        if kind is bool:
            return b"true" if obj else b"false"
        if kind is bytes:  # a file's contents: no JSON pass
            return _dumps_bytes(obj)
        return self._dumps_tree(obj, kind, label)

    def _dumps_tree(self, obj: Any, kind: type[object], label: str) -> bytes:
        # A flat dict, or a list of str/int/bool/None (checked in C), is JSON as it is:
        # encoded directly, a quarter cheaper than through the tree walk (README.md of
        # benchmarks/, "Figures behind the comments").
        flat = (kind is dict and is_flat_json(obj)) or (
            kind is list and FLAT_VALUES.issuperset(map(type, obj))  # pyright: ignore[reportUnknownArgumentType]
        )
        if flat:  # small: the C encoder costs less than orjson and its checks here
            return self._text(obj).encode("ascii")
        if self._fast and (kind is dict or kind is list):
            # Plain JSON is its own tree: orjson writes it, and refuses the rest fast.
            out = orjson_plain(obj)
            if out is not None:
                return out
        try:
            return self._bytes(self._tree(self._values, obj, label))
        except NeedsFrame:  # large bytes inside: encoded again, they go after the JSON
            ranges = Ranges()
            tree = self._tree(Encoder(self.registry, frames=True, ranges=ranges), obj, label)
            return frame(self._bytes(tree), ranges)

    def _bytes(self, tree: Json) -> bytes:
        """The ASCII JSON of a JSON-native tree: orjson's when it writes the same bytes."""
        if self._fast and (out := orjson_text(tree)) is not None:
            return out
        return self._text(tree).encode("ascii")

    def loads(self, data: bytes | str) -> Any:
        """Decode bytes written by [`dumps`][].

        Raises:
            CheckpointDecodeError: The data is corrupt, not pausepoint's format, or names
                a type that is not registered. Nothing is imported or executed.

        """
        try:
            if type(data) is bytes and (raw := load_bytes(data)) is not None:
                return raw  # a bytes value, as dump_bytes wrote it: no JSON pass
            if type(data) is bytes and data.startswith(MAGIC):
                return self._load_framed(data)
            value: object = None
            big = len(data) >= _UNTAGGED_FROM  # small ones: not worth looking
            scan = self._scan
            if big and _untagged(data):
                if self._fast and (value := orjson_load(data)) is not FALLBACK:
                    return value  # the same value as json's, sooner (serde/fast.py)
                scan = self._plain_scan
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            # The scanner directly: JSONDecoder.decode adds two regex matches and
            # two calls around it (a third of decoding a small value).
            try:
                value, end = scan(text, 0)
            except StopIteration:
                end = -1
            if end != len(text):  # whitespace around it, or an error worth its message
                value = self._decoder.decode(text)
            return value
        except CheckpointDecodeError as exc:
            raise exc.with_message(f"cannot decode a stored value: {exc}") from None
        except (RecursionError, MemoryError) as exc:  # crafted nesting or size
            raise CheckpointDecodeError(
                f"cannot decode a stored value: it is nested too deeply or too large to "
                f"decode ({type(exc).__name__}); nothing was built from it"
            ) from None
        except Exception as exc:  # any failure inside a crafted payload is a decode error
            raise CheckpointDecodeError(
                f"cannot decode a stored value: {type(exc).__name__}: {exc}; the row is "
                "corrupt or was not written by this version of pausepoint"
            ) from exc

    def _load_framed(self, data: bytes) -> object:
        text, tail = unframe(data)
        with reading(tail):
            value, end = self._scan(text, 0)
        if end != len(text):
            raise CheckpointDecodeError(
                f"a framed payload's JSON has {len(text) - end} bytes after its value"
            )
        return value

    def dumps_typed(self, obj: object) -> tuple[str, bytes]:
        """Encode ``obj`` as ``(type, bytes)``, the pair savers store.

        The type is [`FORMAT`][], or [`FRAMED`][] when large bytes follow the JSON.
        """
        data = self.dumps(obj)
        return (FRAMED if data.startswith(MAGIC) else FORMAT), data

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Decode a ``(type, bytes)`` pair from [`dumps_typed`][].

        Raises:
            CheckpointDecodeError: The type is not [`FORMAT`][] (a row from another
                library or an unknown format version) or the bytes cannot be decoded.

        """
        kind, payload = data
        if kind not in (FORMAT, FRAMED):
            raise CheckpointDecodeError(
                f"cannot decode a stored value of type {kind!r}: this pausepoint reads only "
                f"{FORMAT!r} and {FRAMED!r}; the row was written by another library or a "
                "newer pausepoint"
            )
        if (kind == FRAMED) != payload.startswith(MAGIC):
            raise CheckpointDecodeError(
                f"a stored value of type {kind!r} does not hold that form; the row is corrupt"
            )
        return self.loads(payload)

    def dumps_mapping(self, mapping: Mapping[str, object], *, label: str = "metadata") -> str:
        """Encode a str-keyed mapping as a JSON object text whose keys stay plain.

        Used for checkpoint metadata, so databases can filter on its top-level keys.
        """
        given: Any = mapping
        kind = type(given)  # pyright: ignore[reportUnknownVariableType]
        if kind is dict and is_flat_json(given):  # a step's metadata: its own tree
            return self._text(given)
        tree = {str(k): self.to_tree(v, label=f"{label}[{k!r}]") for k, v in mapping.items()}
        return self._text(tree)

    def loads_mapping(self, text: str | bytes) -> dict[str, Any]:
        """Decode what [`dumps_mapping`][] wrote.

        Raises:
            CheckpointDecodeError: The text is not such an object.

        """
        value = self.loads(text)
        if not isinstance(value, dict):
            raise CheckpointDecodeError("stored metadata is not a JSON object")
        return value  # pyright: ignore[reportUnknownVariableType]


_DEFAULT = Serializer()


def dumps(obj: object) -> bytes:
    """Encode ``obj`` with a serializer that allows only built-in types."""
    return _DEFAULT.dumps(obj)


def loads(data: bytes | str) -> Any:
    """Decode bytes written by [`dumps`][] (built-in types only)."""
    return _DEFAULT.loads(data)
