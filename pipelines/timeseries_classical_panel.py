"""The classical members of many series: statsforecast's models fitted on every series, and the
M4 benchmarks (naive, seasonal naive, Naive2), each forecast `horizon` steps from the end of
every history. NumPy and statsforecast; no TensorFlow of its own (importing seqlab's metrics
imports `seqlab.models`, and with it TensorFlow, except in a worker: `seqlab._worker`).

The series are fitted in worker processes (one per core the process may use, started with
`spawn`: a forked copy of a process that runs TensorFlow's threads is not safe) in chunks, with
a progress line and an ETA. The first `PROBE_SERIES` series are fitted in this process and
timed: where the rest would take less than `PARALLEL_MIN_SECONDS` here (short series, fast
models), or with one core, they are fitted here too, as starting the workers would cost more
than it saves. The forecasts do not depend on how the series are split (each fit is the
library's on that series alone). A worker starts quiet and ends with its parent
(`seqlab._worker`).

Each model is fitted once per series: at the validation origin, then rolled forward
(parameters kept, state updated) to the end of the training part, which halves the fitting of
the many-series command. A history longer than `metrics.FIT_ROWS` rows is fitted on its last
ones and rolled forward from the first of them (`metrics.fitting_start`). A series on which a
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

import concurrent.futures
import contextlib
import multiprocessing
import os
import sys
import time
import types
import warnings

import numpy as np

from seqlab import _tf_log, _worker
from seqlab.models.forecasting import metrics
from seqlab.models.forecasting.metrics import fitting_start, fitting_unit

# The classical members of many series, in the order they are fitted and reported.
PANEL_CLASSICAL = ("ets", "theta", "arima")
# The cheap benchmarks, scored for every series (never chosen: they are the baselines).
PANEL_BASELINES = ("naive", "seasonal_naive", "naive2")
# ETS fits a seasonal model up to this season; above it, the seasonally adjusted series.
ETS_MAX_SEASON = 12
# The series fitted (and timed) in this process before the rest is sent to workers or not.
PROBE_SERIES = 8
# The rest goes to workers only where it would take at least this long (seconds) in this
# process: a worker's start (a fresh interpreter importing NumPy, statsforecast and seqlab's
# metrics, no TensorFlow) and its first fit took 2.0-2.3 s here for two workers at once
# (6.5-7.8 s while the workers imported TensorFlow, when this was 30 s).
PARALLEL_MIN_SECONDS = 10.0
# Chunks per worker: small enough to balance series of different lengths, large enough that
# sending them costs nothing next to the fits.
CHUNKS_PER_WORKER = 8
# A chunk's fits take about this long at most (seconds, estimated from the probe's): the
# progress line moves when a chunk ends, and with 8 chunks a worker the first line of 20,000
# one-series files' fits (about 14 minutes on 2 cores) came after 2 minutes.
CHUNK_SECONDS = 5.0


def available_workers():
    """The cores this process may run on (its affinity where the system reports one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def baseline_forecasts(histories, horizon, season):
    """`{baseline: [forecast per series]}` of naive, seasonal naive and Naive2 (M4's)."""
    return {
        "naive": [metrics.naive_forecast(h, horizon) for h in histories],
        "seasonal_naive": [metrics.seasonal_naive_forecast(h, horizon, season)
                           for h in histories],
        "naive2": [metrics.naive2_forecast(h, horizon, season) for h in histories],
    }


def _model_season(method, season):
    """The season `method`'s model is fitted with: ETS above `ETS_MAX_SEASON` fits the
    seasonally adjusted series without one (`_Adjustment`)."""
    return 1 if method == "ets" and season > ETS_MAX_SEASON else season


def _statsforecast_model(method, season):
    from statsforecast.models import AutoARIMA, AutoETS, DynamicOptimizedTheta

    if method == "ets":
        return AutoETS(season_length=_model_season(method, season))
    if method == "theta":
        return DynamicOptimizedTheta(season_length=season)
    if method == "arima":
        return AutoARIMA(season_length=season)
    raise ValueError(f"unknown classical member {method!r}; expected one of "
                     f"{', '.join(PANEL_CLASSICAL)}")


class _Adjustment:
    """How one method sees one series: as it is, or (ETS with a long season) divided by the
    seasonal indices of its first history, which also divide any later values."""

    def __init__(self, history, season, method):
        self.season, self.indices = season, None
        left_out = _model_season(method, season) != season  # the model fits without it
        if left_out and metrics.is_seasonal(history, season):
            self.indices = metrics.seasonal_indices(history, season)

    def series(self, values):
        if self.indices is None:
            return values
        return values / self.indices[np.arange(values.size) % self.season]

    def forecast(self, values, start):
        """A forecast of the adjusted series from position `start`, re-seasonalised."""
        if self.indices is None:
            return values
        return values * self.indices[np.arange(start, start + values.size) % self.season]


def classical_forecasts(histories, horizon, season, methods=PANEL_CLASSICAL, what="",
                        stream=None, later=None, workers=None, quiet_for=None):
    """Fits each method of `methods` on every history and forecasts `horizon` steps; with
    `later`, also from the end of a longer history of each series with the same fit.

    Args:
        histories: one 1-D float array per series.
        horizon: steps to forecast from the end of each history.
        season: the seasonal period (1: none).
        methods: names among `PANEL_CLASSICAL`.
        what: what the progress line calls this pass (e.g. "at the validation origin").
        stream: where progress goes (default stderr); `False` for none.
        later: None, or one array per series that starts with its history: the fitted model
            (parameters kept) reads the later values and forecasts from their end
            (statsforecast's `forward`), as the one-series command rolls its classical
            members over the test split. A series whose `later` is None is fitted on it
            afresh (its history was too short to fit).
        workers: processes to fit in (default `available_workers()`; see
            `PARALLEL_MIN_SECONDS`).
        quiet_for: seconds before the first progress line (default `PROGRESS_EVERY`): fits
            that end sooner print none (the summary gives their seconds).

    Returns:
        `({method: [forecast per series]}, {method: [later forecast per series]} or None,
        {method: seconds of fitting, summed over the workers}, notes)`.
    """
    stream = sys.stderr if stream is None else stream
    count = len(histories)
    histories = [np.asarray(h, dtype="float64") for h in histories]
    later = None if later is None else [None if x is None else np.asarray(x, dtype="float64")
                                        for x in later]
    workers = available_workers() if workers is None else max(1, int(workers))
    progress = _Progress(stream, what, methods, count * len(methods),
                         quiet_for=PROGRESS_EVERY if quiet_for is None else quiet_for)
    probe = range(min(count, PROBE_SERIES))
    results = [_fit_chunk(histories, horizon, season, methods, later, probe, progress.step)]
    rest = range(len(probe), count)
    per_series = sum(results[0]["seconds"].values()) / max(1, len(probe))
    notes, where = [], (f" {what}" if what else "")
    if workers > 1 and len(rest) > 1 and per_series * len(rest) >= PARALLEL_MIN_SECONDS:
        try:
            results += _fit_in_workers(histories, horizon, season, methods, later,
                                       _chunks(rest, workers, per_series), workers,
                                       progress)
            rest = range(0)
            notes.append(f"classical fits{where}: {workers} worker processes")
        except (OSError, concurrent.futures.process.BrokenProcessPool) as error:
            notes.append(f"classical fits{where}: worker processes failed ({error}); "
                         "fitted in this process instead")
            progress.done = len(probe) * len(methods)
    if rest:
        results.append(_fit_chunk(histories, horizon, season, methods, later, rest,
                                  progress.step))
    forecasts = {method: [None] * count for method in methods}
    rolled = None if later is None else {method: [None] * count for method in methods}
    seconds = {method: 0.0 for method in methods}
    failed = {method: 0 for method in methods}
    for chunk in results:
        for method in methods:
            seconds[method] += chunk["seconds"][method]
            failed[method] += chunk["failed"][method]
            for i, first, second in chunk["forecasts"][method]:
                forecasts[method][i] = first
                if rolled is not None:
                    rolled[method][i] = second
    notes += [f"{method}: statsforecast failed on {failures} of {count} series {what}; they "
              "got the seasonal naive forecast (the naive one, the last value repeated, where a "
              "series is shorter than its season)" for method, failures in failed.items()
              if failures]
    return forecasts, rolled, seconds, notes


def _chunks(positions, workers, per_series=0.0):
    """`positions` split into at least `CHUNKS_PER_WORKER` ranges per worker, each of about
    `CHUNK_SECONDS` at most, at `per_series` seconds a series."""
    size = -(-len(positions) // (workers * CHUNKS_PER_WORKER))
    if per_series > 0:
        size = min(size, int(CHUNK_SECONDS // per_series))
    size = max(1, size)
    return [positions[start:start + size] for start in range(0, len(positions), size)]


@contextlib.contextmanager
def _bare_main():
    """`spawn` starts a worker by running the parent's main script again (as `__mp_main__`): a
    user's script without an `if __name__ == "__main__":` guard would run again in every
    worker. The workers need nothing from it; while they start, the main module is a bare one."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _fit_in_workers(histories, horizon, season, methods, later, chunks, workers, progress):
    """`_fit_chunk`'s results of every chunk, fitted in `workers` spawned processes."""
    context = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=context, initializer=_worker.start,
        initargs=(_tf_log.is_quiet(), os.getpid()))
    try:
        with _bare_main():  # the workers start at the first submissions
            pending = {
                pool.submit(_fit_chunk, [histories[i] for i in chunk], horizon, season,
                            methods, None if later is None else [later[i] for i in chunk],
                            range(len(chunk))): chunk
                for chunk in chunks}
        results = []
        for done in concurrent.futures.as_completed(pending):
            chunk, result = pending[done], done.result()
            # Positions within the chunk back to positions in the panel.
            result["forecasts"] = {
                method: [(chunk[j], first, second) for j, first, second in rows]
                for method, rows in result["forecasts"].items()}
            results.append(result)
            progress.step(None, len(chunk) * len(methods))
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown()
    return results


def _stop_pool(pool):
    """Ends a pool at once (a Ctrl-C, an error): its queued work cancelled and its workers
    ended. `with` would shut it down waiting for every queued chunk: a Ctrl-C during the fits
    of M4's weekly series took 100-200 s to stop, and a second one hung the exit, waiting on
    workers that were waiting on the pool's queue."""
    # The workers, read before shutdown forgets them (the pool has no public way to end them
    # before Python 3.14's terminate_workers).
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=10)


def _fit_chunk(histories, horizon, season, methods, later, positions, step=None):
    """Every method on the series at `positions`: `{"forecasts": {method: [(position, forecast,
    later forecast or None)]}, "seconds": {method: s}, "failed": {method: count}}`. A series
    statsforecast cannot fit gets the seasonal naive forecast (counted in `failed`)."""
    result = {"forecasts": {}, "seconds": {}, "failed": {}}
    for method in methods:
        tick, rows, failures = time.perf_counter(), [], 0
        for i in positions:
            history = histories[i]
            longer = None if later is None else later[i]
            fitted = _fit_and_forecast(method, history, horizon, season, longer)
            if fitted is None:
                failures += 1
                fitted = (metrics.seasonal_naive_forecast(history, horizon, season),
                          None if longer is None
                          else metrics.seasonal_naive_forecast(longer, horizon, season))
            rows.append((i, *fitted))
            if step is not None:
                step(method)
        result["forecasts"][method] = rows
        result["seconds"][method] = time.perf_counter() - tick
        result["failed"][method] = failures
    return result


def _fit_and_forecast(method, history, horizon, season, longer=None):
    """`(forecast from the end of history, forecast from the end of longer or None)`, or
    None where statsforecast fails or gives a non-finite forecast."""
    adjustment = _Adjustment(history, season, method)
    # ARIMA and Theta see a series far from magnitude 1 in a power-of-ten unit, as the
    # one-series members do (`metrics.fitting_unit`); their forecasts come back in its units.
    unit = fitting_unit(history, method)
    # A long history is fitted on its last rows (`metrics.fitting_start`, as one series'
    # members are; seasons of the model's own season), and rolled forward from the same row.
    start = fitting_start(history.size, _model_season(method, season))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = _statsforecast_model(method, season).fit(
                adjustment.series(history)[start:] / unit)
            first = adjustment.forecast(unit * np.asarray(model.predict(h=horizon)["mean"],
                                                          dtype="float64"), history.size)
            second = None
            if longer is not None:
                longer = np.asarray(longer, dtype="float64")
                second = adjustment.forecast(unit * np.asarray(
                    model.forward(y=adjustment.series(longer)[start:] / unit,
                                  h=horizon)["mean"], dtype="float64"), longer.size)
    except Exception:  # statsforecast raises many kinds for a degenerate series
        return None
    for values in (first, second):
        if values is not None and (values.shape != (horizon,) or not np.all(np.isfinite(values))):
            return None
    return first, second


class _Progress:
    """The classical fits' progress: a line rewritten in place on a terminal, else a line at
    most every `PROGRESS_EVERY` seconds and one at the end.

    Args:
        unit: what `total` counts, for the line.
        quiet_for: seconds without any line; fits that end sooner print none, not even the
            last (one series' fits, which take a few seconds on most series).
    """

    def __init__(self, stream, what, methods, total, unit="series fits", quiet_for=0.0):
        self.stream, self.what, self.methods, self.total = stream, what, methods, total
        self.unit, self.quiet_for, self.shown = unit, quiet_for, False
        self.done, self.started = 0, time.perf_counter()
        self.last = self.started

    def step(self, method, fits=1):
        """`fits` more done (of `method`, or None for a chunk of every method)."""
        self.done += fits
        if not self.stream:
            return
        now = time.perf_counter()
        at_end = self.done == self.total
        if not (self.shown or now - self.started >= self.quiet_for):
            return
        if not (at_end or now - self.last >= (0.5 if self.stream.isatty() else PROGRESS_EVERY)):
            return
        self.last, self.shown = now, True
        from seqlab.pipelines.common import format_duration

        elapsed = now - self.started
        left = elapsed / self.done * (self.total - self.done)
        doing = "" if method is None else f"{method} "
        where = f" {self.what}" if self.what else ""
        line = (f"classical members{where}: {doing}({', '.join(self.methods)}), "
                f"{self.done}/{self.total} {self.unit}, {format_duration(elapsed)} so far, "
                f"about {format_duration(left)} left")
        if self.stream.isatty():
            self.stream.write("\r" + line[:150].ljust(150) + ("\n" if at_end else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


# Without a terminal, a progress line at most this often (seconds), and at the end.
PROGRESS_EVERY = 15.0
