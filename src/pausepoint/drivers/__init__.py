"""Drivers: carry out the loop's effects, with threads (sync) or asyncio (async).

Both share everything but the waiting: `pausepoint.drivers.retry` decides
retries, the loop decides everything else.
"""
