"""LCM's Python API where `nerve.lcm` must behave as LCM 1.5.3's `lcm` module does: memq keeps every publication
until handle() takes it, a second thread in handle() raises RuntimeError, file:// playback gives event k on call k
and raises IOError after the last, and the edges of handle_timeout, unsubscribe inside a handler and queue
capacities. Written as LCM's test/python tests are (unittest) and run against both modules with the same
expectations: LCM_BEHAVIOUR_MODULE names the module (`lcm` or `nerve.lcm`)."""

import importlib
import os
import tempfile
import threading
import time
import unittest

lcm = importlib.import_module(os.environ.get("LCM_BEHAVIOUR_MODULE", "lcm"))


def write_log(path, n, channel="CH", gap_us=1000):
    log = lcm.EventLog(path, "w", overwrite=True)
    for i in range(n):
        log.write_event(1_000_000_000 + i * gap_us, channel, bytes([i]))
    log.close()


class MemqTest(unittest.TestCase):
    def test_published_before_handle_all_arrive_in_order(self):
        lc = lcm.LCM("memq://")
        got = []
        lc.subscribe("A", lambda c, d: got.append(d[0]))
        for i in range(100):
            lc.publish("A", bytes([i]))
        for k in range(100):
            lc.handle()
            self.assertEqual(k + 1, len(got), f"call {k}")
        self.assertEqual(list(range(100)), got)
        self.assertEqual(0, lc.handle_timeout(0))

    def test_queue_capacity_one_zero_and_negative_lose_nothing(self):
        for cap in (1, 0, -1):
            lc = lcm.LCM("memq://")
            got = []
            sub = lc.subscribe("A", lambda c, d: got.append(d))
            self.assertIsNone(sub.set_queue_capacity(cap))
            for i in range(50):
                lc.publish("A", bytes([i]))
            handled = 0
            while handled < 60 and lc.handle_timeout(20) > 0:
                handled += 1
            self.assertEqual(50, handled, f"capacity {cap}")
            self.assertEqual(50, len(got), f"capacity {cap}")

    def test_set_queue_capacity_needs_an_int(self):
        lc = lcm.LCM("memq://")
        sub = lc.subscribe("A", lambda c, d: None)
        with self.assertRaises(TypeError):
            sub.set_queue_capacity("x")

    def test_published_before_subscribing_is_not_delivered(self):
        lc = lcm.LCM("memq://")
        got = []
        lc.publish("A", b"x")
        lc.subscribe("A", lambda c, d: got.append(d))
        self.assertEqual(0, lc.handle_timeout(50))
        self.assertEqual([], got)

    def test_unsubscribe_inside_handler_stops_later_dispatches(self):
        lc = lcm.LCM("memq://")
        got = []
        subs = {}

        def handler(channel, data):
            got.append(data)
            lc.unsubscribe(subs["s"])

        subs["s"] = lc.subscribe("A", handler)
        for _ in range(3):
            lc.publish("A", b"x")
        self.assertEqual(1, lc.handle_timeout(100))
        for _ in range(2):
            lc.handle_timeout(20)  # what these return differs: docs/lcm-differences.md
        self.assertEqual(1, len(got))
        with self.assertRaises(ValueError):
            lc.unsubscribe(subs["s"])


class HandleTimeoutTest(unittest.TestCase):
    def setUp(self):
        self.lc = lcm.LCM("memq://")
        self.got = []
        self.lc.subscribe("A", lambda c, d: self.got.append(d))

    def test_zero_returns_at_once(self):
        t0 = time.monotonic()
        self.assertEqual(0, self.lc.handle_timeout(0))
        self.assertLess(time.monotonic() - t0, 1.0)

    def test_negative_raises(self):
        for v in (-1, -(2**31), 2**31, 2**32 - 1):
            with self.assertRaises(ValueError, msg=v):
                self.lc.handle_timeout(v)

    def test_large_values_are_cut_to_a_c_int_as_lcm_does(self):
        self.lc.publish("A", b"x")
        self.assertEqual(1, self.lc.handle_timeout(2**31 - 1))
        t0 = time.monotonic()
        self.assertEqual(0, self.lc.handle_timeout(2**40))  # 0 ms once cut to 32 bits
        self.assertEqual(0, self.lc.handle_timeout(2**32 + 5))  # 5 ms
        self.assertLess(time.monotonic() - t0, 1.0)
        with self.assertRaises(OverflowError):
            self.lc.handle_timeout(2**64)

    def test_not_an_int_raises(self):
        with self.assertRaises(TypeError):
            self.lc.handle_timeout(1.5)


class SimultaneousHandleTest(unittest.TestCase):
    def run_second_while_first_waits(self, first, second):
        lc = lcm.LCM("memq://")
        lc.subscribe("A", lambda c, d: None)
        result = {}

        def waiter():
            result["first"] = lc.handle() if first == "handle" else lc.handle_timeout(400)

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.1)
        try:
            with self.assertRaises(RuntimeError) as caught:
                lc.handle() if second == "handle" else lc.handle_timeout(10)
        finally:
            if first == "handle":
                lc.publish("A", b"x")
            t.join(10)
        self.assertFalse(t.is_alive())
        self.assertEqual(None if first == "handle" else 0, result["first"])
        self.assertEqual(0, lc.handle_timeout(10), "the object stays usable")
        return str(caught.exception)

    def test_second_handle_raises_runtime_error(self):
        for first in ("handle", "handle_timeout"):
            self.assertEqual(
                "only one thread is allowed to call LCM.handle() or LCM.handle_timeout() at a time",
                self.run_second_while_first_waits(first, "handle"),
            )

    def test_second_handle_timeout_raises_runtime_error(self):
        for first in ("handle", "handle_timeout"):
            self.assertEqual(
                "Simultaneous calls to handle() / handle_timeout() detected",
                self.run_second_while_first_waits(first, "handle_timeout"),
            )


class FilePlaybackTest(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp(suffix=".lcm")
        os.close(fd)
        write_log(self.path, 100)

    def tearDown(self):
        os.unlink(self.path)

    def play(self, options):
        lc = lcm.LCM(f"file://{self.path}?mode=r{options}")
        got = []
        lc.subscribe("CH", lambda c, d: got.append(d[0]))
        for k in range(100):
            lc.handle()
            self.assertEqual(k + 1, len(got), f"call {k} dispatched exactly one event")
            self.assertEqual(k, got[-1], f"call {k} got event {k}")
        with self.assertRaises(IOError):
            lc.handle()
        with self.assertRaises(IOError):
            lc.handle()
        with self.assertRaises(IOError):
            lc.handle_timeout(100)

    def test_event_k_on_call_k_at_the_logs_pace(self):
        t0 = time.monotonic()
        self.play("")
        self.assertGreater(time.monotonic() - t0, 0.09, "100 events 1 ms apart take about 99 ms")

    def test_event_k_on_call_k_as_fast_as_possible(self):
        self.play("&speed=0")


class ProvidersTest(unittest.TestCase):
    def test_url_list(self):
        for url in ("udpm://239.255.76.92:7992?ttl=0", "mpudpm://239.255.76.92:7992?ttl=0", "memq://"):
            lcm.LCM(url)
        fd, path = tempfile.mkstemp(suffix=".lcm")
        os.close(fd)
        lcm.LCM(f"file://{path}?mode=w")
        os.unlink(path)
        for url in ("file:///nonexistent_dir/x.lcm?mode=r", "bogus://", "tcpq://127.0.0.1:1"):
            with self.assertRaises(RuntimeError, msg=url):
                lcm.LCM(url)


if __name__ == "__main__":
    unittest.main()
