"""``python -m pausepoint.cli``: the same as the ``pausepoint`` command."""

from pausepoint.cli import main

raise SystemExit(main())
