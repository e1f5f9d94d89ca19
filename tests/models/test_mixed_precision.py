"""Every model under `keras.mixed_precision.set_global_policy("mixed_float16")`, the setting a
GPU user turns on first: the forecasters failed at their first call (a float32 window
statistic met a float16 layer output), and the others returned float16 probabilities, logits
and scores where their docstrings promise float32."""

import keras
import numpy as np
import pytest

from seqlab.models import (
    AutoForecaster, CharLanguageModel, Forecaster, GlobalForecaster, SequenceTagger,
    TextClassifier, Translator,
)


@pytest.fixture
def mixed_precision():
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    yield
    keras.mixed_precision.set_global_policy(previous)


def _float32_and_finite(output):
    output = keras.ops.convert_to_numpy(output)
    assert output.dtype == np.float32
    assert np.isfinite(output).all()
    return output


def test_text_models_give_float32_outputs(mixed_precision):
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 20, size=(4, 6))
    ids[:, 4:] = 0  # padding
    classifier = TextClassifier(num_classes=2, vocabulary_size=20, kind="gru", embedding_dim=8,
                                units=4, sequence_length=6, seed=0)
    _float32_and_finite(classifier(ids))
    chars = rng.integers(1, 10, size=(4, 6, 3))
    for use_crf in (False, True):
        tagger = SequenceTagger(20, 10, 3, word_dim=4, char_dim=4, char_units=4, units=4,
                                use_crf=use_crf, seed=0)
        _float32_and_finite(tagger((ids, chars)))
    targets = rng.integers(3, 10, size=(4, 5))
    for kind in ("transformer", "gru-attention"):
        translator = Translator(20, 10, kind=kind, embedding_dim=8, units=4, layers=1,
                                num_heads=2, ff_dim=8, max_length=8, seed=0)
        _float32_and_finite(translator((ids, targets)))
    language_model = CharLanguageModel(vocabulary_size=12, units=4, embedding_dim=4, seed=0)
    _float32_and_finite(language_model(ids % 12))


@pytest.mark.parametrize("normalization", ["window", "shift", "none"])
def test_a_forecaster_forecasts_beyond_float16s_range_as_under_float32(normalization,
                                                                       mixed_precision):
    """Values of 1e5 (float16 ends at 65504): the window's statistics and the forecast in its
    units stay float32 (a recurrent or Transformer forecaster's inner layers compute in
    float16)."""
    rng = np.random.default_rng(1)
    windows = (1e5 + 100.0 * rng.normal(size=(8, 6, 1))).astype("float32")
    targets = windows[:, -1:, :] + 1.0
    model = Forecaster(lookback=6, n_features=1, kind="linear", normalization=normalization)
    model.fit_least_squares((windows, targets))
    forecast = _float32_and_finite(model(windows))
    keras.mixed_precision.set_global_policy("float32")
    exact = Forecaster(lookback=6, n_features=1, kind="linear", normalization=normalization)
    exact.build()
    exact.set_weights(model.get_weights())
    # The linear forecaster has no inner layer of its own policy: the same float32 operations
    # (the tolerance only admits another kernel's order of summation).
    np.testing.assert_allclose(forecast, exact(windows), rtol=1e-6)


def test_the_neural_forecasters_train_and_forecast(mixed_precision):
    rng = np.random.default_rng(2)
    windows = (1e5 + rng.normal(size=(16, 8, 1))).astype("float32")
    targets = windows[:, -2:, :]
    auto = AutoForecaster(lookback=8, n_features=1, horizon=2, units=4)
    auto.compile(optimizer="adam", loss="mse")
    auto.fit_linear((windows, targets))
    auto.fit(windows, targets, epochs=1, batch_size=8, verbose=0)
    _float32_and_finite(auto(windows))
    for kind in ("nbeats", "gru"):
        network = GlobalForecaster(lookback=8, horizon=2, kind=kind, units=4, layers=1,
                                   blocks=2, seed=0)
        network.compile(optimizer="adam", loss="mae")
        network.fit(windows[..., 0], targets[..., 0], epochs=1, batch_size=8, verbose=0)
        forecast = _float32_and_finite(network(windows[..., 0]))
        assert np.all(np.abs(forecast - 1e5) < 1e3)  # in the series' units, not float16's
