import keras
import numpy as np
import pytest

from seqlab.layers import LSTM, LSTMCell
from tests.conftest import run_layer_test, saved_model_round_trip
from tests.layers import recurrent_checks as checks


@pytest.mark.parametrize("scenario", sorted(checks.SCENARIOS))
def test_matches_keras_lstm(scenario):
    checks.check_against_keras(LSTM, keras.layers.LSTM, scenario)



# Both training paths: the hand-scheduled BPTT (from 1 unit on) and TensorFlow's own (never).
BACKPROP_PATHS = pytest.mark.parametrize("hand_from", [1, None], ids=["by_hand", "autodiff"])


@BACKPROP_PATHS
@pytest.mark.parametrize("scenario", sorted(checks.SCENARIOS))
def test_training_gradients_match_keras(scenario, hand_from, monkeypatch):
    monkeypatch.setattr(LSTMCell, "hand_backprop_min_units", hand_from)
    checks.check_gradients_against_keras(LSTM, keras.layers.LSTM, scenario)


@BACKPROP_PATHS
def test_bidirectional_training_gradients_match_keras(hand_from, monkeypatch):
    monkeypatch.setattr(LSTMCell, "hand_backprop_min_units", hand_from)
    checks.check_gradients_against_keras(
        LSTM, keras.layers.LSTM, "masked_sequences", bidirectional=True
    )


def test_hand_scheduled_backprop_is_chosen_per_cell_and_size():
    from seqlab.layers import GRUCell, SimpleRNNCell

    assert LSTMCell(1).backprop_by_hand and LSTMCell(256).backprop_by_hand
    cell = LSTMCell(255)
    cell.hand_backprop_min_units = 256
    assert not cell.backprop_by_hand
    assert not GRUCell(512).backprop_by_hand and not SimpleRNNCell(512).backprop_by_hand

@pytest.mark.parametrize("masked", [False, True])
def test_bidirectional_matches_keras(masked):
    checks.check_bidirectional(LSTM, keras.layers.LSTM, masked)


def test_stacked_matches_keras():
    checks.check_stacked(LSTM, keras.layers.LSTM)


def test_stateful_over_two_calls_matches_keras():
    checks.check_stateful(LSTM, keras.layers.LSTM)


def test_initial_state_matches_keras():
    checks.check_initial_state(LSTM, keras.layers.LSTM, n_states=2)


@pytest.mark.parametrize("dtype,tolerance", [("float16", 2e-3), ("float64", 1e-12)])
def test_a_layer_of_another_dtype_builds_and_matches_keras(dtype, tolerance):
    # The forget gate's bias of 1 was made in float32 whatever the layer's dtype, so a float16
    # layer could not be built. The tolerances: float16's 11-bit fraction, and float64's.
    x = np.random.default_rng(0).normal(size=(3, 6, 4)).astype(dtype)
    ours, reference = LSTM(5, dtype=dtype), keras.layers.LSTM(5, dtype=dtype)
    ours(x), reference(x)
    assert keras.ops.convert_to_numpy(ours.cell.bias).dtype == dtype
    ours.set_weights(reference.get_weights())
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours(x)),
                               keras.ops.convert_to_numpy(reference(x)), atol=tolerance)


def test_cell_in_keras_rnn_equals_fused_layer():
    checks.check_cell_in_keras_rnn(LSTMCell, LSTM)


def test_padding_changes_nothing():
    checks.check_padding_invariance(LSTM)


def test_example_13_2_golden_values():
    """Seed 000, Example 13.2: one unit, h_0 = 0, c_0 = 2, x = [1, 0.5]."""
    layer = LSTM(1, return_sequences=True, return_state=True)
    x = np.array([[[1.0], [0.5]]], dtype="float32")
    layer(x)
    # Gate order i, f, c~, o; b_i = 0.3, b_f = 0.2, b_c = 0.8, b_o = 0.3.
    layer.set_weights(
        [np.full((1, 4), 0.5), np.full((1, 4), -0.1), np.array([0.3, 0.2, 0.8, 0.3])]
    )
    h, h_last, c_last = layer(x, initial_state=[np.zeros((1, 1)), np.full((1, 1), 2.0)])
    np.testing.assert_allclose(np.ravel(h), [0.66155, 0.57161], atol=5e-6)
    np.testing.assert_allclose(np.ravel(c_last), [1.61544], atol=5e-6)
    # c_1 from the first step alone.
    _, _, c_first = layer(x[:, :1], initial_state=[np.zeros((1, 1)), np.full((1, 1), 2.0)])
    np.testing.assert_allclose(np.ravel(c_first), [1.93094], atol=5e-6)
    np.testing.assert_allclose(np.ravel(h_last), [0.57161], atol=5e-6)


def numpy_lstm(x, kernel, recurrent_kernel, bias, h, c):
    """DESIGN.md section 3 in NumPy, gates fused in the order i, f, c~, o."""
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    outputs = []
    for x_t in np.moveaxis(x, 1, 0):
        z_i, z_f, z_c, z_o = np.split(x_t @ kernel + h @ recurrent_kernel + bias, 4, axis=-1)
        c = sigmoid(z_f) * c + sigmoid(z_i) * np.tanh(z_c)
        h = sigmoid(z_o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, axis=1), h, c


@BACKPROP_PATHS
@pytest.mark.parametrize("training", [False, True])
def test_golden_values_with_distinct_gate_weights(training, hand_from, monkeypatch):
    """Every gate has its own weights (unlike Example 13.2, where i and o share theirs), so a
    swap of any two gates changes the numbers; both loops (inference, training) are checked."""
    monkeypatch.setattr(LSTMCell, "hand_backprop_min_units", hand_from)
    rng = np.random.default_rng(21)
    units, features = 2, 3
    kernel = rng.normal(size=(features, 4 * units))
    recurrent_kernel = rng.normal(size=(units, 4 * units))
    # Biases far apart per gate: i ~ -1, f ~ 1, c~ ~ 0.5, o ~ 2.
    bias = np.repeat([-1.0, 1.0, 0.5, 2.0], units) + 0.1 * rng.normal(size=4 * units)
    x = rng.normal(size=(2, 3, features))
    h0, c0 = rng.normal(size=(2, units)), rng.normal(size=(2, units))
    expected, expected_h, expected_c = numpy_lstm(x, kernel, recurrent_kernel, bias, h0, c0)

    layer = LSTM(units, return_sequences=True, return_state=True)
    layer(x.astype("float32"))
    layer.set_weights([kernel, recurrent_kernel, bias])
    outputs, h, c = (
        keras.ops.convert_to_numpy(t)
        for t in layer(x.astype("float32"), initial_state=[h0.astype("float32"),
                                                           c0.astype("float32")],
                       training=training)
    )
    np.testing.assert_allclose(outputs, expected, atol=1e-5)
    np.testing.assert_allclose(h, expected_h, atol=1e-5)
    np.testing.assert_allclose(c, expected_c, atol=1e-5)


@BACKPROP_PATHS
def test_recurrent_dropout_alone_changes_training_and_input_dropout_cannot_reach_h(
    hand_from, monkeypatch
):
    monkeypatch.setattr(LSTMCell, "hand_backprop_min_units", hand_from)
    checks.check_recurrent_dropout(LSTM)


def test_cell_recurrent_dropout_in_keras_rnn():
    checks.check_cell_recurrent_dropout(LSTMCell)


def test_variational_dropout():
    """Dropout acts only when training; the SimpleRNN tests check mask reuse."""
    layer = LSTM(4, dropout=0.5, recurrent_dropout=0.5, seed=3, return_sequences=True)
    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")
    a = keras.ops.convert_to_numpy(layer(x, training=False))
    b = keras.ops.convert_to_numpy(layer(x, training=False))
    np.testing.assert_array_equal(a, b)
    c = keras.ops.convert_to_numpy(layer(x, training=True))
    assert not np.allclose(a, c)


def test_unit_forget_bias_initialises_forget_gate_to_one():
    layer = LSTM(3)
    layer(np.zeros((1, 2, 4), "float32"))
    bias = keras.ops.convert_to_numpy(layer.cell.bias)
    np.testing.assert_array_equal(bias, [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0])


def test_layer_contract(tmp_path):
    run_layer_test(
        LSTM,
        {"units": 3, "return_sequences": True, "dropout": 0.1, "recurrent_dropout": 0.1},
        np.random.default_rng(0).normal(size=(2, 4, 5)).astype("float32"),
        expected_output_shape=(2, 4, 3),
        tmp_path=tmp_path,
    )


def test_cell_config_round_trip():
    cell = LSTMCell(3, dropout=0.2, unit_forget_bias=False, seed=4)
    config = cell.get_config()
    assert LSTMCell.from_config(config).get_config() == config


def test_saved_model_round_trip(tmp_path):
    inputs = keras.Input((4, 5))
    model = keras.Model(inputs, LSTM(3, return_sequences=True)(inputs))
    x = np.random.default_rng(1).normal(size=(2, 4, 5)).astype("float32")
    saved_model_round_trip(model, x, tmp_path)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"units": 0}, "Received: units=0"),
        ({"units": 2.5}, "Received: units=2.5"),
        ({"units": 4, "dropout": 1.0}, "Received: dropout=1.0"),
        ({"units": 4, "recurrent_dropout": -0.1}, r"Received: recurrent_dropout=-0.1"),
        ({"units": 4, "unroll": True}, "Received: unroll=True"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LSTM(**kwargs)
