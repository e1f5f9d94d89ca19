import keras
import numpy as np
import pytest

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
