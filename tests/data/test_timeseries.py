"""Tests of data/timeseries.py: reading and checking CSVs, scaling, windowing, seasons."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from seqlab.data.errors import DataError
from seqlab.data.timeseries import (
    Scaler,
    SeriesSchema,
    WindowGenerator,
    estimate_season,
    every_window_start,
    future_time_labels,
    load_sunspots,
    read_csv,
    split_bounds,
)


def write_csv(tmp_path, text, name="series.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def prepared(tmp_path, text, **choices):
    path = write_csv(tmp_path, text)
    frame = read_csv(path)
    schema = SeriesSchema.infer(frame, source=path, **choices)
    return schema, schema.prepare(frame, source=path)


# --- windows -----------------------------------------------------------------------------------


def counting_frame(n_rows=100):
    """y = 0, 1, 2, ... and x = 1000 + y: each value names its own row."""
    return pd.DataFrame({"y": np.arange(n_rows, dtype="float64"),
                         "x": 1000.0 + np.arange(n_rows)})


@pytest.mark.parametrize("lookback,horizon", [(5, 1), (7, 3)])
def test_windows_align_inputs_and_targets_on_a_counting_series(lookback, horizon):
    windows = WindowGenerator(
        counting_frame(), lookback=lookback, horizon=horizon, targets=["y"],
        features=["y", "x"], scaler="minmax",
    )
    for split in ("train", "val", "test"):
        starts = windows.window_starts(split)
        inputs, targets = windows.arrays(split)
        inputs = windows.scaler.inverse_transform(inputs, ["y", "x"])
        targets = windows.scaler.inverse_transform(targets, ["y"])
        expected_inputs = starts[:, None] + np.arange(lookback)
        np.testing.assert_allclose(inputs[..., 0], expected_inputs, atol=1e-4)
        np.testing.assert_allclose(inputs[..., 1], 1000 + expected_inputs, atol=1e-3)
        # The target of a window is the `horizon` rows right after its last input row.
        np.testing.assert_allclose(
            targets[..., 0], starts[:, None] + lookback + np.arange(horizon), atol=1e-4
        )


def test_datasets_have_the_documented_element_structure():
    windows = WindowGenerator(counting_frame(), lookback=6, horizon=2, targets=["y"],
                              batch_size=4)
    spec = windows.train.element_spec
    assert spec[0].shape.as_list() == [None, 6, 2]
    assert spec[1].shape.as_list() == [None, 2, 1]
    batches = list(windows.test)
    assert sum(len(inputs) for inputs, _ in batches) == len(windows.window_starts("test"))


def test_no_window_crosses_a_split_boundary():
    windows = WindowGenerator(counting_frame(103), lookback=9, horizon=4, targets=["y"])
    for split, (start, stop) in windows.bounds.items():
        starts = windows.window_starts(split)
        assert len(starts) == stop - start - windows.window_size + 1
        assert starts.min() >= start
        assert starts.max() + windows.window_size <= stop


def test_splits_are_in_time_order_and_cover_every_row():
    bounds = split_bounds(200, val_fraction=0.1, test_fraction=0.2)
    assert bounds == {"train": (0, 140), "val": (140, 160), "test": (160, 200)}


def test_stride_spaces_training_windows_only():
    windows = WindowGenerator(counting_frame(), lookback=4, horizon=1, targets=["y"], stride=3)
    assert np.all(np.diff(windows.window_starts("train")) == 3)
    assert np.all(np.diff(windows.window_starts("test")) == 1)


def test_scaler_is_fitted_on_the_training_split_only():
    windows = WindowGenerator(counting_frame(), lookback=4, horizon=1, targets=["y"],
                              scaler="minmax")
    train_start, train_end = windows.bounds["train"]
    assert windows.scaler.offset[0] == train_start
    assert windows.scaler.scale[0] == train_end - 1 - train_start
    _, test_targets = windows.arrays("test")
    assert test_targets.min() > 1.0  # test values lie above the training range


def test_standard_scaler_round_trips_through_json():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [5.0, 5.0, 5.0, 5.0]})
    scaler = Scaler.fit("standard", frame)
    assert scaler.scale[1] == 1.0  # a constant column is not divided by zero
    restored = Scaler.from_dict(json.loads(json.dumps(scaler.to_dict())))
    scaled = restored.transform(frame.to_numpy())
    np.testing.assert_allclose(scaled[:, 0].mean(), 0.0, atol=1e-12)
    np.testing.assert_allclose(restored.inverse_transform(scaled), frame.to_numpy())


def test_standard_scaler_gives_mean_0_and_std_1_on_the_training_rows():
    windows = WindowGenerator(counting_frame(), lookback=4, horizon=1, targets=["y"],
                              scaler="standard")
    train_start, train_end = windows.bounds["train"]  # rows 0..69
    train = np.arange(train_start, train_end, dtype="float64")
    # Fitted on the training rows only: the mean and the (population) standard deviation.
    np.testing.assert_allclose(windows.scaler.offset, [train.mean(), 1000 + train.mean()])
    np.testing.assert_allclose(windows.scaler.scale, [train.std()] * 2)
    assert windows.scaler.offset[0] == 34.5
    np.testing.assert_allclose(windows.scaler.scale[0], np.sqrt((70**2 - 1) / 12))
    scaled = windows.scaler.transform(counting_frame().to_numpy())[train_start:train_end]
    np.testing.assert_allclose(scaled.mean(axis=0), [0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(scaled.std(axis=0), [1.0, 1.0], atol=1e-12)
    # And the windows the model trains on are in those units.
    inputs, _ = windows.arrays("train")
    np.testing.assert_allclose(inputs[0, :, 0], (np.arange(4) - 34.5) / train.std(), atol=1e-6)


def test_repr_names_lookback_horizon_and_columns():
    windows = WindowGenerator(counting_frame(), lookback=8, horizon=2, targets=["y"])
    text = repr(windows)
    assert "lookback=8, horizon=2" in text
    assert "features (2): y, x" in text and "targets (1): y" in text
    assert "rows: train 70 [0, 70)" in text


def test_too_short_series_says_how_many_rows_a_window_needs():
    with pytest.raises(DataError, match=r"the series is too short: the val split has 3 rows, "
                                        r"but one window needs lookback \+ horizon = 10 \+ 2 = "
                                        r"12 rows; .* needs at least 80 rows \(it has 20\)"):
        WindowGenerator(counting_frame(20), lookback=10, horizon=2, targets=["y"])
    # The figure it gives is enough.
    WindowGenerator(counting_frame(80), lookback=10, horizon=2, targets=["y"])


# --- seasons -----------------------------------------------------------------------------------


def test_estimate_season_finds_the_period_and_ignores_a_trend():
    steps = np.arange(300)
    rng = np.random.default_rng(0)
    assert estimate_season(np.sin(2 * np.pi * steps / 7) + 0.1 * rng.normal(size=300)) == 7
    assert estimate_season(np.sin(2 * np.pi * steps / 24) + 0.01 * steps) == 24
    assert estimate_season(steps.astype(float)) == 1


def test_embedded_sunspots_have_an_eleven_year_cycle():
    sunspots = load_sunspots()
    assert list(sunspots.columns) == ["YEAR", "SUNACTIVITY"] and len(sunspots) == 309
    assert estimate_season(sunspots["SUNACTIVITY"].to_numpy()[:216]) == 11


# --- reading and checking ----------------------------------------------------------------------


def test_dated_first_column_becomes_the_time_column(tmp_path):
    schema, series = prepared(tmp_path, "Date,Temp\n2020-01-01,1.5\n2020-01-02,2.5\n"
                                        "2020-01-03,3.5\n")
    assert schema.time_column == "Date" and schema.targets == ["Temp"]
    assert series.time.iloc[-1] == pd.Timestamp("2020-01-03")
    assert series.values["Temp"].tolist() == [1.5, 2.5, 3.5]


def test_non_numeric_columns_are_left_out_of_default_features_and_reported(tmp_path):
    schema, series = prepared(tmp_path, "t,city,y\n1,Paris,1\n2,Rome,2\n3,Oslo,3\n",
                              time_column="t")
    assert schema.features == ["y"] and schema.skipped_columns == ["city"]


def test_categorical_columns_are_one_hot_encoded(tmp_path):
    schema, series = prepared(tmp_path, "day,y\nmon,1\ntue,2\nmon,3\n", categorical=["day"],
                              targets=["y"])
    assert schema.input_columns == ["day=mon", "day=tue", "y"]
    assert series.values["day=tue"].tolist() == [0.0, 1.0, 0.0]


def test_unknown_category_at_prediction_time_is_refused(tmp_path):
    schema, _ = prepared(tmp_path, "day,y\nmon,1\ntue,2\n", categorical=["day"], targets=["y"])
    new = pd.DataFrame({"day": ["mon", "sun"], "y": [1.0, 2.0]})
    with pytest.raises(DataError, match=r"column 'day' has categories not seen in training at "
                                        r"lines 3 \('sun'\); known: mon, tue"):
        schema.prepare(new, source="new.csv")


def test_fill_repairs_missing_and_non_numeric_values_and_reports_them(tmp_path):
    text = "t,y\n1,1.0\n2,\n3,?\n4,4.0\n"
    _, series = prepared(tmp_path, text, time_column="t", fill="interpolate")
    assert series.values["y"].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert series.fill_report == {"method": "interpolate", "filled_values": {"y": 2}}
    _, series = prepared(tmp_path, text, time_column="t", fill="ffill")
    assert series.values["y"].tolist() == [1.0, 1.0, 1.0, 4.0]


@pytest.mark.parametrize(
    "text,choices,message",
    [
        ("t,y\n1,1\n2,\n3,3\n4,\n", {"time_column": "t"},
         r"series\.csv: column 'y' has missing values at lines 3, 5 \(2 rows\); pass --fill "
         r"ffill or --fill interpolate to repair them"),
        ("t,y\n1,1\n2,abc\n3,3\n4,4\n", {"time_column": "t"},
         r"column 'y' has non-numeric values at lines 3 \('abc'\); expected numbers"),
        ("t,city,y\n1,Paris,1\n2,Rome,2\n", {"time_column": "t", "features": ["city", "y"],
                                             "targets": ["y"]},
         r"column 'city' is not numeric \(e\.g\. 'Paris' at line 2\); leave it out of "
         r"--features or one-hot encode it with --categorical city"),
        ("t,y\n1,1\n2,2\n", {"targets": ["nope"]},
         r"target column 'nope' not found; the columns are: t, y"),
        ("a,b\n1,2\n3,4\n", {},
         r"cannot tell which column to forecast among a, b; name it with --target"),
        ("Date,y\n2020-01-02,1\n2020-01-01,2\n", {},
         r"time column 'Date' does not increase at line 3 \('2020-01-01' after '2020-01-02'\)"),
        ("when,y\n2020-01-01,1\nyesterday,2\n", {"time_column": "when"},
         r"time column 'when' has values that are not dates at lines 3 \('yesterday'\)"),
        ("t,y\n1,\n2,2\n", {"time_column": "t", "fill": "ffill"},
         r"column 'y': --fill ffill cannot repair lines 2 \(no value before them"),
    ],
)
def test_bad_values_raise_data_errors_naming_column_and_lines(tmp_path, text, choices, message):
    with pytest.raises(DataError, match=message):
        prepared(tmp_path, text, **choices)


def test_unreadable_files_raise_data_errors(tmp_path):
    with pytest.raises(DataError, match=r"missing\.csv: file not found"):
        read_csv(tmp_path / "missing.csv")
    with pytest.raises(DataError, match=r"empty\.csv: the file is empty"):
        read_csv(write_csv(tmp_path, "", "empty.csv"))
    with pytest.raises(DataError, match=r"header\.csv: the file has a header but no data rows"):
        read_csv(write_csv(tmp_path, "t,y\n", "header.csv"))
    binary = tmp_path / "latin1.csv"
    binary.write_bytes("t,y\n1,caf\xe9\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin1\.csv, line 2: undecodable bytes at byte offset "
                                        r"9 \(0xe9\); expected UTF-8"):
        read_csv(binary)


def test_undecodable_bytes_far_into_the_file_name_the_line_and_the_file_offset(tmp_path):
    rows = "".join(f"{i},{i}\n" for i in range(1, 5000))
    path = tmp_path / "long_latin1.csv"
    raw = ("t,y\n" + rows + "9999,caf\xe9\n").encode("latin-1")
    path.write_bytes(raw)
    offset = raw.index(b"\xe9")
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 5001: undecodable bytes at byte offset {offset} (0xe9); expected UTF-8"
    )):
        read_csv(path)


def test_a_folder_is_not_a_file(tmp_path):
    with pytest.raises(DataError, match=re.escape(
        f"{tmp_path}: is a folder, not a file; expected a CSV file"
    )):
        read_csv(tmp_path)


@pytest.mark.parametrize("delimiter", [";", "\t"])
def test_semicolon_and_tab_separated_files_are_read_by_their_delimiter(tmp_path, delimiter):
    text = "".join(delimiter.join(row) + "\n" for row in
                   [("date", "value"), ("2020-01-01", "1.5"), ("2020-01-02", "2.5"),
                    ("2020-01-03", "3.5")])
    frame = read_csv(write_csv(tmp_path, text))
    assert list(frame.columns) == ["date", "value"]
    assert frame["value"].tolist() == [1.5, 2.5, 3.5]
    assert frame.attrs["delimiter"] == delimiter
    schema = SeriesSchema.infer(frame)
    assert (schema.time_column, schema.targets) == ("date", ["value"])


@pytest.mark.parametrize("row,count", [("3,3,3", 3), ("3", 1)])
def test_a_row_with_more_or_fewer_fields_than_the_header_is_refused_by_line(tmp_path, row, count):
    path = write_csv(tmp_path, f"t,y\n1,1\n2,2\n{row}\n4,4\n")
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 4: the row has {count} fields separated by ','; expected 2 like the "
        "header ('t,y')"
    )):
        read_csv(path)


def test_a_line_over_the_limit_is_refused_without_reading_the_file_whole(tmp_path, monkeypatch):
    import seqlab.data.timeseries as timeseries

    monkeypatch.setattr(timeseries, "MAX_LINE_BYTES", 1000)
    path = write_csv(tmp_path, "t,y\n1,1\n" + "2," * 5000 + "\n")
    reads = []
    real_open = open

    class CountingFile:
        def __init__(self, file):
            self.file = file

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def readline(self, size=-1):
            line = self.file.readline(size)
            reads.append(len(line))
            return line

    monkeypatch.setattr(timeseries, "open",
                        lambda *a, **k: CountingFile(real_open(*a, **k)), raising=False)
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 3: the line is longer than the limit of 1000 bytes"
    )):
        read_csv(path)
    assert max(reads) <= 1002


def test_the_default_line_limit_is_one_mebibyte(tmp_path):
    from seqlab.data.timeseries import MAX_LINE_BYTES

    assert MAX_LINE_BYTES == 2**20
    path = write_csv(tmp_path, "y\n" + "1" * (MAX_LINE_BYTES + 10))
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 2: the line is longer than the limit of 1048576 bytes (1 MiB); expected "
        "one CSV row per line"
    )):
        read_csv(path)


def test_blank_lines_count_as_missing_rows_at_their_line(tmp_path):
    with pytest.raises(DataError, match=r"time column 't' has missing values at lines 4; "
                                        r"expected a time stamp on every row"):
        prepared(tmp_path, "t,y\n1,1\n2,2\n\n4,4\n", time_column="t")
    with pytest.raises(DataError, match=r"column 'y' has missing values at lines 4 "):
        prepared(tmp_path, "y\n1\n2\n\n4\n")


def test_schema_round_trips_through_json(tmp_path):
    schema, _ = prepared(tmp_path, "day,y\nmon,1\ntue,2\n", categorical=["day"], targets=["y"])
    restored = SeriesSchema.from_dict(json.loads(json.dumps(schema.to_dict())))
    assert restored == schema


def test_every_window_start_counts_windows_and_names_what_one_needs():
    np.testing.assert_array_equal(every_window_start(10, lookback=4, horizon=2), [0, 1, 2, 3, 4])
    # horizon 0: the windows a forecast can start from; the last one ends at the last row.
    assert every_window_start(10, lookback=4, horizon=0)[-1] == 6
    with pytest.raises(DataError, match=r"s\.csv: the series is too short: one window needs "
                                        r"lookback \+ horizon = 4 \+ 2 = 6 rows, and the data has 5"):
        every_window_start(5, lookback=4, horizon=2, source="s.csv")


def test_future_time_labels_keep_dates_plain_and_times_of_day():
    days = pd.Series(pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03"]))
    assert future_time_labels(days, 2) == ["2020-01-04", "2020-01-05"]
    hours = pd.Series(pd.date_range("2020-01-01 22:00", periods=3, freq="h"))
    assert future_time_labels(hours, 1) == ["2020-01-02 01:00:00"]
    assert future_time_labels(None, 3) is None
