"""Tests for layers/attention.py: scaled dot-product, multi-head and additive attention."""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import AdditiveAttention
from seqlab.layers import MultiHeadAttention
from seqlab.layers import scaled_dot_product_attention
from tests.conftest import assert_allclose_structure
from tests.conftest import run_layer_test
from tests.conftest import saved_model_round_trip

RNG = np.random.default_rng(7)
IDS = np.array([[3, 4, 5, 6, 0, 0], [1, 2, 0, 0, 0, 0]])  # id 0 is padding


def normal(*shape):
    return RNG.normal(size=shape).astype("float32")


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- scaled_dot_product_attention -------------------------------------------------------


def test_sdpa_matches_the_equation():
    q, k, v = normal(2, 3, 4), normal(2, 5, 4), normal(2, 5, 6)
    outputs, weights = scaled_dot_product_attention(q, k, v)
    expected_weights = numpy_softmax(q @ k.transpose(0, 2, 1) / np.sqrt(4))
    np.testing.assert_allclose(weights, expected_weights, atol=1e-6)
    np.testing.assert_allclose(outputs, expected_weights @ v, atol=1e-5)


def test_sdpa_mask_zeroes_masked_weights_and_a_fully_masked_row_is_zero_not_nan():
    q, k, v = normal(1, 3, 4), normal(1, 4, 4), normal(1, 4, 2)
    mask = np.array([[[True, True, False, False], [False, False, False, False], [True] * 4]])
    outputs, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    weights, outputs = np.asarray(weights), np.asarray(outputs)
    assert np.isfinite(outputs).all() and np.isfinite(weights).all()
    np.testing.assert_array_equal(weights[0, 0, 2:], 0.0)
    np.testing.assert_allclose(weights[0, 0].sum(), 1.0, atol=1e-6)
    np.testing.assert_array_equal(weights[0, 1], 0.0)
    np.testing.assert_array_equal(outputs[0, 1], 0.0)
    expected_first = numpy_softmax(q[0, 0] @ k[0, :2].T / 2.0) @ v[0, :2]
    np.testing.assert_allclose(outputs[0, 0], expected_first, atol=1e-5)


def test_attention_over_one_key_gives_it_the_whole_weight_without_a_warning():
    # A one-token source: each query's only key gets weight 1 (0 where it is masked), and
    # Keras's warning that a softmax over an axis of size 1 was probably meant to be a sigmoid
    # is not raised (it is what attention over one key is). A NaN score stays NaN, as in a
    # softmax, rather than being hidden behind a weight of 1.
    q, k, v = normal(2, 3, 4), normal(2, 1, 4), normal(2, 1, 6)
    mask = np.array([[[True]] * 3, [[False]] * 3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outputs, weights = scaled_dot_product_attention(q, k, v, mask=mask)
        context, additive = AdditiveAttention(units=5)(q, v, values_mask=mask[:, 0, :])
    np.testing.assert_array_equal(np.asarray(weights)[:, :, 0], [[1.0] * 3, [0.0] * 3])
    np.testing.assert_allclose(np.asarray(outputs)[0], np.repeat(v[0], 3, axis=0), atol=1e-6)
    np.testing.assert_array_equal(np.asarray(outputs)[1], 0.0)
    np.testing.assert_array_equal(np.asarray(additive)[:, :, 0], [[1.0] * 3, [0.0] * 3])
    np.testing.assert_allclose(np.asarray(context)[0], np.repeat(v[0], 3, axis=0), atol=1e-6)
    q[0, 1, 0] = np.nan
    weights = np.asarray(scaled_dot_product_attention(q, k, v)[1])
    assert np.isnan(weights[0, 1, 0]) and np.isfinite(np.delete(weights.ravel(), 1)).all()


# --- MultiHeadAttention: equivalence with Keras ---------------------------------------


def copied_pair(query, value, key=None, **kwargs):
    """Ours and Keras's MultiHeadAttention, built and holding the same weights."""
    theirs = keras.layers.MultiHeadAttention(**kwargs)
    ours = MultiHeadAttention(**kwargs)
    theirs(query, value, key)
    ours(query, value, key)
    ours.set_weights(theirs.get_weights())
    return ours, theirs


def test_mha_equals_keras_with_copied_weights():
    query, value, key = normal(2, 4, 5), normal(2, 6, 7), normal(2, 6, 3)
    for kwargs in (
        dict(num_heads=2, key_dim=3),
        dict(num_heads=3, key_dim=2, value_dim=4, output_shape=5, use_bias=False),
    ):
        ours, theirs = copied_pair(query, value, key, **kwargs)
        assert [w.shape for w in ours.get_weights()] == [w.shape for w in theirs.get_weights()]
        np.testing.assert_allclose(ours(query, value, key), theirs(query, value, key), atol=1e-5)
        assert_allclose_structure(
            ours(query, value, key, return_attention_scores=True),
            theirs(query, value, key, return_attention_scores=True),
            atol=1e-5,
        )


def test_mha_equals_keras_with_explicit_and_causal_masks():
    x = normal(2, 5, 8)
    attention_mask = RNG.random((2, 5, 5)) > 0.4
    attention_mask[:, :, 0] = True  # no row fully masked: Keras's fused path spreads those
    ours, theirs = copied_pair(x, x, num_heads=2, key_dim=4)
    for kwargs in (
        dict(attention_mask=attention_mask),
        dict(attention_mask=attention_mask, use_causal_mask=True),
        dict(use_causal_mask=True),
    ):
        np.testing.assert_allclose(ours(x, x, **kwargs), theirs(x, x, **kwargs), atol=1e-5)
        assert_allclose_structure(
            ours(x, x, return_attention_scores=True, **kwargs),
            theirs(x, x, return_attention_scores=True, **kwargs),
            atol=1e-5,
        )


def test_mha_equals_keras_with_keras_masks_from_embedding():
    embedding = keras.layers.Embedding(10, 8, mask_zero=True)
    ours, theirs = copied_pair(embedding(IDS), embedding(IDS), num_heads=2, key_dim=4)
    real = IDS != 0

    # Keras's MultiHeadAttention removes the mask from its inputs, so each call
    # gets freshly embedded (masked) tensors.
    def run(layer, **kwargs):
        return layer(embedding(IDS), embedding(IDS), **kwargs)

    ours_out, theirs_out = run(ours), run(theirs)
    np.testing.assert_allclose(np.asarray(ours_out)[real], np.asarray(theirs_out)[real], atol=1e-5)
    # With the scores returned Keras takes its explicit path: equal everywhere,
    # padded query rows included (zero weights).
    assert_allclose_structure(
        run(ours, return_attention_scores=True), run(theirs, return_attention_scores=True), 1e-5
    )
    unmasked = ours(normal(2, 6, 8), normal(2, 6, 8))
    assert not np.allclose(unmasked, ours_out, atol=1e-3)


# --- MultiHeadAttention: behaviour ------------------------------------------------------


def test_mha_fully_masked_rows_give_no_nan_in_outputs_or_gradients():
    layer = MultiHeadAttention(num_heads=2, key_dim=3)
    x = keras.Variable(normal(2, 4, 6))
    mask = np.ones((2, 4, 4), bool)
    mask[0, 1, :] = False
    mask[1] = False
    with tf.GradientTape() as tape:
        outputs, scores = layer(x, x, attention_mask=mask, return_attention_scores=True)
        loss = keras.ops.sum(outputs)
    gradients = tape.gradient(loss, [x.value] + layer.trainable_variables)
    assert all(np.isfinite(np.asarray(g)).all() for g in gradients)
    assert np.isfinite(np.asarray(outputs)).all()
    np.testing.assert_array_equal(np.asarray(scores)[0, :, 1], 0.0)
    np.testing.assert_array_equal(np.asarray(scores)[1], 0.0)


def test_mha_causal_mask_never_leaks_the_future():
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    x = normal(2, 6, 8)
    reference = np.asarray(layer(x, x, use_causal_mask=True))
    for t in range(5):
        changed = x.copy()
        changed[:, t + 1 :] = normal(2, 5 - t, 8)
        outputs = np.asarray(layer(changed, changed, use_causal_mask=True))
        np.testing.assert_allclose(outputs[:, : t + 1], reference[:, : t + 1], atol=1e-6)
        assert not np.allclose(outputs[:, t + 1 :], reference[:, t + 1 :], atol=1e-4)


def test_mha_padding_invariance_with_keras_masks():
    embedding = keras.layers.Embedding(10, 8, mask_zero=True)
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    padded = np.concatenate([IDS, np.zeros((2, 3), IDS.dtype)], axis=1)
    short = np.asarray(layer(embedding(IDS), embedding(IDS)))
    long = np.asarray(layer(embedding(padded), embedding(padded)))
    real = IDS != 0
    # Other lengths, other matmul shapes and blocking: float32 rounding, 1e-5.
    np.testing.assert_allclose(long[:, :6][real], short[real], atol=1e-5)


def test_mha_dropout_only_in_training():
    layer = MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.5, seed=3)
    x = normal(2, 5, 8)
    inference = np.asarray(layer(x, x))
    np.testing.assert_allclose(layer(x, x, training=False), inference, atol=0)
    assert not np.allclose(layer(x, x, training=True), inference, atol=1e-4)


def test_mha_layer_contract(tmp_path):
    run_layer_test(
        MultiHeadAttention,
        dict(num_heads=2, key_dim=3, value_dim=2, dropout=0.1, output_shape=4, seed=1),
        [normal(3, 4, 6), normal(3, 5, 7)],
        expected_output_shape=(3, 4, 4),
        tmp_path=tmp_path,
    )


def test_mha_rejects_bad_arguments():
    for kwargs, message in [
        (dict(num_heads=0, key_dim=2), "Received: num_heads=0"),
        (dict(num_heads=2, key_dim=-1), "Received: key_dim=-1"),
        (dict(num_heads=2, key_dim=2, value_dim=1.5), "Received: value_dim=1.5"),
        (dict(num_heads=2, key_dim=2, dropout=1.0), "Received: dropout=1.0"),
        (dict(num_heads=2, key_dim=2, output_shape=(2, 3)), r"Received: output_shape=\(2, 3\)"),
    ]:
        with pytest.raises(ValueError, match=message):
            MultiHeadAttention(**kwargs)


def test_mha_rejects_inputs_that_are_not_sequences():
    with pytest.raises(ValueError, match=r"Received: query_shape=\(2, 5\)"):
        MultiHeadAttention(num_heads=1, key_dim=2)(normal(2, 5), normal(2, 3, 5))


# --- AdditiveAttention ------------------------------------------------------------------


def numpy_additive(layer, query, values, mask=None):
    w1, w2, v = (np.asarray(w) for w in layer.get_weights())
    scores = np.tanh((query @ w1)[:, :, None, :] + (values @ w2)[:, None, :, :]) @ v[:, 0]
    if mask is not None:
        scores = np.where(mask[:, None, :], scores, -np.inf)
    weights = numpy_softmax(scores)
    return weights @ values, weights


def test_additive_attention_matches_the_equation_for_steps_and_sequences():
    layer = AdditiveAttention(units=5)
    query, values = normal(2, 3, 4), normal(2, 6, 7)
    context, weights = layer(query, values)
    expected_context, expected_weights = numpy_additive(layer, query, values)
    np.testing.assert_allclose(weights, expected_weights, atol=1e-6)
    np.testing.assert_allclose(context, expected_context, atol=1e-5)
    step_context, step_weights = layer(query[:, 1], values)
    assert tuple(step_context.shape) == (2, 7) and tuple(step_weights.shape) == (2, 6)
    np.testing.assert_allclose(step_context, expected_context[:, 1], atol=1e-5)
    np.testing.assert_allclose(step_weights, expected_weights[:, 1], atol=1e-6)


def test_additive_attention_masks_values_explicitly_and_from_keras_masks():
    layer = AdditiveAttention(units=4)
    embedding = keras.layers.Embedding(10, 6, mask_zero=True)
    query, values = normal(2, 3), np.asarray(embedding(IDS))
    real = IDS != 0
    layer(query, values)  # builds the weights numpy_additive reads
    expected_context, expected_weights = numpy_additive(layer, query[:, None], values, real)
    for context, weights in (
        layer(query, values, values_mask=real),
        layer(query, embedding(IDS)),  # the Keras mask of `values`
    ):
        np.testing.assert_array_equal(np.asarray(weights)[~real], 0.0)
        np.testing.assert_allclose(weights, expected_weights[:, 0], atol=1e-6)
        np.testing.assert_allclose(context, expected_context[:, 0], atol=1e-5)
    nothing = np.zeros((2, 6), bool)
    context, weights = layer(query, values, values_mask=nothing)
    assert np.isfinite(np.asarray(context)).all()
    np.testing.assert_array_equal(np.asarray(weights), 0.0)


def test_additive_attention_layer_contract(tmp_path):
    run_layer_test(
        AdditiveAttention,
        dict(units=3),
        [normal(3, 4), normal(3, 5, 6)],
        expected_output_shape=(3, 6),
        tmp_path=tmp_path,
    )


def test_attention_layers_saved_model_round_trip(tmp_path):
    query, values = keras.Input((4, 6)), keras.Input((5, 7))
    attended = MultiHeadAttention(num_heads=2, key_dim=3)(query, values)
    context, weights = AdditiveAttention(units=3)(attended, values)
    model = keras.Model([query, values], [context, weights])
    saved_model_round_trip(model, [normal(3, 4, 6), normal(3, 5, 7)], tmp_path)


def test_additive_attention_rejects_bad_units():
    with pytest.raises(ValueError, match="Received: units=0"):
        AdditiveAttention(units=0)
