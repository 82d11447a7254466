"""Shared fixtures for the interop tests: paths, the real LCM in .venv, and one `nerve` binary built per session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import oracle  # noqa: E402


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root."""
    return oracle.REPO


@pytest.fixture(scope="session")
def venv_python() -> Path:
    """The Python of .venv (has the real `lcm`, numpy and pytest); created by scripts/setup."""
    if not oracle.VENV_PYTHON.exists():
        pytest.fail("no .venv: run scripts/setup first")
    return oracle.VENV_PYTHON


@pytest.fixture(scope="session")
def lcm_gen() -> Path:
    """The real lcm-gen 1.5.3 from the PyPI wheel in .venv."""
    if not oracle.LCM_GEN.exists():
        pytest.fail("no .venv/bin/lcm-gen: run scripts/setup first")
    return oracle.LCM_GEN


# What the fixtures build, in one cargo invocation: every library, binary and example of the workspace, in the debug
# profile. Not `-p nerve-cli` and the like: cargo resolves features per invocation, and `cargo test --workspace` (which
# scripts/test runs first) unifies them over the whole workspace, so a `-p` build after it compiled zenoh, tokio's
# stack and the nerve crates a second time with other features. These units are all among cargo test's, so after it
# this build is a no-op. scripts/install-c and scripts/install-java --debug build the same set, for the same reason.
DEBUG_BUILD = ["build", "-q", "--workspace", "--lib", "--bins", "--examples"]


@pytest.fixture(scope="session")
def debug_build(repo_root: Path) -> Path:
    """The workspace's debug target directory (target/debug), after one `cargo build` of DEBUG_BUILD per session."""
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.fail("cargo is not on PATH")
    proc = subprocess.run([cargo, *DEBUG_BUILD], cwd=repo_root, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"cargo {' '.join(DEBUG_BUILD)} failed:\n{proc.stderr[-6000:]}")
    meta = subprocess.run([cargo, "metadata", "--format-version", "1", "--no-deps"], cwd=repo_root,
                          capture_output=True, text=True, check=True).stdout
    return Path(json.loads(meta)["target_directory"]) / "debug"


@pytest.fixture(scope="session")
def nerve_bin(request) -> Path:
    """The `nerve` binary of the session's debug build (debug_build).

    NERVE_BIN=path uses that binary instead (e.g. a release build, or while the tree does not build)."""
    if os.environ.get("NERVE_BIN"):
        return Path(os.environ["NERVE_BIN"]).resolve()
    path = request.getfixturevalue("debug_build") / "nerve"
    assert path.exists(), path
    return path


@pytest.fixture(scope="session")
def corpus_files() -> list:
    """Every .lcm file of tests/corpus, sorted."""
    return oracle.corpus_files()


@pytest.fixture(scope="session")
def type_descs() -> list:
    """oracle.type_descriptors(), once per session."""
    return oracle.type_descriptors()


@pytest.fixture(scope="session")
def real_cases() -> list:
    """oracle.cases(seed=0, per_type=20), once per session: random values encoded by the real LCM."""
    return oracle.cases(0, 20)


@pytest.fixture(scope="session")
def c_prefix(tmp_path_factory) -> Path:
    """Nerve's C libraries installed by `scripts/install-c PREFIX --debug` into a fresh prefix (libnerve, libach)."""
    out = tmp_path_factory.mktemp("c-prefix")
    p = subprocess.run([str(oracle.REPO / "scripts" / "install-c"), str(out), "--debug"], capture_output=True,
                       text=True)
    if p.returncode != 0:
        pytest.fail(f"scripts/install-c failed:\n{p.stderr[-4000:]}")
    return out

