"""The approval inbox: a web page and a JSON API for every question a graph's threads wait on.

```python notest
from pausepoint.inbox import create_app
app = create_app(graph)          # a compiled graph with a SQLite or PostgreSQL saver
```

Needs the ``inbox`` extra (``pip install 'pausepoint[inbox]'``: Starlette, uvicorn,
Jinja2, python-multipart). See docs/inbox.md for the walk-through, the JSON API and the
security model.
"""

from __future__ import annotations

try:
    import jinja2 as _jinja2
    import python_multipart as _multipart
    import starlette as _starlette
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        f"pausepoint.inbox needs the 'inbox' extra ({exc.name} is missing): "
        "pip install 'pausepoint[inbox]'"
    ) from exc

from pausepoint.inbox.app import create_app
from pausepoint.inbox.forms import Field, Form, form_for, read_form
from pausepoint.inbox.mount import with_inbox
from pausepoint.inbox.security import AuthHook, new_token

del _jinja2, _multipart, _starlette

__all__ = [
    "AuthHook",
    "Field",
    "Form",
    "create_app",
    "form_for",
    "new_token",
    "read_form",
    "with_inbox",
]
