"""Views from Python (`Channel.view`): a received shm message as a read-only buffer over its frame in shared memory,
which `numpy.frombuffer` wraps without a copy (a 4 MiB frame here), valid until the channel's writers reclaim the
frame (writers never wait for it), then `valid()` False and `OverwrittenError` from `check()`, `tobytes()` and new
buffer exports; released by `release()`, by leaving a `with` block or by garbage collection, the mapping going
with the last buffer exported from it.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path

import numpy as np
import pytest

nerve = pytest.importorskip("nerve")

MIB4 = 4 << 20


def unique(tag: str) -> str:
    return f"pytest-{tag}-{os.getpid()}-{time.monotonic_ns() % 10**9}"


@pytest.fixture
def shm_dir(tmp_path) -> Path:
    d = tmp_path / "shm"
    d.mkdir()
    return d


def mappings_of(path: Path) -> int:
    """How many mappings of the file this process has (found by inode: /proc names a channel by the temporary
    name it was made under)."""
    inode = str(os.stat(path).st_ino)
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if line.split()[4:5] == [inode])


def frame(value: int) -> np.ndarray:
    a = np.arange(MIB4, dtype=np.uint32).view(np.uint8)[:MIB4].copy()
    a[:8] = value
    return a


def test_a_4_mib_frame_is_wrapped_by_numpy_in_place(shm_dir):
    ch = nerve.Channel.create(unique("view"), frames=4, frame_size=MIB4, dir=shm_dir)
    reader = nerve.Channel.open(ch.name, dir=shm_dir)
    sent = frame(1)
    assert ch.put(sent) == 1
    v = reader.view()
    assert isinstance(v, nerve.View) and len(v) == MIB4 and (v.seq, v.missed) == (1, 0) and v.put_utime > 0
    a = np.frombuffer(v, dtype=np.uint8)
    b = np.frombuffer(v, dtype=np.uint32)  # the frame is 8-byte aligned: any dtype up to 8 bytes
    assert not a.flags.writeable and a.ctypes.data % 8 == 0
    assert a.ctypes.data == b.ctypes.data and np.shares_memory(a, b), "both arrays are the frame itself"
    m = memoryview(v)
    assert m.readonly and m.nbytes == MIB4 and m.format == "B"
    assert np.array_equal(a, sent)
    v.check()
    assert v.valid()
    assert v.tobytes() == sent.tobytes()
    assert reader.view() is None, "nothing new"
    t0 = time.monotonic()
    assert reader.view(timeout=0.05) is None and time.monotonic() - t0 >= 0.04
    # Three more frames fit beside it; the view stays valid.
    for k in range(2, 5):
        ch.put(frame(k))
        assert v.valid(), f"put {k} left the frame alone"
    newest = reader.view(newest=True)
    assert newest.seq == 4 and np.frombuffer(newest, np.uint8)[0] == 4
    m.release()


def test_once_the_writers_reclaim_the_frame_the_view_says_so_and_refuses_new_exports(shm_dir):
    ch = nerve.Channel.create(unique("view-over"), frames=4, frame_size=MIB4, dir=shm_dir)
    reader = nerve.Channel.open(ch.name, dir=shm_dir)
    ch.put(frame(1))
    v = reader.view()
    a = np.frombuffer(v, dtype=np.uint8)
    t0 = time.monotonic()
    for k in range(2, 6):
        ch.put(frame(k))  # the fifth reclaims the first frame: the writer does not wait for the view
    assert time.monotonic() - t0 < 5
    assert not v.valid()
    with pytest.raises(nerve.OverwrittenError, match="message 1 was overwritten"):
        v.check()
    assert issubclass(nerve.OverwrittenError, nerve.ChannelError)
    with pytest.raises(nerve.OverwrittenError):
        v.tobytes()
    with pytest.raises(nerve.OverwrittenError):
        memoryview(v)
    with pytest.raises(nerve.OverwrittenError):
        np.frombuffer(v, np.uint8)
    # The array made while it was valid still reads memory (never a crash): the newer message's bytes, which is
    # why check() comes after reading.
    assert a[0] == 5
    assert "overwritten" in repr(v)


def test_release_context_exit_and_gc_let_the_mapping_go(shm_dir):
    ch = nerve.Channel.create(unique("view-rel"), frames=4, frame_size=4096, dir=shm_dir)
    path = Path(ch.path)
    reader = nerve.Channel.open(ch.name, dir=shm_dir)
    for k in range(3):
        ch.put(bytes([k]) * 4096)
    v1, v2, v3 = reader.view(), reader.view(), reader.view()
    assert (v1.seq, v2.seq, v3.seq) == (1, 2, 3)
    del ch, reader
    gc.collect()
    assert mappings_of(path) == 1, "the views keep the channel mapped"

    v1.release()
    v1.release()  # again: nothing
    assert not v1.valid()
    with pytest.raises(ValueError, match="released"):
        v1.check()
    with pytest.raises(ValueError):
        v1.tobytes()
    with pytest.raises(ValueError):
        memoryview(v1)
    assert "released" in repr(v1)

    with v2 as same:
        assert same is v2
        arr = np.frombuffer(v2, np.uint8)
    assert not v2.valid()  # the block ended the view ...
    assert arr[0] == 1 and arr.sum() == 4096  # ... but the array made in it keeps its memory mapped
    del v1, v2
    gc.collect()
    assert mappings_of(path) == 1
    del arr
    gc.collect()
    assert mappings_of(path) == 1, "v3 still holds it"
    assert np.frombuffer(v3, np.uint8)[0] == 2
    del v3  # never released: garbage collection ends it
    gc.collect()
    assert mappings_of(path) == 0, "the last view gone, the channel is unmapped"


def test_subscribe_views_hands_each_message_over_as_a_view_in_place(shm_dir, monkeypatch):
    """`nerve.subscribe_views`: the bus's shm receive path calling a handler with each message as a View; an
    exception in the handler is reported as unraisable and receiving goes on."""
    import queue
    import sys
    ch = nerve.Channel.create(unique("subview"), frames=4, frame_size=MIB4, dir=shm_dir)
    got, raised = queue.Queue(), []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: raised.append(u.exc_value))

    def handler(channel, view):
        if view.seq == 2:
            raise RuntimeError("from the handler")
        got.put((channel, view))

    with nerve.subscribe_views("pytest-subview-.*", handler, dir=shm_dir) as sub:
        sent = frame(3)
        ch.put(sent)
        channel, view = got.get(timeout=10)
        assert channel == ch.name and isinstance(view, nerve.View) and view.seq == 1
        a = np.frombuffer(view, dtype=np.uint8)
        assert not a.flags.writeable and np.array_equal(a, sent)
        view.check()  # so `a` was the message's
        assert mappings_of(shm_dir / f"nerve-{ch.name}") >= 1
        assert sub.stats()["received"] == 1
        ch.put(frame(4))
        ch.put(frame(5))
        assert got.get(timeout=10)[1].seq == 3, "receiving went on after the handler raised"
        assert len(raised) == 1 and isinstance(raised[0], RuntimeError)
    with pytest.raises(ValueError):
        nerve.subscribe_views("(", lambda c, v: None, dir=shm_dir)
    with pytest.raises(TypeError):
        nerve.subscribe_views(".*", 42, dir=shm_dir)


def test_a_writer_lapping_a_slow_view_handler_never_waits_and_the_view_says_so(shm_dir):
    import queue
    import threading
    ch = nerve.Channel.create(unique("lap"), frames=4, frame_size=64, dir=shm_dir)
    go, got = threading.Event(), queue.Queue()

    def handler(channel, view):
        if view.seq == 1:
            go.wait(10)  # a slow handler holding message 1 (the GIL is released while it waits)
        got.put((view.seq, view.valid(), view))

    with nerve.subscribe_views("pytest-lap-.*", handler, dir=shm_dir) as sub:
        ch.put(b"\x01" + bytes(63))
        time.sleep(0.2)
        t = time.monotonic()
        for i in range(2, 21):
            ch.put(bytes([i]) + bytes(63))  # whole frames: each put reclaims the oldest
        assert time.monotonic() - t < 0.5, "the writer never waits for the handler"
        go.set()
        seq, valid, first = got.get(timeout=10)
        assert (seq, valid) == (1, False)
        with pytest.raises(nerve.OverwrittenError):
            first.check()
        seqs = []
        while not seqs or seqs[-1] != 20:
            seq, valid, view = got.get(timeout=10)
            assert valid and view.tobytes()[0] == seq
            seqs.append(seq)
        assert seqs == sorted(seqs)
        s = sub.stats()
        assert s["lost"] >= 15 and s["received"] + s["lost"] == 20, s
