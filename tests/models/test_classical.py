"""Classical members (models/forecasting/classical.py) against statsforecast's own forecasts.

statsforecast fits; our TensorFlow recursion forecasts with the fitted parameters held fixed.
Every check compares with statsforecast running the SAME fixed parameters: its forecast at the
end of the fitting rows, and its `forward` (same parameters, state re-run) at later origins.
All four recursions are the same equations as statsforecast's, so the tolerance is float64
round-off (rtol 1e-9), except where the graph's float32 input/output is involved.
"""

import json
import warnings

import numpy as np
import pytest
import tensorflow as tf
from statsforecast.arima import forecast_arima, forward_arima
from statsforecast.ets import forecast_ets, forward_ets
from statsforecast.models import ARIMA, AutoARIMA, AutoETS, AutoTheta, SeasonalNaive
from statsforecast.theta import auto_theta, forecast_theta, forward_theta

from seqlab.models.forecasting import classical
from seqlab.models.forecasting import metrics as forecasting_metrics
from seqlab.models.forecasting.classical import (
    LOG_METHODS,
    METHODS,
    ClassicalSpec,
    fit_classical,
    forecast_at_origins,
    forecast_from_history,
)
from seqlab.models.forecasting.metrics import fitting_unit

# The members against statsforecast's own full AutoARIMA search (tests/conftest.py narrows it
# elsewhere).
pytestmark = pytest.mark.exact_arima_search

SEASON = 12
FIT_ROWS = 72
HORIZON = 14  # more than a season, so the forecasts wrap around the seasonal states
RTOL = 1e-9


def seasonal_series(n=108, seed=0, positive=True):
    """A monthly-like series: trend, a season, a random-walk component and noise. Positive,
    with a season growing with the level, so that multiplicative forms are possible; or
    crossing zero, so that they are not."""
    rng = np.random.default_rng(seed)
    steps = np.arange(n)
    season = np.sin(2 * np.pi * steps / SEASON)
    if positive:
        level = 100 + 1.5 * steps + np.cumsum(rng.normal(0, 1.0, n))
        return level * (1 + 0.2 * season) + rng.normal(0, 2, n)
    drift = 0.3 * steps - 10 + np.cumsum(rng.normal(0, 0.5, n))
    return drift + 15 * season + rng.normal(0, 2, n)


def stationary_series(n=108, seed=3):
    """ARMA(2, 1) noise around a mean of 50 with a season: a model with an intercept."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 1, n)
    values = np.zeros(n)
    for t in range(2, n):
        values[t] = 0.6 * values[t - 1] - 0.2 * values[t - 2] + noise[t] + 0.4 * noise[t - 1]
    return values + 50 + 5 * np.sin(2 * np.pi * np.arange(n) / SEASON)


SERIES = seasonal_series()
Y_FIT = SERIES[:FIT_ROWS]
ORIGINS = np.array([FIT_ROWS + 5, FIT_ROWS + 17, len(SERIES) - 1])  # later rows of the series


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit()


# ---------------------------------------------------------------------------------------------
# statsforecast references: the same fixed parameters, statsforecast's code


def ets_reference(values, origin, model):
    """statsforecast's ETS forecast from `origin`: forward_ets keeps the fitted parameters AND
    the initial states and re-runs the state over values[:origin + 1], our protocol exactly."""
    return forecast_ets(forward_ets(model, values[: origin + 1]), HORIZON)["mean"]


def arima_reference(values, origin, model):
    """statsforecast's forward_arima: the fitted coefficients fixed, the Kalman filter re-run
    over values[:origin + 1] (the drift regressor counts from its first row)."""
    return forecast_arima(_quiet(lambda: forward_arima(model, values[: origin + 1])),
                          HORIZON)["mean"]


def theta_forward(values, origin, spec):
    """statsforecast's forward_theta on values[:origin + 1]: the fitted initial level, alpha
    and theta fixed, the seasonal test and decomposition made again, as our member does."""
    p = spec.params
    fitted = {"m": spec.season, "modeltype": p["model"],
              "par": {name: p[name] for name in ("initial_smoothed", "alpha", "theta")}}
    return forward_theta(fitted, values[: origin + 1])


def theta_reference(values, origin, spec):
    return forecast_theta(theta_forward(values, origin, spec), HORIZON)["mean"]


def fixed_theta_reference(values, origin, spec):
    """A spec saved before `decomposition_each_origin` (a run of an earlier version):
    statsforecast's theta engine with the fitted parameters fixed, on the rows deseasonalised
    by the fitting rows' seasonal indices, re-seasonalised by phase."""
    p = spec.params
    indices = np.asarray(p["season_indices"]) if p["decomposition"] else np.zeros(1)
    past = np.arange(origin + 1) % spec.season
    future = (origin + 1 + np.arange(HORIZON)) % spec.season
    y = values[: origin + 1]
    if p["decomposition"] == "multiplicative":
        y = y / indices[past]
    elif p["decomposition"] == "additive":
        y = y - indices[past]
    fit = auto_theta(y, m=1, model=p["model"], initial_smoothed=p["initial_smoothed"],
                     alpha=p["alpha"], theta=p["theta"])
    mean = forecast_theta(fit, HORIZON)["mean"]
    if p["decomposition"] == "multiplicative":
        return mean * indices[future]
    if p["decomposition"] == "additive":
        return mean + indices[future]
    return mean


def seasonal_naive_reference(values, origin, spec):
    return SeasonalNaive(season_length=spec.season).forecast(values[: origin + 1],
                                                             HORIZON)["mean"]


def fit_pair(method, values=Y_FIT, season=SEASON, model=None):
    """Our spec and statsforecast's fitted model (fitted again: the fits are deterministic)."""
    spec = _quiet(lambda: fit_classical(method, values, season, model=model))
    if method == "ets":
        damped = None if model is None else "d" in model
        code = "ZZZ" if model is None else model.replace("d", "")
        fitted = AutoETS(season_length=season, model=code, damped=damped).fit(values)
    elif method == "arima":
        fitted = _quiet(lambda: AutoARIMA(season_length=season).fit(values))
    elif method == "theta":
        fitted = AutoTheta(season_length=season, model=model).fit(values)
    else:
        fitted = SeasonalNaive(season_length=season).fit(values)
    return spec, fitted


@pytest.fixture(scope="module")
def fitted():
    return {method: fit_pair(method) for method in METHODS}


def reference_at(method, spec, model, values, origin):
    if method == "ets":
        return ets_reference(values, origin, model.model_)
    if method == "arima":
        return arima_reference(values, origin, model.model_)
    if method == "theta":
        return theta_reference(values, origin, spec)
    return seasonal_naive_reference(values, origin, spec)


def served_as_forecast(spec):
    """Checks that `forecast_from_history` in a graph (a float32 request, as a SavedModel
    gets) gives `forecast_at_origins`' numbers from the end of a history; returns the graph."""
    serve = tf.function(lambda history: forecast_from_history(spec, history, HORIZON),
                        input_signature=[tf.TensorSpec([None, None], tf.float32)])
    history = SERIES[None, : FIT_ROWS + 10].astype(np.float32)
    np.testing.assert_allclose(
        serve(tf.constant(history)).numpy()[0],
        forecast_at_origins(spec, history[0].astype(np.float64), [FIT_ROWS + 9], HORIZON)[0],
        rtol=1e-5)  # float32 request against float64: rounding of values near 100-250
    return serve


# ---------------------------------------------------------------------------------------------
# 1 and 2: statsforecast's forecast at the end of the fitting rows and at later origins


@pytest.mark.parametrize("method", METHODS)
def test_the_forecast_at_the_fit_end_equals_statsforecasts(fitted, method):
    spec, model = fitted[method]
    ours = forecast_at_origins(spec, Y_FIT, [FIT_ROWS - 1], HORIZON)
    np.testing.assert_allclose(ours[0], model.predict(HORIZON)["mean"], rtol=RTOL)
    assert spec.fit_rows == FIT_ROWS and spec.season == SEASON


@pytest.mark.parametrize("method", METHODS)
def test_rolling_origins_equal_statsforecasts_forward_with_the_same_parameters(fitted, method):
    spec, model = fitted[method]
    ours = forecast_at_origins(spec, SERIES, ORIGINS, HORIZON)
    assert ours.shape == (len(ORIGINS), HORIZON) and ours.dtype == np.float64
    for row, origin in zip(ours, ORIGINS):
        np.testing.assert_allclose(row, reference_at(method, spec, model, SERIES, origin),
                                   rtol=RTOL, err_msg=f"origin {origin}")


def test_origins_inside_the_fitting_rows_and_in_any_order(fitted):
    spec, model = fitted["ets"]
    origins = np.array([40, 3, 60])
    ours = forecast_at_origins(spec, SERIES, origins, HORIZON)
    for row, origin in zip(ours, origins):
        np.testing.assert_allclose(row, ets_reference(SERIES, origin, model.model_), rtol=RTOL)


def test_seasonal_naive_repeats_the_last_value_of_each_phase_and_naive_at_season_1():
    spec = fit_classical("seasonal_naive", Y_FIT, SEASON)

    def last_of_phase(origin):
        rows = [origin + 1 + i - SEASON * int(np.ceil((i + 1) / SEASON)) for i in range(HORIZON)]
        return np.array([SERIES[row] if row >= 0 else np.nan for row in rows])

    np.testing.assert_array_equal(forecast_at_origins(spec, SERIES, [50], HORIZON)[0],
                                  last_of_phase(50))
    # Before a full season has been seen, the phases not yet observed have no forecast (NaN),
    # as in statsforecast's SeasonalNaive on a partial season.
    early = forecast_at_origins(spec, SERIES, [4], HORIZON)[0]
    assert np.isnan(early).sum() == 9
    np.testing.assert_array_equal(early, last_of_phase(4))
    naive = fit_classical("seasonal_naive", Y_FIT, 1)
    assert naive.description == "naive"
    np.testing.assert_array_equal(forecast_at_origins(naive, SERIES, [50], HORIZON)[0],
                                  [SERIES[50]] * HORIZON)


# ---------------------------------------------------------------------------------------------
# 3: no look-ahead


@pytest.mark.parametrize("method", METHODS)
def test_rows_after_the_origin_do_not_change_its_forecast(fitted, method):
    spec = fitted[method][0]
    origin = FIT_ROWS + 5
    changed = SERIES.copy()
    changed[origin + 1:] = changed[origin + 1:] * 3.0 + 50.0
    before = forecast_at_origins(spec, SERIES, [origin], HORIZON)
    after = forecast_at_origins(spec, changed, [origin, origin + 1], HORIZON)
    np.testing.assert_array_equal(after[0], before[0])
    assert not np.allclose(after[1], forecast_at_origins(spec, SERIES, [origin + 1], HORIZON)[0])


# ---------------------------------------------------------------------------------------------
# 4: the same numbers from the graph (SavedModel signature [None, None])


@pytest.mark.parametrize("method", METHODS)
def test_forecast_from_history_in_a_graph_equals_forecast_at_origins(fitted, method):
    spec = fitted[method][0]
    serve = tf.function(lambda history: forecast_from_history(spec, history, HORIZON),
                        input_signature=[tf.TensorSpec([None, None], tf.float32)])
    other = seasonal_series(seed=5)
    for origin in (FIT_ROWS + 5, len(SERIES) - 1):  # two lengths, one trace
        # Both paths see the float32 values a request carries.
        histories = np.stack([SERIES[: origin + 1], other[: origin + 1]]).astype(np.float32)
        served = serve(tf.constant(histories))
        assert served.dtype == tf.float32 and served.shape == (2, HORIZON)
        for history, row in zip(histories, served.numpy()):
            expected = forecast_at_origins(spec, history.astype(np.float64), [origin], HORIZON)
            np.testing.assert_allclose(row, expected[0], rtol=1e-5)
    assert len(serve._list_all_concrete_functions()) == 1


def test_a_saved_model_serves_the_arima_member(fitted, tmp_path):
    spec = fitted["arima"][0]
    module = tf.Module()
    module.forecast = tf.function(lambda history: forecast_from_history(spec, history, HORIZON),
                                  input_signature=[tf.TensorSpec([None, None], tf.float32)])
    tf.saved_model.save(module, str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    history = SERIES[None, : FIT_ROWS + 10].astype(np.float32)
    np.testing.assert_allclose(
        loaded.forecast(tf.constant(history)).numpy()[0],
        forecast_at_origins(spec, history[0].astype(np.float64), [FIT_ROWS + 9], HORIZON)[0],
        rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# 5: the spec as JSON


@pytest.mark.parametrize("method", METHODS)
def test_spec_round_trips_through_json(fitted, method):
    spec = fitted[method][0]
    restored = ClassicalSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert restored == spec
    np.testing.assert_array_equal(forecast_at_origins(restored, SERIES, ORIGINS, HORIZON),
                                  forecast_at_origins(spec, SERIES, ORIGINS, HORIZON))


@pytest.mark.parametrize("change, field", [
    (lambda d: d.pop("season"), "'season'"),
    (lambda d: d.update(method="prophet"), "'method'"),
    (lambda d: d.update(season="12"), "'season'"),
    (lambda d: d.update(fit_rows=0), "'fit_rows'"),
    (lambda d: d.update(description=None), "'description'"),
    (lambda d: d.update(extra=1), "'extra'"),
    (lambda d: d.update(params=[]), "'params'"),
    (lambda d: d["params"].pop("alpha"), "'params.alpha'"),
    (lambda d: d["params"].update(alpha="0.3"), "'params.alpha'"),
    (lambda d: d["params"].update(damped=1), "'params.damped'"),
    (lambda d: d["params"].update(trend="X"), "'params.trend'"),
    (lambda d: d["params"].update(initial_seasons=[1.0]), "'params.initial_seasons'"),
    (lambda d: d["params"].update(alhpa=0.3), "'params'.*'alhpa'"),
    (lambda d: d.update(method="arima"), "'params.order'"),
])
def test_a_bad_spec_dict_names_the_field(fitted, change, field):
    values = json.loads(json.dumps(fitted["ets"][0].to_dict()))
    change(values)
    with pytest.raises(ValueError, match=field):
        ClassicalSpec.from_dict(values)


@pytest.mark.parametrize("change, field", [
    (lambda p: p.update(initial_covariance=[[1.0]]), "'params.initial_covariance'"),
    (lambda p: p.update(order=[1, 0]), "'params.order'"),
])
def test_a_bad_arima_spec_dict_names_the_field(fitted, change, field):
    values = json.loads(json.dumps(fitted["arima"][0].to_dict()))
    change(values["params"])
    with pytest.raises(ValueError, match=field):
        ClassicalSpec.from_dict(values)


def test_bad_arguments_and_failed_fits_raise_value_errors():
    with pytest.raises(ValueError, match="method"):
        fit_classical("prophet", Y_FIT, SEASON)
    with pytest.raises(ValueError, match="too short"):
        fit_classical("theta", Y_FIT[:3], SEASON)
    with pytest.raises(ValueError, match="finite"):
        fit_classical("ets", np.r_[Y_FIT[:-1], np.nan], SEASON)
    with pytest.raises(ValueError, match="statsforecast could not fit"):
        fit_classical("ets", -Y_FIT, SEASON, model="MNM")  # multiplicative needs positive data
    spec = fit_classical("seasonal_naive", Y_FIT, SEASON)
    with pytest.raises(ValueError, match="last_rows"):
        forecast_at_origins(spec, SERIES, [len(SERIES)], HORIZON)


# ---------------------------------------------------------------------------------------------
# 6: every branch of the recursions, not only what the automatic choice picks


# Trend none / additive / damped, season none / additive / multiplicative, both error types
# (the state update does not depend on the error type; the fitted parameters do).
@pytest.mark.parametrize("form", ["ANN", "AAdN", "ANA", "AAdA", "MNM", "MAM", "MAdM"])
def test_each_ets_form_equals_statsforecast(form):
    spec, model = fit_pair("ets", model=form)
    letters = form.replace("d", "")
    assert spec.params["error"] + spec.params["trend"] + spec.params["seasonal"] == letters
    assert spec.params["damped"] == ("d" in form)
    np.testing.assert_allclose(forecast_at_origins(spec, Y_FIT, [FIT_ROWS - 1], HORIZON)[0],
                               model.predict(HORIZON)["mean"], rtol=RTOL)
    ours = forecast_at_origins(spec, SERIES, ORIGINS[:2], HORIZON)
    for row, origin in zip(ours, ORIGINS[:2]):
        np.testing.assert_allclose(row, ets_reference(SERIES, origin, model.model_), rtol=RTOL)


@pytest.mark.parametrize("order, seasonal_order, options", [
    ((0, 1, 1), (0, 1, 1), {}),  # MA and seasonal MA on both differences
    ((2, 1, 1), (1, 1, 0), {}),  # AR(2), seasonal AR
    ((1, 0, 1), (1, 1, 1), {"include_drift": True}),  # drift after one difference
    ((2, 0, 1), (1, 0, 0), {"include_mean": True}),  # intercept, no differencing
])
def test_each_arima_structure_equals_statsforecast(order, seasonal_order, options):
    longer = stationary_series() if options.get("include_mean") else SERIES
    values = longer[:FIT_ROWS]
    model = _quiet(lambda: ARIMA(order=order, season_length=SEASON,
                                 seasonal_order=seasonal_order, **options).fit(values))
    spec = classical._arima_spec(model.model_, SEASON, FIT_ROWS)
    # The expanded polynomials are statsforecast's own (its state space is built from them).
    state_space = model.model_["model"]
    np.testing.assert_allclose(spec.params["ar"], state_space["phi"], rtol=RTOL)
    np.testing.assert_allclose(spec.params["delta"], state_space["delta"], rtol=RTOL)
    theta = np.zeros(len(state_space["theta"]))
    theta[: len(spec.params["ma"])] = spec.params["ma"]
    np.testing.assert_allclose(theta, state_space["theta"], rtol=RTOL, atol=1e-15)
    np.testing.assert_allclose(forecast_at_origins(spec, values, [FIT_ROWS - 1], HORIZON)[0],
                               model.predict(HORIZON)["mean"], rtol=RTOL)
    origin = FIT_ROWS + 17
    np.testing.assert_allclose(forecast_at_origins(spec, longer, [origin], HORIZON)[0],
                               arima_reference(longer, origin, model.model_), rtol=RTOL)


@pytest.mark.parametrize("season, search", [
    (12, {"season_length": 12}),  # statsforecast's own search
    (30, {"season_length": 30, "max_P": 1, "max_Q": 1}),  # seasonal orders up to 1
    (60, {"season_length": 1}),  # above 52 rows a season: no seasonal terms
])
def test_a_long_season_narrows_the_arima_search(monkeypatch, season, search):
    import statsforecast.models

    asked = []

    class Recorded(statsforecast.models.AutoARIMA):
        def __init__(self, **kwargs):
            asked.append(kwargs)
            super().__init__(**kwargs)

    monkeypatch.setattr(statsforecast.models, "AutoARIMA", Recorded)
    steps = np.arange(3 * season + 7)
    values = (10 + np.sin(2 * np.pi * steps / season)
              + 0.1 * np.random.default_rng(season).normal(size=len(steps)))
    spec = _quiet(lambda: fit_classical("arima", values, season))
    assert asked == [{**search, "approximation": season > 12}]
    assert spec.season == season
    if season > classical.LONGEST_SEASON:
        assert spec.params["m"] == 1 and spec.params["seasonal_order"] == [0, 0, 0]
        assert spec.description.endswith(
            f"(no seasonal terms: a season of {season} rows is longer than 52, too slow to fit)")
    else:
        assert spec.params["m"] == season and "no seasonal terms" not in spec.description
    # Either way the member forecasts what statsforecast's fitted model forecasts.
    fitted = _quiet(lambda: statsforecast.models.ARIMA(
        order=tuple(spec.params["order"]), season_length=spec.params["m"],
        seasonal_order=tuple(spec.params["seasonal_order"]),
        include_mean="intercept" in spec.params["coef"],
        include_drift="drift" in spec.params["coef"],
        fixed=spec.params["coef"]).fit(values))
    np.testing.assert_allclose(forecast_at_origins(spec, values, [len(values) - 1], 3)[0],
                               fitted.predict(3)["mean"], rtol=1e-6)


@pytest.mark.parametrize("season", [30, 60])
def test_ets_leaves_out_a_season_longer_than_52_rows(season):
    steps = np.arange(3 * season + 7)
    values = (10 + np.sin(2 * np.pi * steps / season)
              + 0.1 * np.random.default_rng(season).normal(size=len(steps)))
    spec = _quiet(lambda: fit_classical("ets", values, season))
    long = season > classical.LONGEST_SEASON
    # statsforecast's own choice with the season as given, or with none.
    fitted = AutoETS(season_length=1 if long else season).fit(values).model_
    assert spec.description.startswith(fitted["method"]) and spec.season == season
    assert spec.params["m"] == (1 if long else season)
    assert ("no seasonal terms" in spec.description) == long
    np.testing.assert_allclose(forecast_at_origins(spec, values, [len(values) - 1], 3)[0],
                               AutoETS(season_length=1 if long else season)
                               .fit(values).predict(3)["mean"], rtol=1e-6)


@pytest.mark.parametrize("form", ["STM", "OTM", "DSTM", "DOTM"])
def test_each_theta_model_equals_statsforecast(form):
    spec, model = fit_pair("theta", model=form)
    assert spec.params["model"] == form
    assert spec.params["decomposition"] == "multiplicative"
    np.testing.assert_allclose(forecast_at_origins(spec, Y_FIT, [FIT_ROWS - 1], HORIZON)[0],
                               model.predict(HORIZON)["mean"], rtol=RTOL)
    np.testing.assert_allclose(forecast_at_origins(spec, SERIES, [ORIGINS[1]], HORIZON)[0],
                               theta_reference(SERIES, ORIGINS[1], spec), rtol=RTOL)


@pytest.mark.parametrize("positive, season, decomposition", [
    (False, SEASON, "additive"),  # a series with negative values cannot be divided
    (True, 1, None),  # no season: no decomposition
])
def test_theta_without_a_multiplicative_season(positive, season, decomposition):
    values = seasonal_series(seed=2, positive=positive)
    spec, model = fit_pair("theta", values=values[:FIT_ROWS], season=season, model="DOTM")
    assert spec.params["decomposition"] == decomposition
    # statsforecast tests for a season from m = 4 on: below, no history could have one.
    assert spec.params["decomposition_each_origin"] == (season >= 4)
    np.testing.assert_allclose(
        forecast_at_origins(spec, values[:FIT_ROWS], [FIT_ROWS - 1], HORIZON)[0],
        model.predict(HORIZON)["mean"], rtol=RTOL)
    np.testing.assert_allclose(forecast_at_origins(spec, values, [ORIGINS[1]], HORIZON)[0],
                               theta_reference(values, ORIGINS[1], spec), rtol=RTOL)


def theta_case(case):
    """(values, season, fitting rows) of a series that takes statsforecast's theta
    decomposition down one of its branches at some origins."""
    rng = np.random.default_rng(5)
    if case == "multiplicative":
        return seasonal_series(seed=4), SEASON, FIT_ROWS
    if case == "additive":  # values below 0: the multiplicative form is not tried
        return seasonal_series(seed=4, positive=False), SEASON, FIT_ROWS
    if case == "odd season":
        steps = np.arange(90)
        return (50 + 0.2 * steps + 8 * np.sin(2 * np.pi * steps / 7)
                + rng.normal(0, 1, 90)), 7, 50
    if case == "an index below 0.01":
        # Positive, but one phase near 0: its multiplicative index falls below 0.01, so
        # statsforecast takes the additive decomposition instead.
        shape = np.where(np.arange(96) % 6 == 0, 0.002, 1.0 + 0.3 * (np.arange(96) % 6 == 3))
        return (100 + np.cumsum(rng.normal(0, 1, 96))) * shape + 0.01, 6, 60
    if case == "a spike each season":
        # A season so sharp that the test finds it in fewer than 2 seasons of rows (21 to 23
        # of them), where statsforecast still decomposes nothing.
        steps = np.arange(72)
        return 1.0 + 10.0 * (steps % SEASON == 0) + rng.uniform(0, 0.1, 72), SEASON, 40
    # "a season appearing": noise first, where the test finds no season (the fit decomposes
    # nothing), then a strong season, which later histories' tests find.
    steps = np.arange(120)
    values = 30 + rng.normal(0, 1, 120) + np.where(steps >= 60, 6 * np.sin(2 * np.pi * steps
                                                                            / SEASON), 0.0)
    return values, SEASON, 55


def statsforecast_decomposition(values, origin, spec):
    model = theta_forward(values, origin, spec)
    return model["decomposition_type"] if model.get("decompose", False) else None


@pytest.mark.parametrize("case", ["multiplicative", "additive", "odd season",
                                  "an index below 0.01", "a season appearing",
                                  "a spike each season"])
def test_theta_decomposes_each_history_again_as_statsforecasts_forward(case):
    values, season, fit_rows = theta_case(case)
    spec, _ = fit_pair("theta", values=values[:fit_rows], season=season)
    origins = np.arange(3, len(values) - 1)
    ours = forecast_at_origins(spec, values, origins, HORIZON)
    for row, origin in zip(ours, origins):
        # float64 round-off: running sums against statsmodels' direct sums (measured 1e-14)
        np.testing.assert_allclose(row, theta_reference(values, origin, spec), rtol=RTOL,
                                   err_msg=f"origin {origin}")
    # The case takes the branch it is named for (and no season before 2 seasons of rows).
    forms = {statsforecast_decomposition(values, origin, spec) for origin in origins}
    expected = {"multiplicative": {None, "multiplicative"}, "odd season": {None, "multiplicative"},
                "additive": {None, "additive"}, "an index below 0.01": {None, "additive"},
                "a season appearing": {None, "multiplicative"},
                "a spike each season": {None, "multiplicative"}}[case]
    assert forms == expected
    if case == "a season appearing":
        assert spec.params["decomposition"] is None
        assert spec.description.endswith(
            "no season in the fitting rows (season 12 tested again at each origin)")
    else:
        assert spec.description.endswith(f"season {season}, decomposed again at each origin")
    # The graph decomposes each history of a batch on its own: two series of one length.
    serve = tf.function(lambda history: forecast_from_history(spec, history, HORIZON))
    histories = np.stack([values[: len(values) - 20], values[20:]])
    np.testing.assert_allclose(
        serve(tf.constant(histories)).numpy(),
        [theta_reference(history, len(history) - 1, spec) for history in histories],
        rtol=1e-6)  # the graph's float32 output


@pytest.mark.parametrize("method", METHODS)
def test_an_empty_batch_of_histories_gets_an_empty_forecast(fitted, method):
    # A SavedModel's empty request (docs/cli.md: "an empty batch gets an empty result"); Theta's
    # pass over the rows once took the longest history of none, the smallest int64.
    serve = tf.function(lambda history: forecast_from_history(fitted[method][0], history,
                                                              HORIZON),
                        input_signature=[tf.TensorSpec([None, None], tf.float32)])
    for rows in (0, FIT_ROWS + 10):
        assert serve(tf.zeros([0, rows])).shape == (0, HORIZON)


def test_theta_decomposition_at_an_origin_ignores_later_rows_however_far_they_lie():
    # Noise of 0.01 around 10, then a jump by 1e7: the origins before the jump, scored in one
    # call with those after it, must get the numbers they get alone (the running sums are
    # centred on the first row, which every history holds; centred on the whole series' mean,
    # round-off of 1e7 swamped the early histories' autocorrelations and flipped their test).
    rng = np.random.default_rng(3)
    steps = np.arange(400)
    values = 10 + 0.01 * np.sin(2 * np.pi * steps / SEASON) + rng.normal(0, 0.01, 400)
    values[300:] += 1e7
    spec, _ = fit_pair("theta", values=values[:200], season=SEASON)
    together = forecast_at_origins(spec, values, np.arange(200, 399), HORIZON)[:100]
    alone = forecast_at_origins(spec, values[:300], np.arange(200, 300), HORIZON)
    np.testing.assert_allclose(together, alone, rtol=RTOL)
    for row, origin in zip(together[::9], range(200, 300, 9)):
        np.testing.assert_allclose(row, theta_reference(values, origin, spec), rtol=RTOL)


@pytest.mark.parametrize("rows", [4, SEASON - 1, SEASON + 1, 2 * SEASON - 1, 2 * SEASON])
def test_theta_serves_a_history_shorter_than_two_seasons(fitted, rows):
    # A SavedModel's request may be that short: no seasonal test below 2 seasons of rows, and
    # the running sums of lags beyond the history read nothing.
    spec = fitted["theta"][0]
    served = forecast_from_history(spec, tf.constant(SERIES[None, :rows]), HORIZON).numpy()[0]
    np.testing.assert_allclose(served, theta_reference(SERIES, rows - 1, spec),
                               rtol=1e-6)  # the graph's float32 output


def test_a_theta_spec_saved_before_each_origins_decomposition_keeps_the_fitted_one(fitted):
    values = json.loads(json.dumps(fitted["theta"][0].to_dict()))
    assert values["params"].pop("decomposition_each_origin") is True
    old = ClassicalSpec.from_dict(values)
    ours = forecast_at_origins(old, SERIES, ORIGINS, HORIZON)
    for row, origin in zip(ours, ORIGINS):
        np.testing.assert_allclose(row, fixed_theta_reference(SERIES, origin, old), rtol=RTOL)
        # ... which is not statsforecast's forward here: the decomposition moved.
        assert not np.allclose(row, theta_reference(SERIES, origin, old), rtol=1e-4)
    served_as_forecast(old)
    with pytest.raises(ValueError, match="'params.decomposition_each_origin' has the wrong"):
        ClassicalSpec.from_dict({**values, "params": {**values["params"],
                                                      "decomposition_each_origin": "yes"}})


# ---------------------------------------------------------------------------------------------
# 6: members on the log scale (log_ets, log_arima)


@pytest.mark.parametrize("method", sorted(LOG_METHODS))
def test_a_log_scale_member_is_its_model_on_log_values_taken_back_with_exp(method):
    # Independent reference: statsforecast's own automatic model fitted to log(y) (ETS: to
    # log(y) minus its mean over the fitting rows, the mean added back) and its forward with
    # those parameters, exp of its forecast. Same equations, float64 round-off.
    base = LOG_METHODS[method]
    spec = _quiet(lambda: fit_classical(method, Y_FIT, SEASON))
    assert spec.method == method and spec.description.endswith(" on log values")
    centre = float(np.mean(np.log(Y_FIT))) if method == "log_ets" else 0.0
    _, model = fit_pair(base, values=np.log(Y_FIT) - centre)
    ours = forecast_at_origins(spec, SERIES, ORIGINS, HORIZON)
    for row, origin in zip(ours, ORIGINS):
        expected = np.exp(centre + reference_at(base, spec, model, np.log(SERIES) - centre,
                                                origin))
        np.testing.assert_allclose(row, expected, rtol=RTOL, err_msg=f"origin {origin}")
    served_as_forecast(spec)  # the same numbers from a graph, as the SavedModel serves them
    restored = ClassicalSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert restored == spec


@pytest.mark.parametrize("method", sorted(LOG_METHODS))
def test_a_log_scale_member_refuses_values_at_or_below_zero(method):
    crossing = seasonal_series(positive=False)
    with pytest.raises(ValueError, match=f"{method} needs values above 0 .*the smallest is -"):
        fit_classical(method, crossing[:FIT_ROWS], SEASON)
    spec = _quiet(lambda: fit_classical(method, Y_FIT, SEASON))
    damaged = SERIES.copy()
    damaged[FIT_ROWS + 2] = 0.0
    with pytest.raises(ValueError, match=f"{method} needs values above 0"):
        forecast_at_origins(spec, damaged, [FIT_ROWS + 5], HORIZON)
    # A row after the origin is never read, so it may be anything.
    forecast_at_origins(spec, damaged, [FIT_ROWS + 1], HORIZON)
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"{method} needs history values"):
        forecast_from_history(spec, damaged[None, : FIT_ROWS + 5], HORIZON)


# ---------------------------------------------------------------------------------------------
# 7: a series in tiny or huge units


def test_the_fitting_unit_is_a_power_of_ten_only_outside_the_usual_magnitudes():
    assert fitting_unit(np.array([40.0, -60.0]), "arima") == 1.0
    assert fitting_unit(np.zeros(5), "arima") == 1.0
    assert fitting_unit(np.array([3e-3, 1e-3]), "theta") == 1.0  # 2e-3, inside
    assert fitting_unit(np.array([5e-8, 7e-8]), "arima") == pytest.approx(1e-8, rel=1e-12)
    assert fitting_unit(np.array([2.5e11, -2.5e11]), "theta") == pytest.approx(1e11, rel=1e-12)
    assert fitting_unit(np.array([5e-8, 7e-8]), "ets") == 1.0  # AutoETS is free of the units


@pytest.mark.parametrize("method", ["arima", "theta"])
@pytest.mark.parametrize("unit", [1e-9, 1e9])
def test_a_series_in_tiny_or_huge_units_forecasts_as_in_units_near_one(method, unit):
    # The reference: statsforecast's own fit of the same series divided by 10 (magnitude
    # about 5, inside FITTING_MAGNITUDES, so fitted as it is), its forecasts times 10. The
    # series times 1e-9 or 1e9 is fitted on the values divided by its power of ten, which
    # differ from the reference's by float64 rounding of the inputs only; the optimisers
    # carry that to at most about 1e-8 of the series' spread here, hence 1e-6. Without the
    # unit, ARIMA chose other orders at 1e-9 (0.87 of the spread off) and Theta was 0.17 off.
    values = stationary_series()
    scale = np.std(values)
    origins = np.array([FIT_ROWS + 5, len(values) - 1])
    reference = _quiet(lambda: fit_classical(method, values[:FIT_ROWS] / 10, SEASON))
    expected = forecast_at_origins(reference, values / 10, origins, HORIZON) * 10
    spec = _quiet(lambda: fit_classical(method, values[:FIT_ROWS] * unit, SEASON))
    assert spec.description == f"{reference.description} (fitted on values / {unit * 10:g})"
    ours = forecast_at_origins(spec, values * unit, origins, HORIZON) / unit
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-6 * scale)
    # The numbers in the series' units survive the run files, and serve from a graph (its
    # output is float32: relative 1e-6).
    restored = ClassicalSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert restored == spec
    history = tf.constant(values[None, : FIT_ROWS + 10] * unit)
    np.testing.assert_allclose(
        forecast_from_history(spec, history, HORIZON).numpy()[0] / unit,
        forecast_at_origins(reference, values[: FIT_ROWS + 10] / 10, [FIT_ROWS + 9],
                            HORIZON)[0] * 10, rtol=1e-6)


@pytest.mark.parametrize("unit", [1e-9, 1e-3, 1e9])
def test_log_ets_takes_the_same_form_and_forecasts_in_any_unit(unit):
    # A unit is a shift of the logs. ETS runs on the logs minus their mean, so the fit sees
    # the same numbers (float64 rounding of the shift apart: 1e-9 relative is ample) and only
    # additive forms are admissible in any unit; on the logs themselves the units decided
    # which forms AutoETS could take (every log positive or not) and moved its fit.
    spec = _quiet(lambda: fit_classical("log_ets", Y_FIT, SEASON))
    scaled = _quiet(lambda: fit_classical("log_ets", Y_FIT * unit, SEASON))
    assert scaled.description == spec.description
    assert spec.params["error"] == "A" and spec.params["seasonal"] in ("A", "N")
    np.testing.assert_allclose(forecast_at_origins(scaled, SERIES * unit, ORIGINS, HORIZON),
                               forecast_at_origins(spec, SERIES, ORIGINS, HORIZON) * unit,
                               rtol=1e-9)


# ---------------------------------------------------------------------------------------------
# 8: a long series is fitted on its last rows


def test_the_fitting_rows_are_the_last_fit_rows_or_seasons():
    start, limit, seasons = (forecasting_metrics.fitting_start, forecasting_metrics.FIT_ROWS,
                             forecasting_metrics.FIT_SEASONS)
    assert start(limit, 12) == 0
    assert start(limit + 1, 12) == 1
    assert start(30_000, 24) == 30_000 - limit
    # A season so long that FIT_SEASONS of it exceed FIT_ROWS keeps FIT_SEASONS of them.
    season = limit // seasons + 100
    assert start(30_000, season) == 30_000 - seasons * season


TAIL_ROWS = 48  # of Y_FIT's 72: the test's FIT_ROWS, small to keep the fits fast


@pytest.fixture
def short_limit(monkeypatch):
    monkeypatch.setattr(forecasting_metrics, "FIT_ROWS", TAIL_ROWS)
    monkeypatch.setattr(forecasting_metrics, "FIT_SEASONS", 2)


@pytest.mark.parametrize("method", METHODS + tuple(sorted(LOG_METHODS)))
def test_a_long_series_is_fitted_on_its_last_rows_and_forecast_from_there(short_limit, method):
    first = FIT_ROWS - TAIL_ROWS
    spec = _quiet(lambda: fit_classical(method, Y_FIT, SEASON))
    # The reference: the same method fitted on the last rows alone (a series no longer than
    # the limit is fitted whole), forecast over the series from that row; its own agreement
    # with statsforecast is tested above. Seasonal naive has nothing to fit: it starts at 0.
    tail = _quiet(lambda: fit_classical(method, Y_FIT[first:], SEASON))
    assert tail.first_row == 0 and tail.fit_rows == TAIL_ROWS
    if method == "seasonal_naive":
        assert spec == fit_classical(method, Y_FIT, SEASON) and spec.first_row == 0
        return
    assert (spec.first_row, spec.fit_rows) == (first, TAIL_ROWS)
    assert spec.params == tail.params
    assert spec.description == f"{tail.description}, fitted on the last 48 of 72 rows"
    ours = forecast_at_origins(spec, SERIES, ORIGINS, HORIZON)
    np.testing.assert_array_equal(
        ours, forecast_at_origins(tail, SERIES[first:], ORIGINS - first, HORIZON))
    # Rows before the first fitting row are not read; an origin before it has no state.
    changed = SERIES.copy()
    changed[:first] = -1e6
    np.testing.assert_array_equal(forecast_at_origins(spec, changed, ORIGINS, HORIZON), ours)
    with pytest.raises(ValueError, match=f"must lie in \\[{first}, "):
        forecast_at_origins(spec, SERIES, [first - 1], HORIZON)
    # The graph reads the whole history and starts at the same row; a history that does not
    # reach past it is refused, naming the row.
    serve = served_as_forecast(spec)
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"fitted from row {first} "):
        serve(tf.constant(SERIES[None, :first].astype(np.float32)))
    restored = ClassicalSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert restored == spec


def test_a_spec_saved_before_first_row_reads_as_fitted_from_row_0(fitted):
    values = json.loads(json.dumps(fitted["ets"][0].to_dict()))
    del values["first_row"]
    assert ClassicalSpec.from_dict(values) == fitted["ets"][0]
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(ValueError, match="'first_row'"):
            ClassicalSpec.from_dict({**values, "first_row": bad})


def test_a_season_left_out_of_ets_and_arima_does_not_lengthen_their_fitting_rows(monkeypatch):
    # FIT_ROWS 30 and FIT_SEASONS 2, season 60 (above LONGEST_SEASON = 52): Theta, which
    # decomposes by the season, keeps two of them (120 of 150 rows); ETS and ARIMA, fitted
    # without it, the last 30.
    monkeypatch.setattr(forecasting_metrics, "FIT_ROWS", 30)
    monkeypatch.setattr(forecasting_metrics, "FIT_SEASONS", 2)
    values = seasonal_series(n=150)
    firsts = {method: _quiet(lambda: fit_classical(method, values, 60)).first_row
              for method in ("ets", "arima", "theta")}
    assert firsts == {"ets": 120, "arima": 120, "theta": 30}


@pytest.mark.parametrize("values, season", [
    (np.full(85, 5.0), 12),  # statsmodels' autocorrelation in AutoTheta's test: 0 / 0
    (np.array([3.0, 5, 4, 6, 5, 7, 6]), 1),  # AutoETS's search on 7 rows: 1 / 0
])
def test_the_fits_keep_numpys_notes_from_inside_the_libraries_off_the_terminal(values, season):
    # Recorded, not raised: statsforecast catches what its own candidate fits raise.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        for method in ("ets", "arima", "theta"):
            try:
                fit_classical(method, values, season)
            except ValueError:  # a member that cannot be fitted is left out, and said so
                pass
    assert [str(w.message) for w in caught if w.category is RuntimeWarning] == []
