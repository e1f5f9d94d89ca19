"""Time-series forecasting: windows of past rows in, the next `horizon` rows of the targets out.

`train` reads a CSV (or the yearly sunspots embedded in statsmodels), splits it in time order,
scales it on the training rows, fits a recurrent or Transformer model built from seqlab's layers
and scores it on the test split in original units beside the naive (last value) and
seasonal-naive forecasts. `evaluate`, `predict` and `export` work from the run directory.

The run directory holds, besides the common files (pipelines/common.py): `schema.json` (how the
CSV's columns become model inputs), `scaler.json`, `plots/forecast.png`, `plots/loss.png`, and
`saved_model/` with `serving_default(window: float32[None, lookback, n_features]) ->
{"forecast": float32[None, horizon, n_targets]}` in original units (scaling inside the graph).
"""

import dataclasses
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from seqlab.data.timeseries import (
    FILL_METHODS,
    SCALER_METHODS,
    SUNSPOTS_SOURCE,
    SUNSPOTS_TIME_COLUMN,
    Scaler,
    SeriesSchema,
    WindowGenerator,
    estimate_season,
    every_window_start,
    future_time_labels,
    load_sunspots,
    read_csv,
)
from seqlab.models.forecaster import KINDS as MODEL_KINDS
from seqlab.models.forecaster import Forecaster
from seqlab.models.serving import dynamic_shape
from seqlab.pipelines.common import (
    ActionResult,
    TrainConfig,
    check_at_least,
    check_rate,
    check_split_fractions,
    format_table,
    option,
    pyplot,
    read_json,
    write_export_archive,
    write_text_atomic,
)
from seqlab.pipelines.lifecycle import Pipeline, evaluation_result
from seqlab.pipelines.metrics import forecast_scores, forecast_table

TASK_NAME = "timeseries"


@dataclasses.dataclass
class TimeseriesConfig(TrainConfig):
    """Every setting of a forecasting run; the defaults suit the embedded yearly sunspots."""

    data: str | None = option(
        None, "CSV file to forecast (default: yearly sunspots 1700-2008 from statsmodels)"
    )
    epochs: int = option(200, "maximum number of epochs (early stopping usually ends sooner)")
    batch_size: int = option(32, "windows per batch")
    time_column: str | None = option(
        None, "time column (dates or numbers); default: the first column if it holds dates"
    )
    target: list[str] | None = option(
        None, "column(s) to forecast (default: the only numeric column)"
    )
    features: list[str] | None = option(
        None, "input columns (default: every numeric column besides time)"
    )
    categorical: list[str] = option([], "columns to one-hot encode as inputs")
    fill: str | None = option(
        None, "repair missing or non-numeric values (default: refuse them)", FILL_METHODS
    )
    lookback: int = option(24, "past rows the model sees per forecast")
    horizon: int = option(1, "future rows to forecast")
    stride: int = option(1, "rows between the starts of training windows")
    val_fraction: float = option(0.15, "share of rows for validation (after training rows)")
    test_fraction: float = option(0.15, "share of rows for the test split (the last rows)")
    scaler: str = option("standard", "scaling fitted on training rows", SCALER_METHODS)
    model: str = option("lstm", "model kind", MODEL_KINDS)
    units: int = option(32, "units per recurrent layer (transformer: model width)")
    layers: int = option(1, "stacked recurrent or Transformer layers")
    dropout: float = option(0.0, "dropout rate of the layers' inputs")
    clipnorm: float | None = option(1.0, "gradient norm clipping of Adam")
    learning_rate: float = option(1e-3, "Adam learning rate")
    patience: int = option(20, "early-stopping patience in epochs (best weights restored)")
    season: int | None = option(
        None, "season of the seasonal-naive baseline (default: estimated from training data)"
    )
    num_heads: int = option(4, "transformer: attention heads")
    ff_dim: int = option(64, "transformer: feed-forward width")

    def __post_init__(self):
        super().__post_init__()
        check_at_least(self, 1, "lookback", "horizon", "stride", "units", "layers", "patience",
                       "num_heads", "ff_dim", "season")
        check_rate(self, "dropout")
        check_split_fractions(self)


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
        source=source,
    )


def make_windows(config, series, schema, scaler=None, batch_size=None):
    """The `WindowGenerator` of a prepared series with the config's settings.

    `batch_size` overrides the config's (a distributed run batches globally).
    """
    return WindowGenerator(
        series.values,
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


# ---------------------------------------------------------------------------------------------
# Model


def build_model(config, n_features, n_targets):
    """The compiled `Forecaster` of a config (in scaled units)."""
    model = Forecaster(
        lookback=config.lookback, n_features=n_features, horizon=config.horizon,
        n_targets=n_targets, kind=config.model, units=config.units, layers=config.layers,
        dropout=config.dropout, num_heads=config.num_heads, ff_dim=config.ff_dim,
        seed=config.seed,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(config.learning_rate, clipnorm=config.clipnorm),
        loss="mse",
        metrics=["mae"],
    )
    model.build((None, config.lookback, n_features))
    return model


# ---------------------------------------------------------------------------------------------
# Scoring


def forecast_windows(model, scaler, schema, values, starts, lookback):
    """Model forecasts in original units for the windows starting at rows `starts`.

    Returns:
        float64 array `[len(starts), horizon, n_targets]`.
    """
    inputs = scaler.transform(values[schema.input_columns].to_numpy(), schema.input_columns)
    windows = inputs[starts[:, None] + np.arange(lookback)].astype("float32")
    scaled = model.predict(windows, verbose=0, batch_size=256)
    return scaler.inverse_transform(scaled, schema.targets)


def score_windows(model, scaler, schema, values, starts, lookback, horizon, season):
    """The model's forecasts from the windows starting at rows `starts`, scored beside the
    baselines (`metrics.forecast_scores`).

    Returns:
        `(metrics dict, model forecasts, actual values)`; the arrays are
        `[windows, horizon, n_targets]` in original units.
    """
    targets = values[schema.targets].to_numpy(dtype="float64")
    forecast = forecast_windows(model, scaler, schema, values, starts, lookback)
    last_rows = starts + lookback - 1
    metrics, actual = forecast_scores(forecast, targets, last_rows, horizon, season,
                                      schema.targets)
    return metrics, forecast, actual


def save_forecast_plot(path, time_values, actual, forecast, target, horizon):
    """Actual test values of the first target against the 1-step (and last-step) forecasts."""
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(9, 4))
    axis.plot(time_values, actual[:, 0, 0], label="actual", color="black", linewidth=1.2)
    axis.plot(time_values, forecast[:, 0, 0], label="forecast, 1 step ahead")
    if horizon > 1:
        shifted = np.full(len(time_values), np.nan)
        shifted[horizon - 1:] = forecast[: len(time_values) - horizon + 1, -1, 0]
        axis.plot(time_values, shifted, label=f"forecast, {horizon} steps ahead", alpha=0.8)
    axis.set_title(f"{target}: test split")
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


class TimeseriesPipeline(Pipeline):
    """Forecasting on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = TASK_NAME
    config_class = TimeseriesConfig
    model_class = Forecaster
    description = (
        "Forecast the next --horizon rows of one or more numeric columns from the last "
        "--lookback rows, with an LSTM, GRU, SimpleRNN or Transformer built from seqlab's "
        "layers. Scored on the test split (the last rows) in original units beside the naive "
        "(last value) and seasonal-naive forecasts. Without --data it uses the yearly sunspot "
        "numbers 1700-2008 shipped with statsmodels."
    )
    examples = {
        "train": [
            "seqlab timeseries train",
            "seqlab timeseries train --data temps.csv --time-column Date --target Temp "
            "--lookback 30 --out runs/temps",
            "seqlab timeseries train --data sales.csv --target sales --features sales price "
            "--categorical weekday --fill interpolate --horizon 7 --model gru",
            "seqlab timeseries train --config settings.toml --epochs 50",
        ],
        "evaluate": [
            "seqlab timeseries evaluate --run runs/temps",
            "seqlab timeseries evaluate --run runs/temps --data temps-1991.csv --output eval.json",
        ],
        "predict": [
            "seqlab timeseries predict --run runs/temps",
            "seqlab timeseries predict --run runs/temps --data latest.csv --output forecast.csv",
        ],
        "export": [
            "seqlab timeseries export --run runs/temps --out serving/temps/1",
        ],
    }

    def prepare(self, config, distribution):
        frame, source = load_table(config.data)
        schema = infer_schema(config, frame, source)
        series = schema.prepare(frame, source)
        windows = make_windows(
            config, series, schema,
            batch_size=distribution.global_batch_size(config.batch_size),
        )
        train_start, train_end = windows.bounds["train"]
        if config.season is not None:
            season, season_source = config.season, "--season"
        else:
            season = estimate_season(series.values[schema.targets[0]].iloc[train_start:train_end])
            season_source = (
                f"estimated from the autocorrelation of {schema.targets[0]} (train split)"
            )
        return PreparedSeries(source, schema, series, windows, season, season_source)

    def build_model(self, config, prepared):
        return build_model(
            config, len(prepared.schema.input_columns), len(prepared.schema.targets)
        )

    def datasets(self, config, prepared, batch_size):
        windows = prepared.windows
        has_validation = len(windows.window_starts("val")) > 0
        return windows.train, windows.val if has_validation else None

    def score(self, config, model, prepared):
        schema, series, windows = prepared.schema, prepared.series, prepared.windows
        metrics, forecast, actual = score_windows(
            model, windows.scaler, schema, series.values, windows.window_starts("test"),
            config.lookback, config.horizon, prepared.season,
        )
        # Kept for the plot, which the lifecycle asks for after scoring.
        prepared.test_forecast, prepared.test_actual = forecast, actual
        metrics.update(
            split="test",
            season_source=prepared.season_source,
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

    def artifacts(self, config, prepared):
        return {"schema": prepared.schema, "scaler": prepared.windows.scaler}

    def write_artifacts(self, run, artifacts):
        run.write_json("schema.json", artifacts["schema"].to_dict())
        run.write_json("scaler.json", artifacts["scaler"].to_dict())

    def read_artifacts(self, path, config):
        return {
            "schema": SeriesSchema.from_dict(read_json(path / "schema.json")),
            "scaler": Scaler.from_dict(read_json(path / "scaler.json")),
        }

    def save_plots(self, run, config, prepared, model, metrics, history):
        starts = prepared.windows.window_starts("test")
        save_forecast_plot(
            run.path("plots", "forecast.png"),
            prepared.series.time_labels(starts + config.lookback),
            prepared.test_actual, prepared.test_forecast, prepared.schema.targets[0],
            config.horizon,
        )

    def summary_lines(self, config, prepared, metrics):
        schema, series = prepared.schema, prepared.series
        return [
            f"{TASK_NAME}: {prepared.source}, test split, {metrics['windows']} windows, "
            f"horizon {config.horizon}, target {', '.join(schema.targets)}",
            forecast_table(metrics, config.model),
            f"season {prepared.season}: {prepared.season_source}",
            *([f"non-numeric columns left out: {', '.join(schema.skipped_columns)}"]
              if schema.skipped_columns else []),
            *([f"filled with {config.fill}: {series.fill_report['filled_values']}"]
              if series.fill_report else []),
        ]

    def model_for_run(self, config, artifacts):
        schema = artifacts["schema"]
        return build_model(config, len(schema.input_columns), len(schema.targets))

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
            config.horizon, loaded.metrics["season"],
        )
        metrics.update(split=split, source=series.source)
        summary = [
            f"{TASK_NAME}: {series.source}, {split}, {metrics['windows']} windows, "
            f"horizon {config.horizon}",
            forecast_table(metrics, config.model),
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
            table.insert(1, schema.time_column, times)
        path = Path(output) if output else loaded.file("forecast.csv")
        write_text_atomic(path, table.to_csv(index=False))
        summary = [
            f"{TASK_NAME}: forecast of the {config.horizon} rows after the end of "
            f"{series.source}",
            format_table(list(table.columns), table.astype(object).values.tolist()),
            f"written to {path}",
        ]
        return ActionResult(summary="\n".join(summary), path=path)


PIPELINE = TimeseriesPipeline()
TASK = PIPELINE.task()
# The actions as functions, for use from Python: `train(TimeseriesConfig(...))`.
train, evaluate, predict, export = TASK.train, TASK.evaluate, TASK.predict, TASK.export
