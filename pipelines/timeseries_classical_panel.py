"""The classical members of many series: statsforecast's models fitted on every series, and the
M4 benchmarks (naive, seasonal naive, Naive2), each forecast `horizon` steps from the end of
every history. NumPy, pandas and statsforecast; no TensorFlow.

One process (the issue's "one process": TensorFlow's threads and forked workers do not mix),
the series in chunks so that a progress line with an ETA can be shown. A series on which a
model fails (statsforecast raises, or returns non-finite values) gets the seasonal naive
forecast for that model, counted in the returned notes.

Theta is the dynamic optimised Theta model (DOTM, Fiorucci et al. 2016), one of the four
variants statsforecast's AutoTheta chooses among: AutoTheta fits all four, about 3 to 4 times
the time (2.3 s per M4 weekly series on 2 busy cores, 0.4 s per hourly one; DOTM 0.11 s per
hourly one), for sMAPE 5.68 against AutoTheta's 5.73 on the first 20 hourly series.

ETS with a long season (above `ETS_MAX_SEASON`, as R's `ets` refuses seasons above 24 and a
seasonal ETS of 24 takes seconds per series) is fitted to the series seasonally adjusted by
M4's classical multiplicative decomposition (the Naive2 indices, applied only where M4's
seasonality test finds a season) and re-seasonalised: the M4 benchmarks' way of giving
exponential smoothing a season.
"""

import sys
import time
import warnings

import numpy as np
import pandas as pd

from seqlab.models.forecasting import metrics

# The classical members of many series, in the order they are fitted and reported.
PANEL_CLASSICAL = ("ets", "theta", "arima")
# The cheap benchmarks, scored for every series (never chosen: they are the baselines).
PANEL_BASELINES = ("naive", "seasonal_naive", "naive2")
# ETS fits a seasonal model up to this season; above it, the seasonally adjusted series.
ETS_MAX_SEASON = 12
# Series per statsforecast call, so that progress can be reported between them.
CHUNK = 50


def baseline_forecasts(histories, horizon, season):
    """`{baseline: [forecast per series]}` of naive, seasonal naive and Naive2 (M4's)."""
    return {
        "naive": [metrics.naive_forecast(h, horizon) for h in histories],
        "seasonal_naive": [metrics.seasonal_naive_forecast(h, horizon, season)
                           for h in histories],
        "naive2": [metrics.naive2_forecast(h, horizon, season) for h in histories],
    }


def _statsforecast_model(method, season):
    from statsforecast.models import AutoARIMA, AutoETS, DynamicOptimizedTheta

    if method == "ets":
        return AutoETS(season_length=season if season <= ETS_MAX_SEASON else 1)
    if method == "theta":
        return DynamicOptimizedTheta(season_length=season)
    if method == "arima":
        return AutoARIMA(season_length=season)
    raise ValueError(f"unknown classical member {method!r}; expected one of "
                     f"{', '.join(PANEL_CLASSICAL)}")


def _adjusted(history, horizon, season, method):
    """`(series to fit, indices of the horizon to multiply back)`: ETS with a long season
    fits the seasonally adjusted series (see the module's docstring); else the series as it
    is, with no indices."""
    if method != "ets" or season <= ETS_MAX_SEASON or not metrics.is_seasonal(history, season):
        return history, None
    indices = metrics.seasonal_indices(history, season)
    n = history.size
    phase = np.arange(n) % season
    future = np.arange(n, n + horizon) % season
    return history / indices[phase], indices[future]


def classical_forecasts(histories, horizon, season, methods=PANEL_CLASSICAL, what="",
                        stream=None):
    """Fits each method of `methods` on every history and forecasts `horizon` steps.

    Args:
        histories: one 1-D float array per series.
        horizon: steps to forecast from the end of each history.
        season: the seasonal period (1: none).
        methods: names among `PANEL_CLASSICAL`.
        what: what the progress line calls this pass (e.g. "at the validation origin").
        stream: where progress goes (default stderr); None-like `False` for none.

    Returns:
        `({method: [forecast per series]}, {method: seconds}, notes)`.
    """
    from statsforecast import StatsForecast

    stream = sys.stderr if stream is None else stream
    forecasts = {method: [None] * len(histories) for method in methods}
    seconds = {method: 0.0 for method in methods}
    failed = {method: 0 for method in methods}
    prepared = {method: [_adjusted(np.asarray(h, dtype="float64"), horizon, season, method)
                         for h in histories] for method in methods}
    started = time.perf_counter()
    total = len(histories) * len(methods)
    done = 0
    for method in methods:
        model = _statsforecast_model(method, season)
        column = repr(model)
        for first in range(0, len(histories), CHUNK):
            chunk = range(first, min(first + CHUNK, len(histories)))
            frame = pd.DataFrame({
                "unique_id": np.repeat(np.array(list(chunk)), [prepared[method][i][0].size
                                                               for i in chunk]),
                "ds": np.concatenate([np.arange(prepared[method][i][0].size) for i in chunk]),
                "y": np.concatenate([prepared[method][i][0] for i in chunk]),
            })
            tick = time.perf_counter()
            result = _forecast_chunk(StatsForecast, model, frame, horizon, column)
            seconds[method] += time.perf_counter() - tick
            for i in chunk:
                values = result.get(i)
                indices = prepared[method][i][1]
                if values is not None and indices is not None:
                    values = values * indices
                if values is None or values.shape != (horizon,) or not np.all(np.isfinite(values)):
                    failed[method] += 1
                    values = metrics.seasonal_naive_forecast(histories[i], horizon, season)
                forecasts[method][i] = np.asarray(values, dtype="float64")
            done += len(chunk)
            _progress(stream, what, methods, method, done, total, started)
    if stream and total:
        stream.write("\n" if stream.isatty() else "")
        stream.flush()
    notes = [f"{method}: statsforecast failed on {count} of {len(histories)} series "
             f"{what}; they got the seasonal naive forecast".replace("  ", " ")
             for method, count in failed.items() if count]
    return forecasts, seconds, notes


def _forecast_chunk(statsforecast, model, frame, horizon, column):
    """`{series index: forecast}` of one chunk; a chunk that fails as a whole is fitted one
    series at a time, so that one bad series costs only itself."""
    def run(part):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = statsforecast(models=[model], freq=1, n_jobs=1).forecast(df=part, h=horizon)
        return {key: group[column].to_numpy(dtype="float64")
                for key, group in result.groupby("unique_id", sort=False)}

    try:
        return run(frame)
    except Exception:  # statsforecast raises many kinds for a degenerate series
        found = {}
        for key, part in frame.groupby("unique_id", sort=False):
            try:
                found.update(run(part))
            except Exception:
                pass
        return found


# Without a terminal, a progress line at most this often (seconds), and at the end.
PROGRESS_EVERY = 15.0


def _progress(stream, what, methods, method, done, total, started, state={"last": 0.0}):
    if not stream:
        return
    from seqlab.pipelines.common import format_duration

    now = time.perf_counter()
    elapsed = now - started
    left = elapsed / done * (total - done) if done else 0.0
    line = (f"classical members {what}: {method} ({', '.join(methods)}), {done}/{total} "
            f"series fits, {format_duration(elapsed)} so far, about {format_duration(left)} "
            "left")
    if stream.isatty():
        stream.write("\r" + line[:150].ljust(150))
    elif done == total or now - max(state["last"], started) >= PROGRESS_EVERY:
        stream.write(line + "\n")
        state["last"] = now
    stream.flush()
