"""The Python roles of the latency and echo suites (bench/README.md): the same roles, arguments and output lines as
nerve-bench's own (src/harness/nerve.rs), on a Python bus.

    python roles.py --module=nerve lat-recv URL CHANNEL COUNT MAX_MS
    python roles.py --module=nerve lat-send URL CHANNEL COUNT HZ SIZE
    python roles.py --module=nerve.lcm echo-client URL REQ REP MAX_MS
    python roles.py --module=lcm echo-source URL REQ REP_PREFIX CLIENTS RATE_BPS DURATION_MS DRAIN_MS

`--module` is the bus the role uses: `nerve` (nerve.Bus), or an LCM Python module, `nerve.lcm` or the real `lcm`
(the echo roles are one program, written for LCM's API, run on either). A latency message's bytes 8..16 are the sender's CLOCK_MONOTONIC
stamp (little-endian ns), taken just before it publishes; the receiver subtracts it from the clock read first thing
in its handler, so a figure is Python publish to Python callback. A message shorter than 16 bytes ends the run.
Output: `ready` once subscribed; the receiver `recv N`, `lat NS` per message, `end`; the sender `sent N`.

Echo (seed 000's test): the client republishes every message of REQ on REP from its handler (run by
`handle_timeout` on the main thread, as an LCM program does) until a message shorter than 16 bytes. The source
publishes 800-byte messages on REQ at RATE_BPS bytes/s (0: as fast as it can) for DURATION_MS on its main thread,
while a second thread runs `handle_timeout` and times each reply on REP_PREFIX<k> (an unbounded queue, as the other
sources have); then it waits up to DRAIN_MS for late replies and prints `sent N NS`, `client K N` per client,
`rtt NS` per reply, `end`.
"""

import importlib
import sys
import threading
import time

CLOCK = time.CLOCK_MONOTONIC


def mono_ns():
    return time.clock_gettime_ns(CLOCK)


def sleep_until_ns(t):
    while True:
        left = t - mono_ns()
        if left <= 0:
            return
        time.sleep(left / 1e9)


def open_bus(module, url):
    if module != "nerve":
        raise SystemExit(f"roles.py: unknown --module {module!r}")
    import nerve

    return nerve.Bus(url)


MSG_SIZE = 800


def echo_client(module, url, req, rep, max_ms):
    lc = importlib.import_module(module).LCM(url)
    stop = [False]

    def on_request(_channel, data):
        if len(data) < 16:
            stop[0] = True
        else:
            lc.publish(rep, data)

    lc.subscribe(req, on_request)
    print("ready", flush=True)
    deadline = mono_ns() + max_ms * 1_000_000
    while not stop[0] and mono_ns() < deadline:
        lc.handle_timeout(20)


def echo_source(module, url, req, prefix, clients, rate_bps, duration_ms, drain_ms):
    lc = importlib.import_module(module).LCM(url)
    received = [0] * clients
    rtt = []

    def on_reply(channel, data):
        now = mono_ns()
        if len(data) < 16:
            return
        try:
            k = int(channel[len(prefix):])
        except ValueError:
            return
        if 0 <= k < clients:
            rtt.append(now - int.from_bytes(data[8:16], "little"))
            received[k] += 1

    lc.subscribe(prefix + "[0-9]+", on_reply).set_queue_capacity(0)
    handling = [True]

    def handler_thread():
        while handling[0]:
            lc.handle_timeout(20)

    th = threading.Thread(target=handler_thread, daemon=True)
    th.start()
    msg = bytearray((i * 7) & 0xFF for i in range(MSG_SIZE))
    per_s = rate_bps / MSG_SIZE
    sent = 0
    t0 = mono_ns()
    end = t0 + duration_ms * 1_000_000
    while True:
        now = mono_ns()
        if now >= end:
            break
        due = int((now - t0) * 1e-9 * per_s) + 1 if per_s > 0 else sent + 1
        while sent < due:
            msg[0:8] = sent.to_bytes(8, "little")
            msg[8:16] = mono_ns().to_bytes(8, "little")
            lc.publish(req, bytes(msg))
            sent += 1
        if per_s > 0:
            sleep_until_ns(min(t0 + int(sent / per_s * 1e9), end))
    send_ns = mono_ns() - t0
    drain_end = mono_ns() + drain_ms * 1_000_000
    while sum(received) < sent * clients and mono_ns() < drain_end:
        time.sleep(0.001)
    handling[0] = False
    th.join()
    for _ in range(3):
        lc.publish(req, bytes(8))
        time.sleep(0.005)
    out = [f"sent {sent} {send_ns}"]
    out.extend(f"client {k} {n}" for k, n in enumerate(received))
    out.extend(f"rtt {x}" for x in rtt)
    out.append("end")
    sys.stdout.write("\n".join(out) + "\n")
    sys.stdout.flush()


def lat_recv(module, url, chan, count, max_ms):
    bus = open_bus(module, url)
    lat = []
    stop = [False]

    def on_message(_channel, data):
        now = mono_ns()
        if len(data) < 16:
            stop[0] = True
            return
        if len(lat) < count:
            lat.append(now - int.from_bytes(data[8:16], "little"))
        if len(lat) >= count:
            stop[0] = True

    bus.subscribe(chan, on_message, capacity=1024)
    print("ready", flush=True)
    deadline = mono_ns() + max_ms * 1_000_000
    while not stop[0] and mono_ns() < deadline:
        bus.handle_timeout(20)
    out = [f"recv {len(lat)}"]
    out.extend(f"lat {x}" for x in lat)
    out.append("end")
    sys.stdout.write("\n".join(out) + "\n")
    sys.stdout.flush()


def lat_send(module, url, chan, count, hz, size):
    bus = open_bus(module, url)
    msg = bytearray(max(size, 16))
    period = int(1e9 / hz)
    t = mono_ns() + period
    for i in range(count):
        sleep_until_ns(t)
        msg[0:8] = i.to_bytes(8, "little")
        msg[8:16] = mono_ns().to_bytes(8, "little")
        bus.publish(chan, msg)
        t += period
    for _ in range(3):
        sleep_until_ns(mono_ns() + 5_000_000)
        bus.publish(chan, bytes(8))
    print(f"sent {count}", flush=True)


def main(argv):
    if len(argv) < 2 or not argv[0].startswith("--module="):
        raise SystemExit(__doc__)
    module, role, args = argv[0].split("=", 1)[1], argv[1], argv[2:]
    if role == "lat-recv" and len(args) == 4:
        lat_recv(module, args[0], args[1], int(args[2]), int(args[3]))
    elif role == "lat-send" and len(args) == 5:
        lat_send(module, args[0], args[1], int(args[2]), float(args[3]), int(args[4]))
    elif role == "echo-client" and len(args) == 4:
        echo_client(module, args[0], args[1], args[2], int(args[3]))
    elif role == "echo-source" and len(args) == 7:
        echo_source(module, args[0], args[1], args[2], int(args[3]), float(args[4]), int(args[5]), int(args[6]))
    else:
        raise SystemExit(f"roles.py: unknown role or arguments: {role} {args}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
