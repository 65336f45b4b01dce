"""Runs over a PostgreSQL job queue: ``pausepoint worker`` processes on many machines.

``pausepoint serve --db postgresql://...`` records each run ``pending`` in its tables
(`pausepoint.server.store`) and defers a job on the `procrastinate` queue naming the
run's thread (`pausepoint.workers.queue`); ``pausepoint worker`` processes take the
jobs (`pausepoint.workers.process`), claim the thread's next run in the records and
execute it with the server's own worker code (`pausepoint.server.worker`). Periodic
jobs on the same queue (`pausepoint.workers.tasks`) repair what dead workers left,
sweep deadlines and delete old queue rows. See docs/deploying.md.
"""

__all__: list[str] = []
