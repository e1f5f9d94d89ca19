"""`Forecaster`: the function it computes, its config and its `.keras` round trip."""

import keras
import numpy as np
import pytest

from seqlab.models import Forecaster

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
    with pytest.raises(ValueError, match="lookback must be at least 1. Received: lookback=0"):
        Forecaster(lookback=0, n_features=1)
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
    with pytest.raises(ValueError, match="normalization must be one of window, none. "
                                         "Received: normalization='robust'"):
        Forecaster(lookback=6, n_features=2, normalization="robust")
    with pytest.raises(ValueError, match=r"target_features must name one input feature"):
        Forecaster(lookback=6, n_features=2, n_targets=1, target_features=[2])
