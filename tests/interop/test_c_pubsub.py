"""Generated C keeps lcm-gen's publish/subscribe API: C programs written for real `lcm-gen -c` output (in the style
of LCM's C examples: a sender, a listener with a typed handler, unsubscribe, a subscription's queue capacity) build
unchanged against Nerve's generated C and run against the real liblcm 1.5.3 of the PyPI wheel over loopback
multicast, printing exactly what the same programs print built on lcm-gen's C. The Nerve-generated builds run under
AddressSanitizer and UndefinedBehaviorSanitizer (liblcm itself is not instrumented)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import harness_c
import oracle

PEDANTIC = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
EXAMPLE = oracle.CORPUS / "exlcm" / "example_t.lcm"

# Shared by the programs: a message built from a number, and its printout (every member, so a decoding difference
# shows).
COMMON = r"""
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <lcm/lcm.h>
#include "exlcm_example_t.h"

static inline void fill(exlcm_example_t *m, int i, int16_t *ranges, char *name)
{
    int k;
    memset(m, 0, sizeof(*m));
    m->timestamp = 1000 + i;
    for (k = 0; k < 3; k++)
        m->position[k] = i + k * 0.5;
    for (k = 0; k < 4; k++)
        m->orientation[k] = -k - i;
    m->num_ranges = i % 5;
    for (k = 0; k < m->num_ranges; k++)
        ranges[k] = (int16_t) (k * 100 - i);
    m->ranges = ranges;
    sprintf(name, "example %d", i);
    m->name = name;
    m->enabled = (int8_t) (i & 1);
}

static inline void print_example(const char *channel, const exlcm_example_t *m)
{
    int k;
    printf("%s: ts=%" PRId64 " pos=(%g,%g,%g) ori=(%g,%g,%g,%g) ranges=[", channel, m->timestamp, m->position[0],
           m->position[1], m->position[2], m->orientation[0], m->orientation[1], m->orientation[2],
           m->orientation[3]);
    for (k = 0; k < m->num_ranges; k++)
        printf("%s%d", k ? "," : "", m->ranges[k]);
    printf("] name='%s' enabled=%d\n", m->name, m->enabled);
}

static inline void pause_ms(int ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long) (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}
"""

# One process: publish and receive its own messages (LCM delivers a process's own messages), a typed handler with
# userdata, queue capacity 1 (of five messages published before handling, one is kept), unsubscribe (nothing more
# is delivered).
SELFTEST = COMMON + r"""
static void on_example(const lcm_recv_buf_t *rbuf, const char *channel, const exlcm_example_t *msg, void *user)
{
    int *count = (int *) user;
    (void) rbuf;
    (*count)++;
    print_example(channel, msg);
}

static int drain(lcm_t *lcm, int ms)
{
    int handled = 0;
    while (lcm_handle_timeout(lcm, ms) > 0)
        handled++;
    return handled;
}

int main(int argc, char **argv)
{
    int16_t ranges[8];
    char name[32];
    int count = 0, i;
    exlcm_example_t msg;
    lcm_t *lcm = lcm_create(argc > 1 ? argv[1] : NULL);
    exlcm_example_t_subscription_t *sub;
    if (!lcm) {
        fprintf(stderr, "lcm_create failed\n");
        return 1;
    }
    sub = exlcm_example_t_subscribe(lcm, "EXAMPLE", &on_example, &count);
    if (!sub)
        return 1;
    for (i = 0; i < 3; i++) {
        fill(&msg, i, ranges, name);
        if (exlcm_example_t_publish(lcm, "EXAMPLE", &msg) != 0)
            return 1;
        if (lcm_handle_timeout(lcm, 2000) <= 0)
            return 1;
    }
    printf("received %d\n", count);

    if (exlcm_example_t_subscription_set_queue_capacity(sub, 1) != 0)
        return 1;
    for (i = 10; i < 15; i++) {
        fill(&msg, i, ranges, name);
        exlcm_example_t_publish(lcm, "EXAMPLE", &msg);
    }
    pause_ms(300);
    drain(lcm, 300);
    printf("with capacity 1, received %d\n", count);

    if (exlcm_example_t_unsubscribe(lcm, sub) != 0)
        return 1;
    fill(&msg, 20, ranges, name);
    exlcm_example_t_publish(lcm, "EXAMPLE", &msg);
    drain(lcm, 300);
    printf("after unsubscribe, received %d\n", count);
    lcm_destroy(lcm);
    return 0;
}
"""

# LCM's send_message.c, bounded: N messages, a pause between them.
SENDER = COMMON + r"""
int main(int argc, char **argv)
{
    int16_t ranges[8];
    char name[32];
    int i, n;
    exlcm_example_t msg;
    lcm_t *lcm;
    if (argc < 3)
        return 2;
    n = atoi(argv[2]);
    lcm = lcm_create(argv[1]);
    if (!lcm)
        return 1;
    pause_ms(300); /* the listener subscribes meanwhile */
    for (i = 0; i < n; i++) {
        fill(&msg, i, ranges, name);
        if (exlcm_example_t_publish(lcm, "EXAMPLE", &msg) != 0)
            return 1;
        pause_ms(20);
    }
    lcm_destroy(lcm);
    return 0;
}
"""

# LCM's listener.c, bounded: print N messages, or give up after a few seconds.
LISTENER = COMMON + r"""
static void on_example(const lcm_recv_buf_t *rbuf, const char *channel, const exlcm_example_t *msg, void *user)
{
    (void) rbuf;
    (*(int *) user)++;
    print_example(channel, msg);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int count = 0, n, tries = 0;
    lcm_t *lcm;
    exlcm_example_t_subscription_t *sub;
    if (argc < 3)
        return 2;
    n = atoi(argv[2]);
    lcm = lcm_create(argv[1]);
    if (!lcm)
        return 1;
    sub = exlcm_example_t_subscribe(lcm, "EXAMPLE", &on_example, &count);
    exlcm_example_t_subscription_set_queue_capacity(sub, 100);
    while (count < n && tries++ < 50)
        lcm_handle_timeout(lcm, 100);
    exlcm_example_t_unsubscribe(lcm, sub);
    lcm_destroy(lcm);
    return count == n ? 0 : 1;
}
"""


def _url(offset: int) -> str:
    port = 41000 + (os.getpid() % 1500) * 8 + offset
    return f"udpm://239.255.76.71:{port}?ttl=0"


@pytest.fixture(scope="module")
def lcm_paths() -> tuple:
    """The real LCM's include and lib directories inside the PyPI wheel."""
    site = next(oracle.VENV.glob("lib/python*/site-packages"))
    include, lib = site / "include", site / "lib"
    if not (include / "lcm" / "lcm.h").exists() or not (lib / "liblcm.so.1").exists():
        pytest.fail(f"no lcm/lcm.h or liblcm.so.1 under {site}: run scripts/setup")
    return include, lib


@pytest.fixture(scope="module")
def builds(nerve_bin, lcm_gen, lcm_paths, tmp_path_factory) -> dict:
    """The three programs built on Nerve's generated C (under ASan + UBSan) and on real lcm-gen's, with the same
    sources and flags."""
    include, lib = lcm_paths
    root = tmp_path_factory.mktemp("c_pubsub")
    nerve_dir, real_dir = root / "nerve", root / "real"
    subprocess.run([str(nerve_bin), "gen", "-c", "--c-cpath", str(nerve_dir), "--c-hpath", str(nerve_dir),
                    str(EXAMPLE)], check=True, capture_output=True, text=True)
    real_dir.mkdir()
    subprocess.run([str(lcm_gen), "-c", "--c-cpath", str(real_dir), "--c-hpath", str(real_dir), str(EXAMPLE)],
                   check=True, capture_output=True, text=True)
    out = {}
    for kind, gen_dir, flags in [("nerve", nerve_dir, ["-O1", *harness_c.SANITIZE]), ("real", real_dir, ["-O1"])]:
        for prog, src in [("selftest", SELFTEST), ("sender", SENDER), ("listener", LISTENER)]:
            c = root / f"{prog}.c"
            c.write_text(src)
            exe = root / f"{prog}-{kind}"
            # lcm-gen's own C does not pass -Werror -pedantic (its headers declare `int f()`); the programs do.
            warn = PEDANTIC if kind == "nerve" else ["-std=gnu99"]
            cmd = ["gcc", *warn, *flags, "-I", str(gen_dir), "-I", str(include), "-o", str(exe), str(c),
                   *map(str, sorted(gen_dir.glob("*.c"))), "-L", str(lib), f"-Wl,-rpath,{lib}", "-llcm"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stderr[-4000:]}"
            out[(prog, kind)] = exe
    return out


def _env() -> dict:
    env = dict(os.environ)
    # liblcm's receive thread is not instrumented; leaks at exit are liblcm's (and glib's) to answer for.
    env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def test_generated_header_declares_lcmgens_pubsub_api(nerve_bin, tmp_path):
    subprocess.run([str(nerve_bin), "gen", "-c", "--c-cpath", str(tmp_path), "--c-hpath", str(tmp_path),
                    str(EXAMPLE)], check=True, capture_output=True)
    h = (tmp_path / "exlcm_example_t.h").read_text()
    for decl in ["#include <lcm/lcm.h>", "exlcm_example_t_subscription_t;", "exlcm_example_t_handler_t)(",
                 "int exlcm_example_t_publish(lcm_t *lcm, const char *channel, const exlcm_example_t *msg);",
                 "int exlcm_example_t_unsubscribe(lcm_t *lcm, exlcm_example_t_subscription_t* hid);",
                 "int exlcm_example_t_subscription_set_queue_capacity("]:
        assert decl in h, decl
    none = tmp_path / "none"
    subprocess.run([str(nerve_bin), "gen", "-c", "--c-no-pubsub", "--c-cpath", str(none), "--c-hpath", str(none),
                    str(EXAMPLE)], check=True, capture_output=True)
    h = (none / "exlcm_example_t.h").read_text()
    assert "lcm/lcm.h" not in h and "_publish" not in h and "_subscribe" not in h


def test_one_process_publishes_subscribes_caps_its_queue_and_unsubscribes(builds):
    outputs = {}
    for kind in ["nerve", "real"]:
        p = subprocess.run([str(builds[("selftest", kind)]), _url(0 if kind == "nerve" else 1)], capture_output=True,
                           text=True, timeout=60, env=_env())
        assert p.returncode == 0, f"{kind}: {p.stdout}\n{p.stderr[-4000:]}"
        outputs[kind] = p.stdout
    lines = outputs["nerve"].splitlines()
    assert "received 3" in lines and "with capacity 1, received 4" in lines and "after unsubscribe, received 4" in lines
    assert "EXAMPLE: ts=1002 pos=(2,2.5,3) ori=(-2,-3,-4,-5) ranges=[-2,98] name='example 2' enabled=0" in lines
    assert outputs["nerve"] == outputs["real"]


@pytest.mark.parametrize("sender_kind,listener_kind", [("nerve", "real"), ("real", "nerve"), ("nerve", "nerve")])
def test_sender_and_listener_processes(builds, sender_kind, listener_kind):
    n = 8
    url = _url({"nerve": 2, "real": 3}[sender_kind] + (2 if listener_kind == "nerve" else 0))
    listener = subprocess.Popen([str(builds[("listener", listener_kind)]), url, str(n)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=_env())
    try:
        sender = subprocess.run([str(builds[("sender", sender_kind)]), url, str(n)], capture_output=True, text=True,
                                timeout=30, env=_env())
        assert sender.returncode == 0, sender.stderr[-4000:]
        out, err = listener.communicate(timeout=30)
    finally:
        if listener.poll() is None:
            listener.kill()
            listener.wait()
    assert listener.returncode == 0, f"{out}\n{err[-4000:]}"
    lines = out.splitlines()
    assert len(lines) == n
    assert lines[5] == "EXAMPLE: ts=1005 pos=(5,5.5,6) ori=(-5,-6,-7,-8) ranges=[] name='example 5' enabled=1"


@pytest.mark.parametrize("lang", ["c99", "c++11"])
def test_generated_pubsub_code_compiles_pedantic(nerve_bin, lcm_paths, tmp_path, lang):
    include, _ = lcm_paths
    files = sorted((oracle.CORPUS / "exlcm").glob("*.lcm"))
    subprocess.run([str(nerve_bin), "gen", "-c", "--c-cpath", str(tmp_path), "--c-hpath", str(tmp_path),
                    *map(str, files)], check=True, capture_output=True)
    compiler = ["gcc", "-std=c99"] if lang == "c99" else ["g++", "-x", "c++", "-std=c++11"]
    for c in sorted(tmp_path.glob("*.c")):
        p = subprocess.run([*compiler, "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", str(tmp_path), "-I",
                            str(include), "-c", str(c), "-o", str(tmp_path / "x.o")], capture_output=True, text=True)
        assert p.returncode == 0, f"{c.name}:\n{p.stderr[-3000:]}"
