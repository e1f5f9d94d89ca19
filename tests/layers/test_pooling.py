import keras
import numpy as np

from seqlab.layers import GRU, MaskedMaxPooling, MaskedMeanPooling
from tests.conftest import run_layer_test, saved_model_round_trip


def test_masked_poolings_ignore_padding_and_survive_empty_rows():
    inputs = np.array([[[1.0, -2.0], [3.0, -4.0], [100.0, 100.0]],
                       [[5.0, 5.0], [7.0, 7.0], [9.0, 9.0]]], dtype="float32")
    mask = np.array([[True, True, False], [False, False, False]])
    np.testing.assert_allclose(MaskedMeanPooling()(inputs, mask=mask).numpy(),
                               [[2.0, -3.0], [0.0, 0.0]])
    np.testing.assert_allclose(MaskedMaxPooling()(inputs, mask=mask).numpy(),
                               [[3.0, -2.0], [0.0, 0.0]])
    np.testing.assert_allclose(MaskedMeanPooling()(inputs).numpy()[1], [7.0, 7.0])
    np.testing.assert_allclose(MaskedMaxPooling()(inputs).numpy()[0], [100.0, 100.0])


def test_gradients_stay_finite_on_an_empty_row():
    import tensorflow as tf

    inputs = tf.constant(np.ones((2, 3, 2), "float32"))
    mask = tf.constant([[True, False, False], [False, False, False]])
    for layer in (MaskedMeanPooling(), MaskedMaxPooling()):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            total = tf.reduce_sum(layer(inputs, mask=mask))
        assert np.all(np.isfinite(tape.gradient(total, inputs).numpy()))


def test_keras_masks_reach_the_pooling():
    ids = keras.Input((None,), dtype="int32")
    hidden = GRU(3, return_sequences=True)(keras.layers.Embedding(9, 4, mask_zero=True)(ids))
    model = keras.Model(ids, [MaskedMeanPooling()(hidden), MaskedMaxPooling()(hidden)])
    short = model(np.array([[3, 5]]))
    padded = model(np.array([[3, 5, 0, 0, 0]]))
    for a, b in zip(short, padded):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)


def test_layer_contract(tmp_path):
    x = np.random.default_rng(0).normal(size=(2, 4, 3)).astype("float32")
    for cls in (MaskedMeanPooling, MaskedMaxPooling):
        model = run_layer_test(cls, {}, x, expected_output_shape=(2, 3), run_fit=False,
                               tmp_path=tmp_path)
        saved_model_round_trip(model, x, tmp_path / cls.__name__)
