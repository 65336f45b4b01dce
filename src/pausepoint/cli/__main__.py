"""``python -m pausepoint.cli``: the same as the ``pausepoint`` command."""

from pausepoint.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
