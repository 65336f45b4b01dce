"""``KeyRing`` on its own: the token's format, several keys, providers and bad keys."""

from __future__ import annotations

import pytest
from cryptography.exceptions import InvalidTag
from tests.crypto.conftest import KEY1, KEY2

from pausepoint.crypto import KeyRing, new_key


def test_a_token_names_its_key_and_opens_only_with_its_associated_data() -> None:
    ring = KeyRing({"k1": KEY1})
    token = ring.seal(b"secret", b"row 1")
    assert token[0] == 1
    assert token[1] == 2
    assert token[2:4] == b"k1"
    assert ring.key_id_of(token) == "k1"
    assert b"secret" not in token
    assert ring.open(token, b"row 1") == b"secret"
    assert ring.seal(b"secret", b"row 1") != token  # a fresh nonce each time
    with pytest.raises(InvalidTag):
        ring.open(token, b"row 2")
    with pytest.raises(InvalidTag):
        ring.open(token[:-1] + bytes([token[-1] ^ 1]), b"row 1")


def test_the_first_key_seals_and_any_opens() -> None:
    old = KeyRing({"k1": KEY1})
    both = KeyRing({"k2": KEY2, "k1": KEY1})
    sealed_old = old.seal(b"v", b"a")
    assert both.open(sealed_old, b"a") == b"v"
    assert not both.current(sealed_old)
    sealed_new = both.seal(b"v", b"a")
    assert both.key_id_of(sealed_new) == "k2"
    assert both.current(sealed_new)
    with pytest.raises(ValueError, match="'k2', which is not in the ring"):
        old.open(sealed_new, b"a")
    assert both.key_ids == ("k2", "k1")


def test_the_digest_is_keyed() -> None:
    assert KeyRing({"k1": KEY1}).digest(b"v") == KeyRing({"k1": KEY1}).digest(b"v")
    assert KeyRing({"k1": KEY1}).digest(b"v") != KeyRing({"k1": KEY2}).digest(b"v")
    assert len(KeyRing({"k1": KEY1}).digest(b"v")) == 32


def test_a_provider_is_read_again_on_reload() -> None:
    keys = {"k1": KEY1}
    ring = KeyRing(lambda: dict(keys))
    token = ring.seal(b"v", b"a")
    keys = {"k2": KEY2, "k1": KEY1}
    assert ring.key_ids == ("k1",)
    ring.reload()
    assert ring.key_ids == ("k2", "k1")
    assert ring.key_id_of(ring.seal(b"v", b"a")) == "k2"
    assert ring.open(token, b"a") == b"v"


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({}, "at least one key"),
        ({"k1": b"short"}, "must be 32 bytes"),
        ({"k1": "not bytes"}, "must be 32 bytes"),
        ({"": KEY1}, "1 to 255 bytes"),
        ({"k" * 256: KEY1}, "1 to 255 bytes"),
    ],
)
def test_bad_keys_are_refused(keys: dict[str, bytes], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KeyRing(keys)


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    monkeypatch.setenv(
        "MY_KEYS", f"k2:{base64.b64encode(KEY2).decode()},k1:{base64.b64encode(KEY1).decode()}"
    )
    assert KeyRing.from_env("MY_KEYS").key_ids == ("k2", "k1")
    monkeypatch.setenv("MY_KEYS", "k1")
    with pytest.raises(ValueError, match="id:base64key"):
        KeyRing.from_env("MY_KEYS")
    monkeypatch.delenv("MY_KEYS")
    with pytest.raises(ValueError, match="not set"):
        KeyRing.from_env("MY_KEYS")


def test_new_key_is_32_random_bytes() -> None:
    assert len(new_key()) == 32
    assert new_key() != new_key()


def test_a_malformed_token_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        KeyRing({"k1": KEY1}).open(b"\x02\x02k1" + bytes(40), b"")
