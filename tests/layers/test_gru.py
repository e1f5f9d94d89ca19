import keras
import numpy as np
import pytest

from seqlab.layers import GRU, GRUCell
from tests.conftest import run_layer_test, saved_model_round_trip
from tests.layers import recurrent_checks as checks

RESET_AFTER = [pytest.param(True, id="reset_after"), pytest.param(False, id="reset_before")]


@pytest.mark.parametrize("reset_after", RESET_AFTER)
@pytest.mark.parametrize("scenario", sorted(checks.SCENARIOS))
def test_matches_keras_gru(scenario, reset_after):
    checks.check_against_keras(GRU, keras.layers.GRU, scenario, reset_after=reset_after)



@pytest.mark.parametrize("reset_after", RESET_AFTER)
@pytest.mark.parametrize("scenario", sorted(checks.SCENARIOS))
def test_training_gradients_match_keras(scenario, reset_after):
    checks.check_gradients_against_keras(GRU, keras.layers.GRU, scenario, reset_after=reset_after)


def test_bidirectional_training_gradients_match_keras():
    checks.check_gradients_against_keras(
        GRU, keras.layers.GRU, "masked_sequences", bidirectional=True
    )

@pytest.mark.parametrize("reset_after", RESET_AFTER)
@pytest.mark.parametrize("masked", [False, True])
def test_bidirectional_matches_keras(masked, reset_after):
    checks.check_bidirectional(GRU, keras.layers.GRU, masked, reset_after=reset_after)


@pytest.mark.parametrize("reset_after", RESET_AFTER)
def test_stacked_matches_keras(reset_after):
    checks.check_stacked(GRU, keras.layers.GRU, reset_after=reset_after)


@pytest.mark.parametrize("reset_after", RESET_AFTER)
def test_stateful_over_two_calls_matches_keras(reset_after):
    checks.check_stateful(GRU, keras.layers.GRU, reset_after=reset_after)


def test_initial_state_matches_keras():
    checks.check_initial_state(GRU, keras.layers.GRU, n_states=1)


@pytest.mark.parametrize("reset_after", RESET_AFTER)
def test_cell_in_keras_rnn_equals_fused_layer(reset_after):
    checks.check_cell_in_keras_rnn(GRUCell, GRU, reset_after=reset_after)


def test_padding_changes_nothing():
    checks.check_padding_invariance(GRU)


def test_seed_equation_by_hand():
    """reset_after=False is the seeds' equation; one unit, worked by hand."""
    layer = GRU(1, reset_after=False)
    x = np.array([[[1.0], [2.0]]], dtype="float32")
    layer(x)
    # Gate order z, r, h~.
    w, u, b = np.array([0.5, -0.3, 0.8]), np.array([0.2, 0.4, -0.6]), np.array([0.1, 0.0, -0.2])
    layer.set_weights([w[None], u[None], b])
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h = 0.0
    for x_t in (1.0, 2.0):
        z = sigmoid(w[0] * x_t + u[0] * h + b[0])
        r = sigmoid(w[1] * x_t + u[1] * h + b[1])
        candidate = np.tanh(w[2] * x_t + u[2] * (r * h) + b[2])
        h = z * h + (1 - z) * candidate
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(x))[0, 0], h, atol=1e-6)


def test_bias_layout_follows_reset_after():
    x = np.zeros((1, 2, 4), "float32")
    after, before = GRU(3, reset_after=True), GRU(3, reset_after=False)
    after(x)
    before(x)
    assert tuple(after.cell.bias.shape) == (2, 9)
    assert tuple(before.cell.bias.shape) == (9,)


def test_dropout_only_when_training():
    layer = GRU(4, dropout=0.5, recurrent_dropout=0.5, seed=3, return_sequences=True)
    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")
    a = keras.ops.convert_to_numpy(layer(x, training=False))
    np.testing.assert_array_equal(a, keras.ops.convert_to_numpy(layer(x, training=False)))
    assert not np.allclose(a, keras.ops.convert_to_numpy(layer(x, training=True)))


@pytest.mark.parametrize("reset_after", RESET_AFTER)
def test_recurrent_dropout_alone_changes_training_and_input_dropout_cannot_reach_h(reset_after):
    checks.check_recurrent_dropout(GRU, reset_after=reset_after)


@pytest.mark.parametrize("reset_after", RESET_AFTER)
def test_cell_recurrent_dropout_in_keras_rnn(reset_after):
    checks.check_cell_recurrent_dropout(GRUCell, reset_after=reset_after)


@pytest.mark.parametrize("reset_after", RESET_AFTER)
def test_layer_contract(tmp_path, reset_after):
    run_layer_test(
        GRU,
        {"units": 3, "return_sequences": True, "dropout": 0.1, "reset_after": reset_after},
        np.random.default_rng(0).normal(size=(2, 4, 5)).astype("float32"),
        expected_output_shape=(2, 4, 3),
        tmp_path=tmp_path,
    )


def test_cell_config_round_trip():
    cell = GRUCell(3, dropout=0.2, reset_after=False, seed=4)
    config = cell.get_config()
    assert GRUCell.from_config(config).get_config() == config


def test_saved_model_round_trip(tmp_path):
    inputs = keras.Input((4, 5))
    model = keras.Model(inputs, GRU(3, return_sequences=True)(inputs))
    x = np.random.default_rng(1).normal(size=(2, 4, 5)).astype("float32")
    saved_model_round_trip(model, x, tmp_path)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"units": 0}, "Received: units=0"),
        ({"units": -3}, "Received: units=-3"),
        ({"units": 4, "dropout": 2}, "Received: dropout=2"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GRU(**kwargs)
