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
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from seqlab.data.errors import DataError
from seqlab.data.timeseries import (
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
from seqlab.models.ets import SmoothingSpec, fit_smoothing, smoothing_forecast
from seqlab.models.forecaster import AutoForecaster, Forecaster, LeastSquaresTooWide
from seqlab.models.serving import dynamic_shape
from seqlab.pipelines.common import (
    ActionResult,
    format_table,
    pyplot,
    read_json,
    write_export_archive,
    write_text_atomic,
)
from seqlab.pipelines.configs.timeseries import CARD, TASK_NAME, TimeseriesConfig
from seqlab.pipelines.lifecycle import Pipeline, evaluation_result
from seqlab.pipelines.settings import fill_in_setting
from seqlab.pipelines.metrics import backtest_table, fold_summary, forecast_scores, forecast_table

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


def fit_ets(targets, train_rows, season, names):
    """`(specs or None, notes)`: one ETS model per target, fitted on the training rows."""
    specs, notes = [], []
    for index, name in enumerate(names):
        spec, failures = fit_smoothing(targets[:train_rows, index], season)
        if spec is None:
            return None, [f"ETS baseline left out: no form could be fitted to {name} "
                          f"({'; '.join(failures) or 'too few rows'})"]
        specs.append(spec)
        notes += [f"ETS on {name}: {failure}" for failure in failures]
    return specs, notes


# ---------------------------------------------------------------------------------------------
# Model


# The neural member of `--model auto`.
AUTO_NEURAL_KIND = "gru"


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
    )
    model.build((None, config.lookback, len(features)))
    return model


def fit_linear_member(model, windows):
    """Fits an `AutoForecaster`'s linear member on the training windows.

    Returns:
        None, or why the member was left out (a window too wide for the least-squares fit:
        `choose_member` then keeps the neural one). Nothing happens for another model.
    """
    if not isinstance(model, AutoForecaster):
        return None
    try:
        model.fit_linear(windows.arrays("train"))
    except LeastSquaresTooWide as error:
        return (f"--model auto: no linear member, as its window holds {model.lookback} rows x "
                f"{model.n_features} inputs = {error.weights - 1} values, more than the "
                f"least-squares fit takes ({error.limit - 1}); the {model.kind} is kept")
    return None


def choose_member(model, windows, left_out=None):
    """Makes an `AutoForecaster` choose its member on the validation windows (the training
    ones when there is no validation split); returns which split decided (None for another
    model). `left_out`: `fit_linear_member`'s reason, if the linear member was left out."""
    if not isinstance(model, AutoForecaster):
        return None
    if left_out:
        model.choice = "neural"
        return "only member (no linear member)"
    split = "val" if len(windows.window_starts("val")) else "train"
    model.choose(windows.arrays(split))
    if split == "val":
        return "validation split"
    return "training split, as there is no validation split"


def model_label(config, model):
    """The model's name in tables: its kind, or "auto: <member kind>"."""
    if isinstance(model, AutoForecaster):
        return f"auto: {member_kind(model, model.choice or 'neural')}"
    return config.model


def member_kind(model, member):
    return "linear" if member == "linear" else model.kind


def member_report(model, scaler, schema, series, windows, lookback, horizon, decided_on):
    """What `--model auto` chose and both members' RMSE (original units, every target and
    step) on the validation and test splits."""
    targets = series.values[schema.targets].to_numpy(dtype="float64")
    report = {"chosen": member_kind(model, model.choice), "chosen_on": decided_on,
              "members": {}}
    members = ("neural",) if decided_on.startswith("only member") else ("neural", "linear")
    for member in members:
        figures = {}
        for split, key in (("val", "validation_rmse"), ("test", "test_rmse")):
            starts = windows.window_starts(split)
            if not len(starts):
                continue
            forecast = forecast_windows(getattr(model, member), scaler, schema, series.values,
                                        starts, lookback, direct=True)
            rows = starts[:, None] + lookback + np.arange(horizon)
            figures[key] = float(np.sqrt(np.mean((forecast - targets[rows]) ** 2)))
        report["members"][member_kind(model, member)] = figures
    return report


def describe_choice(report):
    """One summary line about `member_report`'s figures."""
    members, chosen = report["members"], report["chosen"]
    if len(members) == 1:
        return f"model auto: kept {chosen}, the {report['chosen_on']}"
    other = next(name for name in members if name != chosen)
    figures = [f"{label} RMSE {members[chosen][key]:.4g} vs {other} {members[other][key]:.4g}"
               for key, label in (("validation_rmse", "validation"), ("test_rmse", "test"))
               if key in members[chosen]]
    return (f"model auto: kept {chosen}, chosen on the {report['chosen_on']} "
            f"({'; '.join(figures)})")


# ---------------------------------------------------------------------------------------------
# Scoring


def forecast_windows(model, scaler, schema, values, starts, lookback, direct=False):
    """Model forecasts in original units for the windows starting at rows `starts`.

    Args:
        direct: call the model on chunks of windows instead of `model.predict` (for an auto
            model's members: each `predict` traces a function of its own, and Keras warns
            about retracing after a few).

    Returns:
        float64 array `[len(starts), horizon, n_targets]`.
    """
    inputs = scaler.transform(values[schema.input_columns].to_numpy(), schema.input_columns)
    windows = inputs[starts[:, None] + np.arange(lookback)].astype("float32")
    if direct:
        chunk = 4096
        scaled = np.concatenate([np.asarray(model(windows[i:i + chunk]))
                                 for i in range(0, len(windows), chunk)])
    else:
        scaled = model.predict(windows, verbose=0, batch_size=256)
    return scaler.inverse_transform(scaled, schema.targets)


def score_windows(model, scaler, schema, values, starts, lookback, horizon, season,
                  ets_specs=None):
    """The model's forecasts from the windows starting at rows `starts`, scored beside the
    baselines (`metrics.forecast_scores`; the ETS one when `ets_specs` are given).

    Returns:
        `(metrics dict, model forecasts, actual values)`; the arrays are
        `[windows, horizon, n_targets]` in original units.
    """
    targets = values[schema.targets].to_numpy(dtype="float64")
    forecast = forecast_windows(model, scaler, schema, values, starts, lookback)
    last_rows = starts + lookback - 1
    extra = {}
    if ets_specs is not None:
        extra["ets"] = smoothing_forecast(targets, last_rows, horizon, ets_specs)
    metrics, actual = forecast_scores(forecast, targets, last_rows, horizon, season,
                                      schema.targets, extra_baselines=extra)
    return metrics, forecast, actual


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
    if horizon > 1:
        shifted = np.full(len(time_values), np.nan)
        shifted[horizon - 1:] = forecast[: len(time_values) - horizon + 1, -1, 0]
        axis.plot(time_values, shifted, label=f"forecast, {horizon} steps ahead", alpha=0.8)
    axis.set_title(f"{target}: test split")
    axis.set_xlabel(time_label)
    axis.set_ylabel(target)
    axis.legend()
    figure.autofmt_xdate()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


# ---------------------------------------------------------------------------------------------
# Export


def export_saved_model(model, scaler, schema, lookback, path):
    """Writes a SavedModel whose `serving_default` forecasts in original units.

    `serving_default(window: float32[None, lookback, n_features]) -> {"forecast":
    float32[None, horizon, n_targets]}`; the window is scaled and the forecast unscaled inside
    the graph, with the training split's scaler. A window of another rank, step count or
    feature count, or with a NaN or infinite value, is refused inside the graph
    (`InvalidArgumentError` naming `window` and its expected shape). Written to a temporary
    directory, then renamed.
    """
    path = Path(path)
    input_offset, input_scale = scaler.parameters(schema.input_columns)
    target_offset, target_scale = scaler.parameters(schema.targets)
    n_features = len(schema.input_columns)

    expected = f"float32[batch, {lookback}, {n_features}]"

    def serve(window):
        # The loaded signature does not check shapes itself: a wrong window would forecast.
        shape = dynamic_shape(window)
        rank = tf.debugging.assert_equal(
            tf.size(shape), 3, message=f"window must be {expected} (rank 3)")
        with tf.control_dependencies([rank]):
            checks = [
                tf.debugging.assert_equal(
                    shape[1], lookback,
                    message=f"window must be {expected}: exactly lookback={lookback} steps"),
                tf.debugging.assert_equal(
                    shape[2], n_features,
                    message=f"window must be {expected}: exactly n_features={n_features} "
                    "features"),
            ]
        with tf.control_dependencies(checks):
            window = tf.debugging.check_numerics(
                window, f"window must hold finite values only ({expected})")
        scaled = (window - input_offset) / input_scale
        forecast = model(scaled, training=False) * target_scale + target_offset
        return {"forecast": forecast}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serving_default",
        serve,
        input_signature=[tf.TensorSpec([None, lookback, n_features], tf.float32, name="window")],
    )
    return write_export_archive(archive, path)


# ---------------------------------------------------------------------------------------------
# The task


@dataclasses.dataclass
class PreparedSeries:
    """What `train` works from: the series, how its columns are used, and its windows."""

    source: str
    schema: SeriesSchema
    series: object
    windows: WindowGenerator
    season: int
    season_source: str
    lookback: int
    lookback_source: str
    ets_specs: list | None
    notes: list
    backtest_folds: list
    chosen_on: str | None = None  # which split `--model auto` chose its member on
    linear_left_out: str | None = None  # why auto has no linear member, if it has none


class TimeseriesPipeline(Pipeline):
    """Forecasting on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = CARD.name
    config_class = TimeseriesConfig
    model_class = (Forecaster, AutoForecaster)
    description = CARD.description
    examples = CARD.examples

    legacy_settings = {"split_targets": False, "normalization": "none"}

    def prepare(self, config, distribution):
        frame, source = load_table(config.data)
        schema = infer_schema(config, frame, source)
        series = schema.prepare(frame, source)
        _, train_end = split_bounds(
            len(series.values), config.val_fraction, config.test_fraction)["train"]
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
        targets = series.values[schema.targets].to_numpy(dtype="float64")
        ets_specs, notes = fit_ets(targets, train_end, season, schema.targets)
        return PreparedSeries(source, schema, series, windows, season, season_source, lookback,
                              lookback_source, ets_specs, notes, folds)

    def build_model(self, config, prepared):
        model = build_model(config, prepared.schema)
        prepared.linear_left_out = fit_linear_member(model, prepared.windows)
        if prepared.linear_left_out:
            prepared.notes.append(prepared.linear_left_out)
        return model

    def after_fit(self, config, prepared, model):
        prepared.chosen_on = choose_member(model, prepared.windows, prepared.linear_left_out)

    def datasets(self, config, prepared, batch_size):
        windows = prepared.windows
        has_validation = len(windows.window_starts("val")) > 0
        return windows.train, windows.val if has_validation else None

    def score(self, config, model, prepared):
        schema, series, windows = prepared.schema, prepared.series, prepared.windows
        metrics, forecast, actual = score_windows(
            model, windows.scaler, schema, series.values, windows.window_starts("test"),
            config.lookback, config.horizon, prepared.season, prepared.ets_specs,
        )
        # Kept for the plot, which the lifecycle asks for after scoring.
        prepared.test_forecast, prepared.test_actual = forecast, actual
        metrics["model_kind"] = model_label(config, model)
        if isinstance(model, AutoForecaster):
            metrics["auto"] = member_report(model, windows.scaler, schema, series, windows,
                                            config.lookback, config.horizon, prepared.chosen_on)
        if config.backtest > 1:
            metrics["backtest"] = self.backtest(config, prepared, metrics)
        metrics.update(
            split="test",
            season_source=prepared.season_source,
            lookback=config.lookback,
            lookback_source=prepared.lookback_source,
            ets_forms=(None if prepared.ets_specs is None
                       else {name: spec.form for name, spec in
                             zip(schema.targets, prepared.ets_specs)}),
            notes=prepared.notes,
            targets=schema.targets,
            data={
                "source": prepared.source,
                "rows": len(series.values),
                "split_rows": {split: b - a for split, (a, b) in windows.bounds.items()},
                "time_column": schema.time_column,
                "input_columns": schema.input_columns,
                "skipped_columns": schema.skipped_columns,
                "fill": series.fill_report,
            },
        )
        return metrics

    def backtest(self, config, prepared, last_fold):
        """Retrains and scores at the earlier origins of `prepared.backtest_folds`.

        Returns `{"folds": [...], "mean": {...}}`, the last fold being the run's own test split.
        """
        schema = prepared.schema
        folds = []
        for end, windows in prepared.backtest_folds:
            fold_values = prepared.series.values.iloc[:end]
            train_end = windows.bounds["train"][1]
            targets = fold_values[schema.targets].to_numpy(dtype="float64")
            specs, _ = fit_ets(targets, train_end, prepared.season, schema.targets)
            model = build_model(config, schema)
            left_out = fit_linear_member(model, windows)
            has_validation = len(windows.window_starts("val")) > 0
            model.fit(
                windows.train, validation_data=windows.val if has_validation else None,
                epochs=config.epochs, verbose=0, shuffle=False,
                callbacks=self.callbacks(config, prepared,
                                         "val_loss" if has_validation else "loss"),
            )
            choose_member(model, windows, left_out)
            fold, _, _ = score_windows(
                model, windows.scaler, schema, fold_values, windows.window_starts("test"),
                config.lookback, config.horizon, prepared.season, specs,
            )
            folds.append({**fold_summary(fold, end), "model_kind": model_label(config, model)})
        folds.append({**fold_summary(last_fold, len(prepared.series.values)),
                      "model_kind": last_fold["model_kind"]})
        names = [k for k in folds[-1] if isinstance(folds[-1][k], float)]
        mean = {name: float(np.mean([fold[name] for fold in folds if name in fold]))
                for name in names}
        return {"folds": folds, "mean": mean}

    def artifacts(self, config, prepared):
        return {"schema": prepared.schema, "scaler": prepared.windows.scaler,
                "ets": prepared.ets_specs}

    def write_artifacts(self, run, artifacts):
        run.write_json("schema.json", artifacts["schema"].to_dict())
        run.write_json("scaler.json", artifacts["scaler"].to_dict())
        if artifacts["ets"] is not None:
            run.write_json("ets.json", [spec.to_dict() for spec in artifacts["ets"]])

    def read_artifacts(self, path, config):
        # Runs of seqlab 0.1.0, and runs whose ETS fit failed, have no ets.json.
        ets_path = path / "ets.json"
        return {
            "schema": SeriesSchema.from_dict(read_json(path / "schema.json")),
            "scaler": Scaler.from_dict(read_json(path / "scaler.json")),
            "ets": ([SmoothingSpec.from_dict(spec) for spec in read_json(ets_path)]
                    if ets_path.is_file() else None),
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
        schema, series = prepared.schema, prepared.series
        return [
            f"{TASK_NAME}: {prepared.source}, test split, {metrics['windows']} forecast origins, "
            f"horizon {config.horizon}, target {', '.join(schema.targets)}",
            forecast_table(metrics, metrics["model_kind"]),
            *([describe_choice(metrics["auto"])] if "auto" in metrics else []),
            *([backtest_table(metrics["backtest"])] if "backtest" in metrics else []),
            f"season {prepared.season}: {prepared.season_source}",
            f"lookback {config.lookback}: {prepared.lookback_source}",
            *([f"ETS baseline: {form} (on {name}; fitted on the training rows by AICc, state "
               "updated at each origin)" for name, form in metrics["ets_forms"].items()]
              if metrics["ets_forms"] else []),
            *prepared.notes,
            *([f"non-numeric columns left out: {', '.join(schema.skipped_columns)}"]
              if schema.skipped_columns else []),
            # What reading did: time stamps built from columns, values filled, rows dropped.
            *series.notes,
        ]

    def model_for_run(self, config, artifacts):
        return build_model(config, artifacts["schema"])

    def export_model(self, model, config, artifacts, path):
        schema = artifacts["schema"]
        export_saved_model(model, artifacts["scaler"], schema, config.lookback, path)
        return (
            f"serving_default(window: float32[None, {config.lookback}, "
            f"{len(schema.input_columns)}]) -> "
            f"{{'forecast': float32[None, {config.horizon}, {len(schema.targets)}]}} "
            f"(original units; inputs: {', '.join(schema.input_columns)}; "
            f"targets: {', '.join(schema.targets)})"
        )

    def _read_series(self, loaded, data):
        frame, source = load_table(data if data is not None else loaded.config.data)
        return loaded.artifacts["schema"].prepare(frame, source)

    def evaluate(self, run, data=None, output=None):
        """Scores a trained run: on its test split, or on every window of another CSV.

        Args:
            run: the run directory.
            data: a CSV with the training data's columns; None re-scores the training data's
                test split (the figures of metrics.json).
            output: a JSON file to write the figures to (optional).
        """
        loaded = self.load_run(run)
        config, schema, scaler = loaded.config, loaded.artifacts["schema"], loaded.artifacts["scaler"]
        series = self._read_series(loaded, data)
        if data is None:
            windows = make_windows(config, series, schema, scaler=scaler)
            starts, split = windows.window_starts("test"), "test split"
        else:
            starts = every_window_start(len(series.values), config.lookback, config.horizon,
                                        series.source)
            split = "every window"
        metrics, _, _ = score_windows(
            loaded.model, scaler, schema, series.values, starts, config.lookback,
            config.horizon, loaded.metrics["season"], loaded.artifacts["ets"],
        )
        metrics.update(split=split, source=series.source, notes=series.notes)
        summary = [
            f"{TASK_NAME}: {series.source}, {split}, {metrics['windows']} forecast origins, "
            f"horizon {config.horizon}",
            forecast_table(metrics, model_label(config, loaded.model)),
            *series.notes,
        ]
        return evaluation_result(summary, metrics, output)

    def predict(self, run, data=None, output=None):
        """Forecasts the `horizon` rows after the end of the data (default: the training data)
        into a CSV (default: `<run>/forecast.csv`)."""
        loaded = self.load_run(run)
        config, schema = loaded.config, loaded.artifacts["schema"]
        series = self._read_series(loaded, data)
        start = every_window_start(len(series.values), config.lookback, 0, series.source)[-1:]
        forecast = forecast_windows(
            loaded.model, loaded.artifacts["scaler"], schema, series.values, start,
            config.lookback,
        )[0]
        table = pd.DataFrame(forecast, columns=schema.targets)
        table.insert(0, "step", np.arange(1, config.horizon + 1))
        times = future_time_labels(series.time, config.horizon)
        if times is not None:
            table.insert(1, schema.time_label, times)
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
