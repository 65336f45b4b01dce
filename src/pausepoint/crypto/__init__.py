"""Encryption at rest for every saver: [`KeyRing`][pausepoint.crypto.KeyRing].

```python notest
from pausepoint.checkpoint.sqlite import SqliteSaver
from pausepoint.crypto import KeyRing

ring = KeyRing({"k2": new_key, "k1": old_key})   # the first key encrypts, any decrypts
with SqliteSaver.from_conn_string("app.db", encryption=ring) as saver:
    ...
```

Needs the ``crypto`` extra (``pip install 'pausepoint[crypto]'``: the ``cryptography``
package). docs/security.md gives the threat model, key handling and rotation
(``pausepoint rekey``).
"""

from __future__ import annotations

try:
    import cryptography as _cryptography
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        f"pausepoint.crypto needs the 'crypto' extra ({exc.name} is missing): "
        "pip install 'pausepoint[crypto]'"
    ) from exc

from pausepoint.crypto._keyring import KeyProvider, KeyRing, new_key

del _cryptography

__all__ = ["KeyProvider", "KeyRing", "new_key"]
