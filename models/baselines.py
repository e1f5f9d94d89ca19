"""Classical forecasts the learned forecasters are measured against, in NumPy.

Each takes the observed target rows `targets[rows, n_targets]` and the last observed row of
each forecast origin (`last_rows`), and returns `[origins, horizon, n_targets]` forecasts that
use no row after their origin.
"""

import numpy as np


def naive_forecast(targets, last_rows, horizon):
    """Every step repeats the last observed value."""
    return np.repeat(targets[last_rows][:, None, :], horizon, axis=1)


def seasonal_naive_rows(last_rows, horizon, season):
    """Rows of the seasonal-naive forecast: step h repeats the value one season before it.

    For an origin whose last observed row is `t`, step `h` (1-based) takes row
    `t + h - season * ceil(h / season)`, the latest row of the same phase that is observed.
    """
    steps = np.arange(1, horizon + 1)
    return last_rows[:, None] + steps - season * np.ceil(steps / season).astype(int)


def seasonal_naive_forecast(targets, last_rows, horizon, season):
    """`(forecast, has_history)`: the seasonal-naive forecast, and which origins have a full
    season of history before them (the others' rows are clipped to row 0 and should not be
    scored)."""
    rows = seasonal_naive_rows(last_rows, horizon, season)
    return targets[np.clip(rows, 0, None)], (rows >= 0).all(axis=1)
