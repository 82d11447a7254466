"""The dynamic codec (nerve-types `dynamic` + `Registry`) against the real LCM 1.5.3.

`crates/types/examples/dynamic_harness.rs` loads the corpus `.lcm` files at run time (no generated code), decodes
each message with the dynamic codec, re-encodes it and prints the value as JSON (tests/interop/README.md, "The
harness protocol"). Random values of every corpus type, encoded by the real LCM Python binding, must decode to the
same values and re-encode to the same bytes; malformed inputs must give errors, never a crash.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import oracle


@pytest.fixture(scope="module")
def harness(request) -> list:
    """The command that runs the harness over the corpus, from the session's build (NERVE_DYNAMIC_HARNESS=path
    overrides)."""
    if os.environ.get("NERVE_DYNAMIC_HARNESS"):
        exe = Path(os.environ["NERVE_DYNAMIC_HARNESS"]).resolve()
    else:
        exe = request.getfixturevalue("debug_build") / "examples" / "dynamic_harness"
    assert exe.exists(), exe
    return [str(exe), str(oracle.CORPUS)]


def test_every_corpus_type_round_trips_against_real_lcm(harness, real_cases, type_descs):
    decodable = {d.name for d in type_descs if not d.fingerprint_only}
    assert {c.type for c in real_cases} == decodable, "a corpus type has no cases"
    oracle.run_harness(harness, real_cases)


def test_more_random_cases(harness):
    oracle.run_harness(harness, oracle.cases(seed=7, per_type=60))


def test_malformed_inputs_are_errors_that_say_where(harness, real_cases):
    blobs = oracle.bad_blobs(real_cases, seed=3, flips=16)
    replies = oracle.run_harness_bad(harness, blobs)
    for blob, reply in zip(blobs, replies):
        if blob.must_fail and blob.data:
            # The error names the type (and the member path below it) and the byte offset.
            error = reply["error"]
            assert error.startswith(blob.type), f"{blob.why}: {error}"
            assert " at byte " in error, f"{blob.why}: {error}"


def test_unknown_types_and_bad_lines_are_errors(harness, real_cases):
    case = real_cases[0]
    lines = f"nosuch.type_t {case.data.hex()}\n{case.type} zz\n{case.type}\n\n"
    proc = subprocess.run(harness, input=lines, capture_output=True, text=True, check=True)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(replies) == 4
    assert all(r["ok"] is False and r["error"] for r in replies), replies
    assert "unknown type 'nosuch.type_t'" in replies[0]["error"]
