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


@pytest.mark.parametrize("kind", ["lstm", "transformer"])
def test_config_round_trip_fit_and_keras_file(kind, tmp_path):
    model = Forecaster(lookback=6, n_features=2, horizon=3, n_targets=2, kind=kind, units=4,
                       num_heads=2, ff_dim=4, dropout=0.1, seed=3)
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
