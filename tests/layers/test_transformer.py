"""Tests for layers/transformer.py: encoder and decoder layers, masks and the decoding cache."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import TokenAndPositionEmbedding
from seqlab.layers import TransformerDecoderLayer
from seqlab.layers import TransformerEncoderLayer
from tests.conftest import run_layer_test
from tests.conftest import saved_model_round_trip

RNG = np.random.default_rng(11)
SOURCE_MASK = np.array([[True] * 5, [True, True, True, False, False]])


def normal(*shape):
    return RNG.normal(size=shape).astype("float32")


def feedforward(layer, h):
    return layer.feedforward_output(layer.feedforward_intermediate(h))


def reference_encoder(layer, x, mask):
    """The encoder's equations written out with the layer's own sublayers."""

    def attention(h):
        return layer.self_attention(h, h, query_mask=mask, value_mask=mask)

    if layer.norm_first:
        x = x + attention(layer.self_attention_norm(x))
        return x + feedforward(layer, layer.feedforward_norm(x))
    x = layer.self_attention_norm(x + attention(x))
    return layer.feedforward_norm(x + feedforward(layer, x))


def reference_decoder(layer, y, z, encoder_mask):
    """The decoder's equations: queries from the decoder, keys and values from `z`."""

    def self_attention(h):
        return layer.self_attention(h, h, use_causal_mask=True)

    def cross_attention(h):
        return layer.cross_attention(query=h, value=z, value_mask=encoder_mask)

    if layer.norm_first:
        y = y + self_attention(layer.self_attention_norm(y))
        y = y + cross_attention(layer.cross_attention_norm(y))
        return y + feedforward(layer, layer.feedforward_norm(y))
    y = layer.self_attention_norm(y + self_attention(y))
    y = layer.cross_attention_norm(y + cross_attention(y))
    return layer.feedforward_norm(y + feedforward(layer, y))


# --- encoder ------------------------------------------------------------------------------


def test_encoder_follows_the_equations_post_and_pre_norm():
    x = normal(2, 5, 8)
    outputs = {}
    for norm_first in (False, True):
        layer = TransformerEncoderLayer(num_heads=2, ff_dim=16, norm_first=norm_first)
        layer(x)
        if norm_first:
            layer.set_weights(weights)  # same weights, other wiring
        weights = layer.get_weights()
        for mask in (SOURCE_MASK, None):
            np.testing.assert_allclose(
                layer(x, mask=mask), reference_encoder(layer, x, mask), atol=1e-5
            )
        outputs[norm_first] = np.asarray(layer(x))
    assert not np.allclose(outputs[False], outputs[True], atol=1e-3)


def test_encoder_dropout_only_in_training():
    layer = TransformerEncoderLayer(num_heads=2, ff_dim=16, dropout=0.5)
    x = normal(2, 5, 8)
    inference = np.asarray(layer(x))
    np.testing.assert_allclose(layer(x, training=False), inference, atol=0)
    assert not np.allclose(layer(x, training=True), inference, atol=1e-4)


def test_encoder_padding_invariance_and_mask_passed_on():
    x = normal(2, 5, 8)
    padded = np.concatenate([x, normal(2, 3, 8)], axis=1)  # garbage at padded positions
    padded_mask = np.pad(SOURCE_MASK, ((0, 0), (0, 3)))
    for norm_first in (False, True):
        layer = TransformerEncoderLayer(num_heads=2, ff_dim=16, norm_first=norm_first)
        short = np.asarray(layer(x, mask=SOURCE_MASK))
        long = np.asarray(layer(padded, mask=padded_mask))
        np.testing.assert_allclose(long[:, :5][SOURCE_MASK], short[SOURCE_MASK], atol=1e-5)
        assert not np.allclose(layer(padded)[:, :5], short, atol=1e-3)  # the mask matters

    # Through Keras masks: ids padded with zeros; the mask reaches the pooling.
    embedding = TokenAndPositionEmbedding(10, 12, 8, mask_zero=True)
    ids = np.array([[3, 4, 5, 6, 7, 0], [2, 8, 0, 0, 0, 0]])
    real = ids != 0
    short = layer(embedding(ids))
    long = np.asarray(layer(embedding(np.pad(ids, ((0, 0), (0, 4))))))
    np.testing.assert_allclose(long[:, :6][real], np.asarray(short)[real], atol=1e-5)
    pooled = keras.layers.GlobalAveragePooling1D()(short)
    expected = (np.asarray(short) * real[..., None]).sum(1) / real.sum(1, keepdims=True)
    np.testing.assert_allclose(pooled, expected, atol=1e-5)


def test_encoder_layer_contract():
    run_layer_test(
        TransformerEncoderLayer,
        dict(num_heads=2, ff_dim=16, dropout=0.1, norm_first=True, key_dim=3, activation="gelu"),
        normal(3, 5, 8),
        expected_output_shape=(3, 5, 8),
        run_fit=False,  # the toy-task test below trains both layers
        atol=1e-5,
    )


# --- decoder ------------------------------------------------------------------------------


def test_decoder_follows_the_equations_post_and_pre_norm():
    y, z = normal(2, 4, 8), normal(2, 5, 6)  # the encoder's width may differ
    for norm_first in (False, True):
        layer = TransformerDecoderLayer(num_heads=2, ff_dim=16, norm_first=norm_first)
        outputs = layer(y, z, encoder_mask=SOURCE_MASK)
        np.testing.assert_allclose(outputs, reference_decoder(layer, y, z, SOURCE_MASK), atol=1e-5)


def reference_cross_attention_weights(layer, y, z, encoder_mask):
    """The cross-attention weights computed by hand from the layer's sublayers and weights."""
    if layer.norm_first:
        h = layer.self_attention_norm(y)
        h = layer.cross_attention_norm(y + layer.self_attention(h, h, use_causal_mask=True))
    else:
        h = layer.self_attention_norm(y + layer.self_attention(y, y, use_causal_mask=True))
    attention = layer.cross_attention
    queries = np.einsum("btd,dnh->bnth", h, attention.query_kernel) + attention.query_bias[:, None]
    keys = np.einsum("bsd,dnh->bnsh", z, attention.key_kernel) + attention.key_bias[:, None]
    scores = np.einsum("bnth,bnsh->bnts", queries, keys) / np.sqrt(attention.key_dim)
    scores = np.where(encoder_mask[:, None, None, :], scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def test_decoder_returns_its_cross_attention_scores():
    y, z = normal(2, 4, 8), normal(2, 5, 6)
    for norm_first in (False, True):
        layer = TransformerDecoderLayer(num_heads=2, ff_dim=16, norm_first=norm_first)
        layer.build(y.shape, z.shape)
        # Random norms and biases too, so that a sublayer taken for another shows.
        layer.set_weights([normal(*w.shape) for w in layer.get_weights()])
        outputs = layer(y, z, encoder_mask=SOURCE_MASK)
        scored, weights = layer(y, z, encoder_mask=SOURCE_MASK, return_attention_scores=True)
        np.testing.assert_allclose(scored, outputs, atol=1e-6)
        assert weights.shape == (2, 2, 4, 5)
        np.testing.assert_allclose(
            weights, reference_cross_attention_weights(layer, y, z, SOURCE_MASK), atol=1e-5
        )
        assert (np.asarray(weights)[1, :, :, 3:] == 0).all()  # padding gets no attention

    # In a functional model, the scores are a second output.
    target, source = keras.Input((None, 8)), keras.Input((None, 6))
    probe = keras.Model([target, source], layer(target, source, return_attention_scores=True))
    _, probed = probe([y, z])
    np.testing.assert_allclose(
        probed, reference_cross_attention_weights(layer, y, z, np.ones((2, 5), bool)), atol=1e-5
    )


def test_decoder_causal_mask_never_leaks_the_future():
    layer = TransformerDecoderLayer(num_heads=2, ff_dim=16)
    y, z = normal(2, 6, 8), normal(2, 5, 8)
    reference = np.asarray(layer(y, z))
    for t in range(5):
        changed = y.copy()
        changed[:, t + 1 :] = normal(2, 5 - t, 8)
        outputs = np.asarray(layer(changed, z))
        np.testing.assert_allclose(outputs[:, : t + 1], reference[:, : t + 1], atol=1e-5)
        assert not np.allclose(outputs[:, t + 1 :], reference[:, t + 1 :], atol=1e-4)


def test_decoder_padding_invariance_explicit_and_keras_masks():
    layer = TransformerDecoderLayer(num_heads=2, ff_dim=16)
    y, z = normal(2, 4, 8), normal(2, 5, 8)
    short = np.asarray(layer(y, z, encoder_mask=SOURCE_MASK))
    padded_z = np.concatenate([z, normal(2, 3, 8)], axis=1)
    padded_mask = np.pad(SOURCE_MASK, ((0, 0), (0, 3)))
    padded_y = np.concatenate([y, normal(2, 2, 8)], axis=1)
    long = np.asarray(layer(padded_y, padded_z, encoder_mask=padded_mask))
    np.testing.assert_allclose(long[:, :4], short, atol=1e-5)
    assert not np.allclose(layer(y, padded_z), short, atol=1e-3)  # the mask matters

    # Keras masks: the encoder's padding reaches the cross-attention unasked.
    source = np.array([[3, 4, 5, 6, 7], [2, 8, 9, 0, 0]])
    target = np.array([[1, 5, 6, 0], [1, 4, 0, 0]])
    source_embedding = TokenAndPositionEmbedding(10, 12, 8, mask_zero=True)
    target_embedding = TokenAndPositionEmbedding(10, 12, 8, mask_zero=True)
    encoder = TransformerEncoderLayer(2, 16)

    def run(source_ids, target_ids):
        encoded = encoder(source_embedding(source_ids))
        return np.asarray(layer(target_embedding(target_ids), encoded))

    short = run(source, target)
    long = run(np.pad(source, ((0, 0), (0, 3))), np.pad(target, ((0, 0), (0, 2))))
    np.testing.assert_allclose(long[:, :4][target != 0], short[target != 0], atol=1e-5)


def decode_stepwise(layer, y, z, encoder_mask, chunks, max_length):
    cache = layer.init_cache(z, max_length)
    outputs, index = [], 0
    for size in chunks:
        step, cache = layer.decode_step(y[:, index : index + size], cache, index, encoder_mask)
        outputs.append(np.asarray(step))
        index += size
    return np.concatenate(outputs, axis=1)


def test_cached_decoding_equals_the_full_pass_post_and_pre_norm():
    y, z = normal(2, 6, 8), normal(2, 5, 12)
    for norm_first in (False, True):
        layer = TransformerDecoderLayer(num_heads=2, ff_dim=16, norm_first=norm_first)
        full = np.asarray(layer(y, z, encoder_mask=SOURCE_MASK))
        one_at_a_time = decode_stepwise(layer, y, z, SOURCE_MASK, [1] * 6, max_length=6)
        np.testing.assert_allclose(one_at_a_time, full, atol=1e-5)
        prompt_then_steps = decode_stepwise(layer, y, z, SOURCE_MASK, [3, 1, 2], max_length=9)
        np.testing.assert_allclose(prompt_then_steps, full, atol=1e-5)


def test_cached_decoding_inside_a_tf_function_while_loop():
    layer = TransformerDecoderLayer(num_heads=2, ff_dim=16)
    y, z = normal(2, 6, 8), normal(2, 5, 8)
    full = layer(y, z, encoder_mask=SOURCE_MASK)

    @tf.function
    def decode(y, z):
        def body(index, cache, outputs):
            step, cache = layer.decode_step(
                y[:, index : index + 1], cache, index, encoder_mask=SOURCE_MASK
            )
            return index + 1, cache, outputs.write(index, step[:, 0])

        _, _, outputs = tf.while_loop(
            lambda index, *_: index < 6,
            body,
            (tf.constant(0), layer.init_cache(z, 6), tf.TensorArray(tf.float32, size=6)),
        )
        return tf.transpose(outputs.stack(), (1, 0, 2))

    np.testing.assert_allclose(decode(y, z), full, atol=1e-5)


def test_decoder_layer_contract():
    run_layer_test(
        TransformerDecoderLayer,
        dict(num_heads=2, ff_dim=16, dropout=0.1, layer_norm_epsilon=1e-6),
        [normal(3, 4, 8), normal(3, 5, 6)],
        expected_output_shape=(3, 4, 8),
        run_fit=False,  # the toy-task test below trains both layers
        atol=1e-5,
    )


# --- arguments ----------------------------------------------------------------------------


def test_bad_arguments_raise():
    cases = [
        (dict(num_heads=0, ff_dim=8), "Received: num_heads=0"),
        (dict(num_heads=2, ff_dim=-8), "Received: ff_dim=-8"),
        (dict(num_heads=2, ff_dim=8, dropout=-0.1), "Received: dropout=-0.1"),
        (dict(num_heads=2, ff_dim=8, key_dim=0), "Received: key_dim=0"),
        (dict(num_heads=2, ff_dim=8, layer_norm_epsilon=0), "Received: layer_norm_epsilon=0"),
    ]
    for cls in (TransformerEncoderLayer, TransformerDecoderLayer):
        for kwargs, message in cases:
            with pytest.raises(ValueError, match=message):
                cls(**kwargs)


def test_build_and_cache_errors():
    with pytest.raises(ValueError, match="Received: model_dim=10, num_heads=4"):
        TransformerEncoderLayer(num_heads=4, ff_dim=8)(normal(1, 3, 10))
    outputs = TransformerEncoderLayer(num_heads=4, ff_dim=8, key_dim=3)(normal(1, 3, 10))
    assert outputs.shape == (1, 3, 10)
    layer = TransformerDecoderLayer(num_heads=2, ff_dim=8)
    z = normal(1, 3, 8)
    with pytest.raises(ValueError, match="must be built"):
        layer.init_cache(z, 4)
    layer(normal(1, 2, 8), z)
    with pytest.raises(ValueError, match="Received: max_length=0"):
        layer.init_cache(z, 0)
    # Positions past the cache were written onto its last slot (outputs silently wrong).
    cache = layer.init_cache(z, 4)
    for index, length in ((4, 1), (3, 2), (-1, 1), (tf.constant(4), 1)):
        with pytest.raises(ValueError, match=r"do not fit in the cache of max_length 4"):
            layer.decode_step(normal(1, length, 8), cache, index)
    assert layer.decode_step(normal(1, 2, 8), cache, tf.constant(2))[0].shape == (1, 2, 8)


# --- a tiny encoder-decoder learns, and round-trips through .keras and SavedModel --------


def test_tiny_encoder_decoder_learns_to_reverse_and_round_trips(tmp_path):
    vocabulary, length, start = 10, 6, 1  # ids: 0 padding, 1 start, 2..9 tokens
    source = np.random.default_rng(0).integers(2, vocabulary, size=(256, length))
    target = source[:, ::-1]
    target_in = np.concatenate([np.full((256, 1), start), target[:, :-1]], axis=1)
    source[:64, 4:] = 0  # some padded sources: the masks are exercised end to end

    source_ids = keras.Input((length,), dtype="int32")
    target_ids = keras.Input((length,), dtype="int32")
    encoded = TransformerEncoderLayer(2, 32)(
        TokenAndPositionEmbedding(vocabulary, length, 16, mask_zero=True)(source_ids)
    )
    decoded = TransformerDecoderLayer(2, 32, norm_first=True)(
        TokenAndPositionEmbedding(vocabulary, length, 16, mask_zero=True)(target_ids), encoded
    )
    model = keras.Model([source_ids, target_ids], keras.layers.Dense(vocabulary)(decoded))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(keras.optimizers.Adam(5e-3), loss)
    inputs = [source.astype("int32"), target_in.astype("int32")]
    initial = float(loss(target, model(inputs)))
    history = model.fit(inputs, target, batch_size=32, epochs=6, verbose=0)
    assert history.history["loss"][-1] < 0.5 * initial, (initial, history.history["loss"])

    sample = [x[60:68] for x in inputs]  # padded and unpadded sources
    path = str(tmp_path / "model.keras")
    model.save(path)
    np.testing.assert_allclose(keras.saving.load_model(path)(sample), model(sample), atol=1e-5)
    saved_model_round_trip(model, sample, tmp_path, atol=1e-5)


def test_cached_decoding_equals_the_full_pass_under_mixed_float16():
    # init_cache and decode_step are plain methods, which Keras does not autocast: their
    # float32 keys met the float16 cache, and the first step failed.
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        rng = np.random.default_rng(0)
        embedding = keras.layers.Dense(16)
        encoder_inputs = embedding(rng.random((2, 5, 16)).astype("float32"))
        decoder = TransformerDecoderLayer(num_heads=2, ff_dim=32)
        targets = embedding(rng.random((2, 6, 16)).astype("float32"))
        full = decoder(targets, encoder_inputs)
        cache = decoder.init_cache(encoder_inputs, max_length=6)
        steps = []
        for index in range(6):
            output, cache = decoder.decode_step(targets[:, index:index + 1], cache, index)
            steps.append(output)
        assert full.dtype == steps[0].dtype == "float16"
        # float32 inputs, as `call` takes them: cast as `call` casts them.
        cache32 = decoder.init_cache(np.asarray(encoder_inputs, "float32"), max_length=6)
        first, _ = decoder.decode_step(np.asarray(targets[:, :1], "float32"), cache32, 0)
        np.testing.assert_allclose(np.asarray(first, "float32"),
                                   np.asarray(steps[0], "float32"), atol=1e-3)
        # float16: the two orders of summation differ by its rounding (about 1e-3 relative).
        np.testing.assert_allclose(np.concatenate(steps, axis=1).astype("float32"),
                                   np.asarray(full, "float32"), atol=2e-2)
    finally:
        keras.mixed_precision.set_global_policy(previous)
