import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import GRU, LSTM, LSTMCell, SimpleRNN, reset_states


def _stateful_model():
    """Stateful layers at three depths: top level, inside Bidirectional, nested model."""
    inputs = keras.Input(batch_shape=(2, 3, 4))
    x = LSTM(5, stateful=True, return_sequences=True)(inputs)
    x = keras.layers.Bidirectional(GRU(3, stateful=True, return_sequences=True))(x)
    inner_inputs = keras.Input(batch_shape=(2, 3, 6))
    inner = keras.Model(inner_inputs, SimpleRNN(2, stateful=True)(inner_inputs))
    return keras.Model(inputs, inner(x))


def _all_states(model):
    found = {}
    for layer in model._flatten_layers(include_self=False):
        if getattr(layer, "stateful", False) and getattr(layer, "states", None):
            found.update({id(s): keras.ops.convert_to_numpy(s) for s in layer.states})
    return list(found.values())


def test_reset_states_reaches_every_stateful_layer():
    model = _stateful_model()
    model(np.ones((2, 3, 4), "float32"))
    states = _all_states(model)
    # LSTM (h, c), two GRU directions, the nested SimpleRNN.
    assert len(states) == 5
    assert all(np.abs(s).sum() > 0 for s in states)
    assert reset_states(model) == 4  # LSTM, forward GRU, backward GRU, SimpleRNN
    assert all(np.abs(s).sum() == 0 for s in _all_states(model))


def test_reset_restores_the_first_call():
    model = _stateful_model()
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    first = keras.ops.convert_to_numpy(model(x))
    second = keras.ops.convert_to_numpy(model(x))
    assert not np.allclose(first, second)
    reset_states(model)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model(x)), first, atol=1e-6)


def test_stateless_model_has_nothing_to_reset():
    inputs = keras.Input((3, 4))
    assert reset_states(keras.Model(inputs, LSTM(2)(inputs))) == 0


def test_cell_caches_dropout_masks_until_reset():
    cell = LSTMCell(4, dropout=0.5, recurrent_dropout=0.5, seed=1)
    x = np.ones((8, 6), "float32")
    h = np.ones((8, 4), "float32")
    first = keras.ops.convert_to_numpy(cell.get_dropout_mask(x))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(cell.get_dropout_mask(x)), first)
    recurrent = keras.ops.convert_to_numpy(cell.get_recurrent_dropout_mask(h))
    assert recurrent.shape == (8, 4)
    cell.reset_dropout_mask()
    cell.reset_recurrent_dropout_mask()
    assert cell._dropout_mask is None and cell._recurrent_dropout_mask is None


def test_layer_clears_its_cell_masks_after_each_call():
    layer = LSTM(4, dropout=0.5, recurrent_dropout=0.5, seed=1)
    layer(np.ones((2, 3, 6), "float32"), training=True)
    assert layer.cell._dropout_mask is None and layer.cell._recurrent_dropout_mask is None


def test_stateful_needs_a_fixed_batch_size():
    inputs = keras.Input((3, 4))
    with pytest.raises(ValueError, match="batch size must be static"):
        LSTM(2, stateful=True)(inputs)


def test_layers_forward_cell_arguments():
    layer = GRU(7, dropout=0.25, reset_after=False, seed=3)
    assert (layer.units, layer.dropout, layer.reset_after, layer.seed) == (7, 0.25, False, 3)


@pytest.mark.parametrize("loop", ["fully_unrolled", "hand_bptt", "compiled_bptt"])
@pytest.mark.parametrize("layer_class", [SimpleRNN, GRU, LSTM])
def test_states_given_as_variables_train_eagerly_as_in_a_graph(monkeypatch, loop, layer_class):
    # A stateful layer's states reach the loop as variables (so does a caller's learned initial
    # state): these loops stacked them or captured them as variables in eager mode, and failed.
    from seqlab.layers import _loop_choice

    monkeypatch.setenv(_loop_choice.ENV_VAR, loop)
    _loop_choice.clear()
    x = np.random.default_rng(0).random((4, 6, 3)).astype("float32")
    layer = layer_class(5, stateful=True, return_sequences=True)
    reference = layer_class(5, return_sequences=True)
    reference.build(x.shape)
    layer.build(x.shape)
    layer.set_weights(reference.get_weights())
    states = 2 if layer_class is LSTM else 1
    learned = [keras.Variable(np.full((4, 5), 0.1 * (k + 1), "float32")) for k in range(states)]
    with tf.GradientTape(persistent=True) as tape:
        eager = layer(x, training=True)  # from the layer's own (zero) states
        given = reference(x, initial_state=learned, training=True)
    graph = tf.function(lambda inputs, first: reference(inputs, initial_state=first,
                                                        training=True))
    # The same graph and eager kernels on both sides: rounding differences only.
    np.testing.assert_allclose(eager, reference(x, training=True), atol=1e-6)
    np.testing.assert_allclose(given, graph(x, [v.value for v in learned]), atol=1e-6)
    assert all(g is not None for g in tape.gradient(given, learned))
    assert all(g is not None for g in tape.gradient(eager, layer.trainable_weights))


def test_a_stateful_layer_fits_eagerly():
    model = keras.Sequential([keras.Input(batch_shape=(4, 10, 3)),
                              GRU(8, stateful=True, return_sequences=True), keras.layers.Dense(1)])
    model.compile("adam", "mse", run_eagerly=True)
    x = np.random.default_rng(1).random((16, 10, 3)).astype("float32")
    history = model.fit(x, x[..., :1], batch_size=4, epochs=1, shuffle=False, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.parametrize("layer_class", [SimpleRNN, GRU, LSTM])
def test_inputs_the_layer_cannot_read_are_refused_in_its_own_words(layer_class):
    # TensorFlow's words before: a matrix product's sizes, a slice out of bounds, an index.
    layer = layer_class(4)
    layer(np.zeros((2, 3, 2), "float32"))
    with pytest.raises(ValueError, match=r"was built for 2 input features per step; received "
                                         r"inputs of shape \(2, 3, 5\)"):
        layer(np.zeros((2, 3, 5), "float32"))
    with pytest.raises(ValueError, match=r"needs at least one time step; received inputs of "
                                         r"shape \(2, 0, 2\)"):
        layer(np.zeros((2, 0, 2), "float32"))
    states = 2 if layer_class is LSTM else 1
    with pytest.raises(ValueError, match=rf"takes {states} initial state tensors? of shape "
                                         rf"\[batch, 4\].*; received {states + 1}"):
        layer(np.zeros((2, 3, 2), "float32"),
              initial_state=[np.zeros((2, 4), "float32")] * (states + 1))
    given = [np.ones((2, 4), "float32")] * states
    assert layer(np.zeros((2, 3, 2), "float32"), initial_state=given).shape == (2, 4)
