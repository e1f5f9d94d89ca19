"""Classical forecasting members: fitted by statsforecast, forecast by seqlab's own recursion.

The protocol, for every member (ETS, ARIMA, Theta, seasonal naive):

1. **Fit once.** `fit_classical` runs statsforecast's automatic model (AutoETS, AutoARIMA,
   AutoTheta) on the fitting rows of one series. It chooses the form or orders and estimates the
   parameters; `ClassicalSpec` keeps exactly what the recursion needs, as plain JSON.
2. **Forecast with the parameters fixed, the state updated per origin.** The series handed to the
   forecast starts at the SAME first row as the series handed to the fit, and the recursion runs
   from the first row the member was fitted on (`first_row`: 0, or on a series longer than
   `metrics.FIT_ROWS` the first of its last rows, `metrics.fitting_start`), so the initial
   states, the seasonal phases and the drift's time index mean the same thing. One pass over
   the series computes the state after every row; the forecast from origin `r` reads the state
   after row `r` and nothing later (Theta, whose deseasonalised rows differ per origin, runs
   one state per origin in the same pass, each stopping at its own row). No parameter is
   refitted per origin.
3. **One implementation in TensorFlow** (float64 inside), called from NumPy by
   `forecast_at_origins` (the pipeline's scoring and predict; it runs a graph traced once per
   form, the fitted numbers being its inputs) and from any graph by `forecast_from_history` (the
   exported SavedModel, which receives the history in the request; the numbers become
   constants). Both call the same per-row `step` and the same `forecast` of each recursion
   (Theta's `forecast_each` in both), so they agree by construction.

The recursions:

- ETS: the state-space update of Hyndman's `etscalc` (ported to C++ by statsforecast), which does
  not depend on the error type: q = l + phi b; p = y, y - s[m-1] or y / s[m-1];
  l' = q + alpha (p - q); b' = phi b + (beta / alpha)(l' - l - phi b); t = y - q or y / q;
  s'[0] = s[m-1] + gamma (t - s[m-1]), s'[j] = s[j-1]. The forecast i steps ahead (0-based) is
  l + phi*_i b, plus or times s[m-1 - i mod m], with statsforecast's damping sum phi*_0 = phi,
  phi*_i = phi*_{i-1} + phi^i (its C code's, not the textbook phi + ... + phi^(i+1); undamped
  both are i + 1). States are in statsforecast's order, so the fitted initial states load
  unchanged.
- ARIMA: regression with ARIMA errors as statsforecast writes it, z_t = y_t - intercept -
  drift * t (t = 1 for the first fitting row), and statsforecast's exact Kalman filter on z: the
  state space of `make_arima` (the expanded phi(B) Phi(B^m), theta(B) Theta(B^m) and
  (1-B)^d (1-B^m)^D), its prior covariance from the first row, the filter update per row, and
  the forecast T^h a. The same equations give the same numbers from every origin, first rows
  included (a conditional-sum-of-squares recursion would not: with a seasonal MA near -1 its
  start-up error does not die out).
- Theta (Fiorucci et al. 2016, statsforecast's STM / OTM / DSTM / DOTM), as statsforecast's
  `forward` runs it: each history (the rows from the first fitting row up to the origin) is
  tested for a season again (the autocorrelation at lag m against its 90 % bound, with at
  least 2 m rows and m >= 4) and, where it has one, divided by (or has subtracted) the
  seasonal indices of ITS classical decomposition (statsmodels' `seasonal_decompose`: the
  centred moving average, the mean of each phase's ratios or differences, normalised;
  multiplicative unless a value is at or below 0 or an index below 0.01), one index per phase
  (row index mod m from the first fitting row); the theta state (level, running mean, A_n,
  B_n) runs over the deseasonalised rows with the fitted initial level, alpha and theta (the
  standard models' A_n, B_n being the least-squares line through the rows up to the origin);
  the forecast is re-seasonalised by phase. A history's decomposition reads its own rows only,
  so the origins differ in it (`_theta_decompositions` computes all of them from running sums
  in one pass). Specs saved before this keep the fitting rows' indices at every origin.
- Seasonal naive: the forecast i steps ahead is the last observed value of the same phase; with
  season 1 it is the naive (last value) forecast. Phases not yet observed (an origin inside the
  first season) forecast NaN, as statsforecast's SeasonalNaive does for a partial season.
- On the log scale (`log_ets`, `log_arima`; a strictly positive series only): the same model
  fitted to log y and run on log y, its forecast taken back with exp (the forecast median,
  the Box-Cox transform with lambda 0 and no bias adjustment, as R's forecast package does by
  default). A season whose swing grows with the level (airline passengers) becomes additive
  there, and a series that grows by a rate becomes one that grows by a step.
"""

import contextlib
import dataclasses
import logging
import math
import warnings

import numpy as np
import tensorflow as tf

from seqlab.models.forecasting.metrics import fitting_start, fitting_unit

METHODS = ("ets", "arima", "theta", "seasonal_naive")
# Members fitted and run on the log of a strictly positive series: {method: its model}.
LOG_METHODS = {"log_ets": "ets", "log_arima": "arima"}
ALL_METHODS = METHODS + tuple(LOG_METHODS)

ETS_COMPONENTS = ("N", "A", "M")
THETA_MODELS = ("STM", "OTM", "DSTM", "DOTM")
THETA_DECOMPOSITIONS = (None, "multiplicative", "additive")

# The keys each method's `params` must hold, with the JSON types they may take.
_NUMBER = (int, float)
_PARAM_TYPES = {
    "ets": {
        "error": str, "trend": str, "seasonal": str, "damped": bool, "m": int,
        "alpha": _NUMBER, "beta": _NUMBER, "gamma": _NUMBER, "phi": _NUMBER,
        "initial_level": _NUMBER, "initial_trend": _NUMBER, "initial_seasons": list,
    },
    "arima": {
        "order": list, "seasonal_order": list, "m": int, "coef": dict,
        "ar": list, "ma": list, "delta": list, "intercept": _NUMBER, "drift": _NUMBER,
        "initial_covariance": list,
    },
    "theta": {
        "model": str, "initial_smoothed": _NUMBER, "alpha": _NUMBER, "theta": _NUMBER,
        "decomposition": (str, type(None)), "season_indices": list,
    },
    "seasonal_naive": {},
}
_PARAM_TYPES.update({method: _PARAM_TYPES[model] for method, model in LOG_METHODS.items()})
# Keys a spec may hold, absent from specs saved before them (the default in parentheses):
# theta's `decomposition_each_origin` (False: the fitting rows' indices at every origin).
_OPTIONAL_PARAM_TYPES = {"theta": {"decomposition_each_origin": bool}}


def base_method(method):
    """The model a method runs: "ets" for "log_ets", the method itself otherwise."""
    return LOG_METHODS.get(method, method)


@dataclasses.dataclass
class ClassicalSpec:
    """A fitted classical member: its method, form and the fixed parameters of its recursion.

    Attributes:
        method: one of `ALL_METHODS` (a `LOG_METHODS` one holds its model's params, fitted
            to the log of the series).
        season: the season length the member was fitted with (1 = no season). Whether the
            fitted form actually has a season is in `params` and `description`.
        params: everything the recursion needs, JSON-able (floats, ints, bools, strings, lists,
            dicts). Per method: ets `error`, `trend`, `seasonal` ("N", "A", "M"), `damped`, `m`,
            `alpha`, `beta`, `gamma`, `phi`, `initial_level`, `initial_trend`,
            `initial_seasons` (statsforecast's order: the last entry is the season of row 0);
            arima `order` [p, d, q], `seasonal_order` [P, D, Q], `m`, `coef` (statsforecast's
            names), `ar`, `ma` and `delta` (the expanded phi(B) Phi(B^m), theta(B) Theta(B^m)
            and differencing polynomials, lag 1 first), `intercept`, `drift`,
            `initial_covariance` (the Kalman filter's prior, [rd][rd]);
            theta `model`, `initial_smoothed`, `alpha`, `theta`, `decomposition`,
            `season_indices` (the fitting rows' decomposition, one index per phase, phase 0 =
            the first fitting row), `decomposition_each_origin` (True: every history is
            decomposed again, as statsforecast's `forward` does, and the two before describe
            the fit only; False or absent, in runs saved before it: the fitting rows' indices
            at every origin); seasonal naive nothing (it uses `season`).
        description: the form in words, e.g. "ETS(M,Ad,M)" or
            "ARIMA(1,1,0)(0,1,1)[12] with drift".
        fit_rows: the number of rows it was fitted on.
        first_row: the row of the series its fit began at (0, or `metrics.fitting_start`'s
            row on a series longer than `metrics.FIT_ROWS`): its row 0, from which the
            recursion runs.
    """

    method: str
    season: int
    params: dict
    description: str
    fit_rows: int
    first_row: int = 0

    def to_dict(self):
        """The spec as a JSON-able dict (`json.dumps` works on it unchanged)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        """Rebuilds a spec from `to_dict()`'s output, checking every field.

        Raises:
            ValueError: naming the missing, unexpected or mistyped field.
        """
        if not isinstance(values, dict):
            raise ValueError(f"A ClassicalSpec must be a dict. Received: {type(values).__name__}")
        fields = [field.name for field in dataclasses.fields(cls)]
        # `first_row` came later: a run saved before it was fitted from row 0.
        missing = [name for name in fields if name not in values and name != "first_row"]
        if missing:
            raise ValueError(f"ClassicalSpec field {missing[0]!r} is missing.")
        unexpected = sorted(set(values) - set(fields))
        if unexpected:
            raise ValueError(f"ClassicalSpec has an unexpected field {unexpected[0]!r}.")
        method = values["method"]
        if method not in ALL_METHODS:
            raise ValueError(f"ClassicalSpec field 'method' must be one of {ALL_METHODS}. "
                             f"Received: method={method!r}")
        for name in ("season", "fit_rows"):
            value = values[name]
            if not _is_int(value) or value < 1:
                raise ValueError(
                    f"ClassicalSpec field {name!r} must be a positive integer. "
                    f"Received: {name}={value!r}")
        first_row = values.get("first_row", 0)
        if not _is_int(first_row) or first_row < 0:
            raise ValueError("ClassicalSpec field 'first_row' must be a non-negative integer. "
                             f"Received: first_row={first_row!r}")
        if not isinstance(values["description"], str):
            raise ValueError(
                "ClassicalSpec field 'description' must be a string. "
                f"Received: description={values['description']!r}")
        params = values["params"]
        if not isinstance(params, dict):
            raise ValueError(
                f"ClassicalSpec field 'params' must be a dict. Received: params={params!r}")
        for key, types in _PARAM_TYPES[method].items():
            if key not in params:
                raise ValueError(f"ClassicalSpec field 'params.{key}' is missing ({method}).")
            value = params[key]
            bad_type = not isinstance(value, types) or (isinstance(value, bool) and types != bool)
            if bad_type:
                raise ValueError(
                    f"ClassicalSpec field 'params.{key}' has the wrong type for {method}. "
                    f"Received: {key}={value!r}")
        for key, types in _OPTIONAL_PARAM_TYPES.get(method, {}).items():
            if key in params and not isinstance(params[key], types):
                raise ValueError(
                    f"ClassicalSpec field 'params.{key}' has the wrong type for {method}. "
                    f"Received: {key}={params[key]!r}")
        known = set(_PARAM_TYPES[method]) | set(_OPTIONAL_PARAM_TYPES.get(method, {}))
        unexpected = sorted(set(params) - known)
        if unexpected:
            raise ValueError(f"ClassicalSpec field 'params' has an unexpected key "
                             f"{unexpected[0]!r} for {method}.")
        spec = cls(method=method, season=values["season"], params=dict(params),
                   description=values["description"], fit_rows=values["fit_rows"],
                   first_row=int(first_row))
        _check_params(spec)
        return spec


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_params(spec):
    """Checks the values (not only the types) of `spec.params`; raises ValueError naming them."""
    p = spec.params
    method = base_method(spec.method)
    if method == "ets":
        for key in ("error", "trend", "seasonal"):
            if p[key] not in ETS_COMPONENTS:
                raise ValueError(f"ClassicalSpec field 'params.{key}' must be one of "
                                 f"{ETS_COMPONENTS}. Received: {key}={p[key]!r}")
        if p["trend"] == "M":
            raise ValueError("ClassicalSpec field 'params.trend': a multiplicative trend is not "
                             "supported. Received: trend='M'")
        expected = p["m"] if p["seasonal"] != "N" else 0
        if p["m"] < 1 or len(p["initial_seasons"]) != expected:
            raise ValueError(
                f"ClassicalSpec field 'params.initial_seasons' must hold {expected} values "
                f"(m={p['m']}, seasonal={p['seasonal']!r}). "
                f"Received: {len(p['initial_seasons'])} values")
    elif method == "arima":
        for key in ("order", "seasonal_order"):
            if len(p[key]) != 3 or not all(_is_int(v) and v >= 0 for v in p[key]):
                raise ValueError(f"ClassicalSpec field 'params.{key}' must be three "
                                 f"non-negative integers. Received: {key}={p[key]!r}")
        states = max(len(p["ar"]), len(p["ma"]) + 1) + len(p["delta"])
        if np.shape(p["initial_covariance"]) != (states, states):
            raise ValueError(
                f"ClassicalSpec field 'params.initial_covariance' must be {states} x {states} "
                f"(the filter's states for these polynomials). "
                f"Received: shape {np.shape(p['initial_covariance'])}")
    elif method == "theta":
        if p["model"] not in THETA_MODELS:
            raise ValueError(f"ClassicalSpec field 'params.model' must be one of "
                             f"{THETA_MODELS}. Received: model={p['model']!r}")
        if p["decomposition"] not in THETA_DECOMPOSITIONS:
            raise ValueError("ClassicalSpec field 'params.decomposition' must be one of "
                             f"{THETA_DECOMPOSITIONS}. Received: "
                             f"decomposition={p['decomposition']!r}")
        expected = 0 if p["decomposition"] is None else spec.season
        if len(p["season_indices"]) != expected:
            raise ValueError(
                f"ClassicalSpec field 'params.season_indices' must hold {expected} values. "
                f"Received: {len(p['season_indices'])} values")


# --------------------------------------------------------------------------------------------
# Fitting (statsforecast)


def fit_classical(method, values, season, model=None):
    """Fits statsforecast's automatic model of `method` to `values` and keeps its parameters.

    A series longer than `metrics.FIT_ROWS` rows (and `metrics.FIT_SEASONS` seasons) is fitted
    on its last rows only (`metrics.fitting_start`); the spec's `first_row` says where they
    begin, its description how many they are, and its forecasts read the series from there.

    Args:
        method: one of `ALL_METHODS`: "ets" (AutoETS, model "ZZZ"), "arima" (AutoARIMA),
            "theta" (AutoTheta) or "seasonal_naive" (nothing to fit), all with statsforecast's
            defaults (but for long seasons: `ARIMA_FULL_SEASON`, `LONGEST_SEASON`), or
            "log_ets" / "log_arima": AutoETS / AutoARIMA fitted to log(values). ARIMA and
            Theta fit a series whose mean absolute value is far from 1 in a power-of-ten unit
            (`metrics.fitting_unit`) and return the numbers in the series' own units.
        values: float array [n], the fitting rows 0..n-1 of one series, no NaN.
        season: season length in rows (1 = no season).
        model: optional form passed through to statsforecast, for ETS a three-letter code such
            as "AAN", "MAM" or "AAdA" (a "d" after the trend letter asks for damping) and for
            Theta one of "STM", "OTM", "DSTM", "DOTM". None lets statsforecast choose.

    Returns:
        A `ClassicalSpec`.

    Raises:
        ValueError: on a bad argument, a series too short for the method, or when statsforecast
            fails to fit; the message says which, so that the caller can leave the member out
            and say why.

    Example:

    >>> spec = fit_classical("ets", values[:96], season=12)
    >>> spec.description
    'ETS(M,A,M)'
    """
    if method not in ALL_METHODS:
        raise ValueError(f"`method` must be one of {ALL_METHODS}. Received: method={method!r}")
    if not _is_int(season) or season < 1:
        raise ValueError(f"`season` must be a positive integer. Received: season={season!r}")
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"`values` must be one series, shape [n]. Received: shape={values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("`values` must be finite (no NaN or infinity) to fit a classical member.")
    if model is not None and method not in ("ets", "theta"):
        raise ValueError(f"`model` applies to 'ets' and 'theta' only. Received: method={method!r}")
    # Seasons of the season the model fits: one ETS and ARIMA leave out does not count.
    first_row = (0 if method == "seasonal_naive"
                 else fitting_start(len(values), _fitted_season(method, int(season), model)))
    with warnings.catch_warnings():
        # numpy's notes from inside statsforecast's and statsmodels' fits (0 / 0 in the
        # autocorrelation of a constant series, a division by zero in ETS's search): the
        # fitted spec is checked, and a failed fit is a ValueError.
        warnings.simplefilter("ignore", RuntimeWarning)
        spec = _fit_rows(method, values[first_row:], season, model)
    if first_row == 0:
        return spec
    return dataclasses.replace(
        spec, first_row=first_row,
        description=f"{spec.description}, fitted on the last {spec.fit_rows:,} of "
                    f"{len(values):,} rows")


def _fit_rows(method, values, season, model):
    """`fit_classical` on all of `values` (checked already)."""
    if method in LOG_METHODS:
        _check_positive(values, method)
        logs = np.log(values)
        if method == "log_arima":
            spec = _fit_rows("arima", logs, season, None)
        else:
            # ETS on the logs minus their mean (see _level_shifted).
            centre = float(np.mean(logs))
            spec = _level_shifted(_fit_rows("ets", logs - centre, season, None), centre)
        return dataclasses.replace(spec, method=method,
                                   description=f"{spec.description} on log values")
    season = int(season)
    minimum = {"ets": 3, "arima": 3, "theta": 4, "seasonal_naive": season}[method]
    if len(values) < minimum:
        raise ValueError(f"The series is too short to fit {method}: {len(values)} rows, "
                         f"it needs at least {minimum}.")
    fitters = {"ets": _fit_ets, "arima": _fit_arima, "theta": _fit_theta,
               "seasonal_naive": _fit_seasonal_naive}
    unit = fitting_unit(values, method)
    try:
        spec = fitters[method](values / unit, season, model)
    except _Unsupported:
        raise
    except Exception as error:  # statsforecast raises ValueError or bare Exception on failure
        raise ValueError(f"statsforecast could not fit {method} (season {season}) to "
                         f"{len(values)} rows: {type(error).__name__}: {error}") from error
    if unit != 1.0:
        spec = _in_units(spec, unit)
    _check_finite(spec)
    return spec


def _in_units(spec, unit):
    """`spec`, fitted on values / `unit`, for the values themselves: the numbers in the
    series' units are multiplied by `unit`; the rest (ARIMA's polynomials and prior, whose
    Kalman gains do not depend on the data; Theta's alpha, theta and multiplicative season)
    is free of units. Both recursions are then linear in the history: forecasting y with the
    result equals `unit` times forecasting y / unit with `spec`."""
    p = dict(spec.params)
    if spec.method == "arima":
        p["intercept"], p["drift"] = p["intercept"] * unit, p["drift"] * unit
        p["coef"] = {name: value * unit if name in ("intercept", "drift") else value
                     for name, value in p["coef"].items()}
    elif spec.method == "theta":
        p["initial_smoothed"] = p["initial_smoothed"] * unit
        if p["decomposition"] == "additive":
            p["season_indices"] = [value * unit for value in p["season_indices"]]
    return dataclasses.replace(spec, params=p,
                               description=f"{spec.description} (fitted on values / {unit:g})")


# Why log ETS runs on the logs minus their mean: statsforecast's AutoETS may choose a
# multiplicative error or season only for positive data, and its fit of additive forms moves
# with the data's level, so on the logs themselves the series' units chose the member: the same
# airline passengers in their units, times 1e-9 and times 1e9 got ETS(M,Ad,A), ETS(A,Ad,A) and
# ETS(A,A,A) on the logs (log ETS backtest RMSE 26.2, 21.7 and 17.1 in the series' units).
# Logs minus their mean cross zero whatever the units (a unit is a shift of the logs), so only
# additive forms are admissible (those of R's forecast with lambda = 0) and the fit sees the
# same numbers in any unit; the fitted level is shifted back by the mean.


def _level_shifted(spec, shift):
    """An additive ETS `spec` fitted on values - `shift`, for the values themselves: its
    initial level plus `shift` (with additive error, trend and season the recursion is then
    the same on values shifted by any constant)."""
    p = spec.params
    if p["seasonal"] == "M" or p["error"] == "M" or p["trend"] == "M":
        raise _Unsupported(f"ETS on centred logs chose a multiplicative form "
                           f"({spec.description}), which a shift does not carry.")
    return dataclasses.replace(spec, params={**p, "initial_level": p["initial_level"] + shift})


def _check_positive(values, method):
    """A log-scale member needs every value above 0 (the log of the rest is not a number)."""
    smallest = float(np.min(values)) if len(values) else 1.0
    if not smallest > 0:
        raise ValueError(f"{method} needs values above 0 (it runs on their log); the smallest "
                         f"is {smallest:.6g}")


class _Unsupported(ValueError):
    """A fit or an argument this module cannot serve (raised as is, not as a library failure)."""


def _check_finite(spec):
    for key, value in spec.params.items():
        if isinstance(value, dict):
            value = list(value.values())
        if value is None or isinstance(value, (bool, str)):
            continue
        if not np.all(np.isfinite(np.asarray(value, dtype=np.float64))):
            raise _Unsupported(f"statsforecast's {spec.method} fit gave a non-finite {key}: "
                               f"{value!r}; the member is left out.")


# A seasonal ARIMA's state holds P and Q seasons of lags, and its likelihood's cost grows much
# faster with the season than with the rows. statsforecast's search (the CSS approximation),
# measured on 2 cores on ten seasons of a noisy cycle (six for 96 and 168): season 24 1.3 s; 48
# 173 s with its default seasonal orders (up to 2), 4.6 s with orders up to 1; 52 28 s / 4.3 s;
# 96 10 s and 168 43 s (1 GB) with orders up to 1; 288 (5-minute data) still running after 5 min
# at 7 GB. A default run fits ARIMA eight times (on values and logs, before the test split and
# at three backtest folds), so: the full search up to `ARIMA_FULL_SEASON`, seasonal orders up to
# 1 up to `LONGEST_SEASON` (weekly data's year), and above it no seasonal terms in ARIMA and
# ETS: the season is left to Theta's decomposition, seasonal naive and the networks. (R's `ets`
# stops at 24; statsforecast's AutoETS fits longer seasons.)
ARIMA_FULL_SEASON = 24
LONGEST_SEASON = 52


def _fitted_season(method, season, model=None):
    """The season `method`'s model is fitted with: 1 for ETS and ARIMA above `LONGEST_SEASON`
    (ETS only when statsforecast chooses the form, `model` None), else `season`."""
    base = base_method(method)
    leaves_it_out = base == "arima" or (base == "ets" and model is None)
    return 1 if leaves_it_out and season > LONGEST_SEASON else season


def _no_seasonal_terms(season):
    return (f" (no seasonal terms: a season of {season} rows is longer than {LONGEST_SEASON}, "
            "too slow to fit)")


def _fit_ets(values, season, model):
    from statsforecast.models import AutoETS

    damped = None
    if model is not None:
        # statsforecast takes the damping as its own argument: "AAdA" -> model "AAA", damped.
        if len(model) == 4 and model[2] == "d":
            model, damped = model[:2] + model[3], True
        elif len(model) == 3 and model[1] != "Z":
            damped = False
        if len(model) != 3 or any(c not in "ANMZ" for c in model):
            raise _Unsupported(f"`model` for ETS must be three letters of A, N, M, Z, with an "
                             f"optional 'd' after the trend. Received: model={model!r}")
    # The automatic search's seasonal forms estimate one initial state per row of the season
    # (AutoETS chose ETS(A,A,N) on 2,300 rows of 5-minute data, season 288, in 15-19 s; without
    # the seasonal forms in 0.3 s). A form asked for by name is fitted as asked.
    fit_season = _fitted_season("ets", season, model)
    note = _no_seasonal_terms(season) if fit_season != season else ""
    fitted = AutoETS(season_length=fit_season, model=model or "ZZZ",
                     damped=damped).fit(values).model_
    error, trend, seasonal, damping = fitted["components"]
    if trend == "M":
        raise _Unsupported("statsforecast chose a multiplicative trend, which this member does "
                         "not support.")
    par = np.asarray(fitted["par"], dtype=np.float64)
    m = int(fitted["m"]) if seasonal != "N" else 1
    states = par[4:]
    has_trend = trend != "N"
    damped = damping != "N"
    params = {
        "error": error, "trend": trend, "seasonal": seasonal, "damped": damped, "m": m,
        "alpha": float(par[0]),
        "beta": float(par[1]) if has_trend else 0.0,
        "gamma": float(par[2]) if seasonal != "N" else 0.0,
        # statsforecast stores NaN for phi when undamped; its forecast then uses phi = 1.
        "phi": float(par[3]) if damped else 1.0,
        "initial_level": float(states[0]),
        "initial_trend": float(states[1]) if has_trend else 0.0,
        "initial_seasons": [float(v) for v in states[1 + has_trend:]] if seasonal != "N" else [],
    }
    description = f"ETS({error},{trend}{'d' if damped else ''},{seasonal}){note}"
    return ClassicalSpec("ets", season, params, description, len(values))


def _fit_arima(values, season, model):
    from statsforecast.models import AutoARIMA

    # R's auto.arima chooses the orders on the conditional-sum-of-squares approximation for
    # long or long-season series (more than 150 rows or a season above 12), then fits the
    # chosen one exactly; statsforecast's default searches with exact fits, about ten times
    # slower here on 263 yearly rows (season 11) for the same AICc.
    approximation = len(values) > 150 or season > 12
    search, note = {"season_length": _fitted_season("arima", season)}, ""
    if search["season_length"] != season:
        note = _no_seasonal_terms(season)
    elif season > ARIMA_FULL_SEASON:
        search.update(max_P=1, max_Q=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the search's "possible convergence problem" notes
        fitted = AutoARIMA(approximation=approximation, **search).fit(values).model_
    spec = _arima_spec(fitted, season, len(values))
    return dataclasses.replace(spec, description=spec.description + note) if note else spec


def _arima_spec(fitted, season, fit_rows):
    """The spec of a fitted statsforecast ARIMA `model_` dict (AutoARIMA's or ARIMA's)."""
    from statsforecast.arima import arima_string, make_arima

    p, q, P, Q, m, d, D = (int(v) for v in fitted["arma"])
    coef = {str(name): float(value) for name, value in fitted["coef"].items()}
    known = {f"ar{i + 1}" for i in range(p)} | {f"ma{i + 1}" for i in range(q)}
    known |= {f"sar{i + 1}" for i in range(P)} | {f"sma{i + 1}" for i in range(Q)}
    unknown = sorted(set(coef) - known - {"intercept", "drift"})
    if unknown:
        raise _Unsupported(f"statsforecast's ARIMA has coefficients this member does not know: "
                         f"{unknown}")
    if fitted.get("lambda") is not None:
        raise _Unsupported("statsforecast's ARIMA used a Box-Cox transform; not supported.")
    ar, ma, delta = _expand_arima(coef, (p, d, q), (P, D, Q), m)
    # The filter's prior covariance: statsforecast's own (Gardner et al. 1980 for the ARMA
    # block, kappa = 1e6 on the differencing states), stored so that serving needs no fit code.
    prior = make_arima(np.array(ar), np.array(ma), np.array(delta))["Pn"]
    params = {
        "order": [p, d, q], "seasonal_order": [P, D, Q], "m": m, "coef": coef,
        "ar": ar, "ma": ma, "delta": delta,
        "intercept": coef.get("intercept", 0.0), "drift": coef.get("drift", 0.0),
        "initial_covariance": [[float(v) for v in row] for row in prior],
    }
    return ClassicalSpec("arima", season, params, arima_string(fitted).strip(), fit_rows)


def _expand_arima(coef, order, seasonal_order, m):
    """The expanded lag polynomials of a seasonal ARIMA, lag 1 first, in statsforecast's signs.

    Returns:
        (ar, ma, delta): 1 - sum(ar_i B^i) = phi(B) Phi(B^m); 1 + sum(ma_j B^j) =
        theta(B) Theta(B^m); 1 - sum(delta_i B^i) = (1 - B)^d (1 - B^m)^D. Here
        phi(B) = 1 - ar1 B - ..., theta(B) = 1 + ma1 B + ..., likewise for sar / sma.
    """
    (p, d, q), (P, D, Q) = order, seasonal_order

    def lag_poly(coefs, sign, spacing):
        """1 + sign * (c_1 B^spacing + c_2 B^(2 spacing) + ...), lag 0 first."""
        poly = np.zeros(len(coefs) * spacing + 1)
        poly[0] = 1.0
        poly[spacing::spacing] = sign * np.asarray(coefs, dtype=np.float64)
        return poly

    # Convolving lag-ordered coefficient arrays multiplies the polynomials in B.
    ar_poly = np.convolve(lag_poly([coef[f"ar{i + 1}"] for i in range(p)], -1.0, 1),
                          lag_poly([coef[f"sar{i + 1}"] for i in range(P)], -1.0, m))
    ma_poly = np.convolve(lag_poly([coef[f"ma{i + 1}"] for i in range(q)], 1.0, 1),
                          lag_poly([coef[f"sma{i + 1}"] for i in range(Q)], 1.0, m))
    delta_poly = np.ones(1)
    for _ in range(d):
        delta_poly = np.convolve(delta_poly, lag_poly([1.0], -1.0, 1))
    for _ in range(D):
        delta_poly = np.convolve(delta_poly, lag_poly([1.0], -1.0, m))
    return ([float(-v) for v in ar_poly[1:]], [float(v) for v in ma_poly[1:]],
            [float(-v) for v in delta_poly[1:]])


def _fit_theta(values, season, model):
    from statsforecast.models import AutoTheta

    if model is not None and model not in THETA_MODELS:
        raise _Unsupported(f"`model` for Theta must be one of {THETA_MODELS}. Received: {model!r}")
    fitted = AutoTheta(season_length=season, model=model).fit(values).model_
    decomposition = fitted["decomposition_type"] if fitted.get("decompose", False) else None
    season_indices = []
    if decomposition is not None:
        from statsmodels.tsa.seasonal import seasonal_decompose

        # The same decomposition auto_theta ran on these rows; its seasonal component repeats
        # with period `season`, so its first `season` values are one index per phase.
        seasonal = seasonal_decompose(values, model=decomposition, period=season).seasonal
        season_indices = [float(v) for v in seasonal[:season]]
    par = fitted["par"]
    params = {
        "model": str(fitted["modeltype"]),
        "initial_smoothed": float(par["initial_smoothed"]),
        "alpha": float(par["alpha"]), "theta": float(par["theta"]),
        "decomposition": decomposition, "season_indices": season_indices,
        # statsforecast tests for a season only where m >= 4: below it nothing could change.
        "decomposition_each_origin": season >= _SHORTEST_TESTED_SEASON,
    }
    description = f"Theta ({params['model']})"
    if decomposition is not None:
        description += f", {decomposition} season {season}"
    if params["decomposition_each_origin"]:
        description += (", decomposed again at each origin" if decomposition is not None else
                        f", no season in the fitting rows (season {season} tested again at "
                        "each origin)")
    return ClassicalSpec("theta", season, params, description, len(values))


def _fit_seasonal_naive(values, season, model):
    description = "naive" if season == 1 else f"seasonal naive (season {season})"
    return ClassicalSpec("seasonal_naive", season, {}, description, len(values))


# --------------------------------------------------------------------------------------------
# The recursions (TensorFlow, float64). Each is built from `static` (Python values that shape
# the graph: the form, the season length) and `numeric` (a dict of float64 tensors: the fitted
# numbers), and has `initial_state(batch)`, `step(state, y, row)` (the state after row `row`,
# 0-based from the first fitting row) and `forecast(state, rows_seen, horizon)`; states are
# tuples of [batch, ...] tensors. Splitting static from numeric lets one traced graph serve
# every series whose member has the same form (see `_origins_function`).


class _ETSRecursion:
    """Hyndman's ETS state update and forecast; state (level, trend, seasons[m])."""

    batch_free = ()

    @staticmethod
    def parts(spec):
        p = spec.params
        static = (p["trend"], p["seasonal"], p["m"] if p["seasonal"] != "N" else 1)
        numeric = {
            "alpha": p["alpha"], "beta": p["beta"], "gamma": p["gamma"],
            # Without a trend, b stays 0 and phi multiplies nothing.
            "phi": p["phi"] if p["trend"] != "N" else 0.0,
            "initial_level": p["initial_level"], "initial_trend": p["initial_trend"],
            "initial_seasons": p["initial_seasons"] or [0.0],
        }
        return static, numeric

    def __init__(self, static, numeric):
        self.trend, self.seasonal, self.m = static
        self.alpha, self.beta = numeric["alpha"], numeric["beta"]
        self.gamma, self.phi = numeric["gamma"], numeric["phi"]
        self.numeric = numeric

    def initial_state(self, batch):
        n = self.numeric
        return (tf.fill([batch], n["initial_level"]), tf.fill([batch], n["initial_trend"]),
                tf.tile(n["initial_seasons"][None, :], tf.stack([batch, 1])))

    def step(self, state, y, row):
        level, trend, seasons = state
        q = level + self.phi * trend
        oldest = seasons[:, -1]
        p = {"N": y, "A": y - oldest, "M": y / oldest}[self.seasonal]
        new_level = q + self.alpha * (p - q)
        new_trend = trend
        if self.trend != "N":
            damped = self.phi * trend
            new_trend = damped + (self.beta / self.alpha) * (new_level - level - damped)
        new_seasons = seasons
        if self.seasonal != "N":
            t = y - q if self.seasonal == "A" else y / q
            first = oldest + self.gamma * (t - oldest)
            new_seasons = tf.concat([first[:, None], seasons[:, :-1]], axis=1)
        return new_level, new_trend, new_seasons

    def forecast(self, state, rows_seen, horizon):
        level, trend, seasons = state
        steps = np.arange(horizon)
        # statsforecast's forecast (Hyndman's C `forecast`) grows the damping sum as
        # phi*_0 = phi, phi*_i = phi*_{i-1} + phi^i, i.e. phi, 2 phi, 2 phi + phi^2, ... (not the
        # textbook phi + ... + phi^(i+1)); we follow it so that the forecasts are the same.
        # Undamped (phi = 1) both give i + 1.
        powers = self.phi ** tf.constant(np.arange(1.0, horizon), tf.float64)
        phistar = self.phi + tf.concat([tf.zeros([1], tf.float64), tf.cumsum(powers)], axis=0)
        mean = level[:, None] + phistar[None, :] * trend[:, None]
        if self.seasonal == "N":
            return mean
        season = tf.gather(seasons, self.m - 1 - steps % self.m, axis=1)
        return mean + season if self.seasonal == "A" else mean * season


class _ARIMARecursion:
    """statsforecast's exact Kalman filter for ARIMA errors of z_t = y_t - intercept - drift t.

    The state space is the one statsforecast (after R's `makeARIMA`) builds: an ARMA block of
    r = max(len(ar), len(ma) + 1) states and one state per differencing lag, observed through
    Z = [1, 0, ..., 0, delta]. State: the filtered mean `a` [batch, rd] and its covariance
    `P` [rd, rd]; P does not depend on the data (no missing rows), so one P serves the batch.
    """

    batch_free = (1,)  # P has no batch dimension

    @staticmethod
    def parts(spec):
        p = spec.params
        transition, observation, innovation = _arima_state_space(p["ar"], p["ma"], p["delta"])
        static = (len(p["ar"]), len(p["ma"]), len(p["delta"]))
        numeric = {
            "transition": transition, "observation": observation, "innovation": innovation,
            "initial_covariance": p["initial_covariance"],
            "intercept": p["intercept"], "drift": p["drift"],
        }
        return static, numeric

    def __init__(self, static, numeric):
        self.transition = numeric["transition"]
        self.observation = numeric["observation"]
        self.innovation = numeric["innovation"]
        self.initial_covariance = numeric["initial_covariance"]
        self.intercept, self.drift = numeric["intercept"], numeric["drift"]

    def regression(self, time):
        # statsforecast's drift regressor is 1, 2, ... from the first fitting row.
        return self.intercept + self.drift * time

    def initial_state(self, batch):
        return (tf.zeros(tf.stack([batch, tf.shape(self.observation)[0]]), tf.float64),
                tf.zeros_like(self.initial_covariance))

    def step(self, state, y, row):
        mean, covariance = state
        z = y - self.regression(tf.cast(row, tf.float64) + 1.0)
        predicted = tf.linalg.matvec(self.transition, mean)  # T a, per batch row
        # The first row starts from the prior covariance (stationary ARMA block, diffuse
        # differencing states), as statsforecast's filter does; later rows propagate P.
        predicted_cov = tf.cond(
            row > 0,
            lambda: self.transition @ covariance @ tf.transpose(self.transition)
            + self.innovation,
            lambda: self.initial_covariance)
        residual = z - tf.linalg.matvec(predicted, self.observation)
        gain_vector = tf.linalg.matvec(predicted_cov, self.observation)
        gain = tf.tensordot(gain_vector, self.observation, 1)
        new_mean = predicted + residual[:, None] * gain_vector[None, :] / gain
        new_cov = predicted_cov - gain_vector[:, None] * gain_vector[None, :] / gain
        return new_mean, new_cov

    def forecast(self, state, rows_seen, horizon):
        mean = state[0]
        time = tf.cast(rows_seen, tf.float64)
        out = []
        for i in range(horizon):
            mean = tf.linalg.matvec(self.transition, mean)
            out.append(tf.linalg.matvec(mean, self.observation) + self.regression(time + i + 1.0))
        return tf.stack(out, axis=1)


def _arima_state_space(ar, ma, delta):
    """Transition T, observation Z and innovation covariance V (sigma^2 = 1) of statsforecast's
    `make_arima` for the expanded AR, MA and differencing polynomials."""
    p, q, d = len(ar), len(ma), len(delta)
    r = max(p, q + 1)
    observation = np.concatenate([[1.0], np.zeros(r - 1), delta])
    transition = np.zeros((r + d, r + d))
    transition[:p, 0] = ar
    transition[np.arange(r - 1), np.arange(1, r)] = 1.0
    if d > 0:
        transition[r] = observation
        transition[r + np.arange(1, d), r + np.arange(d - 1)] = 1.0
    loadings = np.concatenate([[1.0], ma, np.zeros(r - 1 - q), np.zeros(d)])
    return transition, observation, np.outer(loadings, loadings)


class _ThetaRecursion:
    """The theta models' state (level, mean, A_n, B_n) on deseasonalised rows.

    The standard models (STM, OTM) take A_n and B_n from the least-squares line through all
    rows so far (statsforecast's `initstate` fits it on the rows it is given), kept as running
    sums of y and t y; the dynamic ones (DSTM, DOTM) update them row by row.

    A spec with `decomposition_each_origin` (static `decomposition` EACH_ORIGIN) is run by
    `forecast_each`, which decomposes every history again; the others by `step` and
    `forecast` with the fitting rows' indices.
    """

    batch_free = ()

    @staticmethod
    def parts(spec):
        p = spec.params
        each_origin = p.get("decomposition_each_origin", False)
        static = (p["model"] in ("DSTM", "DOTM"),
                  EACH_ORIGIN if each_origin else p["decomposition"], spec.season)
        numeric = {
            "initial_smoothed": p["initial_smoothed"], "alpha": p["alpha"],
            "theta": p["theta"],
            "season_indices": [0.0] if each_origin else p["season_indices"] or [0.0],
        }
        return static, numeric

    def __init__(self, static, numeric):
        self.dynamic, self.decomposition, self.m = static
        self.each_origin = self.decomposition == EACH_ORIGIN
        self.initial_smoothed = numeric["initial_smoothed"]
        self.alpha, self.theta = numeric["alpha"], numeric["theta"]
        self.indices = numeric["season_indices"]

    def _phase_index(self, rows):
        if self.each_origin:
            raise ValueError("A Theta member decomposed at each origin runs by `forecast_each`, "
                             "not row by row with fixed indices.")
        return tf.gather(self.indices, tf.math.floormod(rows, self.m))

    def deseasonalise(self, y, row):
        if self.decomposition is None:
            return y
        index = self._phase_index(row)
        return y / index if self.decomposition == "multiplicative" else y - index

    def reseasonalise(self, mean, rows_seen):
        """`mean` [batch, horizon], the deseasonalised forecast from `rows_seen` rows."""
        if self.decomposition is None:
            return mean
        phases = tf.cast(rows_seen, tf.int64)[:, None] + np.arange(mean.shape[1])[None, :]
        index = self._phase_index(phases)
        return mean * index if self.decomposition == "multiplicative" else mean + index

    def initial_state(self, batch):
        zeros = tf.zeros(tf.reshape(batch, [1]), tf.float64)
        # level, mean, A_n, B_n, sum of y, sum of t y (t = 1, 2, ...)
        return (zeros + self.initial_smoothed, zeros, zeros, zeros, zeros, zeros)

    def _update(self, state, y, i):
        """statsforecast's `thetaupdate` at row index i (float) with value y."""
        level, mean, a, b, sum_y, sum_ty = state
        new_level = self.alpha * y + (1.0 - self.alpha) * level
        new_mean = (i * mean + y) / (i + 1.0)
        if self.dynamic:
            # B_n moves with the deviation from the mean BEFORE this row (statsforecast's
            # C++ order); A_n then uses the updated mean. Row 0 starts the line flat.
            new_b = tf.where(i > 0.0, ((i - 1.0) * b + 6.0 * (y - mean) / (i + 1.0)) / (i + 2.0),
                             tf.zeros_like(b))
            a, b = new_mean - new_b * (i + 2.0) / 2.0, new_b
        return new_level, new_mean, a, b, sum_y, sum_ty

    def step(self, state, y, row):
        return self._step_deseasonalised(state, self.deseasonalise(y, row), row)

    def _step_deseasonalised(self, state, y, row):
        i = tf.cast(row, tf.float64)
        level, mean, a, b, sum_y, sum_ty = self._update(state, y, i)
        sum_y, sum_ty = sum_y + y, sum_ty + (i + 1.0) * y
        if not self.dynamic:
            n = i + 1.0
            # The least-squares line through (t, y), t = 1..n; a single row has no slope.
            b = tf.math.divide_no_nan(6.0 * (2.0 * sum_ty / n - (1.0 + n) * sum_y / n),
                                      n * n - 1.0)
            a = sum_y / n - (n + 1.0) * b / 2.0
        return level, mean, a, b, sum_y, sum_ty

    def _forecast_deseasonalised(self, state, rows_seen, horizon):
        i = tf.cast(rows_seen, tf.float64)
        decay = 1.0 - self.alpha
        weight = 1.0 - 1.0 / self.theta
        out = []
        for k in range(horizon):
            level, _, a, b, _, _ = state
            mu = level + weight * (a * decay ** (i + k) + b * (1.0 - decay ** (i + k + 1.0))
                                   / self.alpha)
            out.append(mu)
            # statsforecast feeds each step's forecast back in as the next row's value.
            state = self._update(state, mu, i + k)
        return tf.stack(out, axis=1)

    def forecast(self, state, rows_seen, horizon):
        return self.reseasonalise(self._forecast_deseasonalised(state, rows_seen, horizon),
                                  rows_seen)

    def forecast_each(self, values, lengths, horizon):
        """The forecast after each history `values[s, :lengths[s, k]]`, each decomposed again.

        Args:
            values: float64 [series, rows] from the first fitting row.
            lengths: int64 [series, origins], 1 <= length <= rows.
            horizon: a Python int.

        Returns:
            float64 [series * origins, horizon], series-major.
        """
        series, origins = tf.shape(lengths)[0], tf.shape(lengths)[1]
        indices, kind = _theta_decompositions(values, lengths, self.m)
        indices = tf.reshape(indices, [-1, tf.shape(indices)[2]])
        kind, lengths = tf.reshape(kind, [-1]), tf.reshape(lengths, [-1])
        multiplicative, additive = kind == _MULTIPLICATIVE, kind == _ADDITIVE

        def deseasonalise(y, row):
            index = indices[:, tf.math.floormod(row, self.m)]
            return tf.where(multiplicative, y / index, tf.where(additive, y - index, y))

        def step(state, x):
            y, row = x
            y = deseasonalise(tf.repeat(y, origins), row)
            new = self._step_deseasonalised(state, y, row)
            # A history's state stops at its last row: the rows after it are another's.
            return tuple(tf.where(row < lengths, after, before)
                         for after, before in zip(new, state))

        # Every row (the callers pass none past the longest history); an empty batch too.
        rows = tf.shape(values, out_type=tf.int64)[1]
        state = tf.foldl(step, (tf.transpose(values), tf.range(rows, dtype=tf.int64)),
                         initializer=self.initial_state(series * origins))
        mean = self._forecast_deseasonalised(state, lengths, horizon)
        phases = tf.math.floormod(lengths[:, None] + np.arange(horizon)[None, :], self.m)
        index = tf.gather(indices, phases, batch_dims=1)
        return tf.where(multiplicative[:, None], mean * index,
                        tf.where(additive[:, None], mean + index, mean))


# What `_theta_decompositions` found for a history: no season, or a season of either form.
_NO_SEASON, _MULTIPLICATIVE, _ADDITIVE = 0, 1, 2
EACH_ORIGIN = "each origin"
# statsforecast's seasonal test: the lag-m autocorrelation beyond the one-sided 95 % point of
# its standard error (norm.ppf(0.95)), with at least 2 m rows and m >= 4.
_SEASON_TEST_Z = 1.6448536269514722
_SHORTEST_TESTED_SEASON = 4
# A multiplicative index below this makes statsforecast take the additive decomposition.
_SMALLEST_MULTIPLICATIVE_INDEX = 0.01


def _theta_decompositions(values, lengths, m):
    """statsforecast's `auto_theta` decomposition of every history `values[s, :L]`.

    For each history: the seasonal test (statsmodels' `acf` up to lag m), then statsmodels'
    `seasonal_decompose` (period m, centred moving average) of the form statsforecast picks.
    Everything comes from running sums over the series, so that all origins cost one pass
    per lag and O(m) each: the autocovariance at lag k of the first L rows from running sums
    of z_t z_{t+k} and of z_t (z the series minus its first value, which every history
    holds, so that the sums stay within a history's own range), and each phase's mean ratio
    (or difference) to the moving average from a running sum along the phase. The moving
    average at a row reads m // 2 rows either side, so a history's ratios are those of the
    whole series up to its row L - 1 - m // 2.

    Args:
        values: float64 [series, rows].
        lengths: int64 [series, origins], each 1..rows.
        m: the season (a Python int).

    Returns:
        (indices float64 [series, origins, m], kind int32 [series, origins]: `_NO_SEASON`,
        `_MULTIPLICATIVE` or `_ADDITIVE`; indices are 0 where there is no season).
    """
    shape = tf.shape(lengths)
    if m < _SHORTEST_TESTED_SEASON:
        return tf.zeros(tf.concat([shape, [max(m, 1)]], 0), tf.float64), tf.zeros(shape, tf.int32)
    rows = tf.shape(values, out_type=tf.int64)[1]
    lengths_f = tf.cast(lengths, tf.float64)

    def prefix(x):
        """Running sums along the last axis with a 0 in front: prefix(x)[..., j] = sum x[:j]."""
        return tf.pad(tf.cumsum(x, axis=-1), [[0, 0]] * (len(x.shape) - 1) + [[1, 0]])

    # The seasonal test. A constant history has none here; statsforecast tests its round-off
    # and may decompose it, but a constant's indices are all 1 (or 0), so the forecasts agree.
    constant = tf.gather(prefix(tf.cast(tf.equal(values, values[:, :1]), tf.float64)),
                         lengths, batch_dims=1) == lengths_f
    # Centred on the first row, which every history holds: a history's sums of z then stay
    # within its own range, so round-off cannot swamp a small autocovariance (centred on the
    # whole series' mean, early histories far from it lost theirs to rows after them).
    z = values - values[:, :1]
    padded = tf.pad(z, [[0, 0], [0, m]])
    sums = prefix(z)
    history_sums = tf.gather(sums, lengths, batch_dims=1)                # sum z[:L]
    mean = history_sums / lengths_f                                      # [series, origins]

    def autocovariance(k):
        """Each history's sum over t < L - k of (z_t - mean)(z_{t+k} - mean): [series,
        origins]. One lag at a time, so that memory stays that of the series whatever m."""
        products = prefix(z * padded[:, k: k + rows])                  # 0 past the end
        end = tf.maximum(lengths - k, 0)
        head = tf.gather(sums, end, batch_dims=1)                        # sum z[:L - k]
        # sum z[k:L] (a lag beyond the series, in a history too short for the test, reads 0)
        tail = history_sums - tf.gather(sums, tf.minimum(k, rows), axis=1)[:, None]
        return (tf.gather(products, end, batch_dims=1) - mean * (head + tail)
                + (lengths_f - tf.cast(k, tf.float64)) * mean ** 2)

    variance = autocovariance(tf.constant(0, tf.int64))
    squares = tf.foldl(lambda total, k: total + (autocovariance(k) / variance) ** 2,
                       tf.range(1, m, dtype=tf.int64), initializer=tf.zeros_like(variance))
    r_m = autocovariance(tf.constant(m, tf.int64)) / variance
    bound = tf.sqrt((1.0 + 2.0 * squares) / lengths_f)
    seasonal = (lengths >= 2 * m) & ~constant & (tf.abs(r_m) / bound > _SEASON_TEST_Z)

    # The centred moving average (statsmodels' filter: weights 1/m, or for an even m the two
    # ends 1/(2m)), defined at rows half..rows-1-half.
    half = m // 2
    total = prefix(values)
    centre = tf.range(half, tf.maximum(rows - half, half))  # none in a history under m rows
    if m % 2:
        trend = (tf.gather(total, centre + half + 1, axis=1)
                 - tf.gather(total, centre - half, axis=1)) / m
    else:
        trend = (tf.gather(total, centre + half, axis=1)
                 - tf.gather(total, centre - half + 1, axis=1)
                 + 0.5 * tf.gather(values, centre - half, axis=1)
                 + 0.5 * tf.gather(values, centre + half, axis=1)) / m
    inner = tf.gather(values, centre, axis=1)
    positive = tf.gather(prefix(tf.cast(values <= 0.0, tf.float64)), lengths,
                         batch_dims=1) == 0.0

    def along_phases(x):
        """Running sums of `x` (rows half..rows-1-half) down each phase (row index mod m):
        [series, rows'], entry t the sum over rows t, t - m, ... (rows before half hold 0)."""
        full = tf.pad(x, [[0, 0], [half, 0]])
        length = tf.shape(full, out_type=tf.int64)[1]
        seasons = (length + m - 1) // m
        full = tf.pad(full, [[0, 0], [0, seasons * m - length]])
        return tf.reshape(tf.cumsum(tf.reshape(full, [-1, seasons, m]), axis=1),
                          [-1, seasons * m])

    # Each phase's last row with a ratio in the history: at or before row L - 1 - half.
    last = lengths[..., None] - 1 - half                                 # [series, origins, 1]
    last_of_phase = tf.maximum(last - tf.math.floormod(last - np.arange(m), m), 0)
    counts = tf.gather(along_phases(tf.ones_like(inner)), last_of_phase, batch_dims=1)

    def phase_means(detrended):
        """statsmodels' `seasonal_mean` of each history: [series, origins, m]."""
        return tf.gather(along_phases(detrended), last_of_phase, batch_dims=1) / counts

    multiplicative = phase_means(inner / trend)
    multiplicative = multiplicative / tf.reduce_mean(multiplicative, axis=-1, keepdims=True)
    additive = phase_means(inner - trend)
    additive = additive - tf.reduce_mean(additive, axis=-1, keepdims=True)
    use_multiplicative = positive & tf.reduce_all(
        multiplicative >= _SMALLEST_MULTIPLICATIVE_INDEX, axis=-1)
    kind = tf.where(seasonal, tf.where(use_multiplicative, _MULTIPLICATIVE, _ADDITIVE),
                    _NO_SEASON)
    indices = tf.where(kind[..., None] == _MULTIPLICATIVE, multiplicative,
                       tf.where(kind[..., None] == _ADDITIVE, additive,
                                tf.zeros_like(additive)))
    return indices, tf.cast(kind, tf.int32)


class _SeasonalNaiveRecursion:
    """State: the last `season` values, oldest first (NaN until observed).

    Its forecasts from many origins are read off the series (`forecast_each`): the state
    after every row, as the scan keeps it, is `season` values a row, and a season of 1,440
    minutes over 50,000 rows held 1.5 GB (a season of 8,760 hours over a year of rows, 600 MB
    more than the series itself)."""

    batch_free = ()
    each_origin = True  # `forecast_each`, not a state per row

    @staticmethod
    def parts(spec):
        return (spec.season,), {}

    def __init__(self, static, numeric):
        (self.m,) = static

    def initial_state(self, batch):
        return (tf.fill(tf.stack([batch, self.m]), tf.constant(np.nan, tf.float64)),)

    def step(self, state, y, row):
        return (tf.concat([state[0][:, 1:], y[:, None]], axis=1),)

    def forecast(self, state, rows_seen, horizon):
        # Step i (0-based) is the last value of its phase: window position i mod m.
        return tf.gather(state[0], np.arange(horizon) % self.m, axis=1)

    def forecast_each(self, values, lengths, horizon):
        """The forecast after each history `values[s, :lengths[s, k]]`: step i is the value
        at row L - m + (i mod m) of the history of length L, NaN before the first row (the
        state's window position i mod m). float64 [series * origins, horizon], series-major."""
        series, origins = tf.shape(lengths)[0], tf.shape(lengths)[1]
        phases = tf.constant(np.arange(horizon) % self.m, tf.int64)
        rows = lengths[:, :, None] - self.m + phases[None, None, :]
        found = tf.gather(values, tf.maximum(rows, 0), axis=1, batch_dims=1)
        forecast = tf.where(rows >= 0, found, tf.constant(np.nan, tf.float64))
        return tf.reshape(forecast, [series * origins, horizon])


_RECURSIONS = {"ets": _ETSRecursion, "arima": _ARIMARecursion, "theta": _ThetaRecursion,
               "seasonal_naive": _SeasonalNaiveRecursion}


def _parts(spec):
    """(static, numeric as float64 numpy arrays) of `spec`'s recursion."""
    method = base_method(spec.method)
    if method not in _RECURSIONS:
        raise ValueError(f"Unknown method {spec.method!r}; expected one of {ALL_METHODS}.")
    static, numeric = _RECURSIONS[method].parts(spec)
    return static, {name: np.asarray(value, np.float64) for name, value in numeric.items()}


def _run_states(recursion, values, fold):
    """Runs `recursion.step` over the rows of `values` [batch, rows]: `tf.scan` (the state after
    every row, [rows, batch, ...]) or, with `fold`, `tf.foldl` (the state after the last row)."""
    rows = tf.shape(values, out_type=tf.int64)[1]
    inputs = (tf.transpose(values), tf.range(rows, dtype=tf.int64))
    run = tf.foldl if fold else tf.scan
    return run(lambda state, x: recursion.step(state, x[0], x[1]), inputs,
               initializer=recursion.initial_state(tf.shape(values)[0]))


# One traced graph per (method, form, horizon): the fitted numbers are inputs, so every series
# whose member has the same form reuses it. Run eagerly, the scan costs milliseconds per row
# (seconds per series); traced, the second call on a 300-row series takes about 30 ms.
_ORIGIN_FUNCTIONS = {}


def _origins_function(method, static, numeric, horizon):
    key = (method, static, horizon)
    if key not in _ORIGIN_FUNCTIONS:
        signature = [
            tf.TensorSpec([None], tf.float64, name="values"),
            tf.TensorSpec([None], tf.int64, name="last_rows"),
            {name: tf.TensorSpec(value.shape, tf.float64) for name, value in numeric.items()},
        ]

        @tf.function(input_signature=signature, autograph=False)
        def forecast(values, last_rows, numeric):
            recursion = _RECURSIONS[method](static, numeric)
            if getattr(recursion, "each_origin", False):
                return recursion.forecast_each(values[None, :], last_rows[None, :] + 1, horizon)
            states = _run_states(recursion, values[None, :], fold=False)
            # [rows, 1, ...] -> the states after the origins' rows, [origins, ...]. Entries
            # without a batch dimension (ARIMA's covariance) do not enter the point forecast.
            chosen = tuple(None if i in recursion.batch_free else tf.gather(s[:, 0], last_rows)
                           for i, s in enumerate(states))
            return recursion.forecast(chosen, last_rows + 1, horizon)

        _ORIGIN_FUNCTIONS[key] = forecast
    return _ORIGIN_FUNCTIONS[key]


# --------------------------------------------------------------------------------------------
# Public forecasts


def forecast_at_origins(spec, values, last_rows, horizon):
    """Forecasts `horizon` steps from each origin with the parameters fixed.

    One pass over the series computes the state after every row (`tf.scan` of the method's
    recursion; for Theta, which decomposes each origin's history again, one state per origin
    in a `tf.foldl`); the forecasts from all origins are then computed at once from the chosen
    states. The forecast from origin r reads values[:r + 1] only; rows after the last origin
    are not read at all. The graph is traced once per form and horizon (0.2-0.4 s; without
    autograph, as the recursions hold no Python control flow on tensors) and reused for every
    later call with the same form, whatever the parameters.

    Args:
        spec: a `ClassicalSpec` (from `fit_classical` or `ClassicalSpec.from_dict`).
        values: float array [n], the series from ITS FIRST ROW, the same first row as the
            rows `fit_classical` was given; the recursion runs from `spec.first_row` (the
            first row it was fitted on: its initial states, phases and drift time count from
            there), so rows before that are not read.
        last_rows: int array of origins r, spec.first_row <= r < n, in any order.
        horizon: number of steps ahead (>= 1).

    Returns:
        float64 array [len(last_rows), horizon]: row k holds the forecasts of rows
        last_rows[k] + 1 .. last_rows[k] + horizon.

    Raises:
        ValueError: on a bad shape, an origin outside the series, a non-finite value up to
            the last origin (a value at or below 0 there for a log-scale member), or a
            horizon below 1.

    Example:

    >>> spec = fit_classical("ets", values[:96], season=12)
    >>> forecast_at_origins(spec, values, np.arange(95, 119), horizon=6).shape
    (24, 6)
    """
    values = np.asarray(values, dtype=np.float64)
    last_rows = np.asarray(last_rows)
    if values.ndim != 1:
        raise ValueError(f"`values` must be one series, shape [n]. Received: shape={values.shape}")
    if last_rows.ndim != 1 or not np.issubdtype(last_rows.dtype, np.integer):
        raise ValueError("`last_rows` must be a 1-D integer array. "
                         f"Received: dtype={last_rows.dtype}, shape={last_rows.shape}")
    if not _is_int(horizon) or horizon < 1:
        raise ValueError(f"`horizon` must be a positive integer. Received: horizon={horizon!r}")
    if last_rows.size == 0:
        return np.zeros((0, horizon))
    first = spec.first_row
    if last_rows.min() < first or last_rows.max() >= len(values):
        raise ValueError(f"`last_rows` must lie in [{first}, {len(values) - 1}] (the member's "
                         f"first fitting row to the last row). Received: "
                         f"min={last_rows.min()}, max={last_rows.max()}")
    # Rows before the first fitting row and after the last origin are never read.
    used, last_rows = values[first: last_rows.max() + 1], last_rows - first
    if not np.all(np.isfinite(used)):
        raise ValueError("`values` up to the last origin must be finite (no NaN or infinity).")
    log_scale = spec.method in LOG_METHODS
    if log_scale:
        _check_positive(used, spec.method)
        used = np.log(used)
    static, numeric = _parts(spec)
    function = _origins_function(base_method(spec.method), static, numeric, horizon)
    with _quiet_tracing():
        forecast = function(tf.constant(used), tf.constant(last_rows, tf.int64),
                            {name: tf.constant(value) for name, value in numeric.items()})
    return np.exp(forecast.numpy()) if log_scale else forecast.numpy()


@contextlib.contextmanager
def _quiet_tracing():
    """Keeps TensorFlow's "N of the last M calls triggered tf.function retracing" warning
    off the user's terminal: each model form has a function of its own, traced once by design
    (a backtest meets several forms in a row), which that warning counts as retracing."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(max(level, logging.ERROR))
    try:
        yield
    finally:
        logger.setLevel(level)


def forecast_from_history(spec, history, horizon):
    """The forecast from the end of each history row, in TensorFlow (graph or eager).

    Works inside `tf.function` with the number of rows unknown at trace time (a SavedModel
    signature `[None, None]`); the spec's parameters become constants of the graph.

    Args:
        spec: a `ClassicalSpec`.
        history: float32 or float64 tensor [batch, rows]; each row is the series from the
            first row `fit_classical` was given up to its origin (all rows of a batch the same
            length), more than `spec.first_row` rows (an `InvalidArgumentError` says so
            otherwise); the rows before `spec.first_row` are not read. Above 0 for a
            log-scale member from `spec.first_row` on (an `InvalidArgumentError` names it
            otherwise).
        horizon: number of steps ahead (a Python int).

    Returns:
        float32 tensor [batch, horizon].

    Example:

    >>> serve = tf.function(lambda h: forecast_from_history(spec, h, 12),
    ...                     input_signature=[tf.TensorSpec([None, None], tf.float32)])
    """
    if not _is_int(horizon) or horizon < 1:
        raise ValueError(f"`horizon` must be a positive integer. Received: horizon={horizon!r}")
    history = tf.cast(tf.convert_to_tensor(history), tf.float64)
    history.shape.assert_has_rank(2)
    if spec.first_row:
        enough = tf.debugging.assert_greater(
            tf.shape(history)[1], spec.first_row,
            message=f"{spec.method} was fitted from row {spec.first_row} of the series: the "
                    f"history needs every row since the series' first, more than "
                    f"{spec.first_row}")
        with tf.control_dependencies([enough]):
            history = tf.identity(history[:, spec.first_row:])
    log_scale = spec.method in LOG_METHODS
    if log_scale:
        with tf.control_dependencies([tf.debugging.assert_positive(
                history, message=f"{spec.method} needs history values above 0 (it runs on "
                                 "their log)")]):
            history = tf.math.log(history)
    static, numeric = _parts(spec)
    recursion = _RECURSIONS[base_method(spec.method)](
        static, {name: tf.constant(value) for name, value in numeric.items()})
    rows_seen = tf.fill(tf.shape(history)[:1], tf.shape(history, out_type=tf.int64)[1])
    if getattr(recursion, "each_origin", False):
        forecast = recursion.forecast_each(history, rows_seen[:, None], horizon)
    else:
        state = _run_states(recursion, history, fold=True)
        forecast = recursion.forecast(state, rows_seen, horizon)
    return tf.cast(tf.exp(forecast) if log_scale else forecast, tf.float32)
