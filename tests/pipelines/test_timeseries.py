"""Tests of pipelines/timeseries.py on tiny synthetic series (tiny models, few epochs)."""

import dataclasses
import json
import math
import re
import shutil
from types import SimpleNamespace

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from seqlab import cli
from seqlab.data.errors import DataError
from seqlab.data.timeseries import Scaler, SeriesSchema, future_times
from seqlab.models.baselines import seasonal_naive_rows
from seqlab.models.forecasting import metrics as forecasting_metrics
from seqlab.pipelines.common import AtomicBackupAndRestore, UsageError
from seqlab.pipelines import timeseries as timeseries_pipeline
from seqlab.pipelines.distribute import Distribution
from seqlab.pipelines.metrics import forecast_scores, forecast_table
from seqlab.pipelines.timeseries import (
    MAX_HISTORY_ROWS,
    TimeseriesConfig,
    build_model,
    float32_precision_note,
    evaluate,
    export,
    predict,
    train,
)


def write_series(path, n_rows=240, seed=0):
    """A daily series with a 12-day cycle, a related numeric column and a weekday name."""
    rng = np.random.default_rng(seed)
    steps = np.arange(n_rows)
    frame = pd.DataFrame(
        {
            "date": pd.date_range("2021-01-01", periods=n_rows, freq="D").strftime("%Y-%m-%d"),
            "demand": 10 + 3 * np.sin(2 * np.pi * steps / 12) + 0.1 * rng.normal(size=n_rows),
            "price": np.cos(2 * np.pi * steps / 12),
            "weekday": pd.date_range("2021-01-01", periods=n_rows, freq="D").day_name(),
        }
    )
    frame.to_csv(path, index=False)
    return path


def tiny_config(data, out, **overrides):
    """Tiny settings; a GRU alone unless `model` says otherwise (--model auto's own tests
    ask for it: its members are tested there, the network's windows and scaling here)."""
    settings = dict(
        data=str(data), out=str(out), target=["demand"], lookback=12, horizon=2, units=8,
        epochs=3, batch_size=32, learning_rate=0.01, model="gru",
    )
    if overrides.get("model") == "linear":  # one dense layer: it refuses --units
        del settings["units"]
    settings.update(overrides)
    return TimeseriesConfig(**settings)


# A GRU run (240 rows, 3 epochs, no --stride) shared by every test that takes `trained`: they
# read it and must not change it (a test that edits a run copies it first).
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("timeseries")
    data = write_series(folder / "demand.csv")
    result = train(tiny_config(data, folder / "run"))
    return data, result


@pytest.fixture(scope="module")
def trained_auto(tmp_path_factory):
    folder = tmp_path_factory.mktemp("timeseries_auto")
    data = write_series(folder / "demand.csv")
    result = train(tiny_config(data, folder / "run", model="auto"))
    return data, result


def test_train_writes_a_complete_run_directory(trained):
    _, result = trained
    run = result.path
    for name in ("config.json", "metrics.json", "history.csv", "model.keras", "schema.json",
                 "scaler.json", "members.json", "plots/forecast.png", "plots/loss.png",
                 "saved_model/saved_model.pb"):
        assert (run / name).is_file(), name
    assert not (run / "checkpoints").exists()
    assert not run.with_name(run.name + ".partial").exists()
    config = json.loads((run / "config.json").read_text())
    assert config["settings"]["seed"] == 42 and config["settings"]["lookback"] == 12
    assert config["versions"]["keras"] == keras.__version__
    assert len(pd.read_csv(run / "history.csv")) == 3
    assert json.loads((run / "schema.json").read_text())["time_column"] == "date"


def test_metrics_compare_the_model_with_every_baseline(trained):
    _, result = trained
    metrics = json.loads((result.path / "metrics.json").read_text())
    assert metrics["model"] == pytest.approx(result.metrics["model"])
    assert metrics["season"] == 12 and "estimated" in metrics["season_source"]
    assert metrics["data"]["input_columns"] == ["demand", "price"]
    assert metrics["data"]["skipped_columns"] == ["weekday"]  # not numeric: left out, reported
    baselines = ("naive", "seasonal_naive", "ets", "arima", "theta")
    for name in ("model", *baselines):
        assert metrics[name]["rmse"] >= metrics[name]["mae"] > 0
        assert len(metrics["per_step"][name]["rmse"]) == 2
    best = min(metrics[name]["rmse"] for name in baselines)
    assert metrics[metrics["best_baseline"]]["rmse"] == best
    assert metrics["rmse_ratio_to_best_baseline"] == pytest.approx(metrics["model"]["rmse"] / best)
    # The test split is the last 15 % of 240 rows: 36 target rows, 36 - 2 + 1 origins (each
    # forecasting 2 rows of the split).
    assert metrics["windows"] == 35
    assert metrics["ets_forms"]["demand"].endswith("A)")  # an additive season of 12
    assert "RMSE / best baseline" in result.summary and "seasonal naive (season 12)" in (
        result.summary
    )
    # The columns the windows read, beside the target, are said (5,000 were used silently).
    assert ("inputs: 2 columns (demand, price): every numeric column besides the time; "
            "--features chooses") in result.summary.splitlines()


def test_seasonal_naive_repeats_the_value_one_season_back():
    rows = seasonal_naive_rows(np.array([20]), horizon=5, season=3)
    # Forecasting rows 21..25 from row 20: same phase three rows earlier, observed.
    np.testing.assert_array_equal(rows, [[18, 19, 20, 18, 19]])


def test_saved_model_forecasts_in_original_units(trained):
    _, result = trained
    run = result.path
    model = keras.saving.load_model(run / "model.keras")
    scaler = Scaler.from_dict(json.loads((run / "scaler.json").read_text()))
    schema = SeriesSchema.from_dict(json.loads((run / "schema.json").read_text()))
    windows = np.random.default_rng(1).normal(10, 3, size=(5, 12, 2)).astype("float32")
    scaled = scaler.transform(windows, schema.input_columns).astype("float32")
    expected = scaler.inverse_transform(model.predict(scaled, verbose=0), schema.targets)

    serving = tf.saved_model.load(str(run / "saved_model")).signatures["serving_default"]
    _, inputs = serving.structured_input_signature
    assert list(inputs) == ["window"] and inputs["window"].shape.as_list() == [None, 12, 2]
    forecast = serving(window=tf.constant(windows))["forecast"]
    assert forecast.dtype == tf.float32 and forecast.shape == (5, 2, 1)
    np.testing.assert_allclose(forecast.numpy(), expected, rtol=1e-5, atol=1e-4)


def test_the_saved_model_refuses_a_categorical_block_that_is_not_one_hot(tmp_path):
    # The client one-hot encodes a categorical column: a block of zeros (an unknown category,
    # which predict refuses) or of any numbers was forecast from without a word.
    from seqlab.models import Forecaster

    schema = SeriesSchema(time_column=None, targets=["y"], features=["y", "kind"],
                          categories={"kind": ["hi", "lo", "mid"]})
    assert schema.input_columns == ["y", "kind=hi", "kind=lo", "kind=mid"]
    scaler = Scaler("standard", schema.input_columns, [5.0, 0.0, 0.0, 0.0], [2.0, 1, 1, 1])
    model = Forecaster(lookback=3, n_features=4, kind="linear")
    model.build()
    timeseries_pipeline.export_saved_model(model, scaler, schema, 3, tmp_path / "sm")
    serve = tf.saved_model.load(str(tmp_path / "sm")).signatures["serving_default"]
    window = np.zeros((2, 3, 4), "float32")
    window[:, :, 0] = 5.0
    window[:, :, 2] = 1.0  # every row "lo"
    assert serve(window=tf.constant(window))["forecast"].shape == (2, 1, 1)
    for block in ([0, 0, 0], [0, 1, 1], [7, 7, 7], [0, 0.5, 0.5]):
        bad = window.copy()
        bad[1, 2, 1:] = block
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"window must hold the categorical column kind one-hot in "
                                 r"its 3 columns kind=hi .. kind=mid \(positions 1..3\)"):
            serve(window=tf.constant(bad))


def test_a_forecast_beyond_float32_is_refused_not_printed_as_inf(trained, tmp_path):
    # A scaler.json edited to a tiny scale (still within its checks) gave forecasts of inf,
    # printed and written without a word.
    _, result = trained
    run = tmp_path / "edited"
    shutil.copytree(result.path, run)
    shutil.rmtree(run / "export", ignore_errors=True)
    scaler = json.loads((run / "scaler.json").read_text())
    scaler["scale"] = [1e-30] * len(scaler["scale"])
    (run / "scaler.json").write_text(json.dumps(scaler))
    for action in (lambda: predict(run, output=tmp_path / "f.csv"), lambda: evaluate(run)):
        with pytest.raises(DataError, match=r"the forecast of 'demand' 1 step after row \d+ "
                                            r"is -?inf: beyond float32's range"):
            action()
    assert not (tmp_path / "f.csv").exists()
    # The SavedModel answered inf all the same: refused in the graph.
    assert export(run, out=tmp_path / "served").path.is_dir()
    serve = tf.saved_model.load(str(tmp_path / "served")).signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"forecast is not finite: beyond "
                                                             r"float32's range"):
        serve(window=tf.constant(np.full((1, 12, 2), 50.0, "float32")))


def test_export_writes_the_saved_model_elsewhere(trained, tmp_path):
    _, result = trained
    exported = export(result.path, out=tmp_path / "serving" / "1")
    assert (exported.path / "saved_model.pb").is_file()
    assert "float32[None, 12, 2]" in exported.summary


def test_evaluate_reproduces_the_test_metrics_and_scores_other_files(trained, tmp_path):
    data, result = trained
    again = evaluate(result.path)
    assert again.metrics["model"]["rmse"] == pytest.approx(result.metrics["model"]["rmse"],
                                                           rel=1e-5)
    other = write_series(tmp_path / "other.csv", n_rows=40, seed=3)
    scored = evaluate(result.path, data=other, output=tmp_path / "eval.json")
    assert scored.metrics["windows"] == 40 - 12 - 2 + 1
    assert json.loads((tmp_path / "eval.json").read_text())["split"] == "every window"


def test_predict_forecasts_the_dates_after_the_data(trained, tmp_path):
    data, result = trained
    forecast = predict(result.path, output=tmp_path / "forecast.csv")
    table = pd.read_csv(tmp_path / "forecast.csv")
    assert list(table.columns) == ["step", "date", "demand"]
    # 240 days from 2021-01-01 end on 2021-08-28.
    assert table["date"].tolist() == ["2021-08-29", "2021-08-30"]
    assert np.all(np.abs(table["demand"] - 10) < 10)
    assert "2021-08-29" in forecast.summary


def test_a_row_index_written_by_to_csv_is_left_out_in_train_and_predict(trained, tmp_path):
    # pandas' to_csv() writes its row index first, under an empty header: it made the target
    # ambiguous ("cannot tell which column to forecast among Unnamed: 0, ...") and hid the date
    # column after it; with --target, it was an input and the dates a skipped column.
    data, result = trained
    indexed = tmp_path / "indexed.csv"
    pd.read_csv(data).to_csv(indexed)
    note = ("column 'Unnamed: 0' (an empty header; 0 to 239, the row numbers) is the file's "
            "row index, as DataFrame.to_csv() writes it: left out")
    forecast = predict(result.path, data=indexed, output=tmp_path / "forecast.csv")
    assert note in forecast.summary
    assert pd.read_csv(forecast.path).equals(
        pd.read_csv(predict(result.path, output=tmp_path / "plain.csv").path))
    pd.read_csv(data)[["date", "demand"]].to_csv(indexed)
    trained_here = train(tiny_config(indexed, tmp_path / "run", target=None, model="linear"))
    assert note in trained_here.summary
    metrics = json.loads((trained_here.path / "metrics.json").read_text())
    assert metrics["data"]["time_column"] == "date"
    assert metrics["data"]["input_columns"] == ["demand"]
    assert metrics["data"]["row_index_column"] == "Unnamed: 0"


def test_a_time_column_called_step_keeps_its_name_and_the_forecasts_count_is_renamed(tmp_path):
    # predict's CSV adds a `step` column; the data's own (here its time column) keeps its
    # name, and the added one takes an underscore (it crashed: "cannot insert step").
    frame = pd.DataFrame({"step": np.arange(60) * 5, "demand": 10 + np.sin(np.arange(60))})
    frame.to_csv(tmp_path / "steps.csv", index=False)
    result = train(tiny_config(tmp_path / "steps.csv", tmp_path / "run", time_column=["step"],
                               model="linear"))
    table = pd.read_csv(predict(result.path, output=tmp_path / "forecast.csv").path)
    assert list(table.columns) == ["step_", "step", "demand"]
    assert table["step_"].tolist() == [1, 2] and table["step"].tolist() == [300, 305]


def test_a_target_named_time_beside_stamps_from_year_month_columns_keeps_its_name(tmp_path):
    # Stamps built from year, month, ... columns are labelled "time": a target of that name
    # failed in predict with pandas' "cannot insert time, already exists".
    stamps = pd.date_range("2021-01-01", periods=60, freq="h")
    frame = pd.DataFrame({"year": stamps.year, "month": stamps.month, "day": stamps.day,
                          "hour": stamps.hour, "time": 10 + np.sin(np.arange(60))})
    frame.to_csv(tmp_path / "hours.csv", index=False)
    result = train(tiny_config(tmp_path / "hours.csv", tmp_path / "run", model="linear",
                               target=["time"]))
    table = pd.read_csv(predict(result.path, output=tmp_path / "forecast.csv").path)
    assert list(table.columns) == ["step", "time_", "time"]
    assert table["time_"].tolist() == ["2021-01-03 12:00:00", "2021-01-03 13:00:00"]


def test_predict_and_evaluate_never_write_over_the_data_or_the_runs_files(trained, tmp_path,
                                                                          capsys):
    # `--output` naming the training data replaced it with the forecast; naming metrics.json
    # broke the run. Both are refused before anything is computed, from Python and the CLI.
    data, result = trained
    files = {path: path.read_bytes() for path in (data, result.path / "metrics.json")}
    for output in files:
        with pytest.raises(UsageError, match="would overwrite"):
            predict(result.path, output=output)
        assert cli.main(["timeseries", "evaluate", "--run", str(result.path),
                         "--output", str(output)]) == 2
        assert "would overwrite" in capsys.readouterr().err
    assert {path: path.read_bytes() for path in files} == files
    other = write_series(tmp_path / "other.csv", n_rows=40, seed=3)
    with pytest.raises(UsageError, match="would overwrite the data"):
        predict(result.path, data=other, output=other)
    assert predict(result.path, output=result.path / "next.csv").path.is_file()


def test_train_refuses_data_inside_its_own_run_directory(trained, tmp_path):
    # --overwrite would have deleted it with the old run; a .partial would carry it away.
    data, result = trained
    for folder in (result.path, tmp_path / "next.partial"):
        folder.mkdir(exist_ok=True)
        inside = folder / "copy.csv"
        shutil.copy(data, inside)
        out = folder.with_name(folder.name.replace(".partial", ""))
        with pytest.raises(UsageError, match=r"--data .*copy\.csv is inside .*, the run "
                                             r"directory that train writes"):
            train(tiny_config(inside, out), overwrite=True)
        assert inside.read_bytes() == data.read_bytes()
        inside.unlink()


def test_predict_refuses_data_shorter_than_the_lookback(trained, tmp_path):
    _, result = trained
    short = write_series(tmp_path / "short.csv", n_rows=5)
    with pytest.raises(DataError, match=r"short\.csv: the series is too short: a forecast needs "
                                        r"the last lookback = 12 rows, and the data has 5"):
        predict(result.path, data=short)


def test_future_times_continue_months_and_numbers():
    months = pd.Series(pd.to_datetime(["2020-01", "2020-02", "2020-03"]))
    assert list(future_times(months, 2)) == list(pd.to_datetime(["2020-04-01", "2020-05-01"]))
    years = pd.Series([1998.0, 1999.0, 2000.0])
    assert list(future_times(years, 2)) == [2001, 2002]


def test_future_times_keep_the_calendar_across_a_gap():
    # One month or one holiday missing: pandas infers no frequency, and the most common step
    # as a fixed span drifted (2020-03-03 after 31 days; business days into the weekend).
    months = pd.Series(pd.date_range("2015-01-01", periods=60, freq="MS").delete(30))
    assert list(future_times(months, 3)) == list(pd.date_range("2020-01-01", periods=3,
                                                               freq="MS"))
    days = pd.Series(pd.bdate_range("2024-01-02", periods=81).delete(40))
    assert [stamp.day_name() for stamp in future_times(days, 6)] == [
        "Wednesday", "Thursday", "Friday", "Monday", "Tuesday", "Wednesday"]
    month_ends = pd.Series(pd.date_range("2015-01-31", periods=40, freq="ME").delete(10))
    assert list(future_times(month_ends, 2)) == list(pd.to_datetime(["2018-05-31",
                                                                     "2018-06-30"]))
    # Irregular stamps keep their most common step.
    irregular = pd.Series(pd.to_datetime(["2020-01-01", "2020-01-03", "2020-01-05",
                                          "2020-01-06", "2020-01-08", "2020-01-20"]))
    assert list(future_times(irregular, 1)) == list(pd.to_datetime(["2020-01-22"]))


def test_resume_after_an_interruption_finishes_the_same_number_of_epochs(tmp_path, monkeypatch):
    # A backup after every epoch (not only when it is worth its time, which depends on how
    # fast this machine is), so that the run resumes after the second epoch.
    monkeypatch.setattr(AtomicBackupAndRestore, "COST_RATIO", 0)
    data = write_series(tmp_path / "demand.csv", n_rows=120)
    config = tiny_config(data, tmp_path / "run", epochs=4, lookback=6, horizon=1)

    class InterruptAfterSecondEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        train(config, callbacks=[InterruptAfterSecondEpoch()])
    partial = tmp_path / "run.partial"
    assert (partial / "checkpoints").is_dir() and not (tmp_path / "run").exists()
    assert len(pd.read_csv(partial / "history.csv")) == 2

    class CountEpochs(keras.callbacks.Callback):
        epochs = []
        optimizer_steps = []

        def on_train_begin(self, logs=None):
            self.optimizer_steps.append(int(self.model.optimizer.iterations.numpy()))

        def on_epoch_begin(self, epoch, logs=None):
            self.epochs.append(epoch)

        def on_train_end(self, logs=None):
            self.optimizer_steps.append(int(self.model.optimizer.iterations.numpy()))

    result = train(config, callbacks=[CountEpochs()])
    assert CountEpochs.epochs == [2, 3]  # only the unfinished epochs run again
    # The optimizer's state came back too: its step count went on from two epochs' worth.
    at_resume, at_end = CountEpochs.optimizer_steps
    assert at_resume > 0 and at_end == 2 * at_resume
    history = pd.read_csv(result.path / "history.csv")
    assert history["epoch"].tolist() == [1, 2, 3, 4]
    assert result.metrics["epochs_run"] == 4
    with pytest.raises(UsageError, match="already holds a finished run"):
        train(config)


def test_same_seed_gives_the_same_metrics(tmp_path):
    data = write_series(tmp_path / "demand.csv", n_rows=100)
    # Two targets, a one-hot input and dropout: every source of randomness and every column kind.
    config = tiny_config(data, tmp_path / "a", epochs=2, lookback=6, horizon=1, model="gru",
                         dropout=0.1, target=["demand", "price"], categorical=["weekday"])
    first = train(config).metrics
    second = train(dataclasses.replace(config, out=str(tmp_path / "b"))).metrics
    assert first["model"] == second["model"]
    assert first["per_target"] == second["per_target"]
    assert set(first["per_target"]) == {"demand", "price"}
    assert len(first["data"]["input_columns"]) == 2 + 7


def test_a_column_of_runs_left_out_of_a_series_without_time_stamps_is_pointed_at(tmp_path):
    """No time stamps tell a long table of series without them from one series with a column
    of periods: read as one series, the summary says how to read it as many."""
    rows = [(f"s{i}", float(10 * i + t)) for i in range(3) for t in range(40)]
    pd.DataFrame(rows, columns=["item", "sales"]).to_csv(tmp_path / "runs.csv", index=False)
    config = tiny_config(str(tmp_path / "runs.csv"), tmp_path / "a", model="linear",
                         target=["sales"])
    notes = timeseries_pipeline.PIPELINE.prepare(config, Distribution()).notes
    assert ("column 'item' holds 3 runs of rows, one for each of its values: if each is a "
            "series, --id-column item forecasts them as many series") in " ".join(notes)


def test_a_long_series_trains_in_epochs_of_a_bounded_number_of_batches(tmp_path, monkeypatch):
    # A series with more training batches than MAX_EPOCH_BATCHES (2 here: 240 rows at batch 8
    # have 20) trains on an endless stream of its windows, cut into epochs of that many
    # batches: every window once per pass, each pass reshuffled; the same seed, the same run.
    monkeypatch.setattr(timeseries_pipeline, "MAX_EPOCH_BATCHES", 2)
    data = write_series(tmp_path / "demand.csv")
    config = tiny_config(data, tmp_path / "a", batch_size=8, epochs=4, lookback=6, horizon=1,
                         target=["demand"], features=["demand"])
    prepared = timeseries_pipeline.PIPELINE.prepare(config, Distribution())
    windows = prepared.windows
    batches = timeseries_pipeline.training_batches(windows)
    assert batches == math.ceil(len(windows.window_starts("train")) / 8) > 2
    stream, steps = timeseries_pipeline.training_stream(windows)
    assert steps == 2
    seen = [targets.numpy().ravel() for _, targets in stream.take(2 * batches)]
    expected = np.sort(windows.arrays("train")[1].ravel())
    first, second = np.concatenate(seen[:batches]), np.concatenate(seen[batches:])
    np.testing.assert_array_equal(np.sort(first), expected)  # one pass: every window once
    np.testing.assert_array_equal(np.sort(second), expected)
    assert not np.array_equal(first, second)  # reshuffled

    class Steps(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            steps_seen.append(self.params["steps"])

    steps_seen = []
    result = train(config, callbacks=[Steps()])
    assert steps_seen == [2] and result.metrics["epochs_run"] == 4
    assert f"an epoch is 2 of the {batches} batches of training windows" in result.summary
    again = train(dataclasses.replace(config, out=str(tmp_path / "b"))).metrics
    assert again["model"] == result.metrics["model"]
    # A series within the bound trains on every window each epoch.
    monkeypatch.setattr(timeseries_pipeline, "MAX_EPOCH_BATCHES", batches)
    assert timeseries_pipeline.training_stream(windows)[1] is None


def test_a_long_series_validates_on_a_bounded_number_of_evenly_spaced_windows(tmp_path,
                                                                            monkeypatch):
    # 240 rows: 36 validation windows (horizon 1). With MAX_EPOCH_BATCHES 2 at batch 8, each
    # epoch's validation scores 16 of them, spread from the first to the last, the same 16
    # every epoch.
    monkeypatch.setattr(timeseries_pipeline, "MAX_EPOCH_BATCHES", 2)
    data = write_series(tmp_path / "demand.csv")
    config = tiny_config(data, tmp_path / "run", batch_size=8, epochs=3, lookback=6, horizon=1,
                         target=["demand"], features=["demand"])
    windows = timeseries_pipeline.PIPELINE.prepare(config, Distribution()).windows
    every = windows.arrays("val")[1].ravel()
    assert len(every) == 36 and timeseries_pipeline.validation_limit(windows) == 16
    validation = timeseries_pipeline.validation_data(windows)
    seen = [np.concatenate([t.numpy().ravel() for _, t in validation]) for _ in range(2)]
    np.testing.assert_array_equal(seen[0], seen[1])
    # Evenly spaced positions 0, 2.33, 4.67 .. 35, rounded: the first and the last window.
    positions = np.linspace(0, 35, 16).round().astype(int)
    np.testing.assert_array_equal(seen[0], every[positions])
    assert positions[-1] == 35 and len(set(positions)) == 16

    given = []

    def spy(windows):
        dataset = validation_data(windows)
        given.append(sum(len(t) for _, t in dataset))
        return dataset

    validation_data = timeseries_pipeline.validation_data
    monkeypatch.setattr(timeseries_pipeline, "validation_data", spy)
    result = train(config)
    assert given == [16]  # what the run's fit validates on
    assert "each epoch's validation scores 16 of the 36 validation windows" in result.summary
    assert result.metrics["windows"] == len(windows.window_starts("test"))  # the test: all
    # Within the bound: every validation window.
    monkeypatch.setattr(timeseries_pipeline, "MAX_EPOCH_BATCHES", 5)
    assert timeseries_pipeline.validation_limit(windows) is None
    assert sum(len(t) for _, t in timeseries_pipeline.validation_data(windows)) == 36


def test_series_too_short_for_a_window_is_a_data_error(tmp_path):
    data = write_series(tmp_path / "demand.csv", n_rows=18)
    with pytest.raises(DataError, match=r"the series is too short: the train split has 13 rows, "
                                        r"but one window needs lookback \+ horizon = 12 \+ 2 = 14 "
                                        r"rows"):
        train(tiny_config(data, tmp_path / "run"))
    assert not (tmp_path / "run.partial").exists()


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn", "transformer"])
def test_every_model_kind_maps_windows_to_forecasts_and_saves(kind, tmp_path):
    config = TimeseriesConfig(model=kind, lookback=5, horizon=3, units=8, layers=2, num_heads=2,
                              ff_dim=8)
    model = build_model(config, SimpleNamespace(input_columns=["a", "b"], targets=["a", "b"]))
    assert model.compute_output_shape((None, 5, 2)) == (None, 3, 2)
    ours = {"lstm": "LSTM", "gru": "GRU", "rnn": "SimpleRNN",
            "transformer": "TransformerEncoderLayer"}[kind]
    layer = next(layer for layer in model.layers if type(layer).__name__ == ours)
    assert type(layer).__module__.startswith("seqlab.layers.")  # seqlab's layers, not keras's
    assert model.optimizer.clipnorm == 1.0
    windows = np.random.default_rng(0).normal(size=(4, 5, 2)).astype("float32")
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", compile=False)
    np.testing.assert_allclose(loaded.predict(windows, verbose=0),
                               model.predict(windows, verbose=0), atol=1e-6)


def test_several_batches_per_call_train_the_same_weights_as_one():
    """The forecaster runs `STEPS_PER_EXECUTION` batches per call of Keras's step (fewer calls,
    the same batches in the same order): its weights after three epochs are those of one batch
    per call. Tolerance 1e-5: the same operations; only the graph around them differs."""
    from seqlab.pipelines.timeseries import STEPS_PER_EXECUTION

    config = TimeseriesConfig(model="gru", lookback=6, horizon=1, units=4, learning_rate=0.01)
    schema = SimpleNamespace(input_columns=["y"], targets=["y"])
    rng = np.random.default_rng(0)
    windows = rng.normal(size=(100, 6, 1)).astype("float32")  # 4 batches of 32: the last short
    data = tf.data.Dataset.from_tensor_slices((windows, windows[:, -1:, :1])).batch(32)
    weights = []
    for steps in (STEPS_PER_EXECUTION, 1):
        keras.utils.set_random_seed(0)
        model = build_model(config, schema)
        assert model.steps_per_execution == STEPS_PER_EXECUTION
        model.steps_per_execution = steps
        model.fit(data, epochs=3, verbose=0, shuffle=False)
        weights.append(model.get_weights())
    assert STEPS_PER_EXECUTION > 4
    for several, one in zip(*weights):
        np.testing.assert_allclose(several, one, atol=1e-5)


# --- figures checked by hand ---------------------------------------------------------------------


def write_counting_series(path, n_rows):
    """demand = 0, 1, 2, ... (each value names its row), in the trained run's columns."""
    dates = pd.date_range("2022-01-01", periods=n_rows, freq="D")
    pd.DataFrame({
        "date": dates.strftime("%Y-%m-%d"),
        "demand": np.arange(n_rows, dtype="float64"),
        "price": np.cos(2 * np.pi * np.arange(n_rows) / 12),
        "weekday": dates.day_name(),
    }).to_csv(path, index=False)
    return path


@pytest.fixture
def naive_model(monkeypatch):
    """Replaces the loaded model's `predict` by the naive forecast (the window's last demand,
    which is input column 0) and records the windows that reach it."""
    seen = []

    def predict(self, windows, **kwargs):
        seen.append(np.array(windows))
        return np.repeat(np.asarray(windows)[:, -1:, :1], self.horizon, axis=1)

    monkeypatch.setattr(keras.Model, "predict", predict)
    return seen


def test_predict_forecasts_from_the_last_lookback_rows(trained, tmp_path, naive_model):
    _, result = trained
    data = write_counting_series(tmp_path / "counting.csv", n_rows=30)
    predict(result.path, data=data, output=tmp_path / "forecast.csv")
    table = pd.read_csv(tmp_path / "forecast.csv")
    # The naive model repeats the last row it sees: row 29 of 0..29, at both steps.
    np.testing.assert_allclose(table["demand"], [29.0, 29.0], atol=1e-4)
    [window] = naive_model
    scaler = Scaler.from_dict(json.loads((result.path / "scaler.json").read_text()))
    rows = np.arange(18, 30)  # the last lookback = 12 rows
    np.testing.assert_allclose(window[0, :, 0], scaler.transform(rows[:, None], ["demand"])[:, 0],
                               atol=1e-5)


def test_evaluate_scores_a_naive_model_exactly_as_the_naive_baseline(trained, tmp_path,
                                                                     naive_model):
    _, result = trained
    data = write_counting_series(tmp_path / "counting.csv", n_rows=40)
    metrics = evaluate(result.path, data=data).metrics
    # Counting series, horizon 2: the naive errors are 1 and 2 at every origin; the
    # seasonal-naive (season 12) errors are 12.
    assert metrics["windows"] == 40 - 12 - 2 + 1
    assert metrics["naive"]["rmse"] == pytest.approx(np.sqrt(2.5))
    assert metrics["naive"]["mae"] == pytest.approx(1.5)
    assert metrics["seasonal_naive"]["rmse"] == pytest.approx(12.0)
    assert metrics["seasonal_naive"]["mae"] == pytest.approx(12.0)
    # The model sees the same origins as the baselines: the same figures.
    assert metrics["model"]["rmse"] == pytest.approx(np.sqrt(2.5), abs=1e-4)
    assert metrics["model"]["mae"] == pytest.approx(1.5, abs=1e-4)
    assert metrics["best_baseline"] == "naive"
    assert metrics["rmse_ratio_to_best_baseline"] == pytest.approx(1.0, abs=1e-4)


def test_forecast_scores_by_hand():
    targets = np.arange(10, dtype="float64")[:, None]  # row r holds r
    last_rows = np.array([3, 5, 0])
    # Origins 3 and 5 forecast rows 4, 5 and 6, 7; origin 0 has no season of history
    # (season 2, step 1 needs row -1), so its (absurd) forecast is not scored.
    forecast = np.array([[4.0, 6.0], [6.0, 3.0], [100.0, 100.0]])[..., None]
    metrics, actual = forecast_scores(forecast, targets, last_rows, horizon=2, season=2,
                                      target_names=["y"])
    np.testing.assert_array_equal(actual[..., 0], [[4, 5], [6, 7], [1, 2]])
    assert metrics["windows"] == 2
    # model errors 0, 1, 0, -4: step 1 errors 0, 0; step 2 errors 1, -4
    assert metrics["model"] == pytest.approx({"rmse": np.sqrt(17 / 4), "mae": 5 / 4})
    assert metrics["per_step"]["model"]["rmse"] == pytest.approx([0.0, np.sqrt(17 / 2)])
    assert metrics["per_step"]["model"]["mae"] == pytest.approx([0.0, 5 / 2])
    # naive: rows 3 and 5 repeated, errors -1, -2, -1, -2
    assert metrics["naive"] == pytest.approx({"rmse": np.sqrt(10 / 4), "mae": 6 / 4})
    assert metrics["per_step"]["naive"]["rmse"] == pytest.approx([1.0, 2.0])
    # seasonal naive: rows 2, 3 and 4, 5, errors all -2
    assert metrics["seasonal_naive"] == pytest.approx({"rmse": 2.0, "mae": 2.0})
    assert metrics["per_step"]["seasonal_naive"]["mae"] == pytest.approx([2.0, 2.0])
    assert metrics["best_baseline"] == "naive"
    assert metrics["rmse_ratio_to_best_baseline"] == pytest.approx(np.sqrt(17 / 10))
    assert metrics["per_target"]["y"]["model"] == pytest.approx(metrics["model"])


def test_on_a_constant_series_the_ratio_to_an_exact_baseline_is_not_a_figure():
    targets = np.full((30, 1), 5.0)
    last_rows = np.arange(19, 29)
    exact = np.full((10, 1, 1), 5.0)
    metrics, _ = forecast_scores(exact, targets, last_rows, horizon=1, season=1,
                                 target_names=["y"])
    assert metrics["model"]["rmse"] == metrics["naive"]["rmse"] == 0.0
    # 0 / 0: not defined (null in metrics.json, n/a in the table), not infinity.
    assert math.isnan(metrics["rmse_ratio_to_best_baseline"])
    assert [line.split()[-1] for line in forecast_table(metrics, "gru").splitlines()[2:]] == \
        ["n/a"] * 3
    metrics, _ = forecast_scores(exact + 1.0, targets, last_rows, horizon=1, season=1,
                                 target_names=["y"])
    assert metrics["rmse_ratio_to_best_baseline"] == math.inf
    # A forecast off by float64 rounding (here exp(log 5), one unit in the last place, as a
    # log member gives) is exact too: no infinite ratio from 8.9e-16 against 0.
    rounded = np.full((10, 1, 1), np.nextafter(5.0, 6.0))
    metrics, _ = forecast_scores(rounded, targets, last_rows, horizon=1, season=1,
                                 target_names=["y"])
    assert metrics["model"]["rmse"] > 0.0
    assert math.isnan(metrics["rmse_ratio_to_best_baseline"])
    assert forecast_table(metrics, "auto").splitlines()[2].split()[-1] == "n/a"
    # ... but an error of a millionth of the values is an error, however small, and so is
    # one of 2e-13 of them (an error of 0.2 in values of 1e12, whose float64 spacing is 1e-4),
    # or of 9e-14 (83 in values of 9e14, spacing 0.125: counted as exact at 1e-13).
    for offset, error in ((0.0, 5e-6), (1e12, 0.2), (9e14, 83.0)):
        metrics, _ = forecast_scores(exact + offset + error, targets + offset, last_rows,
                                     horizon=1, season=1, target_names=["y"])
        assert metrics["rmse_ratio_to_best_baseline"] == math.inf
    # The table says which errors count as exact, where some do and some do not.
    lines = forecast_table(metrics, "linear").splitlines()
    assert [line.split()[-1] for line in lines[2:5]] == ["inf", "n/a", "n/a"]
    assert lines[5] == ("an RMSE of at most 9 (1e-14 of the largest actual value, 9e+14: "
                        "float64's rounding) counts as exact, hence the ratios inf or n/a; the "
                        "other errors are within a thousand times that: subtract a constant "
                        "offset from the series to score its forecasts finer")
    # An exact model beside errors far above the rounding: no advice to shift the series.
    metrics, _ = forecast_scores(exact, targets, last_rows, horizon=1, season=1,
                                 target_names=["y"])
    metrics["naive"]["rmse"] = 3.0  # as on a series that moves
    assert forecast_table(metrics, "arima").splitlines()[5].endswith("hence the ratios inf or n/a")
    # Where every figure is exact, or none is, the table needs no such line.
    metrics, _ = forecast_scores(exact + 9e14, targets + 9e14, last_rows, horizon=1, season=1,
                                 target_names=["y"])
    assert len(forecast_table(metrics, "linear").splitlines()) == 5


def test_the_summary_says_where_the_savedmodels_float32_is_coarser_than_the_model():
    # Float32's spacing is 128 at 1.2e9 (rounding up to 64) and 2**-21 near 5.
    assert float32_precision_note(np.array([[1.2e9], [1.2e9 + 500]]), 1000.0) is None
    note = float32_precision_note(np.array([[1.2e9], [1.2e9 + 500]]), 40.0)
    assert note.startswith("saved_model/ reads and returns float32, which rounds values of "
                           "1.2e+09 by up to 64, more than a tenth of the model's test RMSE (40)")
    assert float32_precision_note(np.array([[5.1]]), 1e-5) is None
    # Values that float32 holds exactly lose nothing, whatever the RMSE (0 on a constant
    # series of 5, or on zeros with a spike of 1000: the note said they rounded by 2.4e-7).
    assert float32_precision_note(np.array([[5.0], [0.0], [1000.0], [0.5]]), 0.0) is None
    # Exact test forecasts: said so, not "more than a tenth of ... (0)".
    assert float32_precision_note(np.array([[5.1]]), 0.0).startswith(
        "saved_model/ reads and returns float32, which rounds values of 5.1 by up to 2.38e-07, "
        "while the model's test forecasts are exact (RMSE 0): its forecasts are coarser")
    assert float32_precision_note(np.array([[5.0]]), float("nan")) is None


def test_a_filled_run_finishes_and_says_what_was_filled(tmp_path, capsys):
    # 0.1.0 wrote a complete run, then failed in the summary with an AttributeError.
    steps = np.arange(120)
    values = np.sin(steps / 2) + 0.01 * steps
    frame = pd.DataFrame({"t": steps, "y": values})
    frame.loc[[30, 31], "y"] = np.nan
    frame.to_csv(tmp_path / "gaps.csv", index=False)
    assert cli.main(["timeseries", "train", "--data", str(tmp_path / "gaps.csv"),
                     "--time-column", "t", "--fill", "ffill", "--epochs", "1", "--lookback", "6",
                     "--units", "4", "--out", str(tmp_path / "run")]) == 0
    assert "filled with ffill: {'y': 2}" in capsys.readouterr().out


def test_a_season_longer_than_the_rows_before_the_test_split_is_refused(tmp_path, capsys):
    # Its seasonal baselines could forecast no test row (or only the last ones): once, 0 of 18
    # test rows were scored and every figure was n/a.
    pd.DataFrame({"y": np.sin(np.arange(120) / 2)}).to_csv(tmp_path / "s.csv", index=False)
    for season in (103, 200):
        assert cli.main(["timeseries", "train", "--data", str(tmp_path / "s.csv"), "--season",
                         str(season), "--out", str(tmp_path / "run")]) == 2
        assert (f"--season {season} is longer than the 102 rows before the test split (of 120)"
                in capsys.readouterr().err)
    assert not (tmp_path / "run.partial").exists() and not (tmp_path / "run").exists()


def test_split_time_columns_a_leading_gap_and_an_hourly_season_reach_summary_and_metrics(
        tmp_path, capsys):
    # As air-quality files are: the time split over year, month, day, hour; the first hours
    # without a reading ("NA"); a daily cycle.
    n_rows = 24 * 10
    stamps = pd.date_range("2014-03-01", periods=n_rows, freq="h")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "year": stamps.year, "month": stamps.month, "day": stamps.day, "hour": stamps.hour,
        "pm2.5": 50 + 20 * np.sin(2 * np.pi * np.arange(n_rows) / 24) + rng.normal(size=n_rows),
        "TEMP": rng.normal(size=n_rows),
    })
    frame.loc[:2, "pm2.5"] = np.nan
    frame.loc[100, "pm2.5"] = np.nan
    data, run = tmp_path / "air.csv", tmp_path / "run"
    frame.to_csv(data, index=False, na_rep="NA")
    assert cli.main(["timeseries", "train", "--data", str(data), "--time-column",
                     "year,month,day,hour", "--target", "pm2.5", "--fill", "interpolate",
                     "--epochs", "1", "--lookback", "6", "--units", "4", "--out", str(run)]) == 0
    out = capsys.readouterr().out
    assert "season 24: from the hourly time stamps (24 a day)" in out
    assert ("time stamps from the columns year, month, day, hour: 2014-03-01 00:00:00 to "
            "2014-03-10 23:00:00") in out
    assert ("dropped the first 3 rows (lines 2-4, 2014-03-01 00:00:00 to 2014-03-01 02:00:00): "
            "pm2.5 has no value before line 5 to interpolate from (--fill-ends drop)") in out
    assert "filled with interpolate: {'pm2.5': 1}" in out
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["season"] == 24
    assert metrics["season_source"] == "from the hourly time stamps (24 a day)"
    assert metrics["data"]["time_column"] == ["year", "month", "day", "hour"]
    assert metrics["data"]["input_columns"] == ["pm2.5", "TEMP"]
    assert metrics["data"]["rows"] == n_rows - 3
    assert metrics["data"]["fill"]["dropped_rows"]["first"] == {
        "rows": 3, "lines": [2, 4], "time": ["2014-03-01 00:00:00", "2014-03-01 02:00:00"],
        "column": "pm2.5"}
    forecast = pd.read_csv(predict(run).path)
    assert list(forecast.columns) == ["step", "time", "pm2.5"]
    assert forecast["time"].tolist() == ["2014-03-11 00:00:00"]


# --- issue 16: every test row scored, ETS beside the baselines, backtest, lookback -------------


def test_every_test_row_is_a_forecast_target_exactly_once(tmp_path, naive_model):
    data = write_counting_series(tmp_path / "counting.csv", n_rows=100)
    result = train(tiny_config(data, tmp_path / "run", horizon=1, epochs=1, lookback=8))
    # Rows 85..99 are the test split (15 %): every one forecast once, from the row before it
    # (the windows reach back into the validation rows), with no input after it.
    starts = [window for window in naive_model]  # predict saw the test windows last
    test_windows = starts[-1]
    assert result.metrics["windows"] == 15 == len(test_windows)
    scaler = Scaler.from_dict(json.loads((result.path / "scaler.json").read_text()))
    last_inputs = scaler.inverse_transform(test_windows[:, -1, :1], ["demand"])[:, 0]
    np.testing.assert_allclose(last_inputs, np.arange(84, 99), atol=1e-3)
    assert result.metrics["naive"]["rmse"] == pytest.approx(1.0)


def test_the_classical_baselines_agree_with_statsforecast_at_each_origin(trained):
    from statsforecast.models import AutoETS, AutoTheta

    data, result = trained
    metrics = json.loads((result.path / "metrics.json").read_text())
    members = json.loads((result.path / "members.json").read_text())
    values = pd.read_csv(data)["demand"].to_numpy(dtype="float64")
    fit_rows = 240 - 36
    assert members["classical"]["ets"][0]["fit_rows"] == fit_rows
    # Independent reference: statsforecast fitted on the rows before the test split, then
    # `forward` (its parameters and initial states kept) over the rows up to each origin.
    for name, peer, tolerance in (("ets", AutoETS(season_length=12), 1e-6),
                                  # Theta: statsforecast's forward decomposes the season of
                                  # each history again; seqlab keeps the fitted one.
                                  ("theta", AutoTheta(season_length=12), 0.05)):
        peer.fit(values[:fit_rows])
        errors = np.array([peer.forward(y=values[:origin + 1], h=2)["mean"]
                           - values[origin + 1: origin + 3]
                           for origin in range(fit_rows - 1, 240 - 2)])
        assert metrics[name]["rmse"] == pytest.approx(np.sqrt(np.mean(errors**2)),
                                                      rel=tolerance), name
    assert metrics["ets_forms"]["demand"] == members["classical"]["ets"][0]["description"]
    assert {"ets", "arima", "theta"} <= set(metrics["classical_forms"])


def test_a_failed_classical_fit_leaves_the_run_going_with_the_other_models(tmp_path,
                                                                          monkeypatch):
    import seqlab.pipelines.timeseries_members as members

    fit = members.fit_classical

    def failing(method, values, season):
        if method == "ets":
            raise ValueError("no luck")
        return fit(method, values, season)

    monkeypatch.setattr(members, "fit_classical", failing)
    data = write_series(tmp_path / "demand.csv", n_rows=120)
    result = train(tiny_config(data, tmp_path / "run", epochs=1, model="auto"))
    assert "ets" not in result.metrics and result.metrics["ets_forms"] is None
    assert "ets" not in result.metrics["auto"]["members"]
    assert result.metrics["best_baseline"] in ("naive", "seasonal_naive", "arima", "theta")
    assert "ets left out: it could not be fitted to demand (no luck)" in result.summary
    assert evaluate(result.path).metrics["model"] == pytest.approx(result.metrics["model"])


def test_a_backtests_network_says_how_far_it_got_without_printing_epochs(tmp_path, monkeypatch,
                                                                        capsys):
    # Every epoch counts as overdue here; by default a line at most every 15 s.
    monkeypatch.setattr(timeseries_pipeline, "PROGRESS_EVERY", 0.0)
    data = write_series(tmp_path / "demand.csv", n_rows=120)
    train(tiny_config(data, tmp_path / "run", epochs=2, model="auto"))
    err = capsys.readouterr().err
    assert "model auto: the gru member on a backtest fold: epoch 2 (at most 2), " in err
    assert "so far" in err


def test_backtest_scores_rolling_origins_and_ends_with_the_runs_own_test_split(tmp_path):
    data = write_series(tmp_path / "demand.csv", n_rows=200)
    # auto_folds=1: auto's own backtest (inside each fold) is tested below; this test is about
    # the folds around it.
    result = train(tiny_config(data, tmp_path / "run", epochs=1, backtest=3, model="auto",
                               auto_folds=1))
    backtest = result.metrics["backtest"]
    assert [fold["rows"] for fold in backtest["folds"]] == [140, 170, 200]  # 30 test rows each
    last = backtest["folds"][-1]
    assert last["model_rmse"] == pytest.approx(result.metrics["model"]["rmse"])
    assert last["ets_rmse"] == pytest.approx(result.metrics["ets"]["rmse"])
    assert last["arima_rmse"] == pytest.approx(result.metrics["arima"]["rmse"])
    assert backtest["mean"]["model_rmse"] == pytest.approx(
        np.mean([fold["model_rmse"] for fold in backtest["folds"]]))
    assert all(fold["origins"] == 29 for fold in backtest["folds"])
    assert "backtest fold" in result.summary
    # --model auto chooses at every origin (on its own backtest); the last fold's choice is the
    # run's.
    assert all(fold["model_kind"].startswith("auto: ") for fold in backtest["folds"])
    assert last["model_kind"] == result.metrics["model_kind"]


def test_the_default_lookback_comes_from_the_season_and_the_training_rows(tmp_path):
    # A 108-row monthly series: 0.1.0 refused it with its fixed lookback of 24.
    steps = np.arange(108)
    frame = pd.DataFrame({
        "month": pd.date_range("2010-01-01", periods=108, freq="MS").strftime("%Y-%m"),
        "sales": 100 + steps + 20 * np.sin(2 * np.pi * steps / 12),
    })
    frame.to_csv(tmp_path / "sales.csv", index=False)
    config = TimeseriesConfig(data=str(tmp_path / "sales.csv"), out=str(tmp_path / "run"),
                              epochs=1, units=4)
    result = train(config)
    settings = json.loads((result.path / "config.json").read_text())["settings"]
    assert result.metrics["season"] == 12
    assert settings["lookback"] == result.metrics["lookback"] == 24
    assert result.metrics["lookback_source"] == "two seasons of 12"
    assert "lookback 24: two seasons of 12" in result.summary
    assert result.metrics["windows"] == 16  # every test row of 108 * 0.15


def test_a_backtest_longer_than_the_series_is_refused_before_training(tmp_path):
    data = write_series(tmp_path / "demand.csv", n_rows=120)
    # 18 test rows per fold: a ninth fold back would keep 120 - 8 * 18 < 0 rows.
    with pytest.raises(DataError, match=r"--backtest 9: the earliest fold \(the first 0 rows\) "
                                        r"is too short: it would keep 0 rows.*smaller --backtest"):
        train(tiny_config(data, tmp_path / "run", backtest=9))
    assert not (tmp_path / "run.partial").exists()
    # Five folds: the earliest keeps 120 - 4 * 18 = 48 rows, 12 of them for training: less
    # than one window of 12 + 2 rows.
    with pytest.raises(DataError, match=r"--backtest 5: the earliest fold \(the first 48 rows\) "
                                        r"is too short: the series is too short: the train split "
                                        r"has 12 rows"):
        train(tiny_config(data, tmp_path / "run", backtest=5))


# --- --model auto: classical, neural and linear members chosen by backtest ---------------------


def test_auto_scores_every_member_and_keeps_their_mean_unless_a_candidate_is_clearly_better(
        trained_auto):
    data, result = trained_auto
    metrics = result.metrics
    auto = metrics["auto"]
    members, candidates = auto["members"], auto["candidates"]
    # The series is positive, so ETS and ARIMA also run on its log.
    assert set(members) == {"ets", "arima", "theta", "seasonal_naive", "log_ets", "log_arima",
                            "gru", "linear"}
    assert all(set(figures) == {"backtest_rmse", "test_rmse"} for figures in members.values())
    # The kept candidate is the mean of the pool, every member but seasonal naive whose
    # backtest RMSE is within 1.5 times the best member's, unless the candidate with the
    # lowest backtest RMSE beat it clearly; it is the model scored on the test split.
    backtest = {name: figures["backtest_rmse"] for name, figures in candidates.items()}
    lowest, default, switch = min(backtest, key=backtest.get), auto["default"], auto["switch_test"]
    combinable = {name: figures["backtest_rmse"] for name, figures in members.items()
                  if name != "seasonal_naive"}
    best = min(combinable.values())
    outside = sorted(name for name, error in combinable.items() if error > 1.5 * best)
    assert sorted(auto["left_out_of_default"]) == outside and auto["pool_ratio"] == 1.5
    assert sorted(default.removeprefix("mean of ").split(" + ")) == sorted(
        set(combinable) - set(outside))
    if outside:
        assert ("the members within 1.5 times the lowest backtest RMSE of those that may be "
                "averaged; left out: ") in auto["chosen_on"]
    if switch is None:
        assert auto["chosen"] == lowest == default
    else:
        assert switch["best"] == lowest != default
        clearly = switch["statistic"] < -switch["critical"]
        assert auto["chosen"] == (lowest if clearly else default)
    assert candidates[auto["chosen"]]["test_rmse"] == pytest.approx(metrics["model"]["rmse"],
                                                                   rel=1e-6)
    assert metrics["model_kind"] == f"auto: {auto['chosen']}"
    assert f"model (auto: {auto['chosen']})" in result.summary
    assert f"model auto: kept {auto['chosen']}: {auto['chosen_on']}" in result.summary
    assert auto["backtest"].startswith("3 folds over rows ")
    # The backtest region is the last third of the 204 rows before the test split.
    assert "over rows 136..203" in auto["backtest"]
    saved = json.loads((result.path / "members.json").read_text())
    assert saved["selection"]["kept"] == auto["kept"]
    loaded = keras.saving.load_model(result.path / "model.keras")
    better = "linear" if members["linear"]["backtest_rmse"] <= members["gru"]["backtest_rmse"] \
        else "neural"
    assert loaded.choice == better


def test_auto_export_serves_the_kept_combination_as_predict_forecasts_it(tmp_path):
    # y = 20 + 2 t + 5 sin(2 pi t / 12): the classical members and the least-squares member
    # follow it closely, two epochs of a GRU do not; the kept candidate reads the whole history.
    # Positive everywhere, so the run has the log-scale members too.
    steps = np.arange(180)
    frame = pd.DataFrame({"t": steps, "y": 20 + 2.0 * steps + 5 * np.sin(2 * np.pi * steps / 12)})
    frame.to_csv(tmp_path / "trend.csv", index=False)
    config = TimeseriesConfig(data=str(tmp_path / "trend.csv"), out=str(tmp_path / "run"),
                              time_column=["t"], target=["y"], units=4, epochs=2, horizon=2)
    result = train(config)
    metrics = result.metrics
    assert "gru" not in metrics["auto"]["kept"] and config.model == "auto"
    assert {"log_ets", "log_arima"} <= set(metrics["auto"]["members"])
    # Both errors are far below the naive one (which moves 2 per step); a ratio of two
    # near-zero errors would depend on the CPU's rounding, so none is asserted.
    assert metrics["model"]["rmse"] < 0.05 * metrics["naive"]["rmse"]
    history = frame["y"].to_numpy().reshape(1, 180, 1).astype("float32")

    def served_and_predicted(run, saved_model):
        predicted = pd.read_csv(predict(run, output=str(run / "forecast.csv")).path)["y"]
        served = tf.saved_model.load(str(saved_model)).signatures["serving_default"]
        return served, served(history=tf.constant(history))["forecast"].numpy()[0, :, 0], \
            predicted.to_numpy()

    served, forecast, predicted = served_and_predicted(result.path, result.path / "saved_model")
    assert predicted == pytest.approx(20 + 2.0 * np.arange(180, 182)
                                      + 5 * np.sin(2 * np.pi * np.arange(180, 182) / 12),
                                      abs=0.5)
    # float32 history in the graph against float64 in predict: rounding of values near 380.
    np.testing.assert_allclose(forecast, predicted, rtol=1e-4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="too few rows"):
        served(history=tf.constant(history[:, :10]))
    # Longer than the lookback but shorter than the classical members' fit: it cannot start at
    # the first row, and its forecast came back silently another. Its last rows alone neither.
    fitted = max(spec["first_row"] + spec["fit_rows"] for name in metrics["auto"]["kept"]
                 for spec in json.loads((result.path / "members.json").read_text())[
                     "classical"].get(name, []))
    for rows in (history[:, :fitted - 1], history[:, -40:]):
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"too few rows \(the classical "
                                                                 r"members were fitted on"):
            served(history=tf.constant(rows))
    # As many rows as needed, but not from the first row (a season's phase later): refused.
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"its first 24 rows are not the "
                                                             r"training data"):
        served(history=tf.constant(history[:, 6:]))
    # A request of more rows than the bound is refused before its minutes of work.
    with pytest.raises(tf.errors.InvalidArgumentError, match="too many rows for one request"):
        served(history=tf.constant(np.full((1, MAX_HISTORY_ROWS + 1, 1), 100.0, "float32")))
    evaluated = evaluate(result.path)
    assert evaluated.metrics["model"]["rmse"] == pytest.approx(metrics["model"]["rmse"])

    # The same run keeping a log-scale member with a plain one (members.json edited, as if
    # the backtest had chosen them): export takes the log in the graph and exp back, and
    # serves predict's figures; a history at or below 0 is refused naming the member.
    run = tmp_path / "run_log"
    shutil.copytree(result.path, run)
    members = json.loads((run / "members.json").read_text())
    members["selection"]["kept"] = ["log_arima", "arima"]
    (run / "members.json").write_text(json.dumps(members))
    exported = export(run, out=str(tmp_path / "log_export"))
    served, forecast, predicted = served_and_predicted(run, exported.path)
    np.testing.assert_allclose(forecast, predicted, rtol=1e-4)  # float32 history, as above
    assert predicted == pytest.approx(20 + 2.0 * np.arange(180, 182)
                                      + 5 * np.sin(2 * np.pi * np.arange(180, 182) / 12),
                                      abs=2.0)
    zero = history.copy()
    zero[0, 100, 0] = 0.0  # past the first rows, which must be the training data's
    with pytest.raises(tf.errors.InvalidArgumentError, match="log_arima"):
        served(history=tf.constant(zero))


def test_a_short_series_history_may_hold_fewer_rows_than_the_first_rows_kept(tmp_path):
    # 26 rows, 22 before the test split: the served history needs 22 rows at least, fewer than
    # the 24 first rows members.json keeps, and a history of 22 or 23 rows was a broadcasting
    # error ("Incompatible shapes: [1,22,1] vs. [24,1]").
    steps = np.arange(26)
    values = 50 + steps + 3 * np.sin(steps) + np.random.default_rng(0).normal(0, 1, 26)
    pd.DataFrame({"t": steps, "y": values}).to_csv(tmp_path / "short.csv", index=False)
    result = train(TimeseriesConfig(data=str(tmp_path / "short.csv"), out=str(tmp_path / "run"),
                                    time_column=["t"], target=["y"], lookback=3, units=4,
                                    epochs=1))
    members = json.loads((result.path / "members.json").read_text())
    members["selection"]["kept"] = ["arima", "ets"]  # as if the backtest had kept them
    (result.path / "members.json").write_text(json.dumps(members))
    served = tf.saved_model.load(str(export(result.path, out=str(tmp_path / "e")).path))
    served = served.signatures["serving_default"]
    history = values.astype("float32").reshape(1, 26, 1)
    fitted = max(spec["first_row"] + spec["fit_rows"] for name in ("arima", "ets")
                 for spec in members["classical"][name])
    assert fitted < 24 == len(members["history_start"])
    for rows in (fitted, 23, 26):
        assert np.all(np.isfinite(served(history=tf.constant(history[:, :rows]))["forecast"]))
    shifted = history[:, 1:]  # 25 rows, a row later
    with pytest.raises(tf.errors.InvalidArgumentError, match="rows are not the training data"):
        served(history=tf.constant(shifted))


def test_a_long_series_fits_its_classical_members_on_its_last_rows(tmp_path, monkeypatch):
    # FIT_ROWS made small (60 rows and 2 seasons of the 136 before the test split) to keep the
    # fits fast: the classical members start at row 76, say so, and every path that runs them
    # (scoring, predict, the SavedModel, evaluate --data) reads the series from the same row.
    monkeypatch.setattr(forecasting_metrics, "FIT_ROWS", 60)
    monkeypatch.setattr(forecasting_metrics, "FIT_SEASONS", 2)
    steps = np.arange(160)
    frame = pd.DataFrame({"t": steps, "y": 50 + 0.5 * steps + 5 * np.sin(2 * np.pi * steps / 12)
                          + np.random.default_rng(0).normal(0, 0.5, 160)})
    frame.to_csv(tmp_path / "long.csv", index=False)
    result = train(TimeseriesConfig(data=str(tmp_path / "long.csv"), out=str(tmp_path / "run"),
                                    time_column=["t"], target=["y"], units=4, epochs=1,
                                    horizon=2, season=12))
    members = json.loads((result.path / "members.json").read_text())
    first = members["classical"]["arima"][0]["first_row"]
    assert first == 136 - 60 and members["classical"]["seasonal_naive"][0]["first_row"] == 0
    assert "fitted on the last 60 of 136 rows" in result.summary
    # Kept as if the backtest had chosen them: served and predicted from the same row.
    members["selection"]["kept"] = ["arima", "theta"]
    (result.path / "members.json").write_text(json.dumps(members))
    exported = export(result.path, out=str(tmp_path / "export"))
    served = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    history = frame["y"].to_numpy().reshape(1, 160, 1).astype("float32")
    predicted = pd.read_csv(predict(result.path, output=str(tmp_path / "f.csv")).path)["y"]
    np.testing.assert_allclose(served(history=tf.constant(history))["forecast"].numpy()[0, :, 0],
                               predicted, rtol=1e-4)  # float32 history in the graph
    # A history that cannot reach the fit's rows is refused (before, one up to its first row).
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"too few rows \(the classical members were fitted on the first "
                             rf"{first + 60}\)"):
        served(history=tf.constant(history[:, :first + 59]))
    # evaluate --data scores the windows whose origin the members can forecast from.
    evaluated = evaluate(result.path, data=str(tmp_path / "long.csv"))
    assert evaluated.metrics["split"] == f"every window from row {first} (the classical " \
                                          "members' first)"
    assert evaluated.metrics["windows"] == 160 - 2 - first
    # A first row inside the earliest window (a series just over the bound) drops nothing.
    for specs in members["classical"].values():
        for spec in specs:
            spec["first_row"] = min(spec["first_row"], 10)
    (result.path / "members.json").write_text(json.dumps(members))
    evaluated = evaluate(result.path, data=str(tmp_path / "long.csv"))
    assert evaluated.metrics["split"] == "every window"
    assert evaluated.metrics["windows"] == 160 - 2 - (24 - 1)  # lookback 24: two seasons
    frame.iloc[:10].to_csv(tmp_path / "early.csv", index=False)
    for action in (evaluate, predict):
        with pytest.raises(DataError, match="early.csv.*fitted from row 10"):
            action(result.path, data=str(tmp_path / "early.csv"))


def test_auto_without_a_validation_split_still_chooses_by_backtest(tmp_path):
    data = write_series(tmp_path / "demand.csv", n_rows=120)
    result = train(tiny_config(data, tmp_path / "run", epochs=1, lookback=6, horizon=1,
                               val_fraction=0.0, model="auto"))
    auto = result.metrics["auto"]
    assert "gru" in auto["members"] and auto["backtest"].startswith("3 folds")
    assert all(figures["backtest_rmse"] is not None for figures in auto["members"].values())


def test_auto_on_a_series_too_short_for_a_backtest_combines_the_classical_members(tmp_path):
    steps = np.arange(30)
    frame = pd.DataFrame({"t": steps, "y": 10 + steps % 4 + 0.1 * np.cos(steps)})
    frame.to_csv(tmp_path / "short.csv", index=False)
    # Season 12: the earliest backtest fold would need 24 of the 26 rows before the test split.
    result = train(TimeseriesConfig(data=str(tmp_path / "short.csv"), out=str(tmp_path / "run"),
                                    time_column=["t"], lookback=8, units=4, epochs=1,
                                    season=12))
    auto = result.metrics["auto"]
    assert auto["kept"] == ["ets", "arima", "theta", "seasonal_naive"]
    # Said once, on the kept candidate's line (a note said it again).
    assert result.summary.count("too few") == 1
    assert ("kept mean of ets + arima + theta + seasonal_naive: too few rows before the test "
            "split for a backtest") in result.summary
    assert np.isfinite(result.metrics["model"]["rmse"])


def test_auto_leaves_out_a_linear_member_too_wide_to_solve_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr("seqlab.models.forecaster.MAX_LEAST_SQUARES_COLUMNS", 6)
    data = write_series(tmp_path / "demand.csv", n_rows=120)
    result = train(tiny_config(data, tmp_path / "run", epochs=1, lookback=6, horizon=1,
                               model="auto"))
    auto = result.metrics["auto"]
    assert "linear" not in auto["members"] and "gru" in auto["members"]
    assert ("--model auto: no linear member, as its window holds 6 rows x 2 inputs = 12 values, "
            "more than the least-squares fit takes (5): left out") in result.summary
    assert keras.saving.load_model(result.path / "model.keras").choice == "neural"


def test_auto_fits_and_forecasts_the_linear_member_a_chunk_of_windows_at_a_time(tmp_path,
                                                                                monkeypatch):
    # The least-squares fit read every training window at once: beyond MAX_WINDOW_BYTES (a
    # long series, a long lookback) the member was left out, and the backtest's folds and the
    # forecasts gathered theirs unguarded (1M rows: 2.7 GB). Now chunk by chunk; in chunks of
    # 7 windows the member is kept and scores as in one chunk (the normal equations summed in
    # float64 in another order, the weights kept in float32: 1e-5).
    data = write_series(tmp_path / "demand.csv", n_rows=120)
    whole = train(tiny_config(data, tmp_path / "whole", epochs=1, lookback=6, horizon=1,
                              model="auto"))
    monkeypatch.setattr("seqlab.data.timeseries.MAX_WINDOW_BYTES", 10_000)
    monkeypatch.setattr("seqlab.data.timeseries.CHUNK_VALUES", 7 * 13)  # 13 values a window
    chunked = train(tiny_config(data, tmp_path / "chunked", epochs=1, lookback=6, horizon=1,
                                model="auto"))
    figures = [run.metrics["auto"]["members"]["linear"] for run in (whole, chunked)]
    assert figures[1]["backtest_rmse"] == pytest.approx(figures[0]["backtest_rmse"], rel=1e-5)
    assert figures[1]["test_rmse"] == pytest.approx(figures[0]["test_rmse"], rel=1e-5)
    assert "no linear member" not in chunked.summary


def test_a_stride_says_how_many_training_windows_the_network_reads(trained, tmp_path):
    # --stride 100000 trained on one window without a word.
    data = write_series(tmp_path / "demand.csv", n_rows=120)
    result = train(tiny_config(data, tmp_path / "run", epochs=1, stride=1000))
    assert re.search(r"stride 1000: the network trains on 1 of the [\d,]+ training windows "
                     r"\(one every 1000 rows\)", result.summary)
    # Without --stride (the shared GRU run, on this series' twin of 240 rows), no such line.
    _, unstrided = trained
    assert json.loads((unstrided.path / "config.json").read_text())["settings"]["stride"] == 1
    assert "the network trains on" not in unstrided.summary


def test_auto_on_a_series_at_or_below_zero_has_no_log_members_and_says_why(tmp_path):
    data = write_series(tmp_path / "demand.csv", n_rows=120)
    frame = pd.read_csv(data)
    frame["demand"] = frame["demand"] - 10.0  # crosses zero every cycle
    frame.to_csv(data, index=False)
    result = train(tiny_config(data, tmp_path / "run", epochs=1, lookback=6, horizon=1,
                               model="auto"))
    members = result.metrics["auto"]["members"]
    assert {"ets", "arima", "linear"} <= set(members)
    assert not {"log_ets", "log_arima"} & set(members)
    assert re.search(r"log_ets and log_arima left out: they run on the log of the target, and "
                     r"demand is -[0-9.]+ in row [0-9]+ of the series", result.summary)
    assert np.isfinite(result.metrics["model"]["rmse"])


def test_data_at_or_below_zero_is_refused_where_a_log_member_would_forecast_it(trained_auto,
                                                                                tmp_path):
    data, result = trained_auto
    frame = pd.read_csv(data)
    frame.loc[200, "demand"] = 0.0
    zero = tmp_path / "zero.csv"
    frame.to_csv(zero, index=False)
    # evaluate scores every member, the log-scale ones too.
    with pytest.raises(DataError, match=r"zero\.csv: demand is 0 in row 200 of the series "
                                        r"\(counting from 0\); this run's log_ets and "
                                        r"log_arima run on the log of demand"):
        evaluate(result.path, data=str(zero))
    # predict needs the kept candidate's members only: with log_ets kept (members.json
    # edited), it is refused; with another kept, the same data is forecast.
    run = tmp_path / "run"
    shutil.copytree(result.path, run)
    members = json.loads((run / "members.json").read_text())
    members["selection"]["kept"] = ["log_ets"]
    (run / "members.json").write_text(json.dumps(members))
    with pytest.raises(DataError, match=r"this run's log_ets run on the log of demand"):
        predict(run, data=str(zero), output=str(tmp_path / "f.csv"))
    members["selection"]["kept"] = ["ets"]
    (run / "members.json").write_text(json.dumps(members))
    predict(run, data=str(zero), output=str(tmp_path / "f.csv"))
    assert np.all(np.isfinite(pd.read_csv(tmp_path / "f.csv")["demand"]))


def _progress_lines(text):
    return [line for line in text.splitlines() if line.startswith("classical members: ")]


def _prepared_members(tmp_path, values):
    """`prepare_members` of --model auto on `values` (monthly, season 12, 102 rows before the
    test split): `(ForecastMembers, BacktestPlan)`."""
    from seqlab.pipelines.timeseries import infer_schema, load_table, prepare_members

    pd.DataFrame({"t": np.arange(len(values)), "y": values}).to_csv(tmp_path / "series.csv",
                                                                     index=False)
    config = TimeseriesConfig(data=str(tmp_path / "series.csv"), time_column=["t"], lookback=12,
                              horizon=1)
    frame, source = load_table(config.data)
    schema = infer_schema(config, frame, source)
    members, plan, _ = prepare_members(config, schema, schema.prepare(frame, source).values,
                                       102, 12)
    return members, plan


def test_slow_classical_fits_say_how_far_they_are_and_quick_ones_say_nothing(
        tmp_path, monkeypatch, capsys):
    from seqlab.pipelines import timeseries_classical_panel

    steps = np.arange(120)
    values = 10 + np.sin(2 * np.pi * steps / 12) + 0.02 * steps
    # Seconds-long fits (most series): not a line, not even at the end.
    members, plan = _prepared_members(tmp_path, values)
    assert _progress_lines(capsys.readouterr().err) == []
    # Fits that take longer than the quiet time (here none) report, the last line at the end:
    # every method before the test split and again at each backtest fold.
    monkeypatch.setattr(timeseries_classical_panel, "PROGRESS_EVERY", 0.0)
    _prepared_members(tmp_path, values)
    lines = _progress_lines(capsys.readouterr().err)
    fits = len(members.classical) * (1 + len(plan.folds))
    assert len(lines) == fits and len(plan.folds) == 3
    assert lines[-1].startswith(f"classical members: log_arima ({', '.join(members.classical)})"
                                f", {fits}/{fits} fits, ")
    assert lines[-1].endswith("so far, about 0.0 s left")


def test_a_classical_member_that_fails_is_counted_off_the_fits_left(tmp_path, monkeypatch,
                                                                     capsys):
    from seqlab.models.forecasting import classical
    from seqlab.pipelines import timeseries_classical_panel, timeseries_members

    fit = classical.fit_classical

    def theta_fails(method, *args, **kwargs):
        if method == "theta":
            raise ValueError("no theta today")
        return fit(method, *args, **kwargs)

    monkeypatch.setattr(timeseries_members, "fit_classical", theta_fails)
    monkeypatch.setattr(timeseries_classical_panel, "PROGRESS_EVERY", 0.0)
    steps = np.arange(120)
    members, plan = _prepared_members(tmp_path, 10 + np.sin(2 * np.pi * steps / 12))
    assert "theta" not in members.classical
    lines = _progress_lines(capsys.readouterr().err)
    # theta's one failed fit is counted; its three backtest refits are not made, nor counted.
    fits = len(members.classical) * (1 + len(plan.folds)) + 1
    assert f", {fits}/{fits} fits, " in lines[-1]


def test_a_target_that_is_not_an_input_leaves_the_classical_members_out_of_the_backtest(
        tmp_path, monkeypatch, capsys):
    from seqlab.pipelines import timeseries_classical_panel
    from seqlab.pipelines.timeseries import infer_schema, load_table, prepare_members

    steps = np.arange(120)
    pd.DataFrame({"t": steps, "x": np.cos(steps), "y": 10 + np.sin(2 * np.pi * steps / 12)}
                 ).to_csv(tmp_path / "series.csv", index=False)
    config = TimeseriesConfig(data=str(tmp_path / "series.csv"), time_column=["t"],
                              target=["y"], features=["x"], lookback=12, horizon=1)
    frame, source = load_table(config.data)
    schema = infer_schema(config, frame, source)
    monkeypatch.setattr(timeseries_classical_panel, "PROGRESS_EVERY", 0.0)
    members, plan, forecasts = prepare_members(config, schema,
                                               schema.prepare(frame, source).values, 102, 12)
    assert plan is not None and forecasts == {}
    assert members.notes[-1] == ("model auto: the classical members are left out, as a target "
                                 "is not an input column (they forecast from the target's "
                                 "history)")
    # Only the fits before the test split are made, and counted: none at the backtest folds.
    fits = len(members.classical)
    assert f", {fits}/{fits} fits, " in _progress_lines(capsys.readouterr().err)[-1]


def test_data_not_starting_as_the_training_data_is_refused_where_classical_members_read_it(
        trained_auto, tmp_path):
    # A file without the training data's first row (or only its last rows) was forecast by
    # the classical members from a state their fit never had, the season out of phase, without
    # a word; the SavedModel refused the same history.
    data, result = trained_auto
    frame = pd.read_csv(data)
    later = tmp_path / "later.csv"
    frame.iloc[1:].to_csv(later, index=False)
    run = tmp_path / "run"
    shutil.copytree(result.path, run)
    members = json.loads((run / "members.json").read_text())
    members["selection"]["kept"] = ["arima"]
    (run / "members.json").write_text(json.dumps(members))
    for action in (predict, evaluate):
        with pytest.raises(DataError, match=r"later\.csv: its row 1 \(after the header, in time "
                                            r"order\) is not row 1 of the training data: this "
                                            r"run forecasts with arima, which rolls its"):
            action(run, data=str(later), output=str(tmp_path / "out"))
    # The training data with a new row after it: forecast (the classical state rolls on).
    extended = tmp_path / "extended.csv"
    new_row = frame.iloc[-1:].assign(date=(pd.Timestamp(frame["date"].iloc[-1])
                                           + pd.Timedelta(days=1)).strftime("%Y-%m-%d"))
    pd.concat([frame, new_row]).to_csv(extended, index=False)
    predict(run, data=str(extended), output=str(tmp_path / "f.csv"))
    # Seasonal naive reads the last season only, and a network its window: the file is
    # forecast and scored, without the classical baselines.
    members["selection"]["kept"] = ["seasonal_naive"]
    (run / "members.json").write_text(json.dumps(members))
    predict(run, data=str(later), output=str(tmp_path / "s.csv"))
    members["selection"]["kept"] = ["gru"]
    (run / "members.json").write_text(json.dumps(members))
    predict(run, data=str(later), output=str(tmp_path / "g.csv"))
    scored = evaluate(run, data=str(later))
    assert not {"ets", "arima", "theta"} & set(scored.metrics) and "naive" in scored.metrics
    assert "the classical baselines (ETS, ARIMA, Theta) are left out" in scored.summary
    assert {"ets", "arima", "theta"} <= set(evaluate(run, data=str(extended)).metrics)


def test_a_forecast_far_outside_the_history_is_noted_as_diverged():
    # A spike of 1e7 in a series of about 150 let the linear member forecast -4.7e9 once it
    # entered its window; the mean of the pool followed, and the summary said nothing.
    from seqlab.pipelines.timeseries import divergence_note

    history = np.column_stack([np.linspace(90, 150, 100), np.full(100, 5.0)])
    steady = history[-4:].reshape(4, 1, 2) + 1.0
    assert divergence_note(steady, history, ["sales", "price"]) is None
    # A constant history has no range: a forecast near it is no divergence.
    assert divergence_note(steady[:, :, 1:] + 30.0, history[:, 1:], ["price"]) is None
    diverged = steady.copy()
    diverged[2, 0, 0] = -4.7e9
    members = {"linear": {"test_rmse": 6.1e11}, "ets": {"test_rmse": 90.8},
               "gru": {"test_rmse": None}}
    assert divergence_note(diverged, history, ["sales", "price"], members) == (
        "the test forecasts of sales reach -4.7e+09, far outside the series' values (90 to 150, "
        "the test split's included): the model diverged (an outlying value in a member's window "
        "can make it do so); the member with the largest test RMSE: linear (6.1e+11); check the "
        "data for outliers")


def test_a_series_growing_past_its_training_values_is_followed_not_noted_as_diverged(tmp_path):
    # 1.08 ** t: the test values reach 30 times the range before the test split, and a model
    # following them was said to have diverged (the note read that range alone).
    steps = np.arange(300)
    pd.DataFrame({"t": steps, "y": 1.08 ** steps}).to_csv(tmp_path / "growth.csv", index=False)
    result = train(tiny_config(tmp_path / "growth.csv", tmp_path / "run", model="linear",
                               target=["y"], time_column=["t"], lookback=4, horizon=1))
    assert not [note for note in result.metrics["notes"] if "diverged" in note]


def test_without_a_validation_split_the_best_epoch_is_said_to_be_by_the_training_loss(tmp_path):
    # "restored the best epoch 3" did not say by what, with no validation split to judge it.
    data = write_series(tmp_path / "demand.csv", n_rows=120)
    result = train(tiny_config(data, tmp_path / "run", val_fraction=0.0, epochs=2))
    line = next(line for line in result.summary.splitlines() if line.startswith("training:"))
    assert line.endswith(" (by its training loss: no validation split)"), line
