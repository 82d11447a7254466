"""LCM's Python module (PyPI ``lcm`` 1.5.3) on Nerve: ``import nerve.lcm as lcm`` and an LCM program runs unchanged.

:class:`LCM` publishes and subscribes on Nerve's bus (``nerve.Bus``): every LCM URL, and Nerve's ``shm://`` and
``inproc://`` too. :class:`EventLog` and :class:`Event` read and write logs through Nerve's log reader and writer
(``nerve.EventLog``).

The same API, values and exceptions as LCM's for the same use and misuse (a bad URL, a bad timeout, unsubscribing
twice; a bad mode, refusing to overwrite, reading in write mode, writing in read mode or after ``close()``).
Deliberate differences (bindings/python/README.md, and docs/lcm-differences.md):

- a full subscription queue drops its oldest message (LCM drops the newest): a slow handler gets the newest data
  (on ``memq://`` nothing is dropped, as in LCM);
- a subscription pattern that is not a valid regular expression raises ``ValueError`` (LCM prints an error and
  returns a subscription that never matches);
- a damaged log is read past the damage (LCM stops at the first damaged event);
- ``write_event`` refuses an empty channel name with ``ValueError`` (LCM writes an event it cannot read back), and
  takes any bytes-like ``data`` (LCM: only ``bytes`` or ``str``);
- ``tell()`` / ``size()`` / ``seek()`` on a closed log raise ``ValueError`` (LCM crashes), and
  ``seek_to_timestamp`` past the last event leaves the log at its end (LCM raises ``SystemError``).

docs/lcm-differences.md lists every difference.
"""

import errno as _errno
import os as _os
import threading as _threading
from os import PathLike as _PathLike

from . import _native

__all__ = ["LCM", "LCMSubscription", "Event", "EventLog"]


class LCMSubscription(object):
    """A subscription made by :meth:`LCM.subscribe`."""

    def __init__(self, sub):
        self._sub = sub

    def set_queue_capacity(self, num_messages):
        """Sets how many messages may wait for ``handle()``; 0 or less: unbounded (as in LCM)."""
        if not isinstance(num_messages, int):
            raise TypeError(f"'{type(num_messages).__name__}' object cannot be interpreted as an integer")
        self._sub.set_queue_capacity(max(num_messages, 0))


class LCM(object):
    """An LCM instance: publish and subscribe on the bus ``provider`` names (LCM's URL; ``None`` for the default)."""

    def __init__(self, provider=None):
        if provider is not None and not isinstance(provider, str):
            raise TypeError(f"argument 1 must be str or None, not {type(provider).__name__}")
        try:
            self._bus = _native.Bus(provider)
        except (ValueError, OSError) as e:
            raise RuntimeError("Couldn't create LCM") from e
        self._subs = set()
        # LCM's: one thread at a time in handle() / handle_timeout(); a second one raises RuntimeError.
        self._handling = _threading.Lock()
        self._handler_thread = None
        # Receiving ended for good (a file:// log played to its end): every later handle() raises, as in LCM.
        self._ended = False

    def _handle_call(self, second_call_message, fail_message, call):
        if self._handler_thread == _threading.get_ident():
            return call()  # from inside a handler: the bus refuses it with its own RuntimeError
        if not self._handling.acquire(blocking=False):
            raise RuntimeError(second_call_message)
        self._handler_thread = _threading.get_ident()
        try:
            if self._ended:
                raise OSError(fail_message)
            try:
                return call()
            except OSError as e:
                if self._bus.provider == "file":
                    self._ended = True
                raise OSError(fail_message) from e
        finally:
            self._handler_thread = None
            self._handling.release()

    def publish(self, channel, data):
        """Publishes ``data`` (bytes; a str is sent as UTF-8) on ``channel``."""
        if not isinstance(channel, str):
            raise TypeError(f"argument 1 must be str, not {type(channel).__name__}")
        if isinstance(data, str):
            data = data.encode("utf-8")
        elif not isinstance(data, bytes):
            raise TypeError(f"a bytes-like object is required, not '{type(data).__name__}'")
        self._bus.publish(channel, data)

    def subscribe(self, channel, callback):
        """Calls ``callback(channel, data)`` from ``handle()`` for every message on a channel the regular expression
        ``channel`` matches in full. Returns an :class:`LCMSubscription`."""
        sub = LCMSubscription(self._bus.subscribe(channel, callback))
        self._subs.add(id(sub))
        return sub

    def unsubscribe(self, handle):
        """Removes a subscription."""
        if not isinstance(handle, LCMSubscription) or id(handle) not in self._subs:
            raise ValueError("Invalid Subscription object")
        self._subs.discard(id(handle))
        handle._sub.unsubscribe()

    def handle(self):
        """Waits for a message and calls the handlers of its subscriptions. Raises ``RuntimeError`` while another
        thread is inside ``handle()`` or ``handle_timeout()`` on this object, and ``IOError`` once a ``file://`` log
        has been played to its end (as LCM does)."""
        self._handle_call(
            "only one thread is allowed to call LCM.handle() or LCM.handle_timeout() at a time",
            "lcm_handle() returned -1",
            self._bus.handle,
        )

    def handle_timeout(self, timeout_millis):
        """Like :meth:`handle`, waiting at most ``timeout_millis`` ms: > 0 if a message was handled, 0 if none came."""
        if not isinstance(timeout_millis, int):
            raise TypeError(f"'{type(timeout_millis).__name__}' object cannot be interpreted as an integer")
        if not -(2**63) <= timeout_millis < 2**63:
            raise OverflowError("Python int too large to convert to C long")
        # LCM reads a C long and passes it on as a C int: what lies beyond 32 bits is cut off (2**32 + 5 waits 5 ms).
        timeout_millis = (timeout_millis + 2**31) % 2**32 - 2**31
        if timeout_millis < 0:
            raise ValueError("invalid timeout")
        return self._handle_call(
            "Simultaneous calls to handle() / handle_timeout() detected",
            "lcm_handle_timeout() returned -1",
            lambda: 1 if self._bus.handle_timeout(timeout_millis) else 0,
        )

    def fileno(self):
        """A file descriptor that is readable while a message waits for :meth:`handle` (for select)."""
        return self._bus.fileno()


class Event(object):
    """Data structure representing a single event in an LCM EventLog"""

    def __init__(self, eventnum, timestamp, channel, data):
        self.eventnum = eventnum
        """Event number"""
        self.timestamp = timestamp
        """Microseconds since 00:00:00 Jan 1, 1970 UTC marking the time at which the message was originally received"""
        self.channel = channel
        """Channel on which message was received"""
        self.data = data
        """Binary string containing raw message data"""


class EventLog(object):
    """EventLog is a class for reading and writing LCM log files in Python.

    An EventLog opened for reading supports the iterator protocol, with each call to next() returning the next
    :class:`Event` in the log (iteration starts from the beginning of the file, as in LCM)."""

    def __init__(self, path, mode="r", overwrite=False):
        """Opens ``path`` for reading (``"r"``) or writing (``"w"``); an existing file is overwritten in ``"w"``
        mode only with ``overwrite=True`` (else ``ValueError``)."""
        if mode not in ["r", "w"]:
            raise ValueError("invalid event log mode")
        if mode == "w" and _os.path.exists(path) and not overwrite:
            raise ValueError("Refusing to overwrite existing log file unless overwrite is set to True")
        self.mode = mode
        if isinstance(path, _PathLike):
            path = str(path)
        if not isinstance(path, str):
            raise TypeError(f"argument 1 must be str, not {type(path).__name__}")
        missing = path if mode == "r" else (_os.path.dirname(path) or ".")
        if not _os.path.exists(missing):
            raise FileNotFoundError(_errno.ENOENT, _os.strerror(_errno.ENOENT))
        self.c_eventlog = _native.EventLog(path, mode, overwrite=True)
        self.f = None

    def seek(self, filepos):
        """Positions the internal file pointer at the next event that starts at or is after byte offset filepos."""
        if not isinstance(filepos, int):
            raise TypeError(f"'{type(filepos).__name__}' object cannot be interpreted as an integer")
        if filepos < 0:
            self.c_eventlog.tell()  # a closed log still raises; otherwise a negative offset changes nothing
            return None
        return self.c_eventlog.seek(filepos)

    def seek_to_timestamp(self, timestamp):
        """Seek (approximately) to a particular timestamp."""
        return self.c_eventlog.seek_to_timestamp(timestamp)

    def size(self):
        """The total size of the log file, in bytes."""
        return self.c_eventlog.size()

    def close(self):
        """Closes the log file. After an EventLog is closed, it is essentially useless."""
        return self.c_eventlog.close()

    def write_event(self, utime, channel, data):
        """Writes an event to the log file. Log file must be opened in write mode."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        elif data is None:
            raise TypeError("a bytes-like object is required, not 'NoneType'")
        return self.c_eventlog.write_event(utime, channel, data)

    def read_next_event(self):
        """The next :class:`Event` in the log file, or None at its end."""
        tup = self.c_eventlog._read_tuple()
        if not tup:
            return None
        return Event(*tup)

    def __iter__(self):
        self.c_eventlog.seek(0)
        return self

    def __next__(self):
        return self.next()

    def next(self):
        next_evt = self.read_next_event()
        if not next_evt:
            raise StopIteration
        return next_evt

    def tell(self):
        """The current position of the internal file pointer, in bytes."""
        return self.c_eventlog.tell()
