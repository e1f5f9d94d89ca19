"""Competition metrics and M4's Naive2 (models/forecasting/metrics.py) against values worked
out by hand on tiny arrays."""

import math

import numpy as np
import pytest

from seqlab.models.forecasting import metrics
from seqlab.models.forecasting.metrics import PanelScores

# ---------------------------------------------------------------------------------------------
# One series


def test_smape_is_m4s_percentage_and_a_zero_forecast_of_zero_counts_as_perfect():
    # 200 / 3 * (10 / 210 + 20 / 380 + 0) = 200 / 3 * (1 / 21 + 1 / 19) = 8000 / 1197
    assert metrics.smape([100, 200, 0], [110, 180, 0]) == pytest.approx(8000 / 1197)
    assert metrics.smape([5, 5], [5, 5]) == 0.0
    assert metrics.smape([1.0], [-1.0]) == 200.0  # the largest value sMAPE takes


def test_mase_is_scaled_by_the_in_sample_seasonal_naive_error():
    history = [1, 5, 2, 6, 3, 7]
    # Season 2: |2-1|, |6-5|, |3-2|, |7-6| -> scale 1; season 1: 4, 3, 4, 3, 4 -> 18 / 5.
    assert metrics.mase_scale(history, 2) == 1.0
    assert metrics.mase_scale(history, 1) == pytest.approx(3.6)
    # Forecast MAE: (|4 - 3| + |8 - 9|) / 2 = 1.
    assert metrics.mase([4, 8], [3, 9], history, season=2) == pytest.approx(1.0)
    assert metrics.mase([4, 8], [3, 9], history, season=1) == pytest.approx(1 / 3.6)


def test_mase_needs_more_history_than_one_season_and_a_flat_history_gives_inf():
    with pytest.raises(ValueError, match=r"MASE needs more in-sample values than the season. "
                                         r"Received: 2 values, season=2"):
        metrics.mase([1.0], [1.0], [1.0, 2.0], season=2)
    assert metrics.mase([2.0], [1.0], [3.0, 3.0, 3.0]) == math.inf
    assert metrics.mase([3.0], [3.0], [3.0, 3.0, 3.0]) == 0.0


def test_mape_only_where_every_actual_is_positive_and_rmse():
    assert metrics.mape([100, 50], [90, 60]) == pytest.approx(15.0)  # (10 % + 20 %) / 2
    assert metrics.mape([100, 0], [90, 1]) is None
    assert metrics.mape([100, -5], [90, 1]) is None
    assert metrics.rmse([1, 2], [1, 4]) == pytest.approx(math.sqrt(2))


def test_root_mean_square_keeps_its_figure_where_the_squares_underflow_or_overflow():
    errors = np.random.default_rng(0).normal(size=(6, 3, 2))
    plain = np.sqrt(np.mean(errors ** 2, axis=(0, 2)))
    # The same figure as the plain formula (rounding aside) where the squares are normal...
    np.testing.assert_allclose(metrics.root_mean_square(errors, axis=(0, 2)), plain,
                               rtol=1e-12)
    assert metrics.root_mean_square(errors) == pytest.approx(np.sqrt(np.mean(errors ** 2)),
                                                              rel=1e-12)
    # ... and scaled with the errors where their squares would underflow (1e-200: 0 for the
    # plain formula) or overflow (1e200: infinity).
    for unit in (1e-200, 1e200):
        np.testing.assert_allclose(metrics.root_mean_square(errors * unit, axis=(0, 2)),
                                   plain * unit, rtol=1e-12)
    assert metrics.rmse([0.0, 0.0], [3e-200, 4e-200]) == pytest.approx(math.sqrt(12.5) * 1e-200,
                                                                      rel=1e-12)
    assert metrics.root_mean_square([0.0, 0.0]) == 0.0
    assert metrics.root_mean_square([math.inf, 1.0]) == math.inf
    assert math.isnan(metrics.root_mean_square([math.nan, 1.0]))


def test_lengths_must_match():
    with pytest.raises(ValueError, match=r"actual and forecast differ in length. Received: 2 "
                                         r"actual values and 3 forecast values"):
        metrics.smape([1, 2], [1, 2, 3])


# ---------------------------------------------------------------------------------------------
# Naive2 and the other benchmarks


def test_naive_and_seasonal_naive():
    history = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert metrics.naive_forecast(history, 3).tolist() == [5, 5, 5]
    assert metrics.seasonal_naive_forecast(history, 5, season=2).tolist() == [4, 5, 4, 5, 4]
    assert metrics.seasonal_naive_forecast(history, 2, season=1).tolist() == [5, 5]


# A multiplicative season of 4 at a flat level of 10: 5, 10, 15, 10, repeated four times.
SEASONAL = np.tile([5.0, 10.0, 15.0, 10.0], 4)


def test_autocorrelation_is_rs_acf():
    # Centred: -5, 0, 5, 0 (sum of squares 200). Lag 2: seven products of -25 -> -175 / 200;
    # lag 4: twelve same-phase pairs, 150 / 200.
    assert metrics.autocorrelation(SEASONAL, 4) == pytest.approx([1, 0, -0.875, 0, 0.75])


def test_m4_seasonality_test():
    # limit = 1.645 * sqrt((1 + 2 * (0 + 0.875^2 + 0)) / 16) = 0.654 < 0.75.
    assert metrics.is_seasonal(SEASONAL, 4)
    assert not metrics.is_seasonal(SEASONAL, 1)
    assert not metrics.is_seasonal(SEASONAL[:11], 4)  # fewer than three seasons
    assert not metrics.is_seasonal(np.full(16, 3.0), 4)  # constant: R's acf is NaN
    # R's acf stops at lag floor(10 log10(n)): 100 hourly values reach lag 20, not 24, so
    # M4's code never finds them seasonal, however clear the daily cycle.
    daily = 10 + 5 * np.sin(2 * np.pi * np.arange(100) / 24)
    assert not metrics.is_seasonal(daily, 24)
    assert metrics.is_seasonal(10 + 5 * np.sin(2 * np.pi * np.arange(260) / 24), 24)


def test_seasonal_indices_are_rs_multiplicative_decomposition():
    # Season 2: trend weights 1/4, 1/2, 1/4. x = 1, 3, 2, 6, 3, 9: trend 2.25, 3.25, 4.25,
    # 5.25 at rows 1 to 4; ratios 3/2.25 = 4/3, 2/3.25 = 8/13, 6/4.25 = 24/17, 3/5.25 = 4/7.
    phase0 = (8 / 13 + 4 / 7) / 2
    phase1 = (4 / 3 + 24 / 17) / 2
    mean = (phase0 + phase1) / 2
    indices = metrics.seasonal_indices([1, 3, 2, 6, 3, 9], 2)
    assert indices == pytest.approx([phase0 / mean, phase1 / mean])
    assert metrics.seasonal_indices(SEASONAL, 4) == pytest.approx([0.5, 1, 1.5, 1])
    with pytest.raises(ValueError, match=r"at least two seasons"):
        metrics.seasonal_indices([1, 2, 3], 2)


def test_naive2_reseasonalises_the_last_adjusted_value():
    assert metrics.naive2_forecast(SEASONAL, 6, season=4) == pytest.approx(
        [5, 10, 15, 10, 5, 10])
    # Starting one phase later (15 values), the phases are counted from the first value: the
    # last value (10, index 1) adjusts to 10, and the forecast continues 5, 10, 15, 10.
    assert metrics.naive2_forecast(SEASONAL[1:], 4, season=4) == pytest.approx([5, 10, 15, 10])
    # A last value off the pattern (12 where the season says 10): it is divided by its own
    # phase's index and the adjusted level carries the season on.
    shifted = SEASONAL.copy()
    shifted[-1] = 12.0
    assert metrics.is_seasonal(shifted, 4)
    indices = metrics.seasonal_indices(shifted, 4)
    assert metrics.naive2_forecast(shifted, 3, season=4) == pytest.approx(
        12.0 / indices[3] * indices[:3])
    # Not seasonal by the test: the naive forecast.
    assert metrics.naive2_forecast(SEASONAL[:11], 2, season=4).tolist() == [15, 15]


@pytest.mark.filterwarnings("error")  # no 0 / 0 on the way
def test_naive2_is_the_naive_forecast_where_the_season_is_not_multiplicative():
    # Intermittent sales: two phases of every four are zero. Seasonal by the test, but those
    # phases' indices are 0 and the last value (0, in one of them) cannot be adjusted: 0 / 0.
    intermittent = np.where(np.isin(np.arange(16) % 4, [0, 3]), 0.0, SEASONAL)
    assert metrics.is_seasonal(intermittent, 4)
    assert metrics.seasonal_indices(intermittent, 4) == pytest.approx([0, 1.6, 2.4, 0])
    assert metrics.naive2_forecast(intermittent, 3, season=4).tolist() == [0.0] * 3
    # Negative all through: the ratios to the trend are positive, the season multiplicative.
    assert metrics.naive2_forecast(-SEASONAL, 6, season=4) == pytest.approx(
        [-5, -10, -15, -10, -5, -10])


# ---------------------------------------------------------------------------------------------
# Many series


def test_score_panel_gives_per_series_values_and_their_means():
    scores = metrics.score_panel(
        actuals=[np.array([4.0, 8.0]), np.array([10.0, -10.0])],
        forecasts=[np.array([3.0, 9.0]), np.array([10.0, -10.0])],
        histories=[np.array([1, 5, 2, 6, 3, 7.0]), np.array([1.0, 2.0, 4.0])],
        season=[2, 1],
    )
    # Series 0: sMAPE 100 * (1/7 + 1/17); MASE 1; MAPE 50 * (1/4 + 1/8); RMSE 1.
    assert scores.smape == pytest.approx([100 * (1 / 7 + 1 / 17), 0.0])
    assert scores.mase.tolist() == [1.0, 0.0]
    assert scores.mape[0] == pytest.approx(50 * (1 / 4 + 1 / 8)) and np.isnan(scores.mape[1])
    assert scores.rmse.tolist() == [1.0, 0.0]
    summary = scores.summary()
    assert summary["smape"] == pytest.approx(50 * (1 / 7 + 1 / 17))
    assert summary["mase"] == 0.5 and summary["series"] == 2
    assert summary["mape"] == pytest.approx(50 * (1 / 4 + 1 / 8)) and summary["mape_series"] == 1


def test_score_panel_names_the_series_it_cannot_score():
    with pytest.raises(ValueError, match=r"series 1: MASE needs more in-sample values than the "
                                         r"season"):
        metrics.score_panel([[1.0], [1.0]], [[1.0], [1.0]], [[1.0, 2.0], [1.0]])


def test_owa_is_the_mean_of_the_ratios_of_the_sets_averages():
    method = PanelScores(smape=np.array([10.0, 30.0]), mase=np.array([1.0, 1.0]),
                         mape=np.array([np.nan, np.nan]), rmse=np.array([1.0, 1.0]))
    naive2 = PanelScores(smape=np.array([40.0, 10.0]), mase=np.array([2.0, 2.0]),
                         mape=np.array([np.nan, np.nan]), rmse=np.array([1.0, 1.0]))
    # sMAPE 20 / 25 = 0.8 (not the mean of the per-series ratios, (0.25 + 3) / 2); MASE 1 / 2.
    assert metrics.owa(method, naive2) == pytest.approx(0.65)
    assert metrics.owa(naive2, naive2) == 1.0
    assert metrics.owa((20.0, 1.0), (25.0, 2.0)) == pytest.approx(0.65)
    assert method.mean_mape is None
