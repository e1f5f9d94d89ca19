import keras
import numpy as np
import pytest

from seqlab.layers import SimpleRNN, SimpleRNNCell
from tests.conftest import run_layer_test, saved_model_round_trip
from tests.layers import recurrent_checks as checks


@pytest.mark.parametrize("scenario", sorted(checks.SCENARIOS))
def test_matches_keras_simple_rnn(scenario):
    checks.check_against_keras(SimpleRNN, keras.layers.SimpleRNN, scenario)



@pytest.mark.parametrize("scenario", sorted(checks.SCENARIOS))
def test_training_gradients_match_keras(scenario):
    checks.check_gradients_against_keras(SimpleRNN, keras.layers.SimpleRNN, scenario)


def test_bidirectional_training_gradients_match_keras():
    checks.check_gradients_against_keras(
        SimpleRNN, keras.layers.SimpleRNN, "masked_sequences", bidirectional=True
    )

@pytest.mark.parametrize("masked", [False, True])
def test_bidirectional_matches_keras(masked):
    checks.check_bidirectional(SimpleRNN, keras.layers.SimpleRNN, masked)


def test_stacked_matches_keras():
    checks.check_stacked(SimpleRNN, keras.layers.SimpleRNN)


def test_stateful_over_two_calls_matches_keras():
    checks.check_stateful(SimpleRNN, keras.layers.SimpleRNN)


def test_initial_state_matches_keras():
    checks.check_initial_state(SimpleRNN, keras.layers.SimpleRNN, n_states=1)


def test_cell_in_keras_rnn_equals_fused_layer():
    checks.check_cell_in_keras_rnn(SimpleRNNCell, SimpleRNN)


def test_padding_changes_nothing():
    checks.check_padding_invariance(SimpleRNN)


def test_variational_dropout_reuses_one_mask_per_sequence():
    checks.check_variational_dropout(SimpleRNN)


def test_recurrent_dropout_alone_changes_training_and_input_dropout_cannot_reach_h():
    checks.check_recurrent_dropout(SimpleRNN)


def test_cell_recurrent_dropout_in_keras_rnn():
    checks.check_cell_recurrent_dropout(SimpleRNNCell)


def test_recurrent_dropout_mask_is_one_per_sequence():
    """h_t = m (.) h_{t-1} + 1 with the identity as U, no input and a mask m in {0, 2}:
    h_2 = m + 1 and h_3 = m (m + 1) + 1, so each unit reads (1, 1, 1) or (1, 3, 7); a mask
    drawn anew at each step would also give h_3 = 3 or 5."""
    layer = SimpleRNN(
        64, activation=None, kernel_initializer="zeros", recurrent_initializer="identity",
        bias_initializer="ones", recurrent_dropout=0.5, seed=5, return_sequences=True,
    )
    h = keras.ops.convert_to_numpy(layer(np.ones((2, 3, 1), "float32"), training=True))
    dropped = h[:, 1] < 2
    np.testing.assert_allclose(h[:, 0], 1.0)
    np.testing.assert_allclose(h[:, 1], np.where(dropped, 1.0, 3.0), atol=1e-5)
    np.testing.assert_allclose(h[:, 2], np.where(dropped, 1.0, 7.0), atol=1e-5)
    assert 0 < dropped.mean() < 1


def test_example_13_1_golden_values():
    """Seed 000, Example 13.1: identity activation, scalar weights, prices."""
    prices = np.array([[[100.0], [105.0], [120.0], [130.0], [125.0]]], dtype="float32")
    inputs = keras.Input((5, 1))
    hidden = SimpleRNN(1, activation=None, return_sequences=True)(inputs)
    readout = keras.layers.Dense(1)(hidden)
    model = keras.Model(inputs, [hidden, readout])
    model.set_weights([np.array(w, "float32") for w in ([[0.08]], [[0.02]], [-7.9], [[8.0]], [100.0])])
    h, y = (keras.ops.convert_to_numpy(t) for t in model(prices))
    np.testing.assert_allclose(
        np.ravel(h), [0.1, 0.502, 1.71004, 2.53420, 2.15068], atol=5e-5
    )
    np.testing.assert_allclose(y[0, -1, 0], 117.20547, atol=5e-4)


def test_layer_contract(tmp_path):
    run_layer_test(
        SimpleRNN,
        {"units": 3, "return_state": True, "go_backwards": True},
        np.random.default_rng(0).normal(size=(2, 4, 5)).astype("float32"),
        expected_output_shape=(2, 3),
        tmp_path=tmp_path,
    )


def test_saved_model_round_trip(tmp_path):
    inputs = keras.Input((4, 5))
    model = keras.Model(inputs, SimpleRNN(3)(inputs))
    x = np.random.default_rng(1).normal(size=(2, 4, 5)).astype("float32")
    saved_model_round_trip(model, x, tmp_path)


def test_bad_arguments():
    with pytest.raises(ValueError, match="Received: units=0"):
        SimpleRNN(0)
    with pytest.raises(ValueError, match="Received: units=True"):
        SimpleRNNCell(True)
