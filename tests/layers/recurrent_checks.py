"""Checks shared by the SimpleRNN, LSTM and GRU tests.

Each check builds our layer and Keras's built-in with the same arguments, copies
Keras's weights into ours, and compares outputs at atol 1e-5: Keras's layers are
the independent reference for the weight layout and the masking conventions.
"""

import keras
import numpy as np
import pytest

from seqlab.layers import _loop_choice
from tests.conftest import assert_allclose_structure

ATOL = 1e-5
BATCH, STEPS, FEATURES, UNITS = 3, 6, 4, 5
LENGTHS = [6, 4, 1]  # right-padded batch of mixed lengths
VOCABULARY = 11
# Which tokens of a row are real (not padding), by padding pattern: seqlab's layers move each
# row's real steps to its front (`RecurrentLayer._run_compacted`), a right-padded row's are
# there already; rows padded at the start, with gaps and empty are checked as well.
PADDINGS = {
    "right": [[True] * n + [False] * (STEPS - n) for n in LENGTHS],
    "right_empty": [[True] * n + [False] * (STEPS - n) for n in (5, 0, 3)],
    "holes": [[False, False, True, True, True, True],  # padded at the start
              [True, False, True, True, False, True],  # gaps
              [False] * STEPS],
}

# Scenario name -> (layer arguments, padding pattern of the masked input or False).
SCENARIOS = {
    "plain": ({}, False),
    "sequences": ({"return_sequences": True}, False),
    "masked_last": ({}, "right"),
    "masked_sequences": ({"return_sequences": True}, "right"),
    "masked_last_zero_output": ({"zero_output_for_mask": True}, "right_empty"),
    "masked_empty_zero_output": (
        {"return_sequences": True, "zero_output_for_mask": True}, "right_empty"),
    "go_backwards_masked_empty": ({"go_backwards": True, "return_sequences": True}, "right_empty"),
    "masked_holes": ({"return_sequences": True}, "holes"),
    "go_backwards_masked_holes": ({"go_backwards": True, "return_sequences": True}, "holes"),
    "go_backwards": ({"go_backwards": True, "return_sequences": True}, False),
    "go_backwards_masked": ({"go_backwards": True}, "right"),
    "return_state": ({"return_state": True}, False),
    "return_state_masked": ({"return_state": True, "return_sequences": True}, "right"),
    # The last output's gradient carried back to the last unmasked step, beside the states'.
    "return_state_masked_last": ({"return_state": True}, "right"),
}


@pytest.fixture(autouse=True)
def fresh_choices():
    """Every test of a file that imports this starts and ends with no loop chosen in this
    process (its choices are measured, recalled or forced afresh)."""
    _loop_choice.clear()
    yield
    _loop_choice.clear()


def random_inputs(seed=0):
    return np.random.default_rng(seed).normal(size=(BATCH, STEPS, FEATURES)).astype("float32")


def padded_token_ids(seed=0, padding="right"):
    """Token ids, 0 (masked by `Embedding(mask_zero=True)`) where `PADDINGS[padding]` pads."""
    real = np.array(PADDINGS[padding])
    ids = np.random.default_rng(seed).integers(1, VOCABULARY, size=real.shape)
    return np.where(real, ids, 0).astype("int32")


def _embedding_model(rnn_layer, wrap=None):
    """Embedding(mask_zero=True) -> rnn: the mask reaches the layer the Keras way."""
    inputs = keras.Input((STEPS,), dtype="int32")
    embedded = keras.layers.Embedding(VOCABULARY, FEATURES, mask_zero=True)(inputs)
    layer = wrap(rnn_layer) if wrap else rnn_layer
    return keras.Model(inputs, layer(embedded))


def _dense_model(rnn_layer, wrap=None):
    inputs = keras.Input((STEPS, FEATURES))
    layer = wrap(rnn_layer) if wrap else rnn_layer
    return keras.Model(inputs, layer(inputs))


def copy_weights(source, target):
    target.set_weights(source.get_weights())


def check_against_keras(ours_cls, keras_cls, scenario, **layer_kwargs):
    kwargs, masked = SCENARIOS[scenario]
    kwargs = {**kwargs, **layer_kwargs}
    build = _embedding_model if masked else _dense_model
    reference = build(keras_cls(UNITS, **kwargs))
    ours = build(ours_cls(UNITS, **kwargs))
    copy_weights(reference, ours)
    x = padded_token_ids(padding=masked) if masked else random_inputs()
    assert_allclose_structure(ours(x), reference(x), atol=ATOL)


def check_bidirectional(ours_cls, keras_cls, masked, **layer_kwargs):
    """`masked`: False, True (right-padded) or a padding pattern of `PADDINGS`."""
    masked = "right" if masked is True else masked
    build = _embedding_model if masked else _dense_model
    wrap = lambda layer: keras.layers.Bidirectional(layer, merge_mode="concat")  # noqa: E731
    kwargs = {"return_sequences": True, **layer_kwargs}
    reference = build(keras_cls(UNITS, **kwargs), wrap)
    ours = build(ours_cls(UNITS, **kwargs), wrap)
    copy_weights(reference, ours)
    x = padded_token_ids(padding=masked) if masked else random_inputs()
    assert_allclose_structure(ours(x), reference(x), atol=ATOL)


def check_stacked(ours_cls, keras_cls, **layer_kwargs):
    def build(cls):
        inputs = keras.Input((STEPS,), dtype="int32")
        x = keras.layers.Embedding(VOCABULARY, FEATURES, mask_zero=True)(inputs)
        x = cls(UNITS, return_sequences=True, **layer_kwargs)(x)
        return keras.Model(inputs, cls(UNITS, **layer_kwargs)(x))

    reference, ours = build(keras_cls), build(ours_cls)
    copy_weights(reference, ours)
    x = padded_token_ids()
    assert_allclose_structure(ours(x), reference(x), atol=ATOL)


def check_stateful(ours_cls, keras_cls, **layer_kwargs):
    """Two consecutive calls continue the state; the second differs from a fresh one."""

    def build(cls):
        inputs = keras.Input(batch_shape=(BATCH, STEPS, FEATURES))
        layer = cls(UNITS, stateful=True, return_sequences=True, **layer_kwargs)
        return keras.Model(inputs, layer(inputs)), layer

    reference, reference_layer = build(keras_cls)
    ours, ours_layer = build(ours_cls)
    copy_weights(reference, ours)
    first, second = random_inputs(1), random_inputs(2)
    for x in (first, second):
        assert_allclose_structure(ours(x), reference(x), atol=ATOL)
    # The second call really started from the carried state.
    ours_layer.reset_state()
    fresh = keras.ops.convert_to_numpy(ours(second))
    reference_layer.reset_state()
    reference(first)
    assert not np.allclose(fresh, keras.ops.convert_to_numpy(reference(second)), atol=1e-3)


def check_cell_in_keras_rnn(cell_cls, layer_cls, **kwargs):
    """The per-step cell inside keras.layers.RNN computes what the fused layer does."""
    layer = layer_cls(UNITS, return_sequences=True, **kwargs)
    rnn = keras.layers.RNN(cell_cls(UNITS, **kwargs), return_sequences=True)
    x = random_inputs(3)
    layer(x)
    rnn(x)
    copy_weights(layer, rnn)
    assert_allclose_structure(rnn(x), layer(x), atol=ATOL)


def check_initial_state(ours_cls, keras_cls, n_states, **kwargs):
    reference, ours = keras_cls(UNITS, **kwargs), ours_cls(UNITS, **kwargs)
    x = random_inputs(4)
    reference(x)
    ours(x)
    copy_weights(reference, ours)
    rng = np.random.default_rng(5)
    states = [rng.normal(size=(BATCH, UNITS)).astype("float32") for _ in range(n_states)]
    assert_allclose_structure(
        ours(x, initial_state=states), reference(x, initial_state=states), atol=ATOL
    )


def check_padding_invariance(layer_cls, **kwargs):
    """Appending padding changes no output of the unpadded steps."""
    rng = np.random.default_rng(6)
    tokens = rng.integers(1, VOCABULARY, size=(1, 4)).astype("int32")
    embedding = keras.layers.Embedding(VOCABULARY, FEATURES, mask_zero=True)
    layer = layer_cls(UNITS, return_sequences=True, return_state=True, **kwargs)

    def run(ids):
        outputs = layer(embedding(ids))
        return [keras.ops.convert_to_numpy(o) for o in outputs]

    short = run(tokens)
    long = run(np.pad(tokens, [(0, 0), (0, 5)]))
    # Other lengths, other matmul shapes and blocking: float32 rounding, 1e-5.
    np.testing.assert_allclose(long[0][:, :4], short[0], atol=1e-5)
    for state_long, state_short in zip(long[1:], short[1:]):
        np.testing.assert_allclose(state_long, state_short, atol=1e-5)


def check_variational_dropout(layer_cls, **kwargs):
    """Input dropout uses one mask per sequence, and only when training.

    With an identity kernel, a zero recurrent kernel and no activation, the
    output at each step is the dropped-out input itself, so the mask is visible.
    """
    features = 8
    layer = layer_cls(
        features,
        activation=None,
        use_bias=False,
        kernel_initializer="identity",
        recurrent_initializer="zeros",
        dropout=0.5,
        seed=7,
        return_sequences=True,
        **kwargs,
    )
    x = np.ones((4, 5, features), dtype="float32")
    inference = keras.ops.convert_to_numpy(layer(x, training=False))
    np.testing.assert_allclose(inference, x)
    training = keras.ops.convert_to_numpy(layer(x, training=True))
    assert set(np.unique(training.round(5))) <= {0.0, 2.0}
    assert 0 < (training == 0).mean() < 1
    for step in range(1, 5):
        np.testing.assert_array_equal(training[:, step], training[:, 0])


def _weighted_loss(outputs):
    """A loss whose gradient differs per output element (a plain sum would hide swaps)."""
    total = 0.0
    for i, output in enumerate(keras.tree.flatten(outputs)):
        weights = np.random.default_rng(10 + i).normal(size=output.shape[1:]).astype("float32")
        total = total + keras.ops.sum(output * weights)
    return total


def gradients(model, x):
    import tensorflow as tf

    with tf.GradientTape() as tape:
        loss = _weighted_loss(model(x, training=True))
    return [keras.ops.convert_to_numpy(g) for g in tape.gradient(loss, model.trainable_weights)]


def check_gradients_against_keras(ours_cls, keras_cls, scenario, bidirectional=False, **layer_kwargs):
    """Training-mode gradients (our hand-scheduled BPTT) equal Keras's autodiff."""
    kwargs, masked = SCENARIOS[scenario]
    kwargs = {**kwargs, **layer_kwargs}
    build = _embedding_model if masked else _dense_model
    wrap = keras.layers.Bidirectional if bidirectional else None
    reference = build(keras_cls(UNITS, **kwargs), wrap)
    ours = build(ours_cls(UNITS, **kwargs), wrap)
    copy_weights(reference, ours)
    x = padded_token_ids(padding=masked) if masked else random_inputs()
    for ours_grad, reference_grad in zip(gradients(ours, x), gradients(reference, x)):
        np.testing.assert_allclose(ours_grad, reference_grad, atol=ATOL, rtol=1e-4)


def check_recurrent_dropout(layer_cls, **kwargs):
    """`recurrent_dropout` alone changes a training call; `dropout` alone cannot reach h.

    The input kernel is zero, so the inputs (dropped out or not) never reach the
    state: the output comes from the bias through the recurrent kernel only. Then
    - with `recurrent_dropout` alone, training differs from inference from step 1
      on (step 0 sees h_0 = 0, which no mask changes), so a loop that ignores the
      recurrent mask fails;
    - with `dropout` alone, training equals inference, so a loop that drops h_{t-1}
      with the input rate (or the input mask) fails.
    Both are checked for the layer and for its cell inside `keras.layers.RNN`.
    """
    x = random_inputs(8)
    common = dict(kernel_initializer="zeros", bias_initializer="ones", seed=7,
                  return_sequences=True, **kwargs)

    def run(layer):
        inference = keras.ops.convert_to_numpy(layer(x, training=False))
        return inference, keras.ops.convert_to_numpy(layer(x, training=True))

    inference, training = run(layer_cls(UNITS, recurrent_dropout=0.5, **common))
    np.testing.assert_allclose(training[:, 0], inference[:, 0], atol=1e-6)
    assert not np.allclose(training[:, 1:], inference[:, 1:], atol=1e-3), (
        "recurrent_dropout had no effect on a training call"
    )
    inference, training = run(layer_cls(UNITS, dropout=0.5, **common))
    np.testing.assert_allclose(training, inference, atol=1e-6)


def check_cell_recurrent_dropout(cell_cls, **kwargs):
    """The same for the cell run by `keras.layers.RNN` (the cell's own `call`)."""
    x = random_inputs(8)
    cell = cell_cls(UNITS, recurrent_dropout=0.5, kernel_initializer="zeros",
                    bias_initializer="ones", seed=7, **kwargs)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    inference = keras.ops.convert_to_numpy(rnn(x, training=False))
    training = keras.ops.convert_to_numpy(rnn(x, training=True))
    np.testing.assert_allclose(training[:, 0], inference[:, 0], atol=1e-6)
    assert not np.allclose(training[:, 1:], inference[:, 1:], atol=1e-3), (
        "the cell's recurrent_dropout had no effect on a training call"
    )
