"""Every model under `keras.mixed_precision.set_global_policy("mixed_float16")`, the setting a
GPU user turns on first: the forecasters failed at their first call (a float32 window
statistic met a float16 layer output), and the others returned float16 probabilities, logits
and scores where their docstrings promise float32."""

import keras
import numpy as np
import pytest

from seqlab.layers import CRF, CRFModel
from seqlab.models import (
    AutoForecaster, CharLanguageModel, Forecaster, GlobalForecaster, SequenceTagger,
    TextClassifier, TextClassifierEnsemble, Translator,
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


def test_the_forecasters_scale_their_loss_and_keep_it_through_saving(mixed_precision, tmp_path):
    """The forecasters are float32 themselves, so Keras did not wrap their optimizer in a
    LossScaleOptimizer while their inner layers computed in float16: a transformer's weights
    were NaN after one epoch on a series near 1e5."""
    time = np.arange(300.0)
    series = (1e5 + 1e3 * np.sin(time / 5))[:, None]
    windows = np.stack([series[i:i + 10] for i in range(288)]).astype("float32")
    targets = np.stack([series[i + 10:i + 12] for i in range(288)]).astype("float32")
    keras.utils.set_random_seed(0)
    models = [
        Forecaster(lookback=10, n_features=1, horizon=2, kind="transformer", units=4,
                   num_heads=2, ff_dim=4, normalization="window"),
        AutoForecaster(lookback=10, n_features=1, horizon=2, units=4),
        GlobalForecaster(lookback=10, horizon=2, kind="gru", units=4, layers=1, seed=0),
    ]
    for model in models:
        model.compile(optimizer="adam", loss="mse")
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    models[0].fit(windows, targets, epochs=1, verbose=0)
    for weight in models[0].get_weights():
        assert np.isfinite(weight).all()
    _float32_and_finite(models[0].predict(windows[:4], verbose=0))
    models[0].save(tmp_path / "forecaster.keras")
    loaded = keras.saving.load_model(tmp_path / "forecaster.keras")
    assert isinstance(loaded.optimizer, keras.optimizers.LossScaleOptimizer)
    keras.mixed_precision.set_global_policy("float32")
    plain = Forecaster(lookback=10, n_features=1, horizon=2, kind="gru", units=4)
    plain.compile(optimizer="adam", loss="mse")
    assert not isinstance(plain.optimizer, keras.optimizers.LossScaleOptimizer)


def _largest_change(model, inputs, labels, policy):
    """The largest weight change of one SGD step of `model()` built under `policy`."""
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    network = model()
    network.compile(optimizer=keras.optimizers.SGD(0.5))
    network(inputs)
    before = [w.copy() for w in network.get_weights()]
    network.train_on_batch(inputs, labels)
    return max(float(np.abs(a - b).max()) for a, b in zip(network.get_weights(), before))


def test_the_models_with_their_own_training_step_scale_their_loss(mixed_precision):
    """CRFModel's and the ensembles' train_step passed unscaled gradients to the
    LossScaleOptimizer, which divided them by its scale: steps 32768 times too small (the CRF
    example's loss did not move in 5 epochs); and a float16 CRF made negative
    log-likelihoods."""
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1, 20, size=(16, 6))
    tag_ids = token_ids % 3

    def tagger():
        tokens = keras.Input((None,), dtype="int32")
        hidden = keras.layers.Embedding(20, 8, mask_zero=True)(tokens)
        return CRFModel(keras.Model(tokens, keras.layers.Dense(3)(hidden)))

    def ensemble():
        return TextClassifierEnsemble(num_classes=2, num_members=2, kind="gru",
                                      vocabulary_size=20, embedding_dim=4, units=4, seed=0)

    for model, inputs, targets in ((tagger, token_ids, tag_ids),
                                   (ensemble, token_ids, token_ids[:, 0] % 2)):
        mixed = _largest_change(model, inputs, targets, "mixed_float16")
        exact = _largest_change(model, inputs, targets, "float32")
        # Float16's rounding moves the step by far less than a factor of 10; unscaled, the
        # step was 32768 times smaller.
        assert exact / 10 < mixed < exact * 10, (model, mixed, exact)
    keras.mixed_precision.set_global_policy("mixed_float16")
    crf = tagger()
    assert crf.crf.compute_dtype == "float32"
    crf.compile(optimizer="adam")
    crf.fit(token_ids, tag_ids, epochs=3, verbose=0)
    likelihood = crf.negative_log_likelihood(token_ids, tag_ids)
    assert (keras.ops.convert_to_numpy(likelihood) >= 0).all()
