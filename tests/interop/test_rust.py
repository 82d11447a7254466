"""Nerve's generated Rust against the real LCM 1.5.3: byte-identical encodings, equal values, views that agree with
the full decode, and malformed inputs that never crash the decoder or the views.

The harness (harness_rust.py) is built from `nerve gen --rust` over the whole corpus, fingerprint-only types
included (they must compile even though the real Python binding cannot make values for them).
"""

from __future__ import annotations

import pytest

import harness_rust
import oracle


@pytest.fixture(scope="module")
def harness(nerve_bin, type_descs) -> list:
    return [str(harness_rust.build(nerve_bin, [d.name for d in type_descs]))]


def _check_views(replies: list, cases: list) -> None:
    descs = oracle.desc_by_name()
    failures = []
    for c, r in zip(cases, replies):
        try:
            if "view_error" in r:
                raise AssertionError(f"the view failed where the decoder succeeded: {r['view_error']}")
            oracle.check_value(descs, c.type, c.value, r["view"])
            if r["view_len"] != len(c.data) - 8:
                raise AssertionError(f"view body_len {r['view_len']}, message body is {len(c.data) - 8} bytes")
        except AssertionError as e:
            failures.append(f"{c.type} {c.data.hex()[:120]}: {e}")
    assert not failures, f"{len(failures)} view mismatches:\n" + "\n".join(failures[:10])


def test_every_corpus_type_has_cases(real_cases, type_descs):
    with_cases = {c.type for c in real_cases}
    assert with_cases == {d.name for d in type_descs if not d.fingerprint_only}


def test_decode_reencode_matches_real_lcm(harness, real_cases):
    replies = oracle.run_harness(harness, real_cases)
    _check_views(replies, real_cases)


def test_more_random_cases_match_real_lcm(harness):
    cases = oracle.cases(seed=7, per_type=60)
    replies = oracle.run_harness(harness, cases)
    _check_views(replies, cases)


def test_malformed_inputs_never_crash(harness, real_cases):
    blobs = oracle.bad_blobs(real_cases, seed=3)
    replies = oracle.run_harness_bad(harness, blobs)
    # Where the decoder accepts a damaged buffer, the views read the same value from it.
    accepted = [(b, r) for b, r in zip(blobs, replies) if r.get("ok") is True]
    assert accepted, "no malformed input was accepted: the bad-input set is not exercising lenient paths"
    descs = oracle.desc_by_name()
    failures = []
    for b, r in accepted:
        if "view_error" in r:
            failures.append(f"{b.type} ({b.why}): view failed: {r['view_error']}")
        elif r["view"] != r["value"]:
            try:
                oracle.check_value(descs, b.type, r["value"], r["view"])
            except AssertionError as e:
                failures.append(f"{b.type} ({b.why}): {e}")
    assert not failures, "\n".join(failures[:10])


def test_damaged_fingerprints_and_truncations_fail_in_views_too(harness, real_cases):
    blobs = [b for b in oracle.bad_blobs(real_cases, seed=5) if b.must_fail]
    replies = oracle.run_harness_bad(harness, blobs)
    # A view only reads what it is asked for, but the JSON walk reads every field, so it must fail as well.
    bad = [f"{b.type} ({b.why})" for b, r in zip(blobs, replies) if r.get("view_ok") is True]
    assert not bad, f"{len(bad)} views accepted what the decoder must reject: {bad[:10]}"


def test_empty_elements_stop_at_the_slack_every_language_uses(harness):
    """The Rust decoder takes feat.holds_empty_t with ZERO_SIZE_SLACK empty elements and refuses one more, as the C,
    C++ and Python decoders do (their tests use the same two inputs)."""
    replies = oracle.run_harness_bad(harness, oracle.slack_blobs())
    assert [r["ok"] for r in replies] == [True, False], replies[1]
