import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedsim.errors import ConfigError
from schedsim.units import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("500ms", 500_000_000),
        ("2s", 2_000_000_000),
        ("1m", 60_000_000_000),
        ("100us", 100_000),
        ("100µs", 100_000),
        ("250ns", 250),
        ("0ns", 0),
        ("1.5s", 1_500_000_000),
        (" 20ms ", 20_000_000),
        ("0.25ms", 250_000),
    ],
)
def test_parse_duration(text: str, ns: int) -> None:
    assert parse_duration(text) == ns


def test_int_is_nanoseconds() -> None:
    assert parse_duration(1234) == 1234


@pytest.mark.parametrize("text", ["", "5", "5q", "ms", "-1s", "1 h", "2ss", "1.5ns", "1e3ms"])
def test_bad_durations_name_value_and_forms(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_duration(text)
    message = str(err.value)
    assert f"'{text}'" in message
    assert "\n" not in message


def test_error_lists_allowed_forms() -> None:
    with pytest.raises(ConfigError, match=r"ns, us, ms, s or m"):
        parse_duration("5q")


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_duration("nope")


@given(st.integers(min_value=0, max_value=10**15))
def test_format_then_parse_round_trips(ns: int) -> None:
    assert parse_duration(format_duration(ns)) == ns
