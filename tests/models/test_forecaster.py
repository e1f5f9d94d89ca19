"""`Forecaster` and `AutoForecaster`: the functions they compute, their least-squares fit, config
and `.keras` round trip."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.models import AutoForecaster, Forecaster
from seqlab.models.forecaster import LeastSquaresTooWide

WINDOWS = np.random.default_rng(0).normal(size=(4, 6, 2)).astype("float32")


@pytest.mark.parametrize("kind, builtin", [("lstm", keras.layers.LSTM), ("gru", keras.layers.GRU),
                                           ("rnn", keras.layers.SimpleRNN)])
def test_a_recurrent_forecaster_equals_keras_layers_with_copied_weights(kind, builtin):
    model = Forecaster(lookback=6, n_features=2, horizon=3, n_targets=2, kind=kind, units=5,
                       layers=2)
    model.build((None, 6, 2))
    inputs = keras.Input((6, 2))
    hidden = builtin(5, return_sequences=True)(inputs)
    hidden = builtin(5)(hidden)
    outputs = keras.layers.Reshape((3, 2))(keras.layers.Dense(6)(hidden))
    reference = keras.Model(inputs, outputs)
    reference.set_weights(model.get_weights())
    np.testing.assert_allclose(model(WINDOWS), reference(WINDOWS), atol=1e-5)


@pytest.mark.parametrize("kind, normalization", [("lstm", "none"), ("transformer", "none"),
                                                 ("gru", "window"), ("linear", "window")])
def test_config_round_trip_fit_and_keras_file(kind, normalization, tmp_path):
    model = Forecaster(lookback=6, n_features=2, horizon=3, n_targets=2, kind=kind, units=4,
                       num_heads=2, ff_dim=4, dropout=0.1, seed=3, normalization=normalization)
    rebuilt = Forecaster.from_config(model.get_config())
    assert rebuilt.get_config() == model.get_config()
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(WINDOWS, np.zeros((4, 3, 2)), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(loaded, Forecaster)
    np.testing.assert_allclose(loaded.predict(WINDOWS, verbose=0),
                               model.predict(WINDOWS, verbose=0), atol=1e-6)


def test_bad_sizes_are_refused_with_the_value():
    for name, value, shown in (("lookback", 0, "0"), ("units", "8", "'8'"),
                               ("lookback", 6.5, "6.5"), ("horizon", True, "True")):
        with pytest.raises(ValueError, match=rf"{name} must be a whole number of at least 1\. "
                                             rf"Received: {name}={shown}$"):
            Forecaster(**{**dict(lookback=6, n_features=1), name: value})
    assert Forecaster(lookback=6.0, n_features=np.int64(1)).lookback == 6
    # A 2-D window failed unpacking its shape, in Python's words.
    with pytest.raises(ValueError, match=r"expects windows of shape \[batch, lookback, "
                                         r"n_features\] = \[batch, 6, 1\]\. Received: \(4, 6\) "
                                         r"\(rank 2"):
        Forecaster(lookback=6, n_features=1, kind="gru", units=4)(np.zeros((4, 6), "float32"))
    with pytest.raises(ValueError, match="kind must be one of lstm, gru, rnn, transformer"):
        Forecaster(lookback=3, n_features=1, kind="cnn")


# --- window normalisation ----------------------------------------------------------------------


def normalised_pair(kind="gru"):
    """A window-normalised forecaster and a plain one with the same weights; targets are
    features 1 and 0."""
    options = dict(lookback=6, n_features=2, horizon=3, n_targets=2, kind=kind, units=4,
                   target_features=[1, 0])
    model = Forecaster(normalization="window", **options)
    plain = Forecaster(normalization="none", **options)
    model.build((None, 6, 2))
    plain.build((None, 6, 2))
    plain.set_weights(model.get_weights())
    return model, plain


@pytest.mark.parametrize("kind", ["gru", "linear"])
def test_a_window_of_another_length_or_width_is_refused(kind):
    # A recurrent network reads any length: a window of 2 or 50 rows was forecast silently.
    model = Forecaster(lookback=6, n_features=2, horizon=3, n_targets=1, kind=kind, units=4)
    assert model(np.zeros((5, 6, 2), "float32")).shape == (5, 3, 1)
    for shape in ((5, 2, 2), (5, 50, 2), (5, 6, 3)):
        with pytest.raises(ValueError, match=r"Forecaster expects windows of shape \[batch, "
                                             r"lookback, n_features\] = \[batch, 6, 2\]"):
            model(np.zeros(shape, "float32"))
    # Keras traces `predict` again for any length after a first call: the static check above
    # sees None there, and a window of 2 rows was forecast silently.
    model.compile("adam", "mse")
    assert model.predict(np.zeros((5, 6, 2), "float32"), verbose=0).shape == (5, 3, 1)
    for shape in ((5, 2, 2), (5, 6, 3)):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Forecaster expects windows of shape .* = \[batch, 6, 2\]"):
            model.predict(np.zeros(shape, "float32"), verbose=0)
    traced = tf.function(model, input_signature=[tf.TensorSpec([None, None, 2])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Forecaster expects windows"):
        traced(tf.zeros([5, 2, 2]))


@pytest.mark.parametrize("normalization", ["window", "shift", "none"])
def test_windows_of_whole_numbers_forecast_as_their_floats(normalization):
    # The window statistics failed on int64 windows ("x and y must have the same dtype").
    model = Forecaster(lookback=6, n_features=2, kind="gru", units=4,
                       normalization=normalization)
    counts = np.arange(24).reshape(2, 6, 2)
    np.testing.assert_array_equal(model(counts), model(counts.astype("float32")))


def test_window_normalisation_is_the_plain_model_on_shifted_and_scaled_windows():
    model, plain = normalised_pair()
    level = WINDOWS[:, -1:, :]
    scale = np.sqrt(WINDOWS.var(axis=1, keepdims=True) + 1e-2)
    expected = plain(((WINDOWS - level) / scale).astype("float32")).numpy()
    # Target 0 is feature 1 and target 1 is feature 0.
    expected = expected * scale[..., ::-1] + level[..., ::-1]
    np.testing.assert_allclose(model(WINDOWS), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["lstm", "linear", "transformer"])
def test_a_normalised_forecast_moves_with_the_level_and_scale_of_its_window(kind):
    # What lets it extrapolate: a window shifted by c (scaled by k) gives a forecast shifted by
    # c (scaled by k), however far outside the training range that is.
    model, _ = normalised_pair(kind)
    shifted = model(WINDOWS + 1000.0).numpy()
    np.testing.assert_allclose(shifted, model(WINDOWS).numpy() + 1000.0, atol=2e-3)
    # Scaling: exact when the variance floor is negligible against the window's spread.
    wide = WINDOWS * 1000.0
    np.testing.assert_allclose(model(wide * 3).numpy(), 3 * model(wide).numpy(), rtol=1e-4)


def test_a_target_that_is_not_an_input_is_not_shifted():
    options = dict(lookback=6, n_features=2, horizon=1, n_targets=1, kind="linear", units=4)
    model = Forecaster(normalization="window", target_features=[None], **options)
    plain = Forecaster(normalization="none", **options)
    model.build((None, 6, 2))
    plain.build((None, 6, 2))
    plain.set_weights(model.get_weights())
    level = WINDOWS[:, -1:, :]
    scale = np.sqrt(WINDOWS.var(axis=1, keepdims=True) + 1e-2)
    np.testing.assert_allclose(model(WINDOWS), plain(((WINDOWS - level) / scale)), atol=1e-5)
    config = model.get_config()
    assert config["normalization"] == "window" and config["target_features"] == [None]
    assert Forecaster.from_config(config).get_config() == config


def test_bad_normalisation_settings_are_refused():
    with pytest.raises(ValueError, match="normalization must be one of window, shift, none. "
                                         "Received: normalization='robust'"):
        Forecaster(lookback=6, n_features=2, normalization="robust")
    with pytest.raises(ValueError, match=r"target_features must name one input feature"):
        Forecaster(lookback=6, n_features=2, n_targets=1, target_features=[2])


def test_shift_normalisation_is_the_plain_model_on_windows_minus_their_last_row():
    options = dict(lookback=6, n_features=2, horizon=3, n_targets=2, kind="gru", units=4,
                   target_features=[1, 0])
    model = Forecaster(normalization="shift", **options)
    plain = Forecaster(normalization="none", **options)
    model.build((None, 6, 2))
    plain.build((None, 6, 2))
    plain.set_weights(model.get_weights())
    level = WINDOWS[:, -1:, :]
    expected = plain(WINDOWS - level).numpy() + level[..., ::-1]
    np.testing.assert_allclose(model(WINDOWS), expected, rtol=1e-5, atol=1e-5)


# --- least squares -----------------------------------------------------------------------------


def explicit_least_squares(windows, targets, normalization, target_features):
    """The reference: the design matrix written out and solved by `numpy.linalg.lstsq`."""
    windows, targets = windows.astype("float64"), targets.astype("float64")
    level = windows[:, -1:, :]
    if normalization == "window":
        scale = np.sqrt(windows.var(axis=1, keepdims=True) + 1e-2)
    else:
        scale = np.ones_like(level)
    read = (windows - level) / scale
    goal = (targets - level[..., target_features]) / scale[..., target_features]
    design = np.concatenate([read.reshape(len(read), -1), np.ones((len(read), 1))], axis=1)
    solution = np.linalg.lstsq(design, goal.reshape(len(goal), -1), rcond=None)[0]
    return solution[:-1], solution[-1]


@pytest.mark.parametrize("normalization", ["shift", "window"])
def test_least_squares_equals_the_explicit_design_matrix_solution(normalization):
    rng = np.random.default_rng(1)
    windows = rng.normal(size=(40, 5, 2)).astype("float32")
    targets = rng.normal(size=(40, 3, 2)).astype("float32")
    model = Forecaster(lookback=5, n_features=2, horizon=3, n_targets=2, kind="linear",
                       normalization=normalization, target_features=[1, 0])
    model.build((None, 5, 2))
    # In batches of 16 (a dataset's shape), summed by the normal equations.
    batches = [(windows[i:i + 16], targets[i:i + 16]) for i in range(0, 40, 16)]
    assert model.fit_least_squares(batches) == 40
    kernel, bias = explicit_least_squares(windows, targets, normalization, [1, 0])
    np.testing.assert_allclose(model.head.kernel.numpy(), kernel, atol=1e-4)
    np.testing.assert_allclose(model.head.bias.numpy(), bias, atol=1e-4)


def autoregressive_windows(rows=120, lookback=6):
    """Windows and targets of the noiseless AR(2) y[t] = 1.2 y[t-1] - 0.5 y[t-2] + 0.3: a
    linear forecaster of the shifted window holds it exactly."""
    series = np.zeros(rows)
    series[:2] = [1.0, 0.5]
    for t in range(2, rows):
        series[t] = 1.2 * series[t - 1] - 0.5 * series[t - 2] + 0.3
    starts = np.arange(rows - lookback)
    windows = series[starts[:, None] + np.arange(lookback)][..., None].astype("float32")
    return windows, series[starts + lookback][:, None, None].astype("float32")


def test_least_squares_recovers_an_exact_autoregression():
    windows, targets = autoregressive_windows(rows=200, lookback=5)
    model = Forecaster(lookback=5, n_features=1, kind="linear", normalization="shift")
    model.build((None, 5, 1))
    model.fit_least_squares((windows, targets))
    np.testing.assert_allclose(model(windows), targets, atol=1e-4)


def test_least_squares_is_refused_for_other_kinds_and_without_windows():
    model = Forecaster(lookback=5, n_features=1, kind="gru", units=2)
    with pytest.raises(ValueError, match="fits a linear forecaster only. Received: kind='gru'"):
        model.fit_least_squares((WINDOWS[:, :5, :1], np.zeros((4, 1, 1))))
    linear = Forecaster(lookback=5, n_features=1, kind="linear")
    linear.build((None, 5, 1))
    with pytest.raises(ValueError, match="at least one window"):
        linear.fit_least_squares([])


def test_least_squares_and_the_choice_refuse_a_nan_naming_its_batch():
    """One NaN window: LAPACK printed its own complaints and failed to converge; the choice
    silently went to the other member."""
    model = AutoForecaster(lookback=5, n_features=1, units=2)
    windows, targets = WINDOWS[:, :5, :1].copy(), np.zeros((4, 1, 1), "float32")
    model.fit_linear((windows, targets))
    windows[2, 1, 0] = np.nan
    for call, name in ((model.fit_linear, "fit_least_squares"), (model.choose, "member_errors")):
        with pytest.raises(ValueError, match=rf"{name} needs finite windows and targets\. "
                                             r"Received: 1 NaN or infinite values in the "
                                             r"windows of batch 1"):
            call([(WINDOWS[:, :5, :1], targets), (windows, targets)])


def test_the_choice_never_keeps_a_member_whose_forecasts_are_nan():
    """A diverged network (NaN error) was kept: `linear <= nan` is False."""
    model = AutoForecaster(lookback=5, n_features=1, units=2)
    windows, targets = WINDOWS[:, :5, :1], np.zeros((4, 1, 1), "float32")
    model.fit_linear((windows, targets))
    model(windows)  # builds the neural member
    model.neural.set_weights([np.full_like(w, np.nan) for w in model.neural.get_weights()])
    errors = model.choose((windows, targets))
    assert np.isnan(errors["neural"]) and model.choice == "linear"
    model.linear.set_weights([np.full_like(w, np.nan) for w in model.linear.get_weights()])
    with pytest.raises(ValueError, match="choose found neither member's forecasts finite"):
        model.choose((windows, targets))


# --- AutoForecaster ----------------------------------------------------------------------------


def test_auto_forecaster_trains_its_neural_member_and_chooses_the_better_one(tmp_path):
    windows, targets = autoregressive_windows()
    model = AutoForecaster(lookback=6, n_features=1, units=3, seed=0)
    model.build((None, 6, 1))
    model.fit_linear((windows, targets))
    linear_weights = [w.copy() for w in model.linear.get_weights()]
    neural_weights = [w.copy() for w in model.neural.get_weights()]
    # Before `choose` the model is its neural member, the one `fit` trains.
    np.testing.assert_allclose(model(windows), model.neural(windows))
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    model.fit(windows, targets, epochs=2, verbose=0)
    assert any(not np.allclose(a, b) for a, b in zip(model.neural.get_weights(), neural_weights))
    for after, before in zip(model.linear.get_weights(), linear_weights):
        np.testing.assert_array_equal(after, before)
    errors = model.choose((windows, targets))
    expected = {name: float(np.mean((getattr(model, name)(windows).numpy() - targets) ** 2))
                for name in ("neural", "linear")}
    assert errors == pytest.approx(expected, rel=1e-4)
    assert errors["linear"] < 1e-6 < errors["neural"] and model.choice == "linear"
    np.testing.assert_allclose(model(windows), model.linear(windows))
    # The choice is part of the saved model.
    model.save(tmp_path / "auto.keras")
    loaded = keras.saving.load_model(tmp_path / "auto.keras")
    assert isinstance(loaded, AutoForecaster) and loaded.choice == "linear"
    assert loaded.get_config() == model.get_config()
    np.testing.assert_allclose(loaded.predict(windows, verbose=0), model(windows), atol=1e-6)


def test_auto_forecaster_predicts_and_evaluates_with_a_new_choice_and_fits_its_network():
    # Keras's predict and evaluate kept the functions traced before `choose`, with the member
    # then chosen inside: the neural member's forecasts after "linear" was chosen, silently.
    # And `fit` with "linear" chosen failed: "No gradients provided for any variable".
    windows, targets = autoregressive_windows()
    model = AutoForecaster(lookback=6, n_features=1, units=3, seed=0)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    model.fit_linear((windows, targets))
    model.fit(windows, targets, epochs=1, verbose=0)
    before = model.predict(windows, verbose=0)
    np.testing.assert_allclose(before, model.neural(windows), atol=1e-6)
    model.evaluate(windows, targets, verbose=0)
    model.choose((windows, targets))
    assert model.choice == "linear"
    # Tolerances: the same float32 graph traced apart (another order of summation).
    np.testing.assert_allclose(model.predict(windows, verbose=0), model.linear(windows),
                               atol=1e-5)
    linear_error = float(np.mean((model.linear(windows).numpy() - targets) ** 2))
    assert model.evaluate(windows, targets, verbose=0) == pytest.approx(linear_error, abs=1e-6)
    neural_weights = [w.copy() for w in model.neural.get_weights()]
    history = model.fit(windows, targets, epochs=1, verbose=0).history
    assert model.choice == "linear"
    assert any(not np.allclose(a, b) for a, b in zip(model.neural.get_weights(), neural_weights))
    # fit's figures are the network's, not the linear member's (an error near 0 here).
    assert history["loss"][0] > 1e3 * max(linear_error, 1e-9)
    np.testing.assert_allclose(model.predict(windows, verbose=0), model.linear(windows),
                               atol=1e-5)


def test_auto_forecaster_keeps_the_neural_member_when_the_linear_one_is_worse():
    windows, targets = autoregressive_windows()
    model = AutoForecaster(lookback=6, n_features=1, units=3, seed=0)
    model.build((None, 6, 1))
    # A linear member that forecasts 100 more than the last value: far worse than any GRU here.
    model.linear.head.set_weights([np.zeros((6, 1), "float32"), np.full(1, 100.0, "float32")])
    errors = model.choose((windows, targets))
    assert errors["neural"] < errors["linear"] and model.choice == "neural"
    np.testing.assert_allclose(model(windows), model.neural(windows))


def test_auto_forecaster_settings_are_checked():
    with pytest.raises(ValueError, match="the linear member is always there"):
        AutoForecaster(lookback=6, n_features=1, kind="linear")
    with pytest.raises(ValueError, match="choice must be None or one of neural, linear"):
        AutoForecaster(lookback=6, n_features=1, choice="best")
    model = AutoForecaster(lookback=6, n_features=2, n_targets=2, kind="lstm", units=4,
                           target_features=[1, None], choice="neural")
    assert AutoForecaster.from_config(model.get_config()).get_config() == model.get_config()


def test_least_squares_refuses_a_window_too_wide_to_solve(monkeypatch):
    monkeypatch.setattr("seqlab.models.forecaster.MAX_LEAST_SQUARES_COLUMNS", 12)
    model = Forecaster(lookback=6, n_features=2, kind="linear")
    with pytest.raises(LeastSquaresTooWide, match=r"at most 12 weights per output. Received: "
                                                  r"lookback=6 x n_features=2 \+ 1 bias = 13"):
        model.fit_least_squares((WINDOWS, np.zeros((4, 1, 1))))


def test_auto_forecaster_weights_load_into_a_model_that_has_not_chosen(tmp_path):
    # What a rerun that continues after fit does: a new model, then load_weights, then choose.
    windows, targets = autoregressive_windows()
    model = AutoForecaster(lookback=6, n_features=1, units=3, seed=0)
    model.build((None, 6, 1))
    model.fit_linear((windows, targets))
    model.choose((windows, targets))
    assert model.choice == "linear"
    model.save(tmp_path / "auto.keras")
    fresh = AutoForecaster(lookback=6, n_features=1, units=3, seed=1)
    fresh.build((None, 6, 1))
    fresh.load_weights(tmp_path / "auto.keras")
    for loaded, saved in zip(fresh.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(loaded, saved)
    fresh.choose((windows, targets))
    np.testing.assert_allclose(fresh(windows), model(windows), atol=1e-6)
