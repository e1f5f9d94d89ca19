"""`GlobalForecaster`, `panel_training_dataset` and `last_windows`: shapes, scale invariance,
flat windows, the panel's draws checked against NumPy slicing, determinism, the `.keras` round
trip, and a tiny fit that beats the naive forecast."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.models import GlobalForecaster, last_windows, panel_training_dataset
from seqlab.models.global_forecaster import (
    LEGACY_SCALE_FLOOR,
    default_min_history,
    default_settings,
    minimum_series_length,
)

RNG = np.random.default_rng(0)
WINDOWS = (RNG.normal(size=(5, 8)) + 3.0).astype("float32")
SMALL = dict(units=8, layers=2, blocks=2)


def tiny(kind, **options):
    return GlobalForecaster(lookback=8, horizon=3, kind=kind, seed=1, **{**SMALL, **options})


@pytest.mark.parametrize("kind", ["nbeats", "gru", "lstm"])
def test_output_shape(kind):
    assert tuple(tiny(kind)(WINDOWS).shape) == (5, 3)


@pytest.mark.parametrize("kind", ["nbeats", "gru", "lstm"])
def test_a_window_of_another_length_is_refused_naming_the_lookback(kind):
    """A recurrent kind read a window of 8 values with lookback 12 and forecast silently (the
    nbeats kind failed in its first Dense layer, naming neither)."""
    model = GlobalForecaster(lookback=12, horizon=3, kind=kind, seed=1, **SMALL)
    for shape in ((2, 8), (2, 13), (2, 12, 1)):
        with pytest.raises(ValueError, match=r"GlobalForecaster expects windows of shape "
                                             r"\[batch, lookback\] = \[batch, 12\]"):
            model(np.ones(shape, "float32"))
    traced = tf.function(model, input_signature=[tf.TensorSpec([None, None])])
    assert tuple(traced(tf.ones([2, 12])).shape) == (2, 3)
    # Whole numbers forecast as their floats do (their statistics failed on int64).
    counts = np.arange(24).reshape(2, 12)
    np.testing.assert_array_equal(model(counts), model(counts.astype("float32")))
    with pytest.raises(tf.errors.InvalidArgumentError, match="GlobalForecaster expects windows"):
        traced(tf.ones([2, 8]))


@pytest.mark.parametrize("kind, normalization", [("nbeats", "shift"), ("gru", "shift"),
                                                 ("nbeats", "level")])
def test_scaling_a_window_by_c_scales_its_forecast_by_c(kind, normalization):
    model = tiny(kind, normalization=normalization)
    model.build((None, 8))
    # Biases not zero: a ReLU stack without them is homogeneous, blind to the scale it reads on.
    rng = np.random.default_rng(2)
    model.set_weights([rng.normal(0, 0.5, w.shape) for w in model.get_weights()])
    base = np.asarray(model(WINDOWS))
    for factor in (1e-9, 1e-3, 7.0, 1e4, 1e12):
        # float32 rounding of the normalised window: relative 1e-4 is ample. (With the
        # legacy absolute floor, 1e-9 read these windows as nearly flat.)
        np.testing.assert_allclose(np.asarray(model(WINDOWS * factor)), base * factor,
                                   rtol=1e-4, atol=1e-4 * factor)


@pytest.mark.parametrize("normalization", ["level", "shift"])
def test_constant_and_zero_windows_give_finite_forecasts(normalization):
    model = tiny("nbeats", normalization=normalization)
    windows = np.stack([np.zeros(8), np.full(8, 5.0), np.full(8, -2.0),
                        np.r_[np.zeros(7), 1.0]]).astype("float32")
    forecast = np.asarray(model(windows))
    assert np.isfinite(forecast).all()
    # An all-zero window has no scale: it forecasts exactly 0 (the naive forecast; it was
    # +-1e-9 with the legacy floor, which M4's sMAPE scores 200 against an actual 0) ...
    np.testing.assert_array_equal(forecast[0], np.zeros(3))
    assert np.abs(forecast[1:]).min() > 0
    # ... and adds nothing to the loss, whatever its target.
    model.compile(loss="mae")
    targets = np.array([[1e6] * 3, [5.0] * 3, [-2.0] * 3, [1.0] * 3], "float32")
    with_zero = float(model.compute_loss(x=windows, y=targets, y_pred=model(windows)))
    without = float(model.compute_loss(x=windows[1:], y=targets[1:],
                                       y_pred=model(windows[1:])))
    assert with_zero == pytest.approx(without * 3 / 4, rel=1e-5)
    np.testing.assert_array_equal(model.normalized_targets(windows, targets)[0], np.zeros(3))


def test_a_network_saved_before_the_scale_floor_was_a_setting_keeps_the_legacy_floor(tmp_path):
    # A config without `scale_floor` (written before it existed) was trained with windows read
    # on a scale of at least LEGACY_SCALE_FLOOR; it is rebuilt with that floor.
    model = tiny("nbeats")
    model.build((None, 8))
    # Biases not zero: a ReLU stack without them is homogeneous, blind to the scale it reads on.
    rng = np.random.default_rng(2)
    model.set_weights([rng.normal(0, 0.5, w.shape) for w in model.get_weights()])
    config = model.get_config()
    assert config["scale_floor"] == 0.0
    del config["scale_floor"]
    old = GlobalForecaster.from_config(config)
    assert old.scale_floor == LEGACY_SCALE_FLOOR
    old.build((None, 8))
    old.set_weights(model.get_weights())
    tiny_windows = WINDOWS * 1e-9
    # Read on the floor (1e-6, far above these windows' spread) the forecast is not the
    # network's reading of the windows scaled: it differs from the new model's.
    assert not np.allclose(np.asarray(old(tiny_windows)), np.asarray(model(tiny_windows)),
                           rtol=1e-3, atol=0)
    np.testing.assert_allclose(np.asarray(old(WINDOWS)), np.asarray(model(WINDOWS)), rtol=1e-6)
    with pytest.raises(ValueError, match="scale_floor must be finite and at least 0"):
        tiny("nbeats", scale_floor=-1.0)


@pytest.mark.parametrize("normalization, scale", [("level", 4.5), ("shift", np.sqrt(5.25))])
def test_the_loss_is_computed_on_the_normalised_scale(normalization, scale):
    """The window 1..8 has level (mean of |values|) 4.5 and standard deviation sqrt(5.25)."""
    model = tiny("nbeats", normalization=normalization)
    model.compile(loss="mae")
    windows = np.array([[1, 2, 3, 4, 5, 6, 7, 8]], "float32")
    targets = np.array([[9, 10, 11]], "float32")
    forecast = model(windows)
    loss = float(model.compute_loss(x=windows, y=targets, y_pred=forecast))
    assert loss == pytest.approx(np.mean(np.abs(targets - np.asarray(forecast))) / scale,
                                 rel=1e-5)
    # A series a thousand times larger has the same loss.
    big = float(model.compute_loss(x=windows * 1e3, y=targets * 1e3,
                                   y_pred=model(windows * 1e3)))
    assert big == pytest.approx(loss, rel=1e-4)


def test_bad_settings_are_refused_with_the_value():
    with pytest.raises(ValueError, match="kind must be one of nbeats, gru, lstm. Received: "
                                         "kind='cnn'"):
        GlobalForecaster(lookback=4, horizon=2, kind="cnn")
    with pytest.raises(ValueError, match="lookback must be at least 1. Received: lookback=0"):
        GlobalForecaster(lookback=0, horizon=2)


@pytest.mark.parametrize("kind", ["nbeats", "gru"])
def test_keras_file_round_trip_gives_the_same_forecasts(kind, tmp_path):
    model = tiny(kind, dropout=0.1)
    model.build()
    assert GlobalForecaster.from_config(model.get_config()).get_config() == model.get_config()
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(loaded, GlobalForecaster)
    np.testing.assert_allclose(loaded.predict(WINDOWS, verbose=0),
                               model.predict(WINDOWS, verbose=0), atol=1e-6)


# --- the panel's windows ------------------------------------------------------------------------

# Values unique across the panel (offset per series), so a window names its series and place.
PANEL = [np.arange(length, dtype="float32") + 1000.0 * index
         for index, length in enumerate([5, 12, 30, 9])]


def padded(values, lookback):
    return np.concatenate([np.full(lookback, values[0]), values])


def locate(window, target, lookback, horizon):
    """`(series, origin)` whose padded slice equals the pair, or fail."""
    series = int(target[0] // 1000)
    values = PANEL[series]
    origin = int(target[0] - 1000 * series)
    np.testing.assert_array_equal(target, values[origin:origin + horizon])
    np.testing.assert_array_equal(window,
                                  padded(values, lookback)[origin:origin + lookback])
    return series, origin


def draws(dataset, batches):
    return [(np.asarray(w), np.asarray(t)) for w, t in dataset.take(batches)]


def test_every_pair_is_a_padded_slice_of_a_series_and_every_series_is_drawn():
    lookback, horizon = 6, 2
    min_history = default_min_history(lookback, horizon)
    assert min_history == 2
    dataset = panel_training_dataset(PANEL, lookback, horizon, batch_size=64, seed=3)
    counts = np.zeros(len(PANEL))
    for windows, targets in draws(dataset, 20):
        assert windows.shape == (64, lookback) and targets.shape == (64, horizon)
        assert windows.dtype == targets.dtype == np.float32
        for window, target in zip(windows, targets):
            series, origin = locate(window, target, lookback, horizon)
            assert min_history <= origin <= len(PANEL[series]) - horizon
            counts[series] += 1
    # Uniform over series, not lengths: 1,280 draws, 320 expected each (5 sigma is about 75).
    assert counts.min() > 240 and counts.max() < 400


def test_origins_cover_the_valid_range_including_padded_windows():
    dataset = panel_training_dataset(PANEL[:1] + PANEL[3:], 4, 2, batch_size=128, seed=0,
                                     min_history=1)
    seen = {0: set(), 3: set()}
    for windows, targets in draws(dataset, 4):
        for window, target in zip(windows, targets):
            series, origin = locate(window, target, 4, 2)
            seen[series].add(origin)
    assert seen[0] == {1, 2, 3} and seen[3] == set(range(1, 8))


def test_the_same_seed_gives_the_same_batches():
    first = draws(panel_training_dataset(PANEL, 6, 2, batch_size=16, seed=7), 3)
    again = draws(panel_training_dataset(PANEL, 6, 2, batch_size=16, seed=7), 3)
    other = draws(panel_training_dataset(PANEL, 6, 2, batch_size=16, seed=8), 3)
    for (w1, t1), (w2, t2) in zip(first, again):
        np.testing.assert_array_equal(w1, w2)
        np.testing.assert_array_equal(t1, t2)
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(first, other))


def test_too_short_series_are_refused_naming_how_many_and_the_minimum():
    assert minimum_series_length(6, 2) == 4
    with pytest.raises(ValueError, match=r"2 of 3 series are too short for one training "
                                         r"window: each needs at least 7 values \(min_history=5"
                                         r" \+ horizon=2\)\. Received: series 0 \(3 values\), "
                                         r"2 \(6 values\)"):
        panel_training_dataset([np.ones(3), np.ones(7), np.ones(6)], 6, 2, batch_size=4,
                               seed=0, min_history=5)


def test_last_windows_are_the_padded_ends():
    windows = last_windows([np.arange(3.0), np.arange(10.0)], 5)
    np.testing.assert_array_equal(windows, [[0, 0, 0, 1, 2], [5, 6, 7, 8, 9]])
    assert windows.dtype == np.float32


# --- a tiny fit ---------------------------------------------------------------------------------


def test_a_tiny_fit_lowers_the_loss_and_beats_the_naive_forecast():
    """Three seasonal series (period 6) of scales 1, 10 and 100: one network fits them all."""
    keras.utils.set_random_seed(0)
    steps = np.arange(120)
    rng = np.random.default_rng(1)
    series = [scale * (5 + np.sin(2 * np.pi * (steps + phase) / 6)
                       + 0.05 * rng.normal(size=steps.size))
              for scale, phase in ((1, 0), (10, 2), (100, 4))]
    lookback, horizon = 12, 6
    train, test = [s[:-horizon] for s in series], np.stack([s[-horizon:] for s in series])
    model = GlobalForecaster(lookback, horizon, units=32, layers=2, blocks=2, seed=0)
    model.compile(optimizer=keras.optimizers.Adam(3e-3, clipnorm=1.0), loss="mae")
    history = model.fit(panel_training_dataset(train, lookback, horizon, 32, seed=0),
                        steps_per_epoch=40, epochs=5, shuffle=False, verbose=0).history["loss"]
    assert history[-1] < 0.5 * history[0]
    forecast = model.predict(last_windows(train, lookback), verbose=0)
    naive = np.stack([s[-1:].repeat(horizon) for s in train])
    error = np.mean(np.abs(forecast - test) / test.mean(axis=1, keepdims=True))
    naive_error = np.mean(np.abs(naive - test) / test.mean(axis=1, keepdims=True))
    # The naive forecast misses the seasonal swing (about 0.12 of the level); the network
    # should at least halve that.
    assert error < 0.5 * naive_error


def test_default_settings_follow_horizon_season_and_lengths():
    settings = default_settings(48, 24, [700, 900])
    assert settings["kind"] == "nbeats" and settings["lookback"] == 192
    assert default_settings(13, 1, [80, 2000])["lookback"] == 52
    assert default_settings(2, 12, [100])["lookback"] == 24  # two seasons
    assert default_settings(6, 1, [15, 19, 30])["lookback"] == 19  # the median length
    assert set(settings) == {"kind", "lookback", "units", "layers", "blocks", "steps",
                             "batch_size", "learning_rate"}
