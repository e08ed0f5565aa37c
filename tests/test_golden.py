"""Golden traces: every example under examples/ runs and its ftrace text must equal the
checked-in `expected.ftrace` beside it. After a deliberate model change, regenerate with
`SCHEDSIM_BLESS=1 .venv/bin/pytest tests/test_golden.py` and review the diff."""

import importlib.util
import os
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*/example.py"))


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"example_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_example_trace_matches_golden(path: Path, real_core) -> None:
    text = load(path).simulate().trace_text
    golden = path.parent / "expected.ftrace"
    if os.environ.get("SCHEDSIM_BLESS") == "1":
        golden.write_text(text)
    assert golden.exists(), f"{golden} missing: run with SCHEDSIM_BLESS=1 once and review it"
    assert text == golden.read_text()


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 2
