"""The superstep loop: a sans-IO state machine shared by the sync and async drivers.

Nothing under this package does I/O, starts threads or uses ``async def``: the
loop yields effects (`pausepoint.loop.effects`) and the drivers in
`pausepoint.drivers` carry them out and send back their outcomes.
"""
