"""Result frames as polars DataFrames (DESIGN "Python API": results as pandas and polars
frames). polars is optional (`pip install 'schedsim[polars]'`); the frames are built in pandas
and converted, the index (a trace's `Time`) becoming a column."""

from __future__ import annotations

from typing import Any

import pandas as pd


def to_polars(frame: pd.DataFrame) -> Any:
    """`frame` as a `polars.DataFrame`, its named index as the first column."""
    try:
        import polars as pl
    except ImportError:
        raise ImportError(
            "polars is not installed; install the extra: pip install 'schedsim[polars]'"
        ) from None
    if frame.index.name is not None:
        frame = frame.reset_index()
    return pl.from_pandas(frame)


def frame_of(owner: Any, name: str, names: tuple[str, ...]) -> pd.DataFrame:
    """The pandas frame `name` of a result, one of `names`; an error lists them."""
    if name not in names:
        raise ValueError(f"no frame '{name}'; allowed: {', '.join(names)}")
    return getattr(owner, name)
