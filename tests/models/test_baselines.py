"""models/baselines.py by hand on a counting series (row r holds the value r)."""

import numpy as np

from seqlab.models.baselines import naive_forecast, seasonal_naive_forecast, seasonal_naive_rows

# Two targets: the row number r and 100 + 10 r.
ROWS = np.arange(20)
TARGETS = np.stack([ROWS, 100 + 10 * ROWS], axis=1).astype("float64")


def test_naive_repeats_the_last_input_row_at_every_step():
    forecast = naive_forecast(TARGETS, last_rows=np.array([5, 12]), horizon=3)
    assert forecast.shape == (2, 3, 2)
    # The origin whose last observed row is 5 forecasts rows 6, 7, 8 as the value of row 5.
    np.testing.assert_array_equal(forecast[0], [[5, 150]] * 3)
    np.testing.assert_array_equal(forecast[1], [[12, 220]] * 3)


def test_seasonal_naive_rows_by_hand():
    # Season 4, last observed row 10: rows 11, 12, 13, 14 are the phases of rows 7, 8, 9, 10;
    # rows 15, 16 come round again to 7, 8 (the latest observed rows of their phase).
    rows = seasonal_naive_rows(np.array([10]), horizon=6, season=4)
    np.testing.assert_array_equal(rows, [[7, 8, 9, 10, 7, 8]])
    # Season 1 is the naive forecast.
    np.testing.assert_array_equal(seasonal_naive_rows(np.array([10]), 3, 1), [[10, 10, 10]])


def test_seasonal_naive_forecast_on_the_counting_series_lags_by_one_season():
    forecast, has_history = seasonal_naive_forecast(TARGETS, np.array([10, 15]), horizon=2,
                                                    season=3)
    # Rows 11, 12 from rows 8, 9; rows 16, 17 from rows 13, 14: every error is one season.
    np.testing.assert_array_equal(forecast[..., 0], [[8, 9], [13, 14]])
    np.testing.assert_array_equal(forecast[..., 1], [[180, 190], [230, 240]])
    assert has_history.tolist() == [True, True]


def test_seasonal_naive_is_exact_on_a_periodic_series():
    periodic = np.tile([3.0, -1.0, 4.0, 1.0], 5)[:, None]  # season 4
    forecast, _ = seasonal_naive_forecast(periodic, np.array([7, 9]), horizon=6, season=4)
    # Each origin's six steps are exactly the next six rows (an error of 0).
    for origin, last in enumerate([7, 9]):
        np.testing.assert_array_equal(forecast[origin, :, 0],
                                      periodic[last + 1:last + 7, 0])


def test_origins_without_a_full_season_of_history_are_flagged():
    # Last rows 1 and 2 with season 3: step 1 needs row -1 (unobserved) and row 0 (observed).
    forecast, has_history = seasonal_naive_forecast(TARGETS, np.array([1, 2]), horizon=1,
                                                    season=3)
    assert has_history.tolist() == [False, True]
    np.testing.assert_array_equal(forecast[:, 0, 0], [0, 0])  # the first clipped to row 0
