"""`KeyRing`: AES-256-GCM with key ids, the `Sealer` every saver takes as ``encryption=``.

A token is ``format byte (1) | key id length (1) | key id | nonce (12) | ciphertext+tag``.
The nonce is random (96 bits) for each seal; the associated data (the row a value is
stored in, built by the saver) is authenticated, not stored. The first key seals;
any key of the ring opens what it sealed, found by the id the token names.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from collections.abc import Callable, Mapping

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["KeyProvider", "KeyRing", "new_key"]

KeyProvider = Callable[[], Mapping[str, bytes]]
"""A function returning the keys (id → 32 bytes), the key that seals first."""

_FORMAT = 1
_NONCE = 12
_KEY_BYTES = 32


def new_key() -> bytes:
    """A fresh random 256-bit key (keep it out of the database: docs/security.md)."""
    return AESGCM.generate_key(bit_length=256)


class KeyRing:
    """AES-256-GCM keys by id: the first seals, any opens.

    Args:
        keys: Key id → 32-byte key, in order (the first seals new rows), or a
            `KeyProvider` returning them: called now and again by [`reload`][]. Keys
            come from the application (a secret manager, the environment), never
            from the database.
        allow_plaintext: Read rows stored unencrypted (while migrating a database
            to encryption; `pausepoint rekey` then seals them). Otherwise such rows
            raise ``CheckpointDecodeError``.

    Raises:
        ValueError: No keys, a key that is not 32 bytes, or an id that is empty or
            longer than 255 bytes (UTF-8).
    """

    __slots__ = ("_allow", "_provider", "_state")

    def __init__(
        self, keys: Mapping[str, bytes] | KeyProvider, *, allow_plaintext: bool = False
    ) -> None:
        self._allow = allow_plaintext
        self._provider: KeyProvider = keys if callable(keys) else (lambda: keys)
        # (ciphers by key id, the sealing key's id, the digest key): replaced whole by
        # reload(), so a thread sealing meanwhile sees the old ring or the new one.
        self._state: tuple[dict[bytes, AESGCM], bytes, bytes] = ({}, b"", b"")
        self.reload()

    def reload(self) -> None:
        """Read the keys again from the provider (a rotation without a restart)."""
        keys = dict(self._provider())
        if not keys:
            raise ValueError("KeyRing needs at least one key: {key_id: 32 random bytes}")
        ciphers: dict[bytes, AESGCM] = {}
        for key_id, key in keys.items():
            ident = str(key_id).encode()
            if not 0 < len(ident) < 256:
                raise ValueError(f"key id {key_id!r} must be 1 to 255 bytes long")
            if not isinstance(key, bytes) or len(key) != _KEY_BYTES:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValueError(
                    f"key {key_id!r} must be {_KEY_BYTES} bytes (AES-256), "
                    f"not {len(key) if isinstance(key, bytes) else type(key).__name__}; "  # pyright: ignore[reportUnnecessaryIsInstance]
                    "make one with pausepoint.crypto.new_key()"
                )
            ciphers[ident] = AESGCM(key)
        first_id, first_key = next(iter(keys.items()))
        digest_key = hmac.digest(first_key, b"pausepoint/value-digest", "sha256")
        self._state = (ciphers, str(first_id).encode(), digest_key)

    @classmethod
    def from_env(cls, name: str = "PAUSEPOINT_KEYS", *, allow_plaintext: bool = False) -> KeyRing:
        """The ring an environment variable holds: ``id:base64key`` items, comma-separated.

        The sealing key first (``k2:...,k1:...``); what the command line reads.

        Raises:
            ValueError: The variable is unset or empty, or an item is malformed.
        """
        text = os.environ.get(name, "").strip()
        if not text:
            raise ValueError(f"${name} is not set")
        keys: dict[str, bytes] = {}
        for item in text.split(","):
            key_id, sep, encoded = item.strip().partition(":")
            if not sep or not key_id:
                raise ValueError(f"${name} wants id:base64key items separated by commas")
            try:
                keys[key_id] = base64.b64decode(encoded, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError(f"${name}: key {key_id!r} is not base64") from None
        return cls(keys, allow_plaintext=allow_plaintext)

    @property
    def allow_plaintext(self) -> bool:
        """Whether rows stored unencrypted are read."""
        return self._allow

    @property
    def key_ids(self) -> tuple[str, ...]:
        """The ids of the keys, the one that seals first."""
        return tuple(k.decode() for k in self._state[0])

    def seal(self, plaintext: bytes, aad: bytes) -> bytes:
        """Encrypt ``plaintext`` with the first key, bound to ``aad``."""
        ciphers, first, _ = self._state
        nonce = os.urandom(_NONCE)
        sealed = ciphers[first].encrypt(nonce, plaintext, aad)
        return b"".join((bytes((_FORMAT, len(first))), first, nonce, sealed))

    def open(self, token: bytes, aad: bytes) -> bytes:
        """Decrypt a token `seal` made for the same ``aad``.

        Raises:
            ValueError: An unknown format or a key id not in the ring.
            cryptography.exceptions.InvalidTag: The token was sealed for another row
                (other ``aad``) or has been changed.
        """
        ident = self.key_id_of(token)
        cipher = self._state[0].get(ident.encode())
        if cipher is None:
            raise ValueError(f"it is sealed with key {ident!r}, which is not in the ring")
        start = 2 + token[1]
        return cipher.decrypt(token[start : start + _NONCE], token[start + _NONCE :], aad)

    def key_id_of(self, token: bytes) -> str:
        """The id of the key that sealed ``token``.

        Raises:
            ValueError: ``token`` is not in this format.
        """
        if len(token) < 2 or token[0] != _FORMAT or len(token) < 2 + token[1] + _NONCE + 16:
            raise ValueError("it is not a KeyRing token (unknown format)")
        return token[2 : 2 + token[1]].decode(errors="replace")

    def current(self, token: bytes) -> bool:
        """Whether ``token`` is sealed with the first key (``rekey`` leaves it)."""
        return len(token) > 2 and token[2 : 2 + token[1]] == self._state[1]

    def digest(self, data: bytes) -> str:
        """A keyed digest naming a stored value (HMAC-SHA256, 128 bits, hex)."""
        return hmac.new(self._state[2], data, hashlib.sha256).hexdigest()[:32]
