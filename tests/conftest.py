"""Shared fixtures: a fake `schedsim._core` for the Python plumbing, and the real-core guard."""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest

from schedsim import config as config_mod
from schedsim import native
from support import FakeCore, VaryingCore


def _install(monkeypatch: pytest.MonkeyPatch, core: FakeCore) -> None:
    """Route `native.core_function` to a fake core's functions."""
    functions = {
        "run": core.run,
        "check": core.check,
        "workloads": core.workloads,
        "version": core.version,
        "model_fingerprint": lambda: "fake",
    }
    monkeypatch.setattr(native, "core_function", lambda name: functions[name])


@pytest.fixture
def fake_core(monkeypatch: pytest.MonkeyPatch) -> FakeCore:
    core = FakeCore()
    _install(monkeypatch, core)
    config_mod.core_workloads.cache_clear()
    yield core
    config_mod.core_workloads.cache_clear()


@pytest.fixture
def varying_core(monkeypatch: pytest.MonkeyPatch) -> VaryingCore:
    """A fake core whose results vary with the config and seed (for `schedsim compare`)."""
    core = VaryingCore()
    _install(monkeypatch, core)
    config_mod.core_workloads.cache_clear()
    yield core
    config_mod.core_workloads.cache_clear()


@pytest.fixture
def real_core() -> Any:
    """The compiled extension. Without it the test is skipped, except in CI (CI=true), where
    `make test` has built it and a missing extension is a failure."""
    if os.environ.get("CI") == "true":
        core = importlib.import_module("schedsim._core")
    else:
        core = pytest.importorskip("schedsim._core")
    config_mod.core_workloads.cache_clear()
    return core
