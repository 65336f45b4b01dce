"""pausepoint: durable human-in-the-loop graphs."""

__version__ = "0.1.0.dev0"
