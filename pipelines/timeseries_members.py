"""The members of `seqlab timeseries train --model auto` on one series, and their choice.

Members: statsforecast's automatic ETS, ARIMA and Theta and seasonal naive, and ETS and ARIMA
on the log of a strictly positive series (fitted by the library, forecast by seqlab's
recursions with the parameters fixed: models/forecasting/classical.py), the network
(`AutoForecaster.neural`) and the least-squares linear autoregression
(`AutoForecaster.linear`). Every member is scored on the same rolling-origin
backtest over the rows before the test split (`models/forecasting/selection.py`): the
classical members and the linear one are refitted at each fold, the network is trained once
on the rows before the backtest region (training it once per fold would multiply the
command's time). The kept candidate, a member or the mean of the best k, forecasts the test
split, `predict` and the SavedModel.

The classical members fitted on all rows before the test split are also the ETS, ARIMA and
Theta baselines of every run's table, whatever its model.
"""

import dataclasses
import math
import sys

import keras
import numpy as np

from seqlab.data.timeseries import WindowGenerator, chunk_windows, window_rows
from seqlab.models.forecaster import Forecaster, LeastSquaresTooWide
from seqlab.models.forecasting.classical import ClassicalSpec, fit_classical, forecast_at_origins
from seqlab.models.forecasting.selection import (
    Selection,
    backtest_folds,
    backtest_region,
    combine,
    select,
)
from seqlab.pipelines.common import plural

# Classical members of --model auto, and the ones scored as baselines in every run. The
# log-scale ones are left out of a series with a value at or below 0, with a note.
CLASSICAL_MEMBERS = ("ets", "arima", "theta", "seasonal_naive", "log_ets", "log_arima")
CLASSICAL_BASELINES = ("ets", "arima", "theta")
MEMBERS_FORMAT = 1
# The SavedModel's history signature checks that a history starts with the training data's
# first rows, this many (`ForecastMembers.history_start`): a history starting later, or another
# series, was forecast silently from a state the members never had.
HISTORY_START_ROWS = 24
# The network's backtest training needs this many windows before the backtest region.
MIN_NEURAL_WINDOWS = 20
# Fewer backtest origins than this choose nothing: the classical members are combined.
MIN_BACKTEST_ORIGINS = 4
# Candidates alone but never part of a mean (`select`'s `alone_only`): a benchmark.
ALONE_ONLY = ("seasonal_naive",)


@dataclasses.dataclass
class ForecastMembers:
    """What a run keeps beside model.keras (members.json): the classical fits on the rows
    before the test split and, for --model auto, the backtest's choice.

    Attributes:
        classical: `{method: [ClassicalSpec, one per target]}`.
        selection: the `Selection` of --model auto (None for another model).
        neural: the network member's name (its kind, e.g. "gru"); None without one.
        notes: what was left out and why.
        history_start: the first `HISTORY_START_ROWS` rows of the input columns as train read
            them, `[row][column]`: the SavedModel's history must start with them (None in a
            run saved before they were kept: not checked).
    """

    classical: dict
    selection: Selection | None = None
    neural: str | None = None
    notes: list = dataclasses.field(default_factory=list)
    history_start: list | None = None

    def to_dict(self):
        return {
            "format": MEMBERS_FORMAT,
            "classical": {method: [spec.to_dict() for spec in specs]
                          for method, specs in self.classical.items()},
            "selection": None if self.selection is None else self.selection.to_dict(),
            "neural": self.neural,
            "notes": list(self.notes),
            "history_start": self.history_start,
        }

    @classmethod
    def from_dict(cls, values):
        """Reads `to_dict`'s output back.

        Raises:
            ValueError: a field is missing, of the wrong type or names an unknown member.
        """
        if not isinstance(values, dict) or values.get("format") != MEMBERS_FORMAT:
            raise ValueError(f"members.json: expected an object with format {MEMBERS_FORMAT}")
        classical = values.get("classical")
        if not isinstance(classical, dict):
            raise ValueError("members.json: field 'classical' must be an object")
        specs = {}
        for method, entries in classical.items():
            if method not in CLASSICAL_MEMBERS or not isinstance(entries, list) or not entries:
                raise ValueError(f"members.json: field 'classical.{method}' must be a "
                                 "non-empty list of a known method "
                                 f"({', '.join(CLASSICAL_MEMBERS)})")
            specs[method] = [ClassicalSpec.from_dict(entry) for entry in entries]
        selection = values.get("selection")
        if selection is not None and not isinstance(selection, dict):
            raise ValueError("members.json: field 'selection' must be an object or null")
        selection = None if selection is None else Selection.from_dict(selection)
        neural = values.get("neural")
        if neural is not None and not isinstance(neural, str):
            raise ValueError("members.json: field 'neural' must be a string or null")
        members = set(specs) | {neural, "linear"}
        if selection is not None and not set(selection.kept) <= members:
            raise ValueError(f"members.json: field 'selection.kept' names members this run "
                             f"does not have: {sorted(set(selection.kept) - members)}")
        start = values.get("history_start")
        if start is not None and not (
                isinstance(start, list) and start and all(
                    isinstance(row, list) and row and len(row) == len(start[0]) and all(
                        isinstance(v, (int, float)) and not isinstance(v, bool)
                        and math.isfinite(v) for v in row) for row in start)):
            raise ValueError("members.json: field 'history_start' must be null or rows of "
                             "finite numbers, one per input column")
        return cls(specs, selection, neural, [str(note) for note in values.get("notes", [])],
                   start)

    @property
    def kept(self):
        return None if self.selection is None else self.selection.kept

    def uses_history(self):
        """Whether the kept forecast reads more than the model's window (a classical member
        rolls its state over the whole series)."""
        return self.kept is not None and any(name in self.classical for name in self.kept)


def first_classical_row(members):
    """The latest first fitting row of `members`' classical fits (0 without any, or for
    None): none forecasts from an origin before it (`ClassicalSpec.first_row`)."""
    if members is None:
        return 0
    return max((spec.first_row for specs in members.classical.values() for spec in specs),
               default=0)


def fit_classical_members(targets, fit_end, season, target_names, methods, progress=None):
    """`({method: [spec per target]}, notes)`: each method fitted on `targets[:fit_end]`.

    A method that fails on any target is left out, with a note naming the target and why.
    `progress`, if given (`classical_progress`), is told of each fit.
    """
    classical, notes = {}, []
    for method in methods:
        specs = []
        for index, name in enumerate(target_names):
            try:
                spec = fit_classical(method, targets[:fit_end, index], season)
            except ValueError as error:
                notes.append(f"{method} left out: it could not be fitted to {name} ({error})")
                if progress is not None:  # this method's fits of the other targets are skipped
                    progress.step(method, len(target_names) - index)
                break
            specs.append(spec)
            if progress is not None:
                progress.step(method)
        else:
            classical[method] = specs
    return classical, notes


def classical_progress(methods, fits):
    """The progress of one series' `fits` classical fits on stderr: silent unless they take
    longer than `PROGRESS_EVERY` seconds (a year of hourly rows: minutes), then a line at most
    that often (in place on a terminal) and one at the end."""
    from seqlab.pipelines.timeseries_classical_panel import PROGRESS_EVERY, _Progress

    return _Progress(sys.stderr, "", list(methods), fits, unit="fits", quiet_for=PROGRESS_EVERY)


def classical_forecasts(classical, targets, last_rows, horizon):
    """`{method: [origins, horizon, n_targets]}` from the origins `last_rows` (each reads the
    targets up to its origin only)."""
    return {
        method: np.stack([forecast_at_origins(spec, targets[:, index], last_rows, horizon)
                          for index, spec in enumerate(specs)], axis=-1)
        for method, specs in classical.items()
    }


def forecast_windows(model, scaler, schema, values, starts, lookback, direct=False):
    """Forecasts of a Keras forecaster in original units for the windows starting at `starts`.

    Args:
        direct: call the model on chunks of windows instead of `model.predict` (for an auto
            model's members: each `predict` traces a function of its own, and Keras warns
            about retracing after a few).

    Returns:
        float64 array `[len(starts), horizon, n_targets]`.
    """
    inputs = scaler.transform(values[schema.input_columns].to_numpy(), schema.input_columns)
    offsets, size = np.arange(lookback), chunk_windows(lookback * inputs.shape[1])
    if direct:
        scaled = [np.asarray(model(windows))
                  for windows in gathered(inputs, starts, offsets, min(size, DIRECT_CHUNK))]
    else:
        scaled = [model.predict(windows, verbose=0, batch_size=256)
                  for windows in gathered(inputs, starts, offsets, size)]
    return scaler.inverse_transform(np.concatenate(scaled), schema.targets).astype("float64")


# The windows a member's model is called on at once (`forecast_windows(direct=True)`).
DIRECT_CHUNK = 4096


def gathered(rows, starts, offsets, size):
    """`window_rows(rows, starts, offsets)` (windows, or their targets), `size` starts at a
    time (`chunk_windows`), in order (at least one chunk, empty without starts): a window
    repeats `lookback` rows, so a long series' windows all at once would take `lookback` times
    its memory."""
    for begin in range(0, max(len(starts), 1), size):
        yield window_rows(rows, starts[begin:begin + size], offsets)


def member_forecasts(names, model, members, scaler, schema, values, last_rows, lookback,
                     horizon):
    """`{name: [origins, horizon, n_targets]}` of the named members from the origins
    `last_rows`, in original units."""
    targets = values[schema.targets].to_numpy(dtype="float64")
    classical = {name: members.classical[name] for name in names if name in members.classical}
    forecasts = classical_forecasts(classical, targets, last_rows, horizon)
    starts = last_rows - lookback + 1
    for name in names:
        if name == "linear":
            forecasts[name] = forecast_windows(model.linear, scaler, schema, values, starts,
                                               lookback, direct=True)
        elif name == members.neural:
            forecasts[name] = forecast_windows(model.neural, scaler, schema, values, starts,
                                               lookback, direct=True)
    return forecasts


def kept_forecast(model, members, scaler, schema, values, last_rows, lookback, horizon):
    """The kept candidate's forecast (the mean of its members) from the origins `last_rows`."""
    forecasts = member_forecasts(members.kept, model, members, scaler, schema, values,
                                 last_rows, lookback, horizon)
    return combine(forecasts, members.kept)


# --- the backtest -------------------------------------------------------------------------


@dataclasses.dataclass
class BacktestPlan:
    """Where --model auto's members are scored: folds over the rows before the test split.

    Attributes:
        region_start: the first target row of the backtest region.
        region_end: the first row of the test split.
        folds: the `Fold`s (fit end and origins), earliest first.
        requested: the folds asked for (`--auto-folds`); more than `folds` where the region
            has too few origins for them (None: not known).
    """

    region_start: int
    region_end: int
    folds: list
    requested: int | None = None

    @property
    def origins(self):
        return np.concatenate([fold.origins for fold in self.folds])

    def describe(self):
        rows = f"rows {self.region_start}..{self.region_end - 1}"
        fewer = ""
        if self.requested and self.requested > len(self.folds):
            fewer = (f"; --auto-folds {self.requested} asked for more, but a fold needs an "
                     "origin of its own")
        return (f"{plural(len(self.folds), 'fold')} over {rows}"
                f" ({plural(len(self.origins), 'origin')}{fewer})")


def plan_backtest(pre_test_rows, test_rows, lookback, horizon, season, folds):
    """The backtest of the rows before the test split, or None when they are too few.

    The earliest fold is fitted on at least two seasons (a seasonal model needs them) and the
    model's window, and every origin has a full window behind it.
    """
    min_fit_rows = max(lookback, 2 * season if season > 1 else 0, 8) + horizon
    region_start = backtest_region(pre_test_rows, test_rows, min_fit_rows)
    if region_start is None:
        return None
    plan = BacktestPlan(region_start, pre_test_rows,
                        backtest_folds(region_start, pre_test_rows, horizon, folds,
                                       first_origin=lookback - 1), requested=folds)
    if not plan.folds or len(plan.origins) < MIN_BACKTEST_ORIGINS:
        return None
    return plan


def backtest_actual(targets, origins, horizon):
    return targets[origins[:, None] + np.arange(1, horizon + 1)]


def classical_backtest(plan, targets, season, target_names, methods, horizon, progress=None):
    """`({method: forecasts over plan.origins}, notes)`: each method refitted at each fold
    on the rows before it; a method that fails at any fold is left out."""
    per_fold, notes = [], []
    usable = set(methods)
    for fold in plan.folds:
        classical, fold_notes = fit_classical_members(targets, fold.fit_end, season,
                                                      target_names, methods, progress)
        usable &= set(classical)
        notes += [f"backtest fold at row {fold.fit_end}: {note}" for note in fold_notes]
        per_fold.append(classical_forecasts(classical, targets, fold.origins, horizon))
    forecasts = {method: np.concatenate([fold[method] for fold in per_fold])
                 for method in methods if method in usable}
    return forecasts, notes


def linear_backtest(plan, scaler, schema, values, lookback, horizon):
    """The least-squares member refitted at each fold on the windows whose targets lie before
    it; forecasts over `plan.origins` in original units.

    Raises:
        LeastSquaresTooWide: the window holds more values than the fit takes.
    """
    inputs = scaler.transform(values[schema.input_columns].to_numpy(), schema.input_columns)
    scaled_targets = scaler.transform(values[schema.targets].to_numpy(), schema.targets)
    linear = Forecaster(lookback=lookback, n_features=len(schema.input_columns),
                        horizon=horizon, n_targets=len(schema.targets), kind="linear",
                        normalization="shift", target_features=target_features(schema))
    forecasts = []
    for fold in plan.folds:
        starts = np.arange(0, fold.fit_end - lookback - horizon + 1)
        # One size for both, so that each chunk of windows meets its targets' chunk.
        size = chunk_windows(lookback * inputs.shape[1] + horizon * scaled_targets.shape[1])
        linear.fit_least_squares(zip(gathered(inputs, starts, np.arange(lookback), size),
                                     gathered(scaled_targets, starts,
                                              lookback + np.arange(horizon), size)))
        forecasts.append(forecast_windows(linear, scaler, schema, values,
                                          fold.origins - lookback + 1, lookback, direct=True))
    return np.concatenate(forecasts)


def target_features(schema):
    features = schema.input_columns
    return [features.index(t) if t in features else None for t in schema.targets]


def neural_backtest_gap(config, plan):
    """Why the network cannot be trained on the rows before the backtest region, or None:
    fewer than `MIN_NEURAL_WINDOWS` windows there, or a validation part shorter than one
    horizon (a 12-month horizon on 120 monthly rows failed after the run's whole training)."""
    fit_rows = plan.region_start
    if fit_rows - config.lookback - config.horizon + 1 < MIN_NEURAL_WINDOWS:
        return (f"fewer than {MIN_NEURAL_WINDOWS} windows lie before the backtest (rows "
                f"{plan.region_start}..)")
    val_rows = int(round(fit_rows * config.val_fraction))
    if 0 < val_rows < config.horizon:
        return (f"the {val_rows} validation rows before the backtest (rows {plan.region_start}..) "
                f"hold less than one horizon ({config.horizon})")
    return None


def backtest_windows(config, schema, values, plan):
    """A `WindowGenerator` over the rows before the test split whose test windows are the
    backtest origins' and whose training and validation windows lie before the region (the
    network's backtest training); only where `neural_backtest_gap` finds none."""
    rows = plan.region_end
    fit_rows = plan.region_start
    val_rows = int(round(fit_rows * config.val_fraction))
    return WindowGenerator(
        values.iloc[:rows], split_targets=True, lookback=config.lookback,
        horizon=config.horizon, targets=schema.targets, features=schema.input_columns,
        stride=config.stride, val_fraction=val_rows / rows,
        test_fraction=(rows - fit_rows) / rows, scaler=config.scaler,
        batch_size=config.batch_size, shuffle_seed=config.seed,
    )


def neural_backtest(build, windows, plan, schema, values, lookback, fit):
    """Trains a fresh network on the rows before the backtest region and forecasts every
    backtest origin (no refit per fold).

    Args:
        build: returns a compiled, built `Forecaster` of the run's neural kind.
        windows: `backtest_windows`' generator.
        fit: `(model, windows)`, trains the model on the generator's training windows as
            the run trains its own.
    """
    model = build()
    fit(model, windows)
    return forecast_windows(model, windows.scaler, schema, values,
                            plan.origins - lookback + 1, lookback, direct=True)


def describe_members(members, figures):
    """Summary lines: the kept candidate and why, then each member's backtest and test RMSE.

    Args:
        figures: `{member: {"backtest_rmse": .., "test_rmse": ..}}`.
    """
    def figure(values, key):
        value = values.get(key)
        return "-" if value is None else f"{value:.4g}"

    selection = members.selection
    lines = [f"model auto: kept {selection.name}: {selection.reason()}"]
    rows = sorted(figures.items(), key=lambda item: (item[1].get("backtest_rmse") is None,
                                                     item[1].get("backtest_rmse") or 0.0))
    lines.append("  members (backtest RMSE / test RMSE): " + "; ".join(
        f"{name} {figure(values, 'backtest_rmse')} / {figure(values, 'test_rmse')}"
        for name, values in rows))
    return lines
