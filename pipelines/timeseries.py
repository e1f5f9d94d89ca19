"""Time-series forecasting: windows of past rows in, the next `horizon` rows of the targets out.

`train` reads a CSV (or the yearly sunspots embedded in statsmodels), splits it in time order
(the splits hold the forecast TARGETS: every test row is forecast, from windows that may reach
back into earlier rows), scales it on the training rows, fits a recurrent or Transformer model
built from seqlab's layers (each window normalised by its own last value and spread, so the
model extrapolates trends; by default `--model auto`: a GRU and a least-squares linear
autoregression, the one better on the validation split kept) and scores it on the test split in
original units beside the naive (last value), seasonal-naive and exponential-smoothing (ETS)
forecasts of the same targets from the same origins. `--backtest K` repeats the fit and the
scoring at K rolling origins. `evaluate`, `predict` and `export` work from the run directory.

The run directory holds, besides the common files (pipelines/common.py): `schema.json` (how the
CSV's columns become model inputs), `scaler.json`, `ets.json` (the ETS baseline's form and
parameters, fitted on the training rows), `plots/forecast.png`, `plots/loss.png`, and
`saved_model/` with `serving_default(window: float32[None, lookback, n_features]) ->
{"forecast": float32[None, horizon, n_targets]}` in original units (scaling inside the graph).
"""

import dataclasses
import math
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from seqlab import _interrupt
from seqlab.data.errors import DataError, listed
from seqlab.data.long_table import find_id_column, runs_of_series
from seqlab.data.timeseries import (
    COLUMNS_SHOWN,
    SUNSPOTS_SOURCE,
    SUNSPOTS_TIME_COLUMN,
    Scaler,
    SeriesSchema,
    WindowGenerator,
    choose_season,
    every_window_start,
    future_time_labels,
    load_sunspots,
    read_csv,
    split_bounds,
)
from seqlab.models.ets import SmoothingSpec, smoothing_forecast
from seqlab.models.forecaster import AutoForecaster, Forecaster, LeastSquaresTooWide
from seqlab.models.forecasting.classical import LOG_METHODS, forecast_from_history
from seqlab.models.forecasting.selection import (
    Selection,
    candidate_name,
    combine,
    rmse,
    select,
)
from seqlab.models.serving import checked_input
from seqlab.pipelines.common import (
    ActionResult,
    StopOnInterrupt,
    UsageError,
    build_training_state,
    format_duration,
    format_table,
    free_column_name,
    plural,
    pyplot,
    read_json,
    save_figure,
    write_export_archive,
    write_text_atomic,
)
from seqlab.pipelines.configs.timeseries import CARD, MODEL_KINDS, TASK_NAME, TimeseriesConfig
from seqlab.pipelines.lifecycle import Pipeline, evaluation_result
from seqlab.pipelines.settings import fill_in_setting, recurrent_parameters
from seqlab.pipelines.metrics import backtest_table, fold_summary, forecast_scores, forecast_table
from seqlab.pipelines.timeseries_classical_panel import PROGRESS_EVERY
from seqlab.pipelines.timeseries_panel import PANEL_PIPELINE, is_panel, is_panel_run
from seqlab.pipelines.timeseries_members import (
    ALONE_ONLY,
    CLASSICAL_BASELINES,
    CLASSICAL_MEMBERS,
    HISTORY_START_ROWS,
    ForecastMembers,
    backtest_actual,
    backtest_windows,
    classical_backtest,
    classical_forecasts,
    classical_progress,
    describe_members,
    first_classical_row,
    fit_classical_members,
    forecast_windows,
    kept_forecast,
    linear_backtest,
    member_forecasts,
    neural_backtest,
    neural_backtest_gap,
    plan_backtest,
)

# The default lookback without a season, and the longest one chosen without --lookback.
DEFAULT_LOOKBACK = 24
MAX_DEFAULT_LOOKBACK = 256


# ---------------------------------------------------------------------------------------------
# Data


def load_table(data):
    """`(raw frame, source name)` of a CSV path, or of the embedded sunspots when None."""
    if data is None:
        return load_sunspots(), SUNSPOTS_SOURCE
    return read_csv(data), str(data)


def refuse_long_table(config, frame, source):
    """Refuses to train one series on a long table of many (`find_id_column`), which would
    forecast every series end to end: the command line reads such a table as many series
    (`long_table_settings`); a config built in Python names the id column itself.

    Raises:
        DataError: naming the id column found and how to forecast the series.
    """
    if config.data is None or (config.time_column and len(config.time_column) > 1):
        return
    found = find_id_column(frame, config.time_column[0] if config.time_column else None)
    if found is not None:
        raise found.refusal(source)


def infer_schema(config, frame, source):
    """The `SeriesSchema` the config asks for (the embedded series has its time column preset)."""
    time_column = config.time_column
    if config.data is None and time_column is None:
        time_column = SUNSPOTS_TIME_COLUMN
    return SeriesSchema.infer(
        frame,
        time_column=time_column,
        targets=config.target,
        features=config.features,
        categorical=config.categorical,
        fill=config.fill,
        fill_ends=config.fill_ends,
        source=source,
    )


def make_windows(config, series, schema, scaler=None, batch_size=None):
    """The `WindowGenerator` of a prepared series with the config's settings.

    `batch_size` overrides the config's (a distributed run batches globally).
    """
    return WindowGenerator(
        series.values,
        split_targets=config.split_targets,
        lookback=config.lookback,
        horizon=config.horizon,
        targets=schema.targets,
        features=schema.input_columns,
        stride=config.stride,
        val_fraction=config.val_fraction,
        test_fraction=config.test_fraction,
        scaler=scaler or config.scaler,
        batch_size=batch_size or config.batch_size,
        shuffle_seed=config.seed,
        source=series.source,
    )


def choose_lookback(config, season, train_rows):
    """`(lookback, why)`: --lookback, or two seasons (one when two do not fit; 24 rows without
    a season), at most half the training rows (so that half of them are forecast targets) and
    at most `MAX_DEFAULT_LOOKBACK`."""
    if config.lookback is not None:
        return config.lookback, "--lookback"
    limit = max(1, min((train_rows - config.horizon) // 2, MAX_DEFAULT_LOOKBACK))
    if season >= 2:
        for lookback, why in ((2 * season, f"two seasons of {season}"),
                              (season, f"one season of {season}")):
            if lookback <= limit:
                return lookback, why
        return limit, (f"at most half the training rows and {MAX_DEFAULT_LOOKBACK} (one season "
                       f"of {season} is longer)")
    if DEFAULT_LOOKBACK <= limit:
        return DEFAULT_LOOKBACK, f"no season: {DEFAULT_LOOKBACK} rows"
    return limit, "no season; half the training rows"


def backtest_folds(config, series, schema, bounds):
    """`[(rows kept, WindowGenerator)]` of the `config.backtest - 1` folds before the run's own.

    Fold k keeps the series up to k test splits before its end (expanding window), with the
    run's validation and test split sizes in rows; its scaler is fitted on its own training rows.

    Raises:
        DataError: the earliest fold is too short for one window per split (checked before
            anything is trained).
    """
    test_rows = bounds["test"][1] - bounds["test"][0]
    val_rows = bounds["val"][1] - bounds["val"][0]
    folds = []
    for back in range(config.backtest - 1, 0, -1):
        end = len(series.values) - back * test_rows
        try:
            if end <= val_rows + test_rows:
                raise DataError(f"it would keep {max(end, 0)} rows, fewer than the validation "
                                f"and test splits ({val_rows} + {test_rows} rows)")
            fold_config = dataclasses.replace(
                config, val_fraction=val_rows / end, test_fraction=test_rows / end
            )
            fold_series = dataclasses.replace(series, values=series.values.iloc[:end])
            folds.append((end, make_windows(fold_config, fold_series, schema)))
        except DataError as error:
            raise DataError(
                f"--backtest {config.backtest}: the earliest fold (the first {max(end, 0)} "
                f"rows) is too short: {error.message}; use a smaller --backtest",
                path=series.source,
            ) from None
    return folds


# ---------------------------------------------------------------------------------------------
# Model


# The neural member of `--model auto`.
AUTO_NEURAL_KIND = "gru"
# Training batches run per call of Keras's compiled step: a forecaster's step is a few
# milliseconds, and one call per batch (with its callbacks and iterator round trip) cost about
# a fifth of each 200-epoch fit of the main job (docs/performance.md, "The forecaster's
# epochs"). The same batches in the same order: the weights are the same. Not under a
# distribution strategy (see build_model).
STEPS_PER_EXECUTION = 32
# A long series' epoch: at most this many training batches (8,192 windows at the default
# batch, a year of hourly rows) of an endless stream of its windows, shuffled again at each
# pass, so that early stopping's patience is a bounded number of steps, not 20 passes over tens
# of thousands of windows (a 30,000-row hourly series' pass is 655 batches). A series with at
# most 256 batches of training windows (about 11,800 rows at the default splits and batch)
# trains on every window each epoch, as before (docs/performance.md, "Long series: epochs of
# at most 256 batches"). Validation is bounded the same way (`validation_limit`).
MAX_EPOCH_BATCHES = 256


def build_model(config, schema):
    """The compiled `Forecaster` (`AutoForecaster` for `--model auto`) of a config, in scaled
    units; an auto model's linear member is not fitted yet (`fit_linear_member`)."""
    features = schema.input_columns
    auto = config.model == "auto"
    model = (AutoForecaster if auto else Forecaster)(
        lookback=config.lookback, n_features=len(features), horizon=config.horizon,
        n_targets=len(schema.targets), kind=AUTO_NEURAL_KIND if auto else config.model,
        units=config.units, layers=config.layers, dropout=config.dropout,
        num_heads=config.num_heads, ff_dim=config.ff_dim, seed=config.seed,
        normalization=config.normalization,
        target_features=[features.index(t) if t in features else None for t in schema.targets],
    )
    model.compile(
        optimizer=keras.optimizers.Adam(config.learning_rate, clipnorm=config.clipnorm),
        loss="mse",
        metrics=["mae"],
        # One batch per call under a distribution strategy: Keras's multi-step function fails
        # under MultiWorkerMirroredStrategy ("You must feed a value for placeholder tensor").
        steps_per_execution=1 if tf.distribute.has_strategy() else STEPS_PER_EXECUTION,
    )
    model.build((None, config.lookback, len(features)))
    return model


def training_batches(windows):
    """The number of training batches of `windows` (a `WindowGenerator`)."""
    return math.ceil(len(windows.window_starts("train")) / windows.batch_size)


def epoch_steps(windows):
    """`MAX_EPOCH_BATCHES` where the training windows are more batches than that (an epoch is
    then that many batches of an endless stream of them), else None (every window each
    epoch)."""
    return MAX_EPOCH_BATCHES if training_batches(windows) > MAX_EPOCH_BATCHES else None


def training_stream(windows):
    """`(dataset, steps_per_epoch)` that `fit` trains on (`epoch_steps`)."""
    steps = epoch_steps(windows)
    return (windows.train if steps is None else windows.train.repeat()), steps


def has_validation(windows):
    return len(windows.window_starts("val")) > 0


def validation_limit(windows):
    """How many validation windows `fit` scores after each epoch: None (every one), or where
    they are more than `MAX_EPOCH_BATCHES` batches, that many batches' worth, evenly spaced
    over the validation split (the same ones every epoch, so that early stopping compares
    like with like), so that an epoch's validation is bounded as its training is."""
    limit = MAX_EPOCH_BATCHES * windows.batch_size
    return limit if len(windows.window_starts("val")) > limit else None


def validation_data(windows):
    """The validation dataset of `fit` (`validation_limit`), or None without a validation
    split."""
    if not has_validation(windows):
        return None
    return windows.dataset("val", limit=validation_limit(windows))


class QuietProgress(keras.callbacks.Callback):
    """The progress of a network that is not the run's own (a backtest's): no epoch lines, but
    one line on stderr at most every `PROGRESS_EVERY` seconds, none for a fit that ends sooner.
    On a long series such a fit takes minutes, which passed without a word (4,032 half-hourly
    values: ten minutes after the run's own network had printed its last epoch)."""

    def __init__(self, what, epochs):
        super().__init__()
        self.what, self.epochs = what, epochs

    def on_train_begin(self, logs=None):
        self.started = self.last = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        now = time.perf_counter()
        if now - self.last >= PROGRESS_EVERY:
            self.last = now
            print(f"{self.what}: epoch {epoch + 1} (at most {self.epochs}), "
                  f"{format_duration(now - self.started)} so far", file=sys.stderr, flush=True)


def fit_quietly(model, windows, epochs, callbacks, what="a backtest's network"):
    """Trains a network that is not the run's own (a backtest's) on `windows` as the run
    trains its own, printing no epoch lines (`QuietProgress` only).

    Args:
        callbacks: `monitor -> callbacks` (the monitor is `val_loss`, or `loss` without
            validation windows).
        what: the network, for the progress line.
    """
    train, steps = training_stream(windows)
    validation = validation_data(windows)
    build_training_state(model, train)
    with _interrupt.deferred(started=False) as deferral:  # see StopOnInterrupt
        model.fit(train, validation_data=validation, epochs=epochs, steps_per_epoch=steps,
                  verbose=0, shuffle=False,
                  callbacks=[*callbacks("val_loss" if validation is not None else "loss"),
                             QuietProgress(what, epochs), StopOnInterrupt(deferral)])


def stride_line(stride, windows):
    """The summary's line on `--stride`: how many of the training windows the network reads."""
    kept, every = len(windows.window_starts("train")), len(windows.window_starts("train", 1))
    return (f"stride {stride}: the network trains on {kept:,} of the {every:,} training windows "
            f"(one every {stride} rows)")


def fit_linear_member(model, windows):
    """Fits an `AutoForecaster`'s linear member on the training windows.

    Returns:
        None, or why the member was left out (a window too wide for the least-squares fit:
        `choose_member` then keeps the neural one). Nothing happens for another model.
    """
    if not isinstance(model, AutoForecaster):
        return None
    try:
        model.linear.check_least_squares_width()  # before the windows are built
        model.fit_linear(windows.chunks("train"))
    except LeastSquaresTooWide as error:
        return (f"--model auto: no linear member, as its window holds {model.lookback} rows x "
                f"{model.n_features} inputs = {error.weights - 1} values, more than the "
                f"least-squares fit takes ({error.limit - 1}): left out")
    return None


def choose_member(model, windows, left_out=None):
    """Makes an `AutoForecaster` choose between its network and linear member on the
    validation windows (the training ones when there is no validation split); returns which
    split decided (None for another model). `left_out`: `fit_linear_member`'s reason, if the
    linear member was left out. Only for series too short for the backtest
    (`select_members`)."""
    if not isinstance(model, AutoForecaster):
        return None
    if left_out:
        model.choice = "neural"
        return "only member (no linear member)"
    split = "val" if has_validation(windows) else "train"
    model.choose(windows.chunks(split))
    if split == "val":
        return "validation split"
    return "training split, as there is no validation split"


def model_label(config, model, members=None):
    """The model's name in tables: its kind, or "auto: <kept member or combination>"."""
    if members is not None and members.kept:
        return f"auto: {members.selection.name}"
    if isinstance(model, AutoForecaster):
        return f"auto: {member_kind(model, model.choice or 'neural')}"
    return config.model


def member_kind(model, member):
    return "linear" if member == "linear" else model.kind


@dataclasses.dataclass(frozen=True)
class AtOrBelowZero:
    """The first target value at or below 0 (which the log-scale members cannot take)."""

    column: str
    row: int
    value: float

    def __str__(self):
        return (f"{self.column} is {self.value:.6g} in row {self.row} of the series (counting "
                "from 0)")


def first_at_or_below_zero(targets):
    """The first value of the target frame `targets` at or below 0 (row by row), or None."""
    below = ~(targets.to_numpy(dtype="float64") > 0)
    if not below.any():
        return None
    row, column = np.argwhere(below)[0]
    return AtOrBelowZero(targets.columns[column], int(row), float(targets.iat[row, column]))


def prepare_members(config, schema, values, pre_test_rows, season):
    """`(ForecastMembers, BacktestPlan or None, classical backtest forecasts)` of a series.

    The classical models are fitted on every row before the test split: the ETS, ARIMA and
    Theta baselines of every run, and members of --model auto, which also get a backtest
    plan and each classical member's backtest forecasts (refitted per fold).
    """
    targets = values[schema.targets].to_numpy(dtype="float64")
    auto = config.model == "auto"
    methods, notes = CLASSICAL_MEMBERS if auto else CLASSICAL_BASELINES, []
    # The log-scale members need every row above 0, the test split's too (it is scored).
    at_or_below_zero = first_at_or_below_zero(values[schema.targets]) if auto else None
    if at_or_below_zero:
        methods = [method for method in methods if method not in LOG_METHODS]
        notes.append(f"{' and '.join(LOG_METHODS)} left out: they run on the log of the "
                     f"target, and {at_or_below_zero}")
    plan = plan_backtest(pre_test_rows, len(values) - pre_test_rows, config.lookback,
                         config.horizon, season, config.auto_folds) if auto else None
    backtested = plan is not None and all(t in schema.input_columns for t in schema.targets)
    folds = len(plan.folds) if backtested else 0
    progress = classical_progress(methods, len(methods) * len(schema.targets) * (1 + folds))
    classical, fit_notes = fit_classical_members(targets, pre_test_rows, season,
                                                 schema.targets, methods, progress)
    # The backtest refits only the methods fitted here.
    progress.total -= (len(methods) - len(classical)) * len(schema.targets) * folds
    notes += fit_notes
    start = values[schema.input_columns].iloc[:HISTORY_START_ROWS].to_numpy(dtype="float64")
    members = ForecastMembers(classical, neural=AUTO_NEURAL_KIND if auto else None, notes=notes,
                              history_start=start.tolist())
    if not auto:
        return members, None, {}
    if plan is None:  # the kept candidate's line says why (`Selection.reason`)
        return members, None, {}
    if not backtested:
        members.notes.append("model auto: the classical members are left out, as a target is "
                             "not an input column (they forecast from the target's history)")
        return members, plan, {}
    forecasts, fold_notes = classical_backtest(plan, targets, season, schema.targets,
                                               list(classical), config.horizon, progress)
    members.notes += fold_notes
    return members, plan, forecasts


def pre_test_chunks(windows):
    """`(inputs, targets)` chunks of every window whose targets lie before the test split
    (`WindowGenerator.chunks`: a long series' windows are never in memory all at once)."""
    for split in ("train", "val"):
        yield from windows.chunks(split)


def model_forecast(model, members, scaler, schema, values, last_rows, lookback, horizon):
    """The run's forecast from the origins `last_rows`: the kept member or combination of
    --model auto, else the model's."""
    if members is not None and members.kept:
        forecast = kept_forecast(model, members, scaler, schema, values, last_rows, lookback,
                                 horizon)
    else:
        forecast = forecast_windows(model, scaler, schema, values, last_rows - lookback + 1,
                                    lookback)
    bad = np.argwhere(~np.isfinite(forecast))
    if bad.size:  # printed and written as inf before, without a word
        window, step, target = (int(k) for k in bad[0])
        raise DataError(
            f"the forecast of {schema.targets[target]!r} {plural(step + 1, 'step')} after row "
            f"{int(last_rows[window])} is {forecast[window, step, target]}: beyond float32's "
            "range, where the run's scaler.json or weights scale it (a run whose files were "
            "edited, or data far outside what it was trained on); expected finite forecasts")
    return forecast


def baseline_forecasts(members, ets_specs, targets, last_rows, horizon):
    """`{name: forecasts}` of the classical baselines: statsforecast's ETS, ARIMA and Theta
    (`members`), or the statsmodels ETS of a run written before them (`ets_specs`)."""
    if members is not None:
        return classical_forecasts(
            {name: members.classical[name] for name in CLASSICAL_BASELINES
             if name in members.classical}, targets, last_rows, horizon)
    if ets_specs is not None:
        return {"ets": smoothing_forecast(targets, last_rows, horizon, ets_specs)}
    return {}


# ---------------------------------------------------------------------------------------------
# Scoring


def score_windows(model, scaler, schema, values, starts, lookback, horizon, season,
                  ets_specs=None, members=None):
    """The run's forecasts from the windows starting at rows `starts`, scored beside the
    baselines (`metrics.forecast_scores`: naive, seasonal naive, and the classical ones of
    `baseline_forecasts`).

    Returns:
        `(metrics dict, model forecasts, actual values)`; the arrays are
        `[windows, horizon, n_targets]` in original units.
    """
    targets = values[schema.targets].to_numpy(dtype="float64")
    last_rows = starts + lookback - 1
    forecast = model_forecast(model, members, scaler, schema, values, last_rows, lookback,
                              horizon)
    extra = baseline_forecasts(members, ets_specs, targets, last_rows, horizon)
    metrics, actual = forecast_scores(forecast, targets, last_rows, horizon, season,
                                      schema.targets, extra_baselines=extra)
    return metrics, forecast, actual


def member_figures(model, members, scaler, schema, values, starts, lookback, horizon):
    """metrics.json's `auto`: the kept candidate, why, and every member's and candidate's
    backtest and test RMSE (original units, every target and step)."""
    selection = members.selection
    last_rows = starts + lookback - 1
    names = list(selection.member_rmse) or list(selection.kept)
    forecasts = member_forecasts(names, model, members, scaler, schema, values, last_rows,
                                 lookback, horizon)
    actual = values[schema.targets].to_numpy(dtype="float64")[
        last_rows[:, None] + np.arange(1, horizon + 1)]
    figures = {name: {"backtest_rmse": selection.member_rmse.get(name),
                      "test_rmse": rmse(forecasts[name], actual)} for name in names}
    candidates = {}
    for name, backtest in selection.candidate_rmse.items():
        kept = tuple(name.removeprefix("mean of ").split(" + "))
        candidates[name] = {"backtest_rmse": backtest,
                            "test_rmse": rmse(combine(forecasts, kept), actual)}
    return {
        "chosen": selection.name,
        "kept": list(selection.kept),
        "chosen_on": selection.reason(),
        "default": None if selection.default is None else candidate_name(selection.default),
        "switch_test": None if selection.switch is None else selection.switch.to_dict(),
        "left_out_of_default": list(selection.left_out),
        "pool_ratio": selection.ratio if selection.pooled else None,
        "members": figures,
        "candidates": candidates,
    }


def save_forecast_plot(path, time_values, actual, forecast, target, horizon, time_label="time"):
    """Actual test values of the first target against the 1-step (and last-step) forecasts.

    Args:
        path: the PNG file to write.
        time_values: the time stamps (or row numbers) of the forecast rows: the x axis.
        actual, forecast: `[rows, horizon, targets]` arrays in original units.
        target: the first target's name: the y axis.
        horizon: the steps forecast from each origin.
        time_label: the x axis's label (the time column's name, say).
    """
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(9, 4))
    axis.plot(time_values, actual[:, 0, 0], label="actual", color="black", linewidth=1.2)
    axis.plot(time_values, forecast[:, 0, 0], label="forecast, 1 step ahead")
    if 1 < horizon <= len(time_values):  # a test split shorter than one horizon has none
        shifted = np.full(len(time_values), np.nan)
        shifted[horizon - 1:] = forecast[: len(time_values) - horizon + 1, -1, 0]
        axis.plot(time_values, shifted, label=f"forecast, {horizon} steps ahead", alpha=0.8)
    axis.set_title(f"{target}: test split")
    axis.set_xlabel(time_label)
    axis.set_ylabel(target)
    axis.legend()
    figure.autofmt_xdate()
    figure.tight_layout()
    save_figure(figure, path)


# ---------------------------------------------------------------------------------------------
# Export


def checked_one_hot(tensor, schema, name):
    """`tensor` (`[batch, rows, input columns]`) behind a check, inside the graph, that each
    categorical column's block (`"column=category"`, in `schema.json`'s order) holds one 1 and
    0s elsewhere in every row: `predict` refuses a category not seen in training, and the
    SavedModel forecast from a block of zeros (or any numbers) without a word."""
    columns = schema.input_columns
    checks = []
    for column, categories in schema.categories.items():
        if column not in schema.features:
            continue
        indices = [columns.index(f"{column}={category}") for category in categories]
        block = tf.gather(tensor, indices, axis=-1)
        one_hot = tf.reduce_all((block == 0.0) | (block == 1.0)) & tf.reduce_all(
            tf.reduce_sum(block, axis=-1) == 1.0)
        checks.append(tf.debugging.assert_equal(one_hot, True, message=(
            # Names unquoted: TensorFlow prints a message's quotes escaped.
            f"{name} must hold the categorical column {column} one-hot in its "
            f"{len(indices)} columns {columns[indices[0]]} .. {columns[indices[-1]]} "
            f"(positions {indices[0]}..{indices[-1]}): one 1 and 0s elsewhere in every row, "
            "one of the categories seen in training")))
    if not checks:
        return tensor
    with tf.control_dependencies(checks):
        return tf.identity(tensor)


def finite_forecast(forecast):
    """`forecast` behind a check, inside the graph, that it is finite: as `predict` refuses one
    that is not (`model_forecast`), the SavedModel answered inf where the run's scaling takes
    a request beyond float32's range."""
    return tf.debugging.check_numerics(
        forecast, "forecast is not finite: beyond float32's range where the run's scaler.json "
        "or weights scale it (a run whose files were edited, or a window far outside what it "
        "was trained on)")


def export_saved_model(model, scaler, schema, lookback, path):
    """Writes a SavedModel whose `serving_default` forecasts in original units.

    `serving_default(window: float32[None, lookback, n_features]) -> {"forecast":
    float32[None, horizon, n_targets]}`; the window is scaled and the forecast unscaled inside
    the graph, with the training split's scaler. A window of another rank, step count or
    feature count, with a NaN or infinite value, or with a categorical column's block not
    one-hot (`checked_one_hot`), is refused inside the graph (`InvalidArgumentError` naming
    `window` and what was expected). Written to a temporary
    directory, then renamed.
    """
    path = Path(path)
    input_offset, input_scale = scaler.parameters(schema.input_columns)
    target_offset, target_scale = scaler.parameters(schema.targets)
    n_features = len(schema.input_columns)

    expected = f"float32[batch, {lookback}, {n_features}]"

    def serve(window):
        # The loaded signature does not check shapes itself: a wrong window would forecast.
        window = checked_input(window, "window", expected, 3, [
            (1, tf.debugging.assert_equal, lookback, f"exactly lookback={lookback} steps"),
            (2, tf.debugging.assert_equal, n_features,
             f"exactly n_features={n_features} features")])
        window = checked_one_hot(window, schema, "window")
        scaled = (window - input_offset) / input_scale
        forecast = model(scaled, training=False) * target_scale + target_offset
        return {"forecast": finite_forecast(forecast)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serving_default",
        serve,
        input_signature=[tf.TensorSpec([None, lookback, n_features], tf.float32, name="window")],
    )
    return write_export_archive(archive, path)


# The SavedModel's float32 may round each value by half its spacing: said where that is more
# than this share of the model's test RMSE.
FLOAT32_NOTE_SHARE = 0.1


def float32_precision_note(values, rmse):
    """A summary line where the SavedModel's float32 (its input and its forecast) rounds
    `values` by more than `FLOAT32_NOTE_SHARE` of the model's test `rmse`, else None: values
    far from 0 that vary little (a meter reading of 1.2e9 moving by hundreds) keep their
    precision in `predict`'s float64 but not in the export."""
    values = np.asarray(values, dtype="float64")
    largest = float(np.max(np.abs(values), initial=0.0))
    if not (largest > 0 and rmse is not None and np.isfinite(rmse)):
        return None
    if largest <= np.finfo(np.float32).max and np.array_equal(values.astype("float32"), values):
        return None  # float32 holds every value as it is (integers below 2**24, 0.5, ...)
    rounding = float(np.spacing(np.float32(min(largest, np.finfo(np.float32).max)))) / 2
    if rounding <= FLOAT32_NOTE_SHARE * rmse:
        return None
    against = ("while the model's test forecasts are exact (RMSE 0)" if rmse == 0 else
               f"more than a tenth of the model's test RMSE ({rmse:.4g})")
    return (f"saved_model/ reads and returns float32, which rounds values of {largest:.4g} by "
            f"up to {rounding:.3g}, {against}: its forecasts are coarser than `seqlab "
            "timeseries predict`'s (float64); subtract a constant offset from the series to "
            "serve it at full precision")


# How far outside the range of the rows before the test split (in spans of that range) a test
# forecast lies before the summary says the model diverged.
DIVERGED_SPANS = 10


def inputs_line(schema, config):
    """The summary's line of the columns the windows read, where they are more than the
    targets: a file of 5,000 numeric columns trained on all of them without a word."""
    columns = schema.input_columns
    chosen = ("--features" if config.features is not None else
              "every numeric column besides the time; --features chooses")
    return (f"inputs: {plural(len(columns), 'column')} ({listed(columns, COLUMNS_SHOWN)}): "
            f"{chosen}")


def divergence_note(forecast, history, targets, members=None):
    """A summary line where a test forecast lies more than `DIVERGED_SPANS` spans of the
    series' range outside it, else None: one outlying value can make a member diverge once it
    enters the member's window (a spike of 1e7 in a series of about 150 gave a linear member's
    forecasts of -4.7e9, and the mean of the pool followed), after a backtest it did not spoil.
    The range holds the test split's values too: a series that grows past its training values
    (1.08 ** t) is followed there, not diverged from.

    Args:
        forecast: the kept model's test forecasts `[rows, horizon, targets]`, original units.
        history: the targets' values before and in the test split `[rows, targets]`.
        targets: the target names.
        members: `metrics["auto"]["members"]` (each member's test RMSE), or None.
    """
    history = np.asarray(history, dtype="float64")
    if not history.size:
        return None
    low, high = np.nanmin(history, axis=0), np.nanmax(history, axis=0)
    # A constant history has no range: its size stands in.
    span = np.maximum(high - low, np.maximum(np.abs(low), np.abs(high)))
    distance = np.maximum(low - forecast, forecast - high) / np.where(span > 0, span, 1.0)
    if not np.nanmax(distance, initial=0.0) > DIVERGED_SPANS:
        return None
    row, step, column = np.unravel_index(np.nanargmax(distance), distance.shape)
    worst = ""
    if members:
        scored = {name: figures.get("test_rmse") for name, figures in members.items()
                  if isinstance(figures.get("test_rmse"), float)}
        if scored:
            name = max(scored, key=scored.get)
            worst = f"; the member with the largest test RMSE: {name} ({scored[name]:.4g})"
    return (f"the test forecasts of {targets[column]} reach {forecast[row, step, column]:.4g}, "
            f"far outside the series' values ({low[column]:.4g} to {high[column]:.4g}, the "
            f"test split's included): the model diverged (an outlying value in a member's window "
            f"can make it do so){worst}; check the data for outliers")


# The history signature's rows a request: at most this many, or 4 times the rows it must hold
# where that is more. Its classical members roll their state row by row (about 70 us a row on
# a 2-core AMD EPYC: 500,000 rows took 36 s), so without a bound a request of a few MB held a
# core for minutes.
MAX_HISTORY_ROWS = 100_000


def history_rows(members, lookback):
    """`(fewest, most)` rows a history request may hold: the rows the kept classical members
    were fitted on from the series' first row (a shorter history cannot start there: its
    forecast came back silently another), at least `lookback`; and the bound above."""
    fitted = [spec.first_row + spec.fit_rows for name in members.kept
              if name in members.classical for spec in members.classical[name]]
    fewest = max([lookback, *fitted])
    return fewest, max(MAX_HISTORY_ROWS, 4 * fewest)


def _start_tolerance(start):
    """How far a history's first rows may lie from the training data's `start` ([rows]
    [features]) and still be them: a millionth of each feature's largest magnitude."""
    return 1e-6 * np.maximum(np.max(np.abs(start), axis=0), 1e-30)


def _first_row_not_as_trained(inputs, members):
    """The first row (0-based) among the first `HISTORY_START_ROWS` of `inputs` (a frame of
    the input columns) that differs from the training data's (`members.history_start`), to a
    millionth of their magnitude as the SavedModel compares them; None where they agree or
    the run kept no start (no classical members, or saved before)."""
    if members is None or members.history_start is None:
        return None
    start = np.asarray(members.history_start, dtype="float64")
    rows = min(len(start), len(inputs))
    given = inputs.iloc[:rows].to_numpy(dtype="float64")
    # A NaN is not the same.
    same = (np.abs(given - start[:rows]) <= _start_tolerance(start)).all(axis=1)
    return None if same.all() else int(np.argmin(same))


def _starting_as_trained(history, start, expected):
    """`history` behind a check, in the graph, that each of its rows starts with the training
    data's first rows `start` ([rows][features]), to float32's precision and a millionth of
    their magnitude: the same number of rows shifted by a few (another phase of a season), or
    another series, was forecast without a word from a state the members never had."""
    start = np.asarray(start, dtype="float64")
    first = tf.constant(start, tf.float32)
    tolerance = tf.constant(_start_tolerance(start), tf.float32)
    # A history may hold fewer rows than were kept (at least the fitting rows, which on a
    # short series are under 24): those it holds are compared.
    rows = tf.minimum(tf.shape(history)[1], len(start))
    same = tf.reduce_all(tf.abs(history[:, :rows, :] - first[:rows]) <= tolerance)
    check = tf.debugging.Assert(same, [
        f"history must be {expected}: its first {len(start)} rows are not the training data's "
        "(a history starting at a later row, or another series?)"])
    with tf.control_dependencies([check]):
        return tf.identity(history)


def export_history_model(model, members, scaler, schema, lookback, horizon, path):
    """Writes a SavedModel whose `serving_default` forecasts with --model auto's kept
    candidate when it holds a classical member.

    `serving_default(history: float32[None, None, n_features]) -> {"forecast":
    float32[None, horizon, n_targets]}` in original units. A classical member rolls its state
    over the whole history with its fitted parameters, so `history` holds every row from the
    first row of the training data (as `train` read it) up to the forecast origin, at least
    `lookback` rows; a network or linear member reads its last `lookback` rows, scaled inside
    the graph. A history of another rank or feature count, with fewer or more rows than
    `history_rows` allows, or with a NaN or infinite value is refused inside the graph.
    """
    input_offset, input_scale = scaler.parameters(schema.input_columns)
    target_offset, target_scale = scaler.parameters(schema.targets)
    n_features = len(schema.input_columns)
    columns = [schema.input_columns.index(target) for target in schema.targets]
    fewest, most = history_rows(members, lookback)
    expected = (f"float32[batch, rows, {n_features}] with every row since the start of the "
                f"training data ({fewest} to {most} rows)")

    def serve(history):
        history = checked_input(history, "history", expected, 3, [
            (1, tf.debugging.assert_greater_equal, fewest,
             f"too few rows (the classical members were fitted on the first {fewest})"),
            (1, tf.debugging.assert_less_equal, most, "too many rows for one request"),
            (2, tf.debugging.assert_equal, n_features, f"exactly n_features={n_features}")])
        history = checked_one_hot(history, schema, "history")
        if members.history_start is not None:
            history = _starting_as_trained(history, members.history_start, expected)
        parts = []
        for name in members.kept:
            if name in members.classical:
                parts.append(tf.stack(
                    [forecast_from_history(spec, history[:, :, column], horizon)
                     for spec, column in zip(members.classical[name], columns)], axis=-1))
            else:
                member = model.linear if name == "linear" else model.neural
                window = (history[:, -lookback:, :] - input_offset) / input_scale
                parts.append(member(window, training=False) * target_scale + target_offset)
        return {"forecast": finite_forecast(tf.add_n(parts) / len(parts))}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serving_default",
        serve,
        input_signature=[tf.TensorSpec([None, None, n_features], tf.float32, name="history")],
    )
    return write_export_archive(archive, Path(path))


# ---------------------------------------------------------------------------------------------
# The task


@dataclasses.dataclass
class PreparedSeries:
    """What `train` works from: the series, how its columns are used, its windows, and the
    classical members fitted on the rows before the test split."""

    source: str
    schema: SeriesSchema
    series: object
    windows: WindowGenerator
    season: int
    season_source: str
    lookback: int
    lookback_source: str
    members: ForecastMembers
    notes: list
    backtest_folds: list
    plan: object = None  # --model auto's BacktestPlan (None without one)
    classical_backtest: dict = dataclasses.field(default_factory=dict)
    chosen_on: str | None = None  # how --model auto chose
    linear_left_out: str | None = None  # why auto has no linear member, if it has none
    ets_specs: list | None = None  # only runs written before the classical members had them


class TimeseriesPipeline(Pipeline):
    """Forecasting on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = CARD.name
    config_class = TimeseriesConfig
    model_class = (Forecaster, AutoForecaster)
    description = CARD.description
    examples = CARD.examples
    data_settings = staticmethod(CARD.data_settings)

    legacy_settings = {"split_targets": False, "normalization": "none"}
    model_files = ("schema.json",)  # the feature and target columns

    # --- many series: a run of `--id-column`, `--holdout`, a folder or an M4 set is the
    # panel pipeline's (pipelines/timeseries_panel.py); the actions hand it over.

    def train(self, config, overwrite=False, callbacks=()):
        if is_panel(config):
            return PANEL_PIPELINE.train(config, overwrite, callbacks)
        if config.model == "nbeats":
            raise UsageError("--model nbeats is the many-series network (with --id-column, "
                             "--holdout, a folder or an m4-* set); one series takes "
                             f"{', '.join(MODEL_KINDS)}")
        return super().train(config, overwrite, callbacks)

    def evaluate(self, run, data=None, output=None):
        if is_panel_run(run):
            return PANEL_PIPELINE.evaluate(run, data, output)
        return self._evaluate_one(run, data, output)

    def predict(self, run, data=None, output=None):
        if is_panel_run(run):
            return PANEL_PIPELINE.predict(run, data, output)
        return self._predict_one(run, data, output)

    def export(self, run, out=None, overwrite=False):
        if is_panel_run(run):
            return PANEL_PIPELINE.export(run, out, overwrite)
        return super().export(run, out, overwrite)

    def prepare(self, config, distribution):
        frame, source = load_table(config.data)
        refuse_long_table(config, frame, source)
        schema = infer_schema(config, frame, source)
        series = schema.prepare(frame, source)
        bounds = split_bounds(len(series.values), config.val_fraction, config.test_fraction)
        _, train_end = bounds["train"]
        test_start = bounds["test"][0]
        if config.season is not None and config.season > test_start:
            # Every test row is scored against a seasonal baseline, which needs a season of
            # history before it.
            raise DataError(
                f"--season {config.season} is longer than the {test_start} rows before the test "
                f"split (of {len(series.values)}): the seasonal baselines could not forecast its "
                f"first rows; expected --season of at most {test_start}, or a longer series",
                path=source,
            )
        if config.season is not None:
            season, season_source = config.season, "--season"
        else:
            season, season_source = choose_season(
                series.values[schema.targets[0]].iloc[:train_end],
                None if series.time is None else series.time.iloc[:train_end],
                schema.targets[0],
            )
        lookback, lookback_source = choose_lookback(config, season, train_end)
        if config.lookback is None:
            fill_in_setting(config, "lookback", lookback, lookback_source)
        windows = make_windows(
            config, series, schema, batch_size=distribution.global_batch_size(config.batch_size),
        )
        folds = backtest_folds(config, series, schema, windows.bounds)
        members, plan, classical = prepare_members(
            config, schema, series.values, windows.bounds["test"][0], season)
        notes = list(members.notes)
        if schema.time_column is None:
            notes += [f"column {name!r} holds {runs} runs of rows, one for each of its values: "
                      f"if each is a series, --id-column {name} forecasts them as many series "
                      "(read as one series, they follow one another)"
                      for name in schema.skipped_columns
                      if (runs := runs_of_series(frame[name]))]
        if epoch_steps(windows) is not None:
            notes.append(f"an epoch is {MAX_EPOCH_BATCHES} of the {training_batches(windows)} "
                         "batches of training windows, taken in turn (each pass reshuffled): "
                         "early stopping looks at the validation windows that often")
        limit = validation_limit(windows)
        if limit is not None:
            notes.append(f"each epoch's validation scores {limit:,} of the "
                         f"{len(windows.window_starts('val')):,} validation windows, evenly "
                         "spaced over the validation split (the same ones every epoch)")
        return PreparedSeries(source, schema, series, windows, season, season_source, lookback,
                              lookback_source, members, notes, folds, plan, classical)

    def least_parameters(self, config):
        kind = AUTO_NEURAL_KIND if config.model == "auto" else config.model
        if kind not in ("gru", "lstm", "rnn"):
            return None
        return (recurrent_parameters("simple_rnn" if kind == "rnn" else kind, 1, config.units,
                                     config.layers),
                f"--model {config.model} --units {config.units} --layers {config.layers}")

    def build_model(self, config, prepared):
        model = build_model(config, prepared.schema)
        prepared.linear_left_out = fit_linear_member(model, prepared.windows)
        if prepared.linear_left_out:
            prepared.notes.append(prepared.linear_left_out)
        return model

    def after_fit(self, config, prepared, model):
        if isinstance(model, AutoForecaster):
            self.select_members(config, prepared, model)

    def select_members(self, config, prepared, model):
        """--model auto: refits the linear member on every window before the test split,
        backtests the network and the linear member beside the classical ones and keeps the
        backtest's choice (`selection.select`: the mean of the pool unless a candidate is
        clearly better; `prepared.members.selection`)."""
        schema, windows, values = prepared.schema, prepared.windows, prepared.series.values
        members, plan = prepared.members, prepared.plan
        if not prepared.linear_left_out:
            model.fit_linear(pre_test_chunks(windows))
        # Without a backtest: the mean of the classical members, the log-scale ones left out
        # (they are ETS and ARIMA again; nothing would say they deserve a double weight).
        servable = prepared.classical_backtest if plan is not None else {
            name: None for name in members.classical
            if name not in LOG_METHODS and all(t in schema.input_columns
                                               for t in schema.targets)}
        if plan is None:
            prepared.chosen_on = choose_member(model, windows, prepared.linear_left_out)
            if servable:
                members.selection = Selection(tuple(servable), {}, {}, 0)
            return
        forecasts = dict(servable)
        gap = neural_backtest_gap(config, plan)
        if gap is not None:
            prepared.notes.append(f"model auto: the {model.kind} is left out, as {gap}")
        else:
            neural_config = dataclasses.replace(config, model=AUTO_NEURAL_KIND)
            forecasts[AUTO_NEURAL_KIND] = neural_backtest(
                lambda: build_model(neural_config, schema),
                backtest_windows(config, schema, values, plan), plan, schema,
                values, config.lookback,
                lambda network, windows: fit_quietly(
                    network, windows, config.epochs,
                    lambda monitor: self.callbacks(config, prepared, monitor),
                    f"model auto: the {AUTO_NEURAL_KIND} member on a backtest fold"))
        if not prepared.linear_left_out:
            forecasts["linear"] = linear_backtest(plan, windows.scaler, schema, values,
                                                  config.lookback, config.horizon)
        targets = values[schema.targets].to_numpy(dtype="float64")
        selection = select(forecasts, backtest_actual(targets, plan.origins, config.horizon),
                           alone_only=ALONE_ONLY)
        members.selection = selection
        scores = selection.member_rmse
        model.choice = ("linear" if scores.get("linear", np.inf)
                        <= scores.get(AUTO_NEURAL_KIND, np.inf) else "neural")
        prepared.chosen_on = f"backtest, {plan.describe()}"

    def datasets(self, config, prepared, batch_size):
        windows = prepared.windows
        return training_stream(windows)[0], validation_data(windows)

    def fit_options(self, config, prepared):
        steps = epoch_steps(prepared.windows)
        return {} if steps is None else {"steps_per_epoch": steps}

    def score(self, config, model, prepared):
        schema, series, windows = prepared.schema, prepared.series, prepared.windows
        members = prepared.members
        starts = windows.window_starts("test")
        metrics, forecast, actual = score_windows(
            model, windows.scaler, schema, series.values, starts, config.lookback,
            config.horizon, prepared.season, members=members,
        )
        # Kept for the plot, which the lifecycle asks for after scoring.
        prepared.test_forecast, prepared.test_actual = forecast, actual
        metrics["model_kind"] = model_label(config, model, members)
        if members.selection is not None:
            metrics["auto"] = member_figures(model, members, windows.scaler, schema,
                                             series.values, starts, config.lookback,
                                             config.horizon)
            if prepared.plan is not None:
                metrics["auto"]["backtest"] = prepared.plan.describe()
        if config.backtest > 1:
            metrics["backtest"] = self.backtest(config, prepared, metrics)
        notes = [
            float32_precision_note(series.values[schema.input_columns].to_numpy(),
                                   metrics["model"]["rmse"]),
            divergence_note(forecast, series.values[schema.targets].to_numpy(), schema.targets,
                            metrics.get("auto", {}).get("members")),
        ]
        prepared.notes += [note for note in notes if note and note not in prepared.notes]
        metrics.update(
            split="test",
            season_source=prepared.season_source,
            lookback=config.lookback,
            lookback_source=prepared.lookback_source,
            ets_forms=({name: spec.description for name, spec in
                        zip(schema.targets, members.classical["ets"])}
                       if "ets" in members.classical else None),
            classical_forms={method: {name: spec.description for name, spec in
                                      zip(schema.targets, specs)}
                             for method, specs in members.classical.items()},
            notes=prepared.notes,
            targets=schema.targets,
            data={
                "source": prepared.source,
                "rows": len(series.values),
                "split_rows": {split: b - a for split, (a, b) in windows.bounds.items()},
                "time_column": schema.time_column,
                "input_columns": schema.input_columns,
                "skipped_columns": schema.skipped_columns,
                "row_index_column": series.row_index,
                "fill": series.fill_report,
            },
        )
        return metrics

    def backtest(self, config, prepared, last_fold):
        """Retrains and scores at the earlier origins of `prepared.backtest_folds` (with
        --model auto, each fold chooses its members again on its own backtest).

        Returns `{"folds": [...], "mean": {...}}`, the last fold being the run's own test split.
        """
        schema = prepared.schema
        folds = []
        for end, windows in prepared.backtest_folds:
            fold_series = dataclasses.replace(prepared.series,
                                              values=prepared.series.values.iloc[:end])
            members, plan, classical = prepare_members(
                config, schema, fold_series.values, windows.bounds["test"][0], prepared.season)
            fold = dataclasses.replace(
                prepared, series=fold_series, windows=windows, members=members, plan=plan,
                classical_backtest=classical, notes=[], backtest_folds=[])
            model = build_model(config, schema)
            fold.linear_left_out = fit_linear_member(model, windows)
            fit_quietly(model, windows, config.epochs,
                        lambda monitor: self.callbacks(config, prepared, monitor),
                        f"--backtest: the network of the fold ending at row {end}")
            self.after_fit(config, fold, model)
            scores, _, _ = score_windows(
                model, windows.scaler, schema, fold_series.values,
                windows.window_starts("test"), config.lookback, config.horizon,
                prepared.season, members=members,
            )
            folds.append({**fold_summary(scores, end),
                          "model_kind": model_label(config, model, members)})
        folds.append({**fold_summary(last_fold, len(prepared.series.values)),
                      "model_kind": last_fold["model_kind"]})
        names = [k for k in folds[-1] if isinstance(folds[-1][k], float)]
        mean = {name: float(np.mean([fold[name] for fold in folds if name in fold]))
                for name in names}
        return {"folds": folds, "mean": mean}

    def artifacts(self, config, prepared):
        return {"schema": prepared.schema, "scaler": prepared.windows.scaler,
                "ets": None, "members": prepared.members}

    def write_artifacts(self, run, artifacts):
        run.write_json("schema.json", artifacts["schema"].to_dict())
        run.write_json("scaler.json", artifacts["scaler"].to_dict())
        run.write_json("members.json", artifacts["members"].to_dict())

    def read_artifacts(self, path, config):
        # Runs written before the classical members have no members.json: their ETS
        # baseline (statsmodels) is in ets.json, if its fit did not fail.
        ets_path, members_path = path / "ets.json", path / "members.json"
        schema = SeriesSchema.from_dict(read_json(path / "schema.json"))
        scaler = Scaler.from_dict(read_json(path / "scaler.json"))
        unscaled = [c for c in schema.input_columns if c not in scaler.columns]
        if unscaled:
            raise ValueError(f"{path / 'scaler.json'}: the field 'columns' must name every column "
                             f"of schema.json ({', '.join(schema.input_columns)}). Received: "
                             f"{scaler.columns!r}")
        return {
            "schema": schema,
            "scaler": scaler,
            "ets": ([SmoothingSpec.from_dict(spec) for spec in read_json(ets_path)]
                    if ets_path.is_file() else None),
            "members": (ForecastMembers.from_dict(read_json(members_path))
                        if members_path.is_file() else None),
        }

    def save_plots(self, run, config, prepared, model, metrics, history):
        starts = prepared.windows.window_starts("test")
        save_forecast_plot(
            run.path("plots", "forecast.png"),
            prepared.series.time_labels(starts + config.lookback),
            prepared.test_actual, prepared.test_forecast, prepared.schema.targets[0],
            config.horizon, time_label=prepared.schema.time_label,
        )

    def summary_lines(self, config, prepared, metrics):
        schema, series, members = prepared.schema, prepared.series, prepared.members
        auto = metrics.get("auto")
        return [
            f"{TASK_NAME}: {prepared.source}, test split, "
            f"{plural(metrics['windows'], 'forecast origin')}, "
            f"horizon {config.horizon}, target {', '.join(schema.targets)}",
            forecast_table(metrics, metrics["model_kind"]),
            *(describe_members(members, auto["members"]) if auto else []),
            *([f"  backtest: {prepared.plan.describe()}"] if auto and prepared.plan else []),
            *([backtest_table(metrics["backtest"])] if "backtest" in metrics else []),
            f"season {prepared.season}: {prepared.season_source}",
            f"lookback {config.lookback}: {prepared.lookback_source}",
            *([inputs_line(schema, config)] if schema.input_columns != schema.targets else []),
            *([stride_line(config.stride, prepared.windows)] if config.stride > 1 else []),
            *([f"classical models (statsforecast, fitted on the "
               f"{prepared.windows.bounds['test'][0]} rows before the test split"
               + (", or the last of them where the form says so"
                  if first_classical_row(members) else "")
               + ", state updated at each origin): "
               + "; ".join(f"{name}: {', '.join(forms.values())}"
                           for name, forms in metrics["classical_forms"].items())]
              if metrics["classical_forms"] else []),
            *prepared.notes,
            *([f"columns left out (not numbers, or empty): "
               f"{listed(schema.skipped_columns, COLUMNS_SHOWN)}"]
              if schema.skipped_columns else []),
            # What reading did: time stamps built from columns, values filled, rows dropped.
            *series.notes,
        ]

    def model_for_run(self, config, artifacts):
        return build_model(config, artifacts["schema"])

    def export_model(self, model, config, artifacts, path):
        schema, members = artifacts["schema"], artifacts.get("members")
        shape = f"{{'forecast': float32[None, {config.horizon}, {len(schema.targets)}]}}"
        columns = (f"(original units; inputs: {', '.join(schema.input_columns)}; "
                   f"targets: {', '.join(schema.targets)})")
        if members is not None and members.uses_history():
            export_history_model(model, members, artifacts["scaler"], schema, config.lookback,
                                 config.horizon, path)
            fewest, most = history_rows(members, config.lookback)
            return (f"serving_default(history: float32[None, None, "
                    f"{len(schema.input_columns)}]: every row since the start of the training "
                    f"data, {fewest} to {most} rows) -> {shape} {columns}")
        export_saved_model(model, artifacts["scaler"], schema, config.lookback, path)
        return (f"serving_default(window: float32[None, {config.lookback}, "
                f"{len(schema.input_columns)}]) -> {shape} {columns}")

    def _read_series(self, loaded, data, kept_only=False):
        """`(series, starts_as_trained)`: the series of `data` (default: the training data) as
        the run reads it, and whether its first rows are the training data's (which the
        classical members' state rolls from; `_first_row_not_as_trained`).

        Raises:
            DataError: a target value at or below 0 where the run's log-scale members would
                forecast it (`kept_only`: the kept candidate's; else every member's, which
                evaluate scores), or a series that ends before the first row the classical
                members were fitted from (a long series' members: `fitting_start`).
        """
        frame, source = load_table(data if data is not None else loaded.config.data)
        series = loaded.artifacts["schema"].prepare(frame, source)
        members = loaded.artifacts.get("members")
        used = () if members is None else (members.kept or ()) if kept_only else members.classical
        log_members = [name for name in used if name in LOG_METHODS]
        targets = series.values[loaded.artifacts["schema"].targets]
        at_or_below_zero = first_at_or_below_zero(targets) if log_members else None
        if at_or_below_zero:
            raise DataError(
                f"{at_or_below_zero}; this run's {' and '.join(log_members)} run on the log of "
                f"{at_or_below_zero.column} and need values above 0 (a run trained on data like "
                "this leaves them out)", path=series.source)
        first = first_classical_row(members)
        if len(series.values) <= first:
            raise DataError(
                f"the series has {len(series.values)} rows, and this run's classical members "
                f"were fitted from row {first} of its training data on: they read the series "
                f"from its first row, so it needs more than {first} rows", path=series.source)
        differs = None if data is None else _first_row_not_as_trained(
            series.values[loaded.artifacts["schema"].input_columns], members)
        # Seasonal naive reads the last season only: any file serves it.
        stateful = [name for name in (members.kept or ()) if name in members.classical
                    and name != "seasonal_naive"] if members is not None else []
        if differs is not None and stateful:
            they = "which rolls its" if len(stateful) == 1 else "which roll their"
            raise DataError(
                f"its row {differs + 1} (after the header, in time order) is not row "
                f"{differs + 1} of the training data: this run forecasts with "
                f"{' + '.join(stateful)}, {they} fitted state over the series from the "
                "training data's first row, so the file must hold every row since then (the "
                "training data with the new rows after it), as the exported SavedModel's "
                "history does", path=series.source)
        return series, differs is None

    def _evaluate_one(self, run, data=None, output=None):
        """Scores a trained run: on its test split, or on every window of another CSV.

        Args:
            run: the run directory.
            data: a CSV with the training data's columns; None re-scores the training data's
                test split (the figures of metrics.json). The classical members read it from
                its first row.
            output: a JSON file to write the figures to (optional).
        """
        loaded = self.load_run(run)
        config, schema = loaded.config, loaded.artifacts["schema"]
        scaler, members = loaded.artifacts["scaler"], loaded.artifacts.get("members")
        series, starts_as_trained = self._read_series(loaded, data)
        if data is None:
            windows = make_windows(config, series, schema, scaler=scaler)
            starts, split = windows.window_starts("test"), "test split"
        else:
            starts = every_window_start(len(series.values), config.lookback, config.horizon,
                                        series.source)
            split = "every window"
            # The classical members (and baselines) forecast from their first fitting row on.
            first = first_classical_row(members)
            if first > config.lookback - 1:  # the earliest windows end before it
                starts = starts[starts + config.lookback - 1 >= first]
                split = f"every window from row {first} (the classical members' first)"
                if not len(starts):
                    raise DataError(
                        f"no window of lookback + horizon = {config.lookback} + "
                        f"{config.horizon} rows ends after row {first}, where this run's "
                        f"classical members were fitted from: the series has "
                        f"{len(series.values)} rows", path=series.source)
        ets_specs, notes = loaded.artifacts["ets"], list(series.notes)
        if not starts_as_trained and members.classical:
            # The classical baselines would run from a state their fit never had.
            members = dataclasses.replace(members, classical={})
            ets_specs = None
            notes.append("the classical baselines (ETS, ARIMA, Theta) are left out: the file "
                         "does not start with the training data's rows, from which they roll "
                         "their fitted state")
        metrics, _, _ = score_windows(
            loaded.model, scaler, schema, series.values, starts, config.lookback,
            config.horizon,
            loaded.figure("season", kind=int, check=lambda season: season >= 1,
                          expected="a whole number of rows, at least 1"),
            ets_specs, members,
        )
        metrics.update(split=split, source=series.source, notes=notes)
        summary = [
            f"{TASK_NAME}: {series.source}, {split}, "
            f"{plural(metrics['windows'], 'forecast origin')}, horizon {config.horizon}",
            forecast_table(metrics, model_label(config, loaded.model, members)),
            *notes,
        ]
        return evaluation_result(summary, metrics, output)

    def _predict_one(self, run, data=None, output=None):
        """Forecasts the `horizon` rows after the end of the data (default: the training data)
        into a CSV (default: `<run>/forecast.csv`)."""
        loaded = self.load_run(run)
        config, schema = loaded.config, loaded.artifacts["schema"]
        series, _ = self._read_series(loaded, data, kept_only=True)
        start = every_window_start(len(series.values), config.lookback, 0, series.source)[-1:]
        forecast = model_forecast(
            loaded.model, loaded.artifacts.get("members"), loaded.artifacts["scaler"], schema,
            series.values, start + config.lookback - 1, config.lookback, config.horizon,
        )[0]
        table = pd.DataFrame(forecast, columns=schema.targets)
        times = future_time_labels(series.time, config.horizon)
        # A target may bear the time's name: "time", the label of stamps built from year,
        # month, ... columns (it failed with pandas' "cannot insert time, already exists").
        time_label = free_column_name(schema.time_label, schema.targets)
        step = free_column_name("step", [*schema.targets, time_label])
        table.insert(0, step, np.arange(1, config.horizon + 1))
        if times is not None:
            table.insert(1, time_label, times)
        path = Path(output) if output else loaded.file("forecast.csv")
        write_text_atomic(path, table.to_csv(index=False))
        summary = [
            f"{TASK_NAME}: forecast of the {config.horizon} rows after the end of "
            f"{series.source}",
            *series.notes,
            format_table(list(table.columns), table.astype(object).values.tolist()),
            f"written to {path}",
        ]
        return ActionResult(summary="\n".join(summary), path=path)


PIPELINE = TimeseriesPipeline()
TASK = PIPELINE.task()
# The actions as functions, for use from Python: `train(TimeseriesConfig(...))`.
train, evaluate, predict, export = TASK.train, TASK.evaluate, TASK.predict, TASK.export
