"""Forecast accuracy as the forecasting competitions define it, and M4's Naive2 benchmark.

NumPy only. Every function takes one series' arrays (1-D); `score_panel` scores many series
and averages over them, `owa` relates a method's averages to Naive2's.

- sMAPE (M4): `200 * mean(|y - f| / (|y| + |f|))`, in percent (0 to 200). A point where both
  the actual and the forecast are 0 counts as 0 (a perfect forecast), not as 0 / 0.
- MASE (M4): `mean(|y - f|) / mean(|x[t] - x[t - m]|)`, the scale being the in-sample
  seasonal-naive MAE of the history `x` with season `m` (`m = 1`: the naive MAE).
- MAPE: `100 * mean(|y - f| / |y|)`, defined only where every actual is positive (else None:
  a percentage of a zero or negative actual means nothing).
- RMSE: `sqrt(mean((y - f)^2))`, computed as `m sqrt(mean(((y - f) / m)^2))` with m the
  largest |y - f| (`root_mean_square`), so that errors whose squares underflow (below about
  1e-154) or overflow float64 still give their figure, not 0 or infinity.
- Naive2 (M4's benchmark): the naive forecast of the seasonally adjusted series, re-seasonalised:
  when M4's 90 % autocorrelation test says the history is seasonal, a classical multiplicative
  decomposition (R's `decompose`) gives the seasonal indices; else the indices are 1 and
  Naive2 is the naive forecast. This follows the M4 organisers' `Benchmarks and
  Evaluation.R` (Mcompetitions/M4-methods), which produced the published figures, not the
  same repository's `ML_benchmarks.py`, whose test leaves lag 1's autocorrelation unsquared
  and whose moving average centres by the series' length instead of the season's (both kept
  there, its comments say, so that the neural benchmarks stay reproducible).
- OWA (M4): `(sMAPE / sMAPE_Naive2 + MASE / MASE_Naive2) / 2`, each a ratio of the SET's
  averages (as M4 ranked the methods), not an average of per-series ratios.

Averages over a set are means of the per-series means: with one horizon for every series (as
in M4) this is M4's mean over all forecast points.
"""

import dataclasses
import math

import numpy as np

# M4's seasonality test: one-sided 90 % (t = 1.645) limit on the autocorrelation at lag m.
SEASONALITY_T = 1.645


def _pair(actual, forecast):
    actual = np.asarray(actual, dtype="float64").reshape(-1)
    forecast = np.asarray(forecast, dtype="float64").reshape(-1)
    if actual.shape != forecast.shape:
        raise ValueError(
            f"actual and forecast differ in length. Received: {actual.size} actual values and "
            f"{forecast.size} forecast values"
        )
    if not actual.size:
        raise ValueError("no values to score. Received: empty actual and forecast")
    return actual, forecast


def smape(actual, forecast):
    """sMAPE as M4 defines it, in percent: `200 * mean(|y - f| / (|y| + |f|))`.

    Args:
        actual: the actual values `y` (1-D).
        forecast: the forecasts `f`, as many.

    Returns:
        A float from 0 to 200. Points where `y = f = 0` count as 0.

    Example:

    >>> round(smape([100.0, 200.0], [110.0, 200.0]), 6)
    4.761905
    """
    actual, forecast = _pair(actual, forecast)
    denominator = np.abs(actual) + np.abs(forecast)
    error = np.abs(actual - forecast)
    # Only y = f = 0 has a zero denominator, and it is a perfect forecast.
    terms = np.divide(error, denominator, out=np.zeros_like(error), where=denominator > 0)
    return float(200.0 * terms.mean())


def mase_scale(history, season=1):
    """The in-sample seasonal-naive MAE of `history`: `mean(|x[t] - x[t - season]|)`.

    Raises:
        ValueError: `season < 1`, or a history of `season` values or fewer (no pair to
            compare).
    """
    history = np.asarray(history, dtype="float64").reshape(-1)
    if season < 1:
        raise ValueError(f"the season must be at least 1. Received: season={season}")
    if history.size <= season:
        raise ValueError(
            f"MASE needs more in-sample values than the season. Received: {history.size} "
            f"values, season={season}"
        )
    return float(np.mean(np.abs(history[season:] - history[:-season])))


def mase(actual, forecast, history, season=1):
    """MASE as M4 defines it: the forecast MAE over the in-sample seasonal-naive MAE.

    Args:
        actual: the actual values (1-D).
        forecast: the forecasts, as many.
        history: the in-sample values the forecast was made from.
        season: the season `m` of the scale (`1`: the naive MAE; M4 used 24 for hourly, 12
            monthly, 4 quarterly and 1 for yearly, weekly and daily series).

    Returns:
        A float; infinite when the scale is 0 (a constant history) and the forecast errs.

    Raises:
        ValueError: see `mase_scale`.

    Example:

    >>> mase([5.0, 6.0], [4.0, 4.0], history=[1.0, 2.0, 3.0, 4.0])
    1.5
    """
    actual, forecast = _pair(actual, forecast)
    scale = mase_scale(history, season)
    error = float(np.mean(np.abs(actual - forecast)))
    if scale == 0.0:
        return 0.0 if error == 0.0 else math.inf
    return error / scale


def mape(actual, forecast):
    """MAPE in percent, `100 * mean(|y - f| / y)`, or None unless every actual is positive."""
    actual, forecast = _pair(actual, forecast)
    if not np.all(actual > 0):
        return None
    return float(100.0 * np.mean(np.abs(actual - forecast) / actual))


# A difference of at most this share of the values' largest magnitude is float64 rounding, not
# an error: a forecast through exp(log y) is off by up to 16.4 units in the last place (2.2e-16
# of the magnitude each; measured on 2 million values from 1e-3 to 1e15, the most near 1e15), a
# least-squares fit of a constant series by a few. About 45 units: at 1e-12 an error of 0.5 on
# values near 1e12 counted as none, and at 1e-13 one of 83 on values near 9e14 (float64's
# spacing 0.125 there) did.
ROUNDING = 1e-14


def rounding(values):
    """The largest error that is float64 rounding of `values`: `ROUNDING` times their largest
    magnitude (0 for no values, or all zero)."""
    return ROUNDING * float(np.max(np.abs(np.asarray(values, dtype="float64")), initial=0.0))


def root_mean_square(values, axis=None):
    """`sqrt(mean(values^2))` over `axis`, each slice first divided by its largest magnitude
    (and multiplied back after the root), so that values whose squares would underflow to 0
    or overflow float64 keep their figure: errors of 1e-200 have an RMSE of about 1e-200,
    not 0. A slice of zeros gives 0; a slice with an infinite or NaN value gives what the
    plain formula gives.

    >>> float(root_mean_square([3.0, 4.0]))  # sqrt(12.5)
    3.5355339059327378
    >>> bool(3.53e-200 < root_mean_square([3e-200, 4e-200]) < 3.54e-200)
    True
    """
    values = np.asarray(values, dtype="float64")
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.max(np.abs(values), axis=axis, keepdims=True) if values.size else \
            np.zeros((1,) * values.ndim)
        usable = np.isfinite(scale) & (scale > 0)
        safe = np.where(usable, scale, 1.0)
        scaled = safe * np.sqrt(np.mean((values / safe) ** 2, axis=axis, keepdims=True))
        plain = np.sqrt(np.mean(values ** 2, axis=axis, keepdims=True))
        result = np.where(usable, scaled, plain)
    return result.reshape(()) if axis is None else np.squeeze(result, axis=axis)


def rmse(actual, forecast):
    """Root mean squared error (`root_mean_square` of the errors)."""
    actual, forecast = _pair(actual, forecast)
    return float(root_mean_square(actual - forecast))


# ---------------------------------------------------------------------------------------------
# Benchmarks


def naive_forecast(history, horizon):
    """The last value of `history`, repeated `horizon` times."""
    history = np.asarray(history, dtype="float64").reshape(-1)
    return np.full(horizon, history[-1])


def seasonal_naive_forecast(history, horizon, season=1):
    """The last season of `history` repeated (M4's sNaive); the naive forecast when
    `season = 1` or the history is shorter than one season."""
    history = np.asarray(history, dtype="float64").reshape(-1)
    if season <= 1 or history.size < season:
        return naive_forecast(history, horizon)
    return np.resize(history[-season:], horizon)


def autocorrelation(values, max_lag):
    """`acf[k]`, k = 0..max_lag, as R's `acf` computes it: the mean-centred products at lag k
    summed and divided by the centred sum of squares (`acf[0] = 1`). All zero beyond lag 0
    for a constant series (R gives NaN there; M4's test then says "not seasonal" alike)."""
    values = np.asarray(values, dtype="float64").reshape(-1)
    centred = values - values.mean()
    total = float(centred @ centred)
    acf = np.zeros(max_lag + 1)
    acf[0] = 1.0
    if total == 0.0:
        return acf
    for lag in range(1, min(max_lag, values.size - 1) + 1):
        acf[lag] = float(centred[lag:] @ centred[:-lag]) / total
    return acf


def is_seasonal(history, season):
    """M4's seasonality test (`SeasonalityTest` of the organisers' R code).

    Seasonal when `season > 1`, the history holds at least three seasons, and
    `|acf[m]| > 1.645 * sqrt((1 + 2 * sum_{k=1}^{m-1} acf[k]^2) / n)`. As in that code, the
    autocorrelations come from R's `acf` with its default `lag.max = floor(10 * log10(n))`:
    when that is below `m`, `acf[m]` is missing (NA) and the test says "not seasonal". This
    only matters for short series with a long season (hourly, m = 24: fewer than 252 values);
    it is kept so that Naive2 is M4's exactly.

    Args:
        history: the in-sample values (1-D).
        season: the season `m` (M4's frequency: 24 hourly, 12 monthly, 4 quarterly, else 1).

    Returns:
        bool.
    """
    history = np.asarray(history, dtype="float64").reshape(-1)
    n = history.size
    if season <= 1 or n < 3 * season:
        return False
    if min(math.floor(10 * math.log10(n)), n - 1) < season:
        return False
    acf = autocorrelation(history, season)
    if np.all(acf[1:] == 0.0):  # constant: R's acf is NaN, the test FALSE
        return False
    limit = SEASONALITY_T * math.sqrt((1 + 2 * float(np.sum(acf[1:season] ** 2))) / n)
    return bool(abs(acf[season]) > limit)


def seasonal_indices(history, season):
    """The multiplicative seasonal indices of R's `decompose(type="multiplicative")`.

    The trend is the centred moving average over one season (weights `1/m`; for an even
    season `m + 1` weights with halves at both ends); each phase's index is the mean of
    `value / trend` over the values of that phase where the trend exists, and the indices are
    divided by their mean. Phase `p` is position `p, p + m, ...` counted from the first value
    of `history`.

    Args:
        history: the in-sample values (1-D, at least two seasons, positive for a meaningful
            ratio).
        season: the season `m >= 2`.

    Returns:
        An array of `m` indices (mean 1), phase 0 first.

    Raises:
        ValueError: `season < 2`, or fewer than two seasons of values (R's `decompose` refuses
            them too).
    """
    history = np.asarray(history, dtype="float64").reshape(-1)
    if season < 2:
        raise ValueError(f"a decomposition needs a season of at least 2. Received: "
                         f"season={season}")
    if history.size < 2 * season:
        raise ValueError(
            f"a decomposition needs at least two seasons of values. Received: {history.size} "
            f"values, season={season}"
        )
    if season % 2:
        weights = np.full(season, 1.0 / season)
    else:
        weights = np.r_[0.5, np.ones(season - 1), 0.5] / season
    half = weights.size // 2
    trend = np.full(history.size, np.nan)
    trend[half: history.size - half] = np.convolve(history, weights, mode="valid")
    with np.errstate(divide="ignore", invalid="ignore"):  # a trend of 0: Naive2 checks
        ratios = history / trend
    padded = np.full(-(-history.size // season) * season, np.nan)
    padded[: history.size] = ratios
    figure = np.nanmean(padded.reshape(-1, season), axis=0)
    return figure / figure.mean()


def naive2_forecast(history, horizon, season=1):
    """M4's Naive2: the naive forecast of the seasonally adjusted history, re-seasonalised.

    When `is_seasonal(history, season)`, the history is divided by its multiplicative seasonal
    indices (`seasonal_indices`), the last adjusted value is repeated, and step `k` (1-based)
    is multiplied by the index of its phase, `(n + k - 1) mod m`. Otherwise it is the naive
    forecast; so too where an index is not positive (a phase of zeros, or a trend that crosses
    zero: a multiplicative season is undefined there; M4's series are all positive).

    Args:
        history: the in-sample values (1-D).
        horizon: how many steps to forecast.
        season: the season `m` (M4's frequency).

    Returns:
        An array of `horizon` forecasts.

    Example:

    >>> history = [10.0, 20.0] * 12
    >>> naive2_forecast(history, 3, season=2).round(6).tolist()
    [10.0, 20.0, 10.0]
    """
    history = np.asarray(history, dtype="float64").reshape(-1)
    if not is_seasonal(history, season):
        return naive_forecast(history, horizon)
    indices = seasonal_indices(history, season)
    if not np.all(np.isfinite(indices) & (indices > 0)):
        return naive_forecast(history, horizon)
    n = history.size
    adjusted_last = history[-1] / indices[(n - 1) % season]
    return adjusted_last * indices[(n + np.arange(horizon)) % season]


# ---------------------------------------------------------------------------------------------
# Many series


@dataclasses.dataclass(frozen=True, eq=False)
class PanelScores:
    """The scores of one method on a set of series.

    Attributes:
        smape: per-series sMAPE (array, one per series).
        mase: per-series MASE.
        mape: per-series MAPE, NaN where a series has an actual that is not positive.
        rmse: per-series RMSE.
    """

    smape: np.ndarray
    mase: np.ndarray
    mape: np.ndarray
    rmse: np.ndarray

    @property
    def mean_smape(self):
        return float(np.mean(self.smape))

    @property
    def mean_mase(self):
        return float(np.mean(self.mase))

    @property
    def mean_mape(self):
        """The mean MAPE over the series where it is defined, or None where it is nowhere."""
        defined = self.mape[~np.isnan(self.mape)]
        return float(defined.mean()) if defined.size else None

    @property
    def mean_rmse(self):
        return float(np.mean(self.rmse))

    def summary(self):
        """The set's averages as a dict: smape, mase, mape (over the series where defined,
        with `mape_series`, how many), rmse, series."""
        return {
            "smape": self.mean_smape, "mase": self.mean_mase, "mape": self.mean_mape,
            "mape_series": int(np.sum(~np.isnan(self.mape))), "rmse": self.mean_rmse,
            "series": int(self.smape.size),
        }


def score_panel(actuals, forecasts, histories, season=1):
    """Scores the forecasts of many series, one value per series and metric.

    Args:
        actuals: a sequence of 1-D arrays, the actual values of each series.
        forecasts: the forecasts, one array per series, each as long as its actuals.
        histories: the in-sample values of each series (for the MASE scale).
        season: the season of the MASE scale, one for all series or one per series.

    Returns:
        A `PanelScores`.

    Raises:
        ValueError: different numbers of series, or a series whose scores are undefined (see
            `mase_scale`), naming its position.
    """
    if not len(actuals) == len(forecasts) == len(histories):
        raise ValueError(
            f"one forecast and one history per series. Received: {len(actuals)} actuals, "
            f"{len(forecasts)} forecasts, {len(histories)} histories"
        )
    seasons = np.broadcast_to(np.asarray(season), (len(actuals),))
    rows = []
    for position, (actual, forecast, history, m) in enumerate(
            zip(actuals, forecasts, histories, seasons)):
        try:
            share = mape(actual, forecast)
            rows.append((smape(actual, forecast), mase(actual, forecast, history, int(m)),
                         np.nan if share is None else share, rmse(actual, forecast)))
        except ValueError as error:
            raise ValueError(f"series {position}: {error}") from None
    columns = np.array(rows, dtype="float64").reshape(-1, 4).T
    return PanelScores(*columns)


def owa(scores, naive2_scores):
    """M4's overall weighted average of a method against Naive2 on the same set.

    `(mean sMAPE / mean sMAPE of Naive2 + mean MASE / mean MASE of Naive2) / 2`, the ratios of
    the set's averages (M4's ranking), so Naive2 itself scores exactly 1.

    Args:
        scores: the method's `PanelScores`, or a `(mean sMAPE, mean MASE)` pair.
        naive2_scores: Naive2's on the same series, likewise.

    Returns:
        float.

    Example:

    >>> owa((10.0, 1.0), (20.0, 2.0))
    0.5
    """
    def means(value):
        if isinstance(value, PanelScores):
            return value.mean_smape, value.mean_mase
        return tuple(float(v) for v in value)

    smape_value, mase_value = means(scores)
    smape_naive2, mase_naive2 = means(naive2_scores)
    return 0.5 * (smape_value / smape_naive2 + mase_value / mase_naive2)


# statsforecast's AutoARIMA and AutoTheta are not scale-free far from magnitude 1: their
# optimisers' tolerances are absolute. Four made-up monthly series (level 50, sd 7) multiplied
# by 1e-9 and 1e-6 got ARIMA forecasts that differed from the series' own (divided back) by up
# to 0.4 of its standard deviation (another order chosen), by up to 2 % at 1e9, and by at most
# 4e-4 from 1e-3 to 1e6; AutoETS agreed to 1e-12 at every scale. So ARIMA and Theta fit the
# values of a series whose mean absolute value is outside `FITTING_MAGNITUDES` in the power of
# ten that brings it to [1, 10), and take the fitted numbers back to the series' units
# (`classical._in_units`; the many-series fits multiply their forecasts back): a series no
# longer forecasts worse for being written in nanovolts rather than volts. Inside the range
# nothing changes (the fit is statsforecast's own, as the peers' in the benchmarks). Theta
# depends on the units inside it too (up to 0.13 standard deviation between 1e-3 and 1, 0.001
# to 0.04 above 1e3, on the same series): left as statsforecast has it.
FITTING_MAGNITUDES = (1e-3, 1e6)


def fitting_unit(values, method):
    """The power of ten `method` is fitted in: for "arima" and "theta", 1.0 where the mean
    absolute value of `values` lies in `FITTING_MAGNITUDES` (or is 0), else the one that
    brings it to [1, 10); 1.0 for every other method (their fits are free of the units)."""
    if method not in ("arima", "theta"):
        return 1.0
    magnitude = float(np.mean(np.abs(values))) if len(values) else 0.0
    low, high = FITTING_MAGNITUDES
    if magnitude == 0.0 or low <= magnitude <= high:
        return 1.0
    return 10.0 ** math.floor(math.log10(magnitude))


# A fit's cost grows with its rows, measured on 2 cores on an hourly series (season 24):
# AutoARIMA's approximate search 3.9 s on 1,000 rows, 6.2 s on 2,000, 22 s on 8,000 and 46 s
# on 16,000; AutoTheta 0.3, 0.9 and 12 s (about 2 min on 30,000); AutoETS 0.7, 1.2 and 7 s. A
# default run makes about twenty fits (values and logs, before the test split and at three
# backtest folds), while parameters estimated on thousands of rows change little with
# thousands more, the oldest rows being the least like the next ones. So a longer series is
# fitted on its last `FIT_ROWS` rows, or `FIT_SEASONS` seasons of the season the model fits
# where that is longer (one series' members: their recursion starts at the first of them,
# `ClassicalSpec.first_row`; many series: each model is fitted there and rolled forward).
FIT_ROWS = 2000
FIT_SEASONS = 4


def fitting_start(rows, season):
    """The first row a classical member of a series of `rows` rows is fitted from: 0 up to
    `FIT_ROWS` rows (or `FIT_SEASONS` seasons of `season` rows), else the row that leaves that
    many."""
    return max(0, rows - max(FIT_ROWS, FIT_SEASONS * season))
