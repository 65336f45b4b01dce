"""Secret-looking ``configurable`` keys never reach checkpoint metadata; the words are settable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.crypto import rows
from tests.crypto.graphs import CANARY, build, first_input

from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.config import SECRET_WORDS, set_secret_words


@pytest.fixture
def words() -> Iterator[None]:
    old = set_secret_words((*SECRET_WORDS, "ssn"))
    yield
    set_secret_words(old)


@pytest.mark.usefixtures("words")
def test_added_words_keep_keys_out(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"  # no keys at all: the rule holds without encryption
    conf = {
        "configurable": {
            "thread_id": "t1",
            "customer_SSN": f"{CANARY}-ssn",
            "DB_Password": f"{CANARY}-pw",
            "user": "u1",
        }
    }
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = build(saver)
        graph.invoke(first_input(), conf)
        meta = graph.get_state(conf).metadata
    assert meta["user"] == "u1"
    assert "customer_SSN" not in meta
    assert "DB_Password" not in meta
    data = rows.database_bytes(path)
    assert data.count(f"{CANARY}-ssn".encode()) == 0
    assert data.count(f"{CANARY}-pw".encode()) == 0


def test_an_empty_word_is_refused() -> None:
    with pytest.raises(ValueError, match="every key"):
        set_secret_words(("key", ""))
    assert set_secret_words(SECRET_WORDS) == SECRET_WORDS  # nothing was changed
