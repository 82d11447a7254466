"""Nerve from Python: shared-memory channels, LCM event logs, and ``nerve.lcm`` (LCM's Python module on Nerve).

- :class:`Bus`: publish and subscribe over any transport by URL (``udpm://``, ``mpudpm://``, ``shm://``,
  ``inproc://``, ``memq://``, ``file://``; ``None`` takes ``NERVE_URL``, ``LCM_DEFAULT_URL``, then LCM's default):
  ``publish(channel, data)``, ``subscribe(pattern, handler, capacity=30, overflow="drop_oldest")`` with handlers
  called as LCM calls them, ``handler(channel, data)``, from ``handle()`` / ``handle_timeout(ms)``; ``fileno()``;
  ``type=`` hands over decoded messages; asyncio: ``async for channel, msg in bus.messages(pattern)``,
  ``await bus.next(pattern)``.
- :class:`Channel`: Nerve's shared-memory channels (the newest message always wins; a writer never waits for a
  reader). ``Channel.create(name, frames=..., frame_size=..., mode=0o600)`` / ``open`` / ``open_or_create`` /
  ``remove`` / ``list``; ``put(data)``; ``get(newest=False, wait=False, timeout=None)`` gives ``(data, missed)`` or
  ``None``; ``get_into(buffer, ...)`` copies into a preallocated buffer; ``loan(size)`` gives a frame to write in
  place (a writable memoryview; ``numpy.frombuffer`` works on it) and commit; ``view(newest=False, wait=False,
  timeout=None)`` gives a :class:`View` of a message in place, without a copy (``numpy.frombuffer(view, ...)``),
  whose ``valid()`` / ``check()`` say whether the writers have reclaimed its frame since (:class:`OverwrittenError`).
- :class:`EventLog`: LCM event logs, read (iteration, ``seek``, ``seek_to_timestamp``; damaged regions are skipped
  and listed in ``damage``, or raise :class:`LogDamageError` with ``strict=True``) and written (``"w"``, ``"a"``).
- ``nerve.lcm``: ``import nerve.lcm as lcm`` in place of ``import lcm`` (``LCM``, ``EventLog``, ``Event``).
- The native codec of the code ``nerve gen -p`` writes, which that code finds here by itself.

Waits and large copies run with the GIL released. Bad input (a file that is not a channel, a damaged log, an
argument of the wrong type) raises a Python exception.
"""

import asyncio as _asyncio
from collections import deque as _deque

from . import _native
from ._native import (Channel, ChannelError, Event, EventLog, Loan, LogDamageError, OverwrittenError, Subscription,
                      View, ViewSubscription, subscribe_views)

__all__ = ["Bus", "Channel", "ChannelError", "Event", "EventLog", "Loan", "LogDamageError", "OverwrittenError",
           "Subscription", "View", "ViewSubscription", "subscribe_views"]
__version__ = "0.1.0"


class Bus(_native.Bus):
    """A publish/subscribe bus on the transport its URL names (see the module docstring), with asyncio on top:
    ``async for channel, msg in bus.messages(pattern, type=...)`` and ``await bus.next(pattern)`` live on the
    running event loop (its reader on :meth:`fileno`), with no thread of their own."""

    def messages(self, pattern, *, type=None, capacity=30):
        """An async iterator of ``(channel, data)`` (or ``(channel, message)`` with ``type=``) for the channels
        ``pattern`` matches; ``close()`` it to unsubscribe."""
        return _Messages(self, pattern, type, capacity)

    async def next(self, pattern, *, type=None):
        """The next ``(channel, data)`` (or ``(channel, message)``) on a channel ``pattern`` matches."""
        it = _Messages(self, pattern, type, 0)
        try:
            return await it.__anext__()
        finally:
            it.close()

    async def _dispatched(self):
        """Waits until the event loop's reader on fileno() has dispatched what arrived (one reader per bus: every
        waiter is woken after each dispatch)."""
        loop = _asyncio.get_running_loop()
        waiters = self.__dict__.setdefault("_nerve_waiters", [])
        fut = loop.create_future()
        waiters.append(fut)
        if len(waiters) == 1:
            loop.add_reader(self.fileno(), self._dispatch_ready, loop)
        await fut

    def _dispatch_ready(self, loop):
        error = None
        try:
            while self.handle_timeout(0):
                pass
        except BaseException as e:  # a handler's exception goes to the waiters, not into the event loop
            error = e
        waiters = self.__dict__.get("_nerve_waiters", [])
        self.__dict__["_nerve_waiters"] = []
        loop.remove_reader(self.fileno())
        for fut in waiters:
            if not fut.done():
                if error is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(error)


class _Messages:
    """The async iterator of :meth:`Bus.messages`."""

    def __init__(self, bus, pattern, type, capacity):
        self._bus = bus
        self._queue = _deque()
        self._sub = bus.subscribe(pattern, lambda ch, m: self._queue.append((ch, m)), capacity=capacity, type=type)

    @property
    def subscription(self):
        return self._sub

    def __aiter__(self):
        return self

    async def __anext__(self):
        while not self._queue:
            await self._bus._dispatched()
        return self._queue.popleft()

    def close(self):
        """Unsubscribes (once)."""
        if self._sub is not None:
            try:
                self._sub.unsubscribe()
            except ValueError:
                pass  # the bus is closed or the subscription is gone
            self._sub = None
