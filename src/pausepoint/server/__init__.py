"""`pausepoint serve`: the LangGraph Server HTTP API over pausepoint graphs.

Needs the ``server`` extra (``pip install 'pausepoint[server]'``: Starlette, uvicorn).
See docs/server.md for starting it, the endpoints, auth and the multitask strategies.
"""
