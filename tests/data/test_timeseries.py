"""Tests of data/timeseries.py: reading and checking CSVs, scaling, windowing, seasons."""

import io
import json
import re

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from seqlab.data import timeseries as timeseries_module
from seqlab.data.errors import DataError
from seqlab.data.timeseries import (
    Scaler,
    SeriesSchema,
    WindowGenerator,
    _autocorrelation,
    calendar_season,
    choose_season,
    estimate_season,
    season_peak,
    every_window_start,
    future_time_labels,
    load_sunspots,
    parse_dates,
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


def test_windows_of_a_frame_with_numbered_columns_equal_those_of_named_ones():
    # `pd.DataFrame(array)`: the scaler keeps names as text, and looking 0 up among "0", "1"
    # failed with "0 is not in list".
    named = counting_frame()
    numbered = pd.DataFrame(named.to_numpy())
    expected = WindowGenerator(named, lookback=4, horizon=2, targets=["y"]).arrays("test")
    got = WindowGenerator(numbered, lookback=4, horizon=2, targets=[0]).arrays("test")
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)
    # ... and the scaler's inverse takes the same names back.
    windows = WindowGenerator(numbered, lookback=4, horizon=2, targets=[0])
    np.testing.assert_allclose(windows.scaler.inverse_transform(got[1], [0])[0, :, 0],
                               windows.window_starts("test")[0] + 4 + np.arange(2), atol=1e-3)
    with pytest.raises(DataError, match=r"column 'day' is not numeric \(object\)"):
        WindowGenerator(named.assign(day="mon"), lookback=4, horizon=2, targets=["y"])
    with pytest.raises(ValueError, match=r"the frame's column names must differ as text"):
        WindowGenerator(pd.DataFrame([[1.0, 2.0]] * 50, columns=[1, "1"]), 4, 2, targets=[1])


def test_a_missing_or_infinite_value_or_no_target_is_refused_naming_it():
    # One NaN made the scaler's offset NaN, so every window of the column was NaN, silently.
    for bad in (np.nan, np.inf):
        frame = counting_frame()
        frame.loc[5, "x"] = bad
        with pytest.raises(DataError, match=rf"column 'x' holds {bad} at row 5; expected finite "
                                            r"numbers"):
            WindowGenerator(frame, lookback=4, horizon=2, targets=["y"])
    with pytest.raises(ValueError, match=r"targets must name at least one column"):
        WindowGenerator(counting_frame(), lookback=4, horizon=2, targets=[])


def test_arguments_a_careless_caller_gets_wrong_are_refused_or_read_as_meant():
    frame = counting_frame()  # columns y, x; 100 rows
    for bad in (None, float("nan"), True, 2.5, "4"):
        with pytest.raises(ValueError, match=r"lookback must be a positive integer"):
            WindowGenerator(frame, lookback=bad, horizon=1, targets=["y"])
    assert WindowGenerator(frame, lookback=np.int64(4), horizon=2.0, targets=["y"]).horizon == 2
    with pytest.raises(TypeError, match=r"frame must be a pandas DataFrame.*Received: Series"):
        WindowGenerator(frame["y"], lookback=4, horizon=1, targets=["y"])
    # One name is one column: "yx" was read as the columns "y" and "x".
    both = frame.assign(yx=frame["y"] * 3)
    windows = WindowGenerator(both, lookback=4, horizon=1, targets="yx", features="y")
    assert (windows.targets, windows.features) == (["yx"], ["y"])
    with pytest.raises(ValueError, match=r"split must be one of 'train', 'val', 'test'\. "
                                         r"Received: split='validation'"):
        windows.dataset("validation")
    # The scaler's inverse refuses values whose last axis is not the columns named: a target
    # array came back with a column per fitted column, the target rescaled by each.
    _, targets = windows.arrays("test")
    with pytest.raises(ValueError, match=r"values of shape \(\d+, 1, 1\) for the 2 columns "
                                         r"\['y', 'yx'\]: expected a last axis of 2"):
        windows.scaler.inverse_transform(targets)
    np.testing.assert_allclose(windows.scaler.inverse_transform(targets, "yx")[:, 0, 0],
                               3 * (windows.window_starts("test") + 4), atol=1e-3)


def test_values_that_scale_beyond_float32_are_refused_naming_the_row():
    # Constant training rows (scale 1), then 1e39: the float32 windows held inf, with only
    # numpy's overflow warning.
    frame = pd.DataFrame({"y": np.r_[np.zeros(70), np.full(30, 1e39)]})
    with pytest.raises(DataError, match=r"column 'y' at row 70 scales to 1e\+39 .*beyond "
                                        r"float32's range"):
        WindowGenerator(frame, lookback=4, horizon=1, targets=["y"])


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


def test_the_datasets_gather_the_windows_arrays_holds_batch_by_batch(monkeypatch):
    # The windows are gathered from the rows per batch (the same windows, in the order a
    # shuffle of the arrays' windows with the same seed gives), not held all at once.
    windows = WindowGenerator(counting_frame(), lookback=6, horizon=2, targets=["y"],
                              batch_size=8, shuffle_seed=3)
    for split in ("train", "val", "test"):
        inputs, targets = windows.arrays(split)
        expected = tf.data.Dataset.from_tensor_slices((inputs, targets))
        if split == "train":
            expected = expected.shuffle(len(inputs), seed=3, reshuffle_each_iteration=True)
        for (got_x, got_y), (want_x, want_y) in zip(windows.dataset(split), expected.batch(8),
                                                    strict=True):
            np.testing.assert_array_equal(got_x, want_x)
            np.testing.assert_array_equal(got_y, want_y)
    # All at once, the windows of a long series with a long lookback would not fit in memory.
    monkeypatch.setattr(timeseries_module, "MAX_WINDOW_BYTES", 10_000)
    with pytest.raises(DataError, match=r"the 63 train windows of 6 rows x 2 inputs would take "
                                        r"0\.0 MiB of memory at once \(at most 0\.0 MiB\); "
                                        r"expected a shorter --lookback"):
        windows.arrays("train")
    assert len(list(windows.train)) == 8  # the dataset needs no such copy
    # Nor do its chunks, which hold the same windows in the same order.
    monkeypatch.setattr(timeseries_module, "MAX_WINDOW_BYTES", 4 * 2**30)
    for split in ("train", "val", "test"):
        inputs, targets = windows.arrays(split)
        chunks = list(windows.chunks(split, size=5))
        assert [len(chunk_inputs) for chunk_inputs, _ in chunks][:-1] == [5] * (len(chunks) - 1)
        assert 0 < len(chunks[-1][0]) < 5  # a partial last chunk in every split
        np.testing.assert_array_equal(np.concatenate([c[0] for c in chunks]), inputs)
        np.testing.assert_array_equal(np.concatenate([c[1] for c in chunks]), targets)
    # By default a chunk holds about CHUNK_VALUES values.
    per_window = (windows.lookback * len(windows.features)
                  + windows.horizon * len(windows.targets))
    monkeypatch.setattr(timeseries_module, "CHUNK_VALUES", per_window * 4 + 1)
    assert [len(inputs) for inputs, _ in windows.chunks("val")] == [4, 4, 4, 2]


@pytest.mark.parametrize("lookback,horizon", [(9, 1), (9, 4), (30, 1)])
def test_splits_hold_the_targets_and_every_test_row_is_forecast(lookback, horizon):
    # On y = 0, 1, 2, ... every value names its row: the windows' contents show which rows a
    # forecast reads and which it forecasts.
    windows = WindowGenerator(counting_frame(103), lookback=lookback, horizon=horizon,
                              targets=["y"], scaler="minmax")
    for split, (start, stop) in windows.bounds.items():
        inputs, targets = windows.arrays(split)
        inputs = np.rint(windows.scaler.inverse_transform(inputs, ["y", "x"])[..., 0])
        targets = np.rint(windows.scaler.inverse_transform(targets, ["y"])[..., 0])
        # Every target lies in its split, and every row of the split is a target.
        assert targets.min() >= start and targets.max() < stop
        assert set(targets.ravel()) == set(range(max(start, lookback), stop))
        # No input from the future: each window reads only rows before its first target.
        assert np.all(inputs.max(axis=1) < targets.min(axis=1))
        assert np.all(inputs.max(axis=1) == targets.min(axis=1) - 1)
        if split != "train" and horizon == 1:
            # One forecast per row: the first target row of each window is distinct.
            np.testing.assert_array_equal(targets[:, 0], np.arange(start, stop))
    # Validation and test windows reach back into earlier rows (known at forecast time).
    test_start = windows.bounds["test"][0]
    assert windows.window_starts("test")[0] == test_start - lookback


def test_windows_of_seqlab_0_1_0_lie_inside_their_split():
    windows = WindowGenerator(counting_frame(103), lookback=9, horizon=4, targets=["y"],
                              split_targets=False)
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
    with pytest.raises(DataError, match=r"the series is too short: the train split has 14 rows, "
                                        r"but one window needs lookback \+ horizon = 10 \+ 6 = "
                                        r"16 rows; .* needs at least 39 rows \(it has 20\)"):
        WindowGenerator(counting_frame(20), lookback=10, horizon=6, targets=["y"])
    # The figure it gives is enough.
    WindowGenerator(counting_frame(39), lookback=10, horizon=6, targets=["y"])
    # Validation and test splits need one horizon of targets, not a whole window.
    # ... which a shorter horizon or a larger share gives; the lookback is not theirs.
    with pytest.raises(DataError, match=r"the val split has 3 rows, but it must hold one "
                                        r"horizon = 4 of forecast targets; .*, or use a shorter "
                                        r"--horizon or a larger --val-fraction$"):
        WindowGenerator(counting_frame(20), lookback=4, horizon=4, targets=["y"])
    with pytest.raises(DataError, match=r"the test split has 0 rows, but it must hold one "
                                        r"horizon = 1 of forecast targets; .*, or use a larger "
                                        r"--test-fraction$"):
        WindowGenerator(counting_frame(100), lookback=4, horizon=1, targets=["y"],
                        test_fraction=0.001)
    with pytest.raises(DataError, match=r"the val split has 3 rows, but one window needs "
                                        r"lookback \+ horizon = 10 \+ 2 = 12 rows; .* needs at "
                                        r"least 79 rows \(it has 20\), or use a shorter "
                                        r"--lookback or --horizon or a larger --val-fraction$"):
        WindowGenerator(counting_frame(20), lookback=10, horizon=2, targets=["y"],
                        split_targets=False)
    WindowGenerator(counting_frame(79), lookback=10, horizon=2, targets=["y"],
                    split_targets=False)
    # Only what can be shortened is named (a lookback of 1 cannot).
    with pytest.raises(DataError, match=r"\(it has 20\), or use a shorter --horizon$"):
        WindowGenerator(counting_frame(20), lookback=1, horizon=50, targets=["y"])
    with pytest.raises(DataError, match=r"\(it has 2\)$"):
        WindowGenerator(counting_frame(2), lookback=1, horizon=1, targets=["y"])


# --- seasons -----------------------------------------------------------------------------------


def test_estimate_season_finds_the_period_and_ignores_a_trend():
    steps = np.arange(300)
    rng = np.random.default_rng(0)
    assert estimate_season(np.sin(2 * np.pi * steps / 7) + 0.1 * rng.normal(size=300)) == 7
    assert estimate_season(np.sin(2 * np.pi * steps / 24) + 0.01 * steps) == 24
    assert estimate_season(steps.astype(float)) == 1


@pytest.mark.parametrize("unit", [1e-200, 1e-7, 1.0, 1e9])
def test_the_season_does_not_depend_on_the_unit_of_the_values(unit):
    # The same monthly series in any unit: a swing of 1e-3 of the level and noise. With an
    # absolute threshold for "constant", the series in units of 1e-7 had no season.
    steps = np.arange(240)
    rng = np.random.default_rng(0)
    values = unit * (1 + 1e-3 * np.sin(2 * np.pi * steps / 12) + 1e-4 * rng.normal(size=240))
    assert estimate_season(values) == 12
    months = pd.Series(pd.date_range("2000-01-01", periods=240, freq="MS"))
    assert choose_season(values, months) == (12, "from the monthly time stamps (12 a year)")
    # Constant, or a straight line, in that unit: the rounding of detrending is no season.
    assert estimate_season(np.full(240, 5.0 * unit)) == 1
    assert estimate_season(unit * (3.0 + 0.5 * steps)) == 1
    assert choose_season(np.full(240, 5.0 * unit), months)[0] == 1


def test_a_season_far_from_zero_is_found_where_float64_still_holds_it():
    # A swing of 1e-12 of the level (whole numbers near 9.9e14, float64's spacing 0.125 there):
    # judged constant when "constant" was anything under 1e-10 of the level, so season 1 and
    # weak baselines. Detrending's own rounding stays within a few units in the last place.
    steps = np.arange(150)
    values = 990_000_000_000_000 + np.round(1000 * np.sin(2 * np.pi * steps / 12)) + steps
    assert estimate_season(values) == 12
    # ... and one of 1e-13 (a swing of 80, 640 spacings), still judged constant at 1e-13.
    swing = 900_000_000_000_000 + np.round(80 * np.sin(2 * np.pi * steps / 12))
    assert estimate_season(swing) == 12
    assert estimate_season(np.full(150, 9.9e14)) == 1
    assert estimate_season(9.9e14 + 7.0 * steps) == 1


def test_a_peak_of_noise_is_no_season_and_its_bound_is_bartletts_as_statsmodels_computes_it():
    from statsmodels.tsa.stattools import acf

    steps = np.arange(100)
    noise = np.random.default_rng(4).normal(size=100)
    peak = season_peak(noise)
    assert peak is not None and not peak.significant and estimate_season(noise) == 1
    # The reference: statsmodels' autocorrelation of the detrended values, its peaks found here,
    # and its Bartlett interval at the two-sided level that puts 5 % / peaks in the upper tail.
    detrended = noise - np.polyval(np.polyfit(steps, noise, 1), steps)
    r = acf(detrended, nlags=34)
    lags = np.arange(2, 34)
    peaks = lags[(r[lags] > 0) & (r[lags] >= r[lags - 1]) & (r[lags] >= r[lags + 1])]
    peaks = peaks[peaks > np.flatnonzero(r < 0)[0]]
    assert peak.lag == peaks[np.argmax(r[peaks])]
    _, interval = acf(detrended, nlags=34, alpha=2 * 0.05 / len(peaks), result_object=False)
    # Both in float64 from the same values; only summation order differs.
    assert peak.correlation == pytest.approx(r[peak.lag], abs=1e-12)
    assert peak.bound == pytest.approx(interval[peak.lag, 1] - r[peak.lag], rel=1e-9)
    season, source = choose_season(noise, None, "y")
    assert season == 1 and source == (
        f"estimated from the autocorrelation of y (train split): its highest peak, "
        f"{peak.correlation:.2f} at lag {peak.lag}, is within the noise (bound {peak.bound:.2f}), "
        "so the seasonal naive is the naive forecast")
    # The same noise with a season of 12 whose swing is that of the noise: found.
    seasonal = noise + 1.4 * np.sin(2 * np.pi * steps / 12)
    assert season_peak(seasonal).significant and estimate_season(seasonal) == 12


def test_a_weekly_cycle_in_days_that_persist_is_a_season_of_7_not_a_multiple():
    # Days that persist (AR(1), 0.9) keep the autocorrelation positive past the week, so the
    # peaks after it first turns negative are multiples of 7; the season is their period.
    steps = np.arange(260)
    week = np.array([3.0, 2, 2, 2, 1, -5, -5])[steps % 7]
    multiples = []
    for seed in (0, 3, 4, 5):
        shocks = 2.0 * np.random.default_rng(seed).normal(size=260)
        persistent = np.zeros(260)
        for t in range(1, 260):
            persistent[t] = 0.9 * persistent[t - 1] + shocks[t]
        peak = season_peak(100 + week + persistent)
        assert peak.lag == 7 and peak.significant and estimate_season(100 + week + persistent) == 7
        multiples.append(peak.multiple)
    assert multiples == [49, 77, 14, 14]  # the highest peaks, kept before
    season, source = choose_season(100 + week + persistent, None, "visits")
    assert (season, source) == (7, "estimated from the autocorrelation of visits (train split; "
                                   "peaks at 7 and 14: a period of 7)")


def test_of_the_periods_a_peak_is_a_multiple_of_the_season_is_the_most_correlated():
    # Months that persist (AR(1), 0.9) with a yearly cycle and a strong half-year: the peak
    # found is at 24, and 6 and 12 both divide it with peaks at every multiple; 12, whose
    # autocorrelation (0.55) is above 6's (0.40), is the season, not the shortest, 6.
    steps = np.arange(240)
    shocks = np.random.default_rng(6).normal(size=240)
    persistent = np.zeros(240)
    for t in range(1, 240):
        persistent[t] = 0.9 * persistent[t - 1] + shocks[t]
    values = (np.sin(2 * np.pi * steps / 12) + 0.9 * np.sin(2 * np.pi * steps / 6 + 1)
              + 0.5 * persistent)
    peak = season_peak(values)
    assert (peak.lag, peak.multiple) == (12, 24) and peak.significant


def test_a_few_outlying_values_make_no_season_but_a_yearly_spike_does():
    # Noise with 2 % spikes: two spikes a lag apart made a peak above Bartlett's bound (which
    # assumes light tails) and had been the season; the same values shuffled reach twice it.
    for seed, lag in ((2, 81), (3, 76), (8, 52), (9, 49)):
        generator = np.random.default_rng(seed)
        values = generator.normal(size=300) + np.where(generator.random(300) < 0.02, 1000.0, 0)
        peak = season_peak(values)
        assert peak.lag == lag and peak.correlation > peak.bound  # the bound alone: a season
        assert peak.shuffled > 1.5 * peak.correlation and not peak.significant
        season, source = choose_season(values, None, "load")
        assert season == 1 and (f"its highest peak, {peak.correlation:.2f} at lag {lag}, is no "
                                f"higher than the same values shuffled reach ({peak.shuffled:.2f}"
                                ": chance, or a few outlying values, can make such a peak)"
                                ) in source
    # Spikes every twelfth row are a season: far above the shuffles' (0.89 against 0.28).
    steps = np.arange(120)
    values = 1 + 8.0 * (steps % 12 == 11) + 0.2 * np.random.default_rng(1).normal(size=120)
    peak = season_peak(values)
    assert peak.lag == 12 and peak.correlation > 2 * peak.shuffled and peak.significant


def test_a_season_with_a_strong_half_season_stays_whole():
    # Half a year's swing (a peak at 6 of 0.42) is part of the year's (0.83 at 12): 12 is kept.
    steps = np.arange(144)
    noise = 0.3 * np.random.default_rng(1).normal(size=144)
    values = 0.6 * np.sin(2 * np.pi * steps / 12) + np.sin(2 * np.pi * steps / 6) + noise
    peak = season_peak(values)
    assert peak.lag == 12 and peak.multiple is None and estimate_season(values) == 12


@pytest.mark.parametrize("stamps,expected", [
    # A gap hides the frequency from pandas; the gap-free stretches give it.
    (pd.date_range("2020-01-01", periods=500, freq="h").delete([100, 300]), "h"),
    (pd.date_range("1990-01-01", periods=120, freq="MS").delete([50]), "MS"),
    (pd.bdate_range("2024-01-01", periods=300).delete([10, 200]), "B"),
    # A month start at a time of day of its own is still a month start.
    (pd.date_range("2000-01-01", periods=60, freq="MS").delete([20]).insert(
        40, pd.Timestamp("2003-06-01 06:00")).delete([41]), "MS"),
    # Month starts in a time zone whose clocks change at midnight, and in seconds far ahead.
    (pd.date_range("2015-01-01", periods=60, freq="MS", tz="America/Asuncion",
                   nonexistent="shift_forward").delete([3]), "MS"),
    (pd.DatetimeIndex(np.array([f"{2300 + k // 12}-{k % 12 + 1:02d}-01" for k in range(40)
                                if k != 7], dtype="datetime64[s]")), "MS"),
    # Month starts but one: no frequency.
    (pd.DatetimeIndex(list(pd.date_range("2000-01-01", periods=40, freq="MS").delete([20]))
                      + [pd.Timestamp("2003-06-15")]), None),
])
def test_calendar_frequency_of_stamps_with_gaps(stamps, expected):
    assert timeseries_module.calendar_frequency(stamps) == expected


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


def test_a_dated_first_column_with_a_missing_or_wrong_cell_is_named_not_left_out(tmp_path):
    # One empty date, or a spreadsheet's "Total" row, used to turn the time stamps into a column
    # left out (the season then guessed, the total forecast as the last value); reading the
    # column as the time column names the cell instead, as for a time column named.
    stamps = [f"2020-01-{day:02d}" for day in range(1, 21)]
    rows = [f"{stamp},{day}" for day, stamp in enumerate(stamps)]
    with pytest.raises(DataError, match=r"time column 'date' has missing values at lines 6; "):
        prepared(tmp_path, "date,y\n" + "\n".join(rows[:4] + [",4"] + rows[5:]) + "\n")
    with pytest.raises(DataError, match=r"time column 'date' has values that are not dates at "
                                        r"lines 22 \('Total'\)"):
        prepared(tmp_path, "date,y\n" + "\n".join(rows + ["Total,190"]) + "\n")
    # A column that is mostly not dates, or mostly empty, is no time column.
    schema, _ = prepared(tmp_path, "code,y\n" + "".join(f"c{day},{day}\n" for day in range(9))
                         + "2020-01-01,9\n")
    assert schema.time_column is None and schema.skipped_columns == ["code"]
    rows = "".join(f"2021-12-25,{day}\n" if day == 5 else f",{day}\n" for day in range(30))
    schema, _ = prepared(tmp_path, "promo_date,sales\n" + rows)
    assert schema.time_column is None and schema.skipped_columns == ["promo_date"]


def test_blank_lines_at_the_end_of_a_file_are_not_rows(tmp_path):
    schema, series = prepared(tmp_path, "date,y\n2020-01-01,1\n2020-01-02,2\n\n \n\t\n\n")
    assert schema.time_column == "date" and series.values["y"].tolist() == [1.0, 2.0]
    _, series = prepared(tmp_path, "y\n1\n2\n\n\n")
    assert series.values["y"].tolist() == [1.0, 2.0] and series.fill_report is None


def _dated(stamps):
    return "date,y\n" + "".join(f"{stamp},{i}\n" for i, stamp in enumerate(stamps))


def test_stamps_with_one_utc_offset_keep_their_local_time(tmp_path):
    for suffix in ("Z", "+01:00"):
        stamps = [f"2020-01-{day:02d}T00:00:00{suffix}" for day in (1, 2, 3)]
        _, series = prepared(tmp_path, _dated(stamps))
        assert series.time.tolist() == list(pd.date_range("2020-01-01", periods=3))
        assert series.notes == []


def test_stamps_across_a_daylight_saving_change_are_read_as_utc_and_stay_hourly(tmp_path):
    # Berlin's clocks went from 02:00 (+01:00) to 03:00 (+02:00) on 2021-03-28: six hours
    # from midnight UTC, in Berlin's local time.
    stamps = ["2021-03-28T01:00:00+01:00"] + [f"2021-03-28T{hour:02d}:00:00+02:00"
                                               for hour in range(3, 8)]
    _, series = prepared(tmp_path, _dated(stamps))
    assert series.time.tolist() == list(pd.date_range("2021-03-28", periods=6, freq="h"))
    assert series.notes == ["time column 'date': stamps at several UTC offsets (+01:00, +02:00), "
                            "read as UTC times"]


def test_missing_time_stamps_of_one_series_are_noted_as_many_series_note_them(tmp_path):
    # Two months missing shifted a season's phase after them without a word (the reader of
    # many series said it).
    months = [str(d.date()) for d in pd.date_range("2020-01-01", periods=30, freq="MS")]
    gapped = months[:10] + months[12:]
    _, series = prepared(tmp_path, _dated(gapped))
    assert series.notes == ["2 missing time stamps (gaps; the first after 2020-10-01); not "
                            "filled (rows are read one step apart)"]
    _, whole = prepared(tmp_path, _dated(months))
    assert whole.notes == []
    # Quarters (steps of 90 to 92 days, the most common one half of them) were "irregular";
    # they are counted in the calendar's quarters, as months are.
    for frequency in ("QS", "QE", "YS"):
        stamps = [str(d.date()) for d in pd.date_range("2000-01-01", periods=40, freq=frequency)]
        assert prepared(tmp_path, _dated(stamps))[1].notes == [], frequency
        assert prepared(tmp_path, _dated(stamps[:20] + stamps[22:]))[1].notes == [
            f"2 missing time stamps (gaps; the first after {stamps[19]}); not filled (rows "
            "are read one step apart)"], frequency
    # Business days: a weekend is no gap, a holiday is one.
    days = [str(d.date()) for d in pd.bdate_range("2024-01-01", periods=20)]
    assert prepared(tmp_path, _dated(days))[1].notes == []
    assert prepared(tmp_path, _dated(days[:5] + days[6:]))[1].notes == [
        "1 missing time stamps (gaps; the first after 2024-01-05); not filled (rows are read "
        "one step apart)"]
    # Weekdays at local midnight across a clock change (23:00 or 22:00 UTC): business days.
    berlin = pd.bdate_range("2024-03-18", periods=20, tz="Europe/Berlin")
    assert prepared(tmp_path, _dated([d.isoformat() for d in berlin]))[1].notes[-1:] == [
        "time column 'date': stamps at several UTC offsets (+01:00, +02:00), read as UTC times"]
    # Stamps without a usual step: irregular, no count of missing ones.
    odd = pd.Timestamp("2024-01-01") + pd.to_timedelta(
        np.cumsum([0, *(i * i + 1 for i in range(29))]), unit="h")  # every step another
    assert prepared(tmp_path, _dated([str(d) for d in odd]))[1].notes == [
        "irregular time stamps: the most common step, 0 days 01:00:00, is 1 of the 29 (rows "
        "are read one step apart)"]
    # Numbers: a step of 2 where the rest are 1.
    text = "t,y\n" + "".join(f"{t},{t % 5}\n" for t in [*range(10), *range(11, 20)])
    assert prepared(tmp_path, text, time_column=["t"])[1].notes == [
        "1 missing time stamps (gaps; the first after 9); not filled (rows are read one step "
        "apart)"]


def test_stamps_with_and_without_an_offset_are_refused_naming_the_line(tmp_path):
    text = _dated(["2020-01-01T00:00:00+01:00", "2020-01-02T00:00:00", "2020-01-03T00:00:00Z"])
    with pytest.raises(DataError, match=r"series\.csv: time column 'date' has stamps with a UTC "
                                        r"offset and stamps without one \(line 3: "
                                        r"'2020-01-02T00:00:00'\)"):
        prepared(tmp_path, text)


def test_day_first_dates_are_read_day_first_where_only_that_reads_every_value(tmp_path):
    stamps = [f"{day:02d}/01/2020" for day in range(1, 16)]  # 13/01/2020 has no month 13
    schema, series = prepared(tmp_path, _dated(stamps))
    assert series.time.tolist() == list(pd.date_range("2020-01-01", periods=15))
    assert schema.dayfirst is True
    assert series.notes == ["time column 'date': dates read day first (02/01/2020 is 02 January "
                            "2020): 13/01/2020 has no month 13"]


def test_day_first_dates_after_iso_dates_are_read_day_first(tmp_path):
    # The file's first rows in one form, its later rows (another source) day first: read month
    # first, 02/01/2020 came after 31 January as 1 February and 13/01/2020 went back to January.
    days = pd.date_range("2020-01-01", periods=40)
    stamps = [f"{day:%Y-%m-%d}" for day in days[:20]] + [f"{day:%d/%m/%Y}" for day in days[20:]]
    schema, series = prepared(tmp_path, _dated(stamps))
    assert series.time.tolist() == list(days)
    assert schema.dayfirst is True
    # The same with the time column named (--time-column): the schema decided month first
    # for a column that was not dates of numbers only, and the reading followed it.
    named, again = prepared(tmp_path, _dated(stamps), time_column="date")
    assert again.time.tolist() == list(days) and named.dayfirst is True
    # Before 13 January as well (01/02/2020 read month first is 2 January, after 31 January
    # only as a day-first date).
    days = pd.date_range("2020-01-01", periods=50)
    stamps = [f"{day:%Y-%m-%d}" for day in days[:31]] + [f"{day:%d/%m/%Y}" for day in days[31:]]
    named, again = prepared(tmp_path, _dated(stamps), time_column="date")
    assert again.time.tolist() == list(days) and named.dayfirst is True
    assert series.notes == ["time column 'date' mixes date forms: 20 of numbers only (such as "
                            "21/01/2020) among others (such as 2020-01-01), each read in its own "
                            "form\ntime column 'date': dates read day first (21/01/2020 is 21 "
                            "January 2020): 21/01/2020 has no month 21"]


def test_mixed_date_forms_with_and_without_a_utc_offset_are_still_refused():
    # The mixed-forms reading must not split a column of offset and naive stamps in two.
    column = pd.Series(["2021-01-30T00:00:00+05:00", "2021-01-31T00:00:00+05:00", "01/02/2021",
                        "02/02/2021", "13/02/2021"])
    with pytest.raises(DataError, match=r"f\.csv: time column 't' has stamps with a UTC offset "
                                        r"and stamps without one \(line 4: '01/02/2021'\)"):
        parse_dates(column, "t", "f.csv")
    # Read by position: a repeated index keeps each stamp in its place.
    dates = parse_dates(pd.Series(["2021-01-14", "13/01/2021", "15/01/2021"], index=[0, 0, 1]),
                        "t")[0]
    assert [f"{d:%Y-%m-%d}" for d in dates] == ["2021-01-14", "2021-01-13", "2021-01-15"]


def test_monthly_day_first_dates_are_read_day_first_for_their_even_steps(tmp_path):
    # Month first, 01/02/2015 ... 01/12/2015 would be 2 to 12 January: they would increase too.
    stamps = [f"01/{month:02d}/{year}" for year in (2015, 2016) for month in range(1, 13)]
    schema, series = prepared(tmp_path, _dated(stamps))
    assert series.time.tolist() == list(pd.date_range("2015-01-01", periods=24, freq="MS"))
    assert series.notes == ["time column 'date': dates read day first (01/02/2015 is 01 February "
                            "2015): they are evenly spaced only that way"]
    # A run reads new data as it read its training data, even where the new rows alone are
    # more evenly spaced the other way (three days of January, month first).
    new = pd.DataFrame({"date": ["01/01/2017", "01/02/2017", "01/03/2017"], "y": [1, 2, 3]})
    restored = SeriesSchema.from_dict(json.loads(json.dumps(schema.to_dict())))
    assert restored.prepare(new).time.tolist() == list(
        pd.date_range("2017-01-01", periods=3, freq="MS"))


def test_monthly_month_first_dates_stay_month_first_and_the_summary_says_so(tmp_path):
    stamps = [f"{month:02d}/01/{year}" for year in (2015, 2016) for month in range(1, 13)]
    schema, series = prepared(tmp_path, _dated(stamps))
    assert series.time.tolist() == list(pd.date_range("2015-01-01", periods=24, freq="MS"))
    assert schema.dayfirst is False
    assert series.notes == ["time column 'date': dates read month first (02/01/2015 is 01 "
                            "February 2015): day first they would be less evenly spaced"]
    # Nothing to decide in ISO dates, or in dates whose day and month are the same number.
    for stamps in (["2020-01-02", "2020-01-03"], ["01/01/2020", "02/02/2020"]):
        schema, series = prepared(tmp_path, _dated(stamps))
        assert schema.dayfirst is False and series.notes == []


def test_a_first_column_of_dates_is_read_once_to_find_it_and_its_reading(monkeypatch):
    # Telling day from month first parses a long column twice; finding that the first column
    # holds dates must not parse it twice more (about 1 s per 150,000 day-first stamps).
    calls = []
    real = timeseries_module.parse_dates
    monkeypatch.setattr(timeseries_module, "parse_dates",
                        lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs))
    stamps = [f"01/{month:02d}/{year}" for year in (2015, 2016) for month in range(1, 13)]
    schema = SeriesSchema.infer(pd.DataFrame({"date": stamps, "y": range(24)}))
    assert schema.time_column == "date" and schema.dayfirst is True and len(calls) == 1


def test_a_schema_saved_without_dayfirst_decides_from_each_file(tmp_path):
    schema, _ = prepared(tmp_path, _dated(["2020-01-01", "2020-01-02"]))
    saved = schema.to_dict()
    del saved["dayfirst"]
    old = SeriesSchema.from_dict(saved)
    assert old.dayfirst is None
    new = pd.DataFrame({"date": [f"{day}/01/2020" for day in (11, 12, 13)], "y": [1, 2, 3]})
    assert old.prepare(new).time.dt.day.tolist() == [11, 12, 13]
    with pytest.raises(ValueError, match="the field 'dayfirst' must be true, false or null"):
        SeriesSchema.from_dict({**saved, "dayfirst": 1})


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
         r"series\.csv: column 'y' has missing values at lines 3, 5 \(2 rows\); a run trained "
         r"with --fill ffill or --fill interpolate repairs them"),
        ("t,y\n1,1\n2,abc\n3,3\n4,4\n", {"time_column": "t"},
         r"column 'y' has non-numeric values at lines 3 \('abc'\); expected numbers"),
        ("t,y\n1,1\n2,inf\n3,1e308\n4,-Infinity\n", {"time_column": "t"},
         r"series\.csv: column 'y' has values that are infinite or beyond \+-1e\+15 at lines "
         r"3 \(inf\), 4 \(1e\+308\), 5 \(-inf\); expected finite numbers"),
        ("t,y\n1,1\n2,inf\n3,3\n4,4\n", {"time_column": "t", "fill": "ffill"},
         r"column 'y' has values that are infinite"),
        # pandas reads 1e999 as text: it is a number, infinite, not a missing value that
        # --fill would repair silently.
        ("t,y\n1,1\n2,1e999\n3,3\n4,-1e999\n", {"time_column": "t", "fill": "ffill"},
         r"column 'y' has values that are infinite or beyond \+-1e\+15 at lines 3 \('1e999'\), "
         r"5 \('-1e999'\)"),
        ("t,city,y\n1,Paris,1\n2,Rome,2\n", {"time_column": "t", "features": ["city", "y"],
                                             "targets": ["y"]},
         r"column 'city' is not numeric \(e\.g\. 'Paris' at line 2\); leave it out of "
         r"--features or one-hot encode it with --categorical city"),
        ("t,y\n1,1\n2,2\n", {"targets": ["nope"]},
         r"target column 'nope' not found; the columns are: t, y"),
        ("t,y\n1,1e-300\n2,-3e-17\n3,0\n", {"time_column": "t"},
         r"column 'y' holds no value larger than 3e-17 in magnitude; expected values of at "
         r"least 1e-15 \(the model computes in float32"),
        ("a,b\n1,2\n3,4\n", {},
         r"cannot tell which column to forecast among a, b; name it with --target \(or "
         r"several, forecast together: --target A B\); for each column as a series of its own, "
         r"write the table long, one row per series and time \(id, time, value\)$"),
        ("t;y\n1;10,5\n2;11,5\n", {"time_column": "t"},
         r"no column holds numbers to forecast; y does not \(e\.g\. '10,5': a comma inside a "
         r"number \(decimal or thousands\) is not read\); expected a column of numbers besides "
         r"the time"),
        # An empty column says so (its example was "None").
        ("t,y\n1,\n2,\n", {"time_column": "t"},
         r"no column holds numbers to forecast; y does not \(it has no values\)"),
        # The example is the first value that is not a number, not the first value.
        ('t,y\n1,910\n2,990\n3,"1,000"\n4,"1,100"\n5,"1,200"\n', {"time_column": "t"},
         r"y does not \(e\.g\. '1,000': a comma inside a number \(decimal or thousands\)"),
        # Beside another column of numbers, a column of numbers written with commas was left
        # out without a word on why, and the other column forecast: refused.
        ("Datum;Temperatur;Menge\n01.01.2020;100,50;100\n02.01.2020;106;106\n"
         "03.01.2020;99,75;99\n", {},
         r"column 'Temperatur' holds numbers written with a comma \(e\.g\. '100,50' at line "
         r"2\), which are not read: a point is the decimal mark and numbers have no thousands "
         r"separators; expected numbers such as 1234\.5 \(save the file so\), or the columns "
         r"to read named with --features and --target"),
        ('Date,Close,Volume\n2020-01-01,1.5,"1,240,668"\n2020-01-02,1.6,"1.234,5"\n', {},
         r"column 'Volume' holds numbers written with a comma \(e\.g\. '1,240,668' at line 2"),
        ('Date,Close,Volume\n2020-01-01,1.5,"1,240,668"\n2020-01-02,1.6,"1,308,927"\n',
         {"features": ["Close"], "targets": ["Volume"]},
         r"target column 'Volume' is not numeric \(e\.g\. '1,240,668': a comma inside a "
         r"number \(decimal or thousands\) is not read\); expected numbers to forecast"),
        ("Date,y\n2020-01-02,1\n2020-01-01,2\n", {},
         r"time column 'Date' does not increase at line 3 \('2020-01-01' after '2020-01-02'\)"),
        # Numbers are quoted as the file has them, not as numpy's np.int64(49).
        ("t,y\n48,1\n49,2\n49,3\n", {"time_column": "t"},
         r"time column 't' does not increase at line 4 \(49 after 49\)"),
        ("when,y\n2020-01-01,1\nyesterday,2\n", {"time_column": "when"},
         r"time column 'when' has values that are not dates at lines 3 \('yesterday'\)"),
        # A few numbers written with a comma among numbers were repaired as missing.
        ('t,y\n1,12.5\n2,"12,5"\n3,x\n4,13.5\n5,"1,000"\n6,9\n7,8\n', {"time_column": "t",
                                                                    "fill": "ffill"},
         r"column 'y' has numbers written with a comma at lines 3 \('12,5'\), 6 \('1,000'\), "
         r"which --fill ffill would replace as missing; expected numbers such as 1234\.5"),
        ("t,y\n1,\n2,2\n", {"time_column": "t", "fill": "ffill", "fill_ends": "refuse"},
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


@pytest.mark.parametrize("first", [0, 1])
def test_a_leading_row_index_with_an_empty_header_is_left_out_and_noted(tmp_path, first):
    # DataFrame.to_csv() writes it by default: it hid the dates after it (only the first
    # column is looked at for them) and was a second numeric column beside the target.
    rows = "".join(f"{first + k},2020-01-0{k + 1},{k * 1.5}\n" for k in range(4))
    schema, series = prepared(tmp_path, ",date,sales\n" + rows)
    assert (schema.time_column, schema.targets, schema.features) == ("date", ["sales"], ["sales"])
    assert schema.skipped_columns == [] and series.row_index == "Unnamed: 0"
    assert series.notes[0] == (
        f"column 'Unnamed: 0' (an empty header; {first} to {first + 3}, the row numbers) is the "
        "file's row index, as DataFrame.to_csv() writes it: left out")
    _, series = prepared(tmp_path, ",sales\n" + "".join(f"{first + k},{k}\n" for k in range(4)))
    assert series.values.columns.tolist() == ["sales"] and series.row_index == "Unnamed: 0"


@pytest.mark.parametrize("index", ["0 1 3", "1 0 2", "0 0 1", "0.0 1.0 2.0", "5 6 7"])
def test_an_unnamed_first_column_that_is_not_the_row_numbers_is_read_as_before(tmp_path, index):
    text = ",sales\n" + "".join(f"{i},{k}\n" for k, i in enumerate(index.split()))
    with pytest.raises(DataError, match="cannot tell which column to forecast among "
                                        "Unnamed: 0, sales"):
        prepared(tmp_path, text)


def test_a_row_index_named_by_the_user_is_read_as_any_column(tmp_path):
    schema, series = prepared(tmp_path, ",sales\n0,5\n1,6\n2,7\n", targets=["sales"],
                              features=["Unnamed: 0", "sales"])
    assert schema.features == ["Unnamed: 0", "sales"] and series.row_index is None
    assert series.values["Unnamed: 0"].tolist() == [0, 1, 2] and series.notes == []


def test_an_empty_column_from_trailing_delimiters_is_left_out_not_a_target(tmp_path):
    schema, series = prepared(tmp_path, "date,value,\n2020-01-01,1,\n2020-01-02,2,\n")
    assert schema.targets == ["value"] and schema.skipped_columns == ["Unnamed: 2"]
    assert series.values.columns.tolist() == ["value"]


def test_a_field_beyond_the_csv_modules_limit_is_one_line(tmp_path):
    path = write_csv(tmp_path, "date,value\n2020-01-01," + "x" * 200_000 + "\n2020-01-02,3\n")
    with pytest.raises(DataError, match=r"not a well-formed CSV file \(field larger than field "
                                        r"limit"):
        read_csv(path)


def test_a_delimiter_inside_a_quoted_header_name_does_not_count(tmp_path):
    frame = read_csv(write_csv(tmp_path, 'date;"price, eur"\n2020-01-01;1.5\n2020-01-02;2.5\n'))
    assert list(frame.columns) == ["date", "price, eur"] and frame.attrs["delimiter"] == ";"
    assert frame["price, eur"].tolist() == [1.5, 2.5]


@pytest.mark.parametrize("row,count", [("3,3,3", 3), ("3", 1)])
def test_a_row_with_more_or_fewer_fields_than_the_header_is_refused_by_line(tmp_path, row, count):
    path = write_csv(tmp_path, f"t,y\n1,1\n2,2\n{row}\n4,4\n")
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 4: the row has {count} fields separated by ','; expected 2 like the "
        "header ('t,y')"
    )):
        read_csv(path)


def test_a_column_name_twice_in_the_header_is_refused(tmp_path):
    # pandas read the second as "value.1", which the next message named as if the file had it.
    path = write_csv(tmp_path, "t,value,value\n1,1,2\n2,2,3\n")
    with pytest.raises(DataError, match=re.escape(
            f"{path}, line 1: the header names the column 'value' twice (fields 2 and 3); "
            "expected distinct column names")):
        read_csv(path)
    # Empty names (a spreadsheet's trailing empty columns) are pandas' to name by position.
    path = write_csv(tmp_path, "t,value,,\n1,1,,\n2,2,,\n")
    assert list(read_csv(path).columns[:2]) == ["t", "value"]


def test_a_line_over_the_limit_is_refused_without_reading_the_file_whole(tmp_path, monkeypatch):
    import seqlab.data.timeseries as timeseries

    monkeypatch.setattr(timeseries, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(timeseries, "_READ_BLOCK", 300)
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

        def read(self, size=-1):
            block = self.file.read(size)
            reads.append(len(block))
            return block

    monkeypatch.setattr(timeseries, "open",
                        lambda *a, **k: CountingFile(real_open(*a, **k)), raising=False)
    with pytest.raises(DataError, match=re.escape(
        f"{path}, line 3: the line is longer than the limit of 1000 bytes"
    )):
        read_csv(path)
    assert sum(reads) <= 1000 + 2 * 300  # of 10,009 bytes


@pytest.mark.parametrize("ending", [b"\r", b"\r\n", b"\n"], ids=["cr", "crlf", "lf"])
def test_the_line_limit_counts_lines_as_text_mode_does(tmp_path, monkeypatch, ending):
    # A file of old-Mac line ends over the limit was one line, refused; a "\r\n" split
    # between two blocks read must end one line, not two.
    import seqlab.data.timeseries as timeseries

    monkeypatch.setattr(timeseries, "MAX_LINE_BYTES", 40)
    monkeypatch.setattr(timeseries, "_READ_BLOCK", 7)
    rows = [b"t,y"] + [b"%d,%d" % (t, t * t) for t in range(30)]
    path = tmp_path / "s.csv"
    path.write_bytes(ending.join(rows) + ending)
    frame = read_csv(path)
    assert frame["y"].tolist() == [t * t for t in range(30)]
    path.write_bytes(ending.join(rows[:5] + [b"9," + b"9" * 50] + rows[5:]) + ending)
    with pytest.raises(DataError, match=re.escape(f"{path}, line 6: the line is longer than "
                                                  "the limit of 40 bytes")):
        read_csv(path)


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


# --- rows --fill cannot repair (leading and trailing gaps) ---------------------------------------


GAPS = ("Date,x,y\n2020-01-01,1,\n2020-01-02,2,\n2020-01-03,3,3\n2020-01-04,4,\n"
        "2020-01-05,5,5\n2020-01-06,6,6\n2020-01-07,7,\n")


def test_interpolate_drops_the_rows_before_the_first_and_after_the_last_value_and_says_which(
        tmp_path):
    schema, series = prepared(tmp_path, GAPS, targets=["y"], fill="interpolate")
    assert schema.fill_ends == "drop"
    # Lines 2-3 come before y's first value, line 8 after its last: nothing to interpolate.
    assert series.values["y"].tolist() == [3.0, 4.0, 5.0, 6.0]
    assert series.values["x"].tolist() == [3.0, 4.0, 5.0, 6.0]
    assert series.time.tolist() == list(pd.date_range("2020-01-03", periods=4))
    assert series.fill_report == {
        "method": "interpolate",
        "filled_values": {"y": 1},
        "dropped_rows": {
            "first": {"rows": 2, "lines": [2, 3], "time": ["2020-01-01", "2020-01-02"],
                      "column": "y"},
            "last": {"rows": 1, "lines": [8, 8], "time": ["2020-01-07", "2020-01-07"],
                     "column": "y"},
        },
    }
    assert series.notes == [
        "filled with interpolate: {'y': 1}",
        "dropped the first 2 rows (lines 2-3, 2020-01-01 to 2020-01-02): y has no value before "
        "line 4 to interpolate from (--fill-ends drop)",
        "dropped the last row (line 8, 2020-01-07): y has no value after line 7 to interpolate "
        "to (--fill-ends drop)",
    ]


def test_ffill_drops_only_the_leading_rows_and_carries_the_last_value_forward(tmp_path):
    _, series = prepared(tmp_path, GAPS, targets=["y"], fill="ffill")
    assert series.values["y"].tolist() == [3.0, 3.0, 5.0, 6.0, 6.0]
    assert list(series.fill_report["dropped_rows"]) == ["first"]
    assert series.fill_report["filled_values"] == {"y": 2}


def test_nearest_copies_the_first_and_last_values_to_the_ends(tmp_path):
    _, series = prepared(tmp_path, GAPS, targets=["y"], fill="interpolate", fill_ends="nearest")
    assert series.values["y"].tolist() == [3.0, 3.0, 3.0, 4.0, 5.0, 6.0, 6.0]
    assert len(series.time) == 7
    assert series.fill_report == {"method": "interpolate", "filled_values": {"y": 4},
                                  "filled_at_ends": {"y": 3}}
    assert series.notes[-1] == ("of them copied from the nearest value at the ends of the series "
                                "(--fill-ends nearest): {'y': 3}")


def test_refuse_names_the_leading_and_trailing_lines(tmp_path):
    with pytest.raises(DataError, match=r"series\.csv: column 'y': --fill interpolate cannot "
                                        r"repair lines 2, 3, 8 \(no value before them to carry "
                                        r"or interpolate from, or after them to interpolate to\)"):
        prepared(tmp_path, GAPS, targets=["y"], fill="interpolate", fill_ends="refuse")


def test_a_schema_saved_without_fill_ends_refuses_the_ends_as_0_1_0_did(tmp_path):
    schema, _ = prepared(tmp_path, GAPS, targets=["y"], fill="interpolate")
    saved = schema.to_dict()
    del saved["fill_ends"]
    old = SeriesSchema.from_dict(saved)
    assert old.fill_ends == "refuse"
    with pytest.raises(DataError, match=r"cannot repair lines 2, 3, 8"):
        old.prepare(read_csv(tmp_path / "series.csv"), source="series.csv")


def test_a_category_missing_at_the_start_is_dropped_with_its_rows(tmp_path):
    schema, series = prepared(tmp_path, "day,y\n,1\nmon,2\n,3\ntue,4\n", categorical=["day"],
                              targets=["y"], fill="ffill")
    assert series.values["day=mon"].tolist() == [1.0, 1.0, 0.0]
    assert series.values["y"].tolist() == [2.0, 3.0, 4.0]
    assert series.fill_report["dropped_rows"]["first"]["column"] == "day"
    assert series.fill_report["dropped_rows"]["first"]["time"] is None


@pytest.mark.parametrize(
    "text,message",
    [

        ("t,x,y\n1,,1\n2,2,\n3,3,\n",
         r"--fill interpolate --fill-ends drop leaves no rows: column 'x' has no value before "
         r"line 3, and column 'y' none after line 2"),
    ],
)
def test_dropping_that_leaves_nothing_is_an_error(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        prepared(tmp_path, text, time_column="t", targets=["y"], fill="interpolate")


def test_a_feature_named_with_no_value_cannot_be_filled(tmp_path):
    # Not named, it is left out (test_an_empty_column_from_trailing_delimiters_...).
    with pytest.raises(DataError, match=r"column 'x' has no values; --fill interpolate needs "
                                        r"at least one"):
        prepared(tmp_path, "t,x,y\n1,,1\n2,,2\n", time_column="t", targets=["y"],
                 features=["x", "y"], fill="interpolate")


# --- time stamps split over columns --------------------------------------------------------------


def split_time_text(n_rows=30, names=("year", "month", "day", "hour"), start="2013-02-28 20:00"):
    """An hourly series whose time stamps are split over columns, as air-quality files have."""
    stamps = pd.date_range(start, periods=n_rows, freq="h")
    frame = pd.DataFrame({names[0]: stamps.year, names[1]: stamps.month, names[2]: stamps.day,
                          names[3]: stamps.hour, "pm": np.arange(n_rows) % 24 * 1.5,
                          "temp": np.linspace(-3, 3, n_rows)})
    return frame.to_csv(index=False), stamps


@pytest.mark.parametrize("time_column", [["year", "month", "day", "hour"], "year,month,day,hour",
                                         ["year,month,day,hour"], None])
def test_time_stamps_are_built_from_year_month_day_hour_columns(tmp_path, time_column):
    text, stamps = split_time_text()
    schema, series = prepared(tmp_path, text, time_column=time_column, targets=["pm"])
    assert schema.time_column == ["year", "month", "day", "hour"]
    assert schema.features == ["pm", "temp"] and schema.input_columns == ["pm", "temp"]
    assert schema.time_label == "time"
    assert series.time.tolist() == list(stamps)
    assert series.notes == ["time stamps from the columns year, month, day, hour: "
                            "2013-02-28 20:00:00 to 2013-03-02 01:00:00"]
    assert future_time_labels(series.time, 2) == ["2013-03-02 02:00:00", "2013-03-02 03:00:00"]
    restored = SeriesSchema.from_dict(json.loads(json.dumps(schema.to_dict())))
    assert restored.prepare(read_csv(tmp_path / "series.csv")).time.tolist() == list(stamps)


def test_columns_named_otherwise_are_year_month_day_hour_in_the_order_given(tmp_path):
    text, stamps = split_time_text(names=("Jahr", "Monat", "Tag", "Stunde"))
    schema, series = prepared(tmp_path, text, time_column=["Jahr", "Monat", "Tag", "Stunde"],
                              targets=["pm"])
    assert series.time.tolist() == list(stamps)
    assert series.notes[0].startswith("time stamps from the columns Jahr (year), Monat (month), "
                                      "Tag (day), Stunde (hour): ")


def test_named_parts_may_come_in_any_order_and_any_case(tmp_path):
    text, stamps = split_time_text(names=("Year", "months", "Day", "HOUR"))
    frame = pd.read_csv(io.StringIO(text))[["HOUR", "pm", "Day", "months", "temp", "Year"]]
    _, series = prepared(tmp_path, frame.to_csv(index=False),
                         time_column=["HOUR", "Day", "months", "Year"], targets=["pm"])
    assert series.time.tolist() == list(stamps)


def test_year_and_month_columns_make_month_starts(tmp_path):
    _, series = prepared(tmp_path, "year,month,sales\n2019,11,1\n2019,12,2\n2020,1,3\n",
                         time_column=["year", "month"])
    assert series.time.tolist() == list(pd.date_range("2019-11-01", periods=3, freq="MS"))


@pytest.mark.parametrize(
    "text,time_column,message",
    [
        ("year,month,day,y\n2020,1,1,1\n", ["year", "month", "hour"],
         r"series\.csv: time column 'hour' not found; the columns are: year, month, day, y"),
        ("year,month,day,y\n2020,1,1,1\n2020,1,2.5,2\n2020,1,x,3\n", "year,month,day",
         r"series\.csv: time column 'day' \(day\) has values that are not whole numbers at "
         r"lines 3 \('2\.5'\), 4 \('x'\)"),
        ("year,month,day,y\n2020,1,1,1\n2020,1,,2\n", ["year", "month", "day"],
         r"time column 'day' \(day\) has missing values at lines 3; expected a day on every row"),
        ("year,month,day,hour,y\n2020,1,1,23,1\n2020,1,1,25,2\n", None,
         r"time column 'hour' \(hour\) has values that are not whole numbers from 0 to 24 at "
         r"lines 3 \(25\)"),
        ("year,month,day,y\n2021,2,28,1\n2021,2,29,2\n", None,
         r"time columns year, month, day do not make a date at lines 3 "
         r"\('year=2021 month=2 day=29'\)"),
        ("year,month,day,y\n2021,2,28,1\n2021,2,27,2\n", None,
         r"time columns year, month, day does not increase at line 3 \('2021-02-27' after "
         r"'2021-02-28'\)"),
        ("year,day,y\n2021,2,1\n", ["year", "day"],
         r"time columns year, day hold year, day; expected year, month\[, day\[, hour"),
    ],
)
def test_bad_time_columns_raise_data_errors_naming_file_column_and_line(tmp_path, text,
                                                                        time_column, message):
    with pytest.raises(DataError, match=message):
        prepared(tmp_path, text, time_column=time_column, targets=["y"])


@pytest.mark.parametrize("value, message", [
    ("6.5", r"time column 'hour' \(hour\) has values that are not whole numbers from 0 to 24 at "
            r"lines 12 \(6\.5\)"),
    ("", r"time column 'hour' \(hour\) has missing values at lines 12; expected a hour on every "
         r"row"),
])
def test_a_few_bad_time_parts_are_refused_not_read_as_no_time(tmp_path, value, message):
    # One hour of 6.5 (or none) among whole hours turned the stamps' detection off, silently:
    # the file was read without time stamps, its season estimated as 25.
    text, _ = split_time_text()
    lines = text.splitlines()
    fields = lines[11].split(",")
    fields[3] = value
    lines[11] = ",".join(fields)
    with pytest.raises(DataError, match=message):
        prepared(tmp_path, "\n".join(lines) + "\n", targets=["pm"])


def test_year_and_month_columns_holding_other_numbers_are_not_taken_for_time(tmp_path):
    schema, _ = prepared(tmp_path, "year,month,y\n2020,1.5,1\n2020,2,2\n", targets=["y"])
    assert schema.time_column is None and schema.features == ["year", "month", "y"]


# --- line endings -------------------------------------------------------------------------------


@pytest.mark.parametrize("line_break", ["\r\n", "\r"])
def test_windows_and_old_mac_line_endings_leave_no_carriage_return(tmp_path, line_break):
    text = line_break.join(["Date,city,Temp", "2020-01-01,Paris,1.5", "2020-01-02,Rome,2.5", "",
                            "2020-01-04,Oslo,4.5", ""])
    path = tmp_path / "windows.csv"
    path.write_bytes(text.encode("utf-8"))
    frame = read_csv(path)
    assert list(frame.columns) == ["Date", "city", "Temp"]
    assert frame["city"].tolist()[:2] == ["Paris", "Rome"] and frame["city"].iloc[3] == "Oslo"
    assert frame["Temp"].tolist()[:2] == [1.5, 2.5]
    assert not any("\r" in str(value) for value in frame.to_numpy().ravel())
    # The blank line is a missing row at its own line, as with "\n" endings.
    with pytest.raises(DataError, match=r"time column 'Date' has missing values at lines 4;"):
        SeriesSchema.infer(frame, time_column="Date", targets=["Temp"]).prepare(frame)
    # pandas alone would keep the "\r" of a line break inside quotes.
    path.write_bytes(line_break.join(["t,city,y", '1,"Paris', 'Nord",1.5', ""]).encode("utf-8"))
    assert read_csv(path)["city"].tolist() == ["Paris\nNord"]


# --- seasons from the time stamps ----------------------------------------------------------------


@pytest.mark.parametrize(
    "frequency,expected",
    [
        ("h", (24, "hourly time stamps", "a day")),
        ("15min", (96, "time stamps 15 minutes apart", "a day")),
        ("D", (7, "daily time stamps", "a week")),
        ("B", (5, "business-day time stamps", "a week")),
        ("W-SUN", (52, "weekly time stamps", "a year")),
        ("MS", (12, "monthly time stamps", "a year")),
        ("ME", (12, "monthly time stamps", "a year")),
        ("QS", (4, "quarterly time stamps", "a year")),
        ("YS", None),
    ],
)
def test_calendar_season_of_each_frequency(frequency, expected):
    stamps = pd.Series(pd.date_range("2019-12-30", periods=40, freq=frequency))
    assert calendar_season(stamps) == expected


def test_irregular_or_numeric_time_stamps_have_no_calendar_season():
    days = pd.date_range("2020-01-01", periods=40, freq="D")
    irregular = pd.Series(days.delete(np.arange(1, 40, 3)))  # a third of the days missing
    assert calendar_season(irregular) is None
    assert calendar_season(pd.Series(np.arange(40.0))) is None
    assert calendar_season(None) is None


def test_a_long_hourly_series_gets_season_24_from_its_time_stamps():
    rng = np.random.default_rng(0)
    hours = pd.Series(pd.date_range("2010-01-01", periods=40_000, freq="h"))
    steps = np.arange(40_000)
    # A daily cycle on a slow random walk: the autocorrelation alone peaks far beyond a day.
    # (No timing asserted: the autocorrelation is one FFT, and speed is benchmarks' matter.)
    values = np.sin(2 * np.pi * steps / 24) + np.cumsum(rng.normal(size=40_000)) * 0.1
    assert choose_season(values, hours, "pm") == (24, "from the hourly time stamps (24 a day)")
    # The autocorrelation's highest peak lies far beyond a day, and within the noise there.
    peak = season_peak(values)
    assert peak.lag > 1000 and not peak.significant and estimate_season(values) == 1


def test_hourly_stamps_take_the_week_where_it_repeats_more_strongly_than_the_day():
    # Weekends unlike weekdays: the day's season (24) left the lookback short of last week and
    # the model's test RMSE 77 % above the week's.
    rng = np.random.default_rng(0)
    hours = pd.Series(pd.date_range("2024-01-01", periods=16 * 168, freq="h"))
    hour, day = hours.dt.hour.to_numpy(), hours.dt.dayofweek.to_numpy()
    values = (100 + 5 * np.sin(2 * np.pi * hour / 24) - 40 * (day >= 5)
              - 20 * ((day == 0) & (hour < 12)) + rng.normal(0, 3, hour.size))
    season, source = choose_season(values, hours, "load")
    assert season == 168
    assert source.startswith("from the hourly time stamps (168 a week: its autocorrelation 0.")
    # A week the rows cannot hold three times keeps the day.
    assert choose_season(values[:400], hours[:400], "load")[0] == 24


def test_time_stamps_contradicted_by_the_data_give_way_to_the_autocorrelation():
    days = pd.Series(pd.date_range("2021-01-01", periods=168, freq="D"))
    values = 10 + 3 * np.sin(2 * np.pi * np.arange(168) / 12)
    season, source = choose_season(values, days, "demand")
    assert season == 12
    assert source == ("estimated from the autocorrelation of demand (train split); the daily time "
                      "stamps suggest 7, but the autocorrelation there is -0.84")


def test_a_calendar_season_longer_than_a_third_of_the_rows_is_not_used():
    weeks = pd.Series(pd.date_range("2020-01-05", periods=100, freq="W"))
    values = np.sin(2 * np.pi * np.arange(100) / 5)
    assert choose_season(values, weeks, "y") == (
        5, "estimated from the autocorrelation of y (train split); the weekly time stamps "
        "suggest 52, more than a third of the 100 training rows")


def test_without_a_peak_the_season_is_1_and_says_so():
    assert choose_season(np.arange(50.0)) == (
        1, "estimated from the autocorrelation (train split): no peak, so the seasonal naive is "
        "the naive forecast")


def test_the_autocorrelation_search_stops_at_a_third_of_the_rows():
    steps = np.arange(600)
    # A strong cycle of 270 rows (fits only twice) over a weak one of 10 rows.
    values = 5 * np.sin(2 * np.pi * steps / 270) + np.sin(2 * np.pi * steps / 10)
    # Searched, the long cycle is the highest peak, but two repeats cannot clear the noise bound:
    # the 260 large autocorrelations before it widen Bartlett's standard error past 0.8.
    peak = season_peak(values, max_lag=300)
    assert 250 <= peak.lag <= 280 and peak.correlation > 0.5 and not peak.significant
    assert estimate_season(values) == 10


def test_the_fft_autocorrelation_equals_the_sums_of_products():
    values = np.random.default_rng(1).normal(size=301)
    expected = [np.dot(values[: len(values) - lag], values[lag:]) / np.dot(values, values)
                for lag in range(40)]
    np.testing.assert_allclose(_autocorrelation(values, 39), expected, atol=1e-12)


def test_future_time_labels_of_hourly_data_keep_the_time_of_day_at_midnight():
    hours = pd.Series(pd.date_range("2020-01-01 21:00", periods=3, freq="h"))
    assert future_time_labels(hours, 1) == ["2020-01-02 00:00:00"]


def test_a_series_of_one_row_is_too_short_not_a_linear_algebra_error(tmp_path):
    # Found by tests/test_fuzz.py: estimating the season of one row failed in numpy.polyfit.
    assert estimate_season(np.array([0.0])) == 1
    assert estimate_season(np.array([])) == 1


def test_window_arrays_limited_to_evenly_spaced_windows():
    windows = WindowGenerator(pd.DataFrame({"y": np.arange(100.0)}), lookback=4, horizon=1,
                              targets=["y"], scaler="minmax")
    starts = windows.window_starts("test")
    assert len(windows.arrays("test", limit=len(starts))[0]) == len(starts)
    inputs, _ = windows.arrays("test", limit=3)
    first_rows = windows.scaler.inverse_transform(inputs[:, 0, :], ["y"]).ravel()
    np.testing.assert_allclose(first_rows, starts[[0, len(starts) // 2, -1]], atol=1e-4)
    for limit in (1, 2.5):
        with pytest.raises(ValueError, match="limit must be an integer of at least 2"):
            windows.arrays("test", limit=limit)


def test_a_message_lists_at_most_twenty_columns(tmp_path):
    # 5,000 numeric columns gave a line of 35,000 characters naming every one.
    header = ",".join(["date"] + [f"c{i}" for i in range(100)])
    rows = "".join(f"2020-01-{day:02d}," + ",".join(["1"] * 100) + "\n" for day in range(1, 29))
    with pytest.raises(DataError, match=r"cannot tell which column to forecast among c0, c1, .*, "
                                        r"c19 and 80 more; name it with --target "):
        prepared(tmp_path, header + "\n" + rows)
    with pytest.raises(DataError, match=r"target column 'nope' not found; the columns are: date, "
                                        r"c0, .*, c18 and 81 more$"):
        prepared(tmp_path, header + "\n" + rows, targets=["nope"])
