"""Tests of models/ets.py against statsmodels' Holt-Winters on the same parameters."""

import warnings

import numpy as np
import pytest
from statsmodels.tsa.holtwinters import ExponentialSmoothing

from seqlab.models import ets
from seqlab.models.ets import (
    SmoothingSpec,
    candidate_forms,
    fit_smoothing,
    forecast_from_states,
    smoothing_forecast,
    smoothing_states,
)

SEASON = 12


def seasonal_series(n=96, multiplicative=True, seed=0):
    """A positive monthly-like series: trend, a season growing with the level, noise."""
    rng = np.random.default_rng(seed)
    steps = np.arange(n)
    level = 100 + 2.0 * steps
    season = np.sin(2 * np.pi * steps / SEASON)
    values = level * (1 + 0.2 * season) if multiplicative else level + 20 * season
    return values + rng.normal(0, 2, n)


def statsmodels_fit(values, trend, seasonal):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ExponentialSmoothing(
            values, trend=None if trend is None else "add", damped_trend=trend == "damped",
            seasonal=seasonal, seasonal_periods=SEASON if seasonal else None,
            initialization_method="estimated",
        ).fit()


def spec_of(fitted, trend, seasonal):
    params = fitted.params
    return SmoothingSpec(
        trend=trend, seasonal=seasonal, season=SEASON if seasonal else 1,
        alpha=params["smoothing_level"], beta=params["smoothing_trend"] if trend else 0.0,
        gamma=params["smoothing_seasonal"] if seasonal else 0.0,
        phi=params["damping_trend"] if trend == "damped" else 1.0,
        initial_level=params["initial_level"],
        initial_trend=params["initial_trend"] if trend else 0.0,
        initial_seasons=list(params["initial_seasons"]) if seasonal else [], aicc=fitted.aicc,
    )


@pytest.mark.parametrize("trend,seasonal", [
    (None, None), ("add", None), ("damped", None), ("add", "add"), ("damped", "mul"),
    (None, "mul"),
])
def test_recursion_and_forecasts_equal_statsmodels_on_the_same_parameters(trend, seasonal):
    values = seasonal_series(multiplicative=seasonal == "mul")
    fitted = statsmodels_fit(values, trend, seasonal)
    spec = spec_of(fitted, trend, seasonal)
    level, slope, seasons = states = smoothing_states(values, spec)
    np.testing.assert_allclose(level, fitted.level, rtol=1e-9)
    if trend:
        np.testing.assert_allclose(slope, fitted.trend, rtol=1e-9, atol=1e-9)
    if seasonal:
        np.testing.assert_allclose(seasons[SEASON:], fitted.season, rtol=1e-9)
    # One step ahead from every origin: statsmodels' fitted values.
    one_step = forecast_from_states(states, spec, np.arange(len(values) - 1), 1)[:, 0]
    np.testing.assert_allclose(one_step, fitted.fittedvalues[1:], rtol=1e-9)
    # Several steps from the end, up to one step short of a season.
    ours = forecast_from_states(states, spec, [len(values) - 1], SEASON - 1)[0]
    np.testing.assert_allclose(ours, fitted.forecast(SEASON - 1), rtol=1e-9)


def test_the_step_one_season_ahead_uses_the_latest_seasonal_state():
    # h = season: the seasonal state of the same phase written at the origin itself
    # (Hyndman & Athanasopoulos: s[t + h - m(k + 1)], k = floor((h - 1) / m)). statsmodels
    # 0.15's forecast() takes the one a season older here; by hand:
    values = seasonal_series(multiplicative=False)
    fitted = statsmodels_fit(values, "add", "add")
    spec = spec_of(fitted, "add", "add")
    level, slope, seasons = smoothing_states(values, spec)
    t = len(values) - 1
    ours = forecast_from_states((level, slope, seasons), spec, [t], SEASON)[0, -1]
    assert ours == pytest.approx(level[t] + SEASON * slope[t] + seasons[t + SEASON])


def test_the_form_with_the_lowest_aicc_is_chosen():
    values = seasonal_series()
    spec, notes = fit_smoothing(values, SEASON)
    assert notes == []
    aicc = {form: statsmodels_fit(values, *form).aicc for form in candidate_forms(values, SEASON)}
    assert (spec.trend, spec.seasonal) == min(aicc, key=aicc.get)
    assert spec.aicc == pytest.approx(min(aicc.values()))
    assert spec.seasonal == "mul" and spec.trend is not None


def test_forms_need_two_seasons_and_positive_values_for_a_multiplicative_season():
    assert ("add", "mul") in candidate_forms(np.ones(30), 12)
    assert ("add", "mul") not in candidate_forms(np.r_[np.ones(29), 0.0], 12)
    assert all(seasonal is None for _, seasonal in candidate_forms(np.ones(25), 12))
    assert all(seasonal is None for _, seasonal in candidate_forms(np.ones(100), 1))


def test_a_form_that_fails_is_named_and_the_others_kept(monkeypatch):
    real = ExponentialSmoothing.fit

    def failing_for_damped(self, *args, **kwargs):
        if self.damped_trend:
            raise ValueError("optimizer gave up")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ExponentialSmoothing, "fit", failing_for_damped)
    spec, notes = fit_smoothing(seasonal_series(), SEASON)
    assert spec is not None and spec.trend != "damped"
    assert any("trend damped" in note and "optimizer gave up" in note for note in notes)


def test_no_form_fitted_gives_none(monkeypatch):
    def failing(self, *args, **kwargs):
        raise np.linalg.LinAlgError("singular matrix")

    monkeypatch.setattr(ExponentialSmoothing, "fit", failing)
    spec, notes = fit_smoothing(seasonal_series(), SEASON)
    assert spec is None and len(notes) == len(candidate_forms(seasonal_series(), SEASON))


def test_smoothing_forecast_stacks_targets_and_round_trips_the_spec():
    values = seasonal_series()
    spec, _ = fit_smoothing(values[:72], SEASON)
    restored = SmoothingSpec.from_dict(spec.to_dict())
    targets = np.stack([values, values * 2], axis=1)
    forecast = smoothing_forecast(targets, np.array([71, 80]), 3,
                                  [restored, SmoothingSpec.from_dict(spec.to_dict())])
    assert forecast.shape == (2, 3, 2)
    single = forecast_from_states(smoothing_states(values, spec), spec, [71, 80], 3)
    np.testing.assert_allclose(forecast[..., 0], single)
    assert ets.SEASON_FORMS == (None, "add", "mul")
