"""On a GPU, seqlab's LSTM and GRU run cuDNN's fused kernel where Keras's built-in layers do.

This machine has no GPU, so the tests give Keras's TensorFlow backend a stand-in one: the
backend is told a GPU is there, and its two cuDNN functions are replaced by recorders that
return a stand-in result computed from their arguments. What is tested is the hand-over:
seqlab's layer gives cuDNN exactly the arguments Keras's built-in layer gives it (bit for bit:
no arithmetic happens before the kernel) and returns its result; the layers whose form cuDNN
cannot run, and a kernel that refuses, take seqlab's own loops. cuDNN's arithmetic itself is
Keras's and TensorFlow's, on the weights whose layout seqlab shares with Keras's layers
(`test_loop_choice.py`); it is not run here.
"""

import importlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import GRU, LSTM, SimpleRNN, _loop_choice, portable_loops
from tests.layers.recurrent_checks import fresh_choices  # noqa: F401 - autouse fixture


@pytest.fixture(autouse=True)
def no_forced_loop(monkeypatch):
    """The user's `SEQLAB_RNN_LOOP` (a loop forced in the shell) overrides the fused kernel
    these tests check: unset, as the tests that force one set it themselves."""
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)

# Keras's TensorFlow backend module of `lstm`, `gru` and the cuDNN kernels (the package's
# `rnn` attribute is a function of that name).
TF_RNN = importlib.import_module("keras.src.backend.tensorflow.rnn")
LAYERS = {"lstm": (LSTM, keras.layers.LSTM), "gru": (GRU, keras.layers.GRU)}


def stand_in_cudnn(kind, calls):
    """A recorder with the signature of the backend's `_cudnn_lstm` / `_cudnn_gru`."""
    state_count = 2 if kind == "lstm" else 1

    def kernel(inputs, *arguments):
        states = arguments[:state_count]
        weights, recurrent, bias, mask, time_major, go_backwards, return_sequences = (
            arguments[state_count:])
        calls.append({
            # The states as they were handed over: Keras's stateful layer hands its state
            # variables, whose value changes after the call.
            "kind": kind, "inputs": inputs, "states": [tf.identity(s) for s in states],
            "kernel": weights,
            "recurrent_kernel": recurrent, "bias": bias, "mask": mask,
            "flags": (time_major, go_backwards, return_sequences),
        })
        units = recurrent.shape[0]
        # A result that depends on every argument, in the backend's return format.
        last = tf.tanh(tf.reduce_sum(inputs, 1) @ weights[:, :units]
                       + states[0] @ recurrent[:, :units] + tf.reshape(bias, [-1])[:units])
        steps = tf.cast(tf.range(1, tf.shape(inputs)[1] + 1), last.dtype)[None, :, None]
        outputs = last[:, None, :] * (steps * (2.0 if go_backwards else 1.0))
        if not return_sequences:
            outputs = last[:, None, :]
        return last, outputs, [last] * state_count

    return kernel


def stand_in_gpu(monkeypatch):
    """A GPU as Keras's backend sees it, with stand-in cuDNN kernels. Returns the list of
    the calls they get. A loop forced in the shell (`SEQLAB_RNN_LOOP`) overrides the fused
    kernel, so it is unset here too, for the tests of other modules that take this GPU."""
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    calls = []
    monkeypatch.setattr(TF_RNN, "_is_gpu_available", lambda: True)
    monkeypatch.setattr(TF_RNN, "_cudnn_lstm", stand_in_cudnn("lstm", calls))
    monkeypatch.setattr(TF_RNN, "_cudnn_gru", stand_in_cudnn("gru", calls))
    return calls


@pytest.fixture
def cudnn_calls(monkeypatch):
    return stand_in_gpu(monkeypatch)


def sequences(shape=(3, 5, 4), seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def twin(kind, batch=None, **kwargs):
    """Keras's built-in layer and seqlab's, with the built-in's weights."""
    ours_cls, keras_cls = LAYERS[kind]
    theirs, ours = keras_cls(6, **kwargs), ours_cls(6, **kwargs)
    theirs.build((batch, None, 4))
    ours.build((batch, None, 4))
    ours.set_weights(theirs.get_weights())
    return theirs, ours


def assert_same_arguments(mine, theirs):
    assert mine["kind"] == theirs["kind"] and mine["flags"] == theirs["flags"]
    assert (mine["mask"] is None) == (theirs["mask"] is None)
    for name in ("inputs", "kernel", "recurrent_kernel", "bias"):
        np.testing.assert_array_equal(np.asarray(mine[name]), np.asarray(theirs[name]))
    for mine_state, their_state in zip(mine["states"], theirs["states"], strict=True):
        np.testing.assert_array_equal(np.asarray(mine_state), np.asarray(their_state))


@pytest.mark.parametrize("kind", sorted(LAYERS))
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_the_layer_hands_cudnn_what_kerass_built_in_layer_hands_it(
        kind, go_backwards, return_sequences, cudnn_calls):
    theirs, ours = twin(kind, go_backwards=go_backwards, return_sequences=return_sequences)
    x = sequences()
    expected = theirs(x)
    got = ours(x)
    assert len(cudnn_calls) == 2
    assert_same_arguments(cudnn_calls[1], cudnn_calls[0])
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


@pytest.mark.parametrize("kind", sorted(LAYERS))
def test_in_a_traced_training_step_too(kind, cudnn_calls):
    theirs, ours = twin(kind, return_sequences=True)
    x = tf.constant(sequences())
    for layer in (theirs, ours):
        tf.function(lambda inputs, layer=layer: layer(inputs, training=True))(x)
    assert len(cudnn_calls) == 2
    assert cudnn_calls[1]["flags"] == cudnn_calls[0]["flags"]


def test_input_dropout_is_applied_before_the_kernel_with_one_mask_for_all_steps(cudnn_calls):
    layer = LSTM(6, dropout=0.5, seed=1)
    x = sequences() + 3.0  # no zero inputs: a dropped input is a zero
    layer(x, training=True)
    (call,) = cudnn_calls
    kept = np.asarray(call["inputs"]) / x
    # Keras's rule: each kept input scaled by 1 / (1 - rate), the same for every step.
    np.testing.assert_allclose(np.sort(np.unique(np.round(kept, 5))), [0.0, 2.0])
    np.testing.assert_array_equal(kept, np.broadcast_to(kept[:, :1, :], kept.shape))


@pytest.mark.parametrize("kind, kwargs, training", [
    ("gru", {"reset_after": False}, False),
    ("lstm", {"activation": "relu"}, False),
    ("lstm", {"recurrent_activation": "hard_sigmoid"}, False),
    ("gru", {"use_bias": False}, False),
])
def test_forms_cudnn_cannot_run_take_seqlabs_loops(kind, kwargs, training, cudnn_calls):
    theirs, ours = twin(kind, **kwargs)
    x = sequences()
    # Keras's built-in layer runs its own loop for these forms too.
    np.testing.assert_allclose(np.asarray(ours(x, training=training)),
                               np.asarray(theirs(x, training=training)),
                               atol=1e-5)  # float32 rounding of the loops' products
    assert cudnn_calls == []


def test_recurrent_dropout_takes_seqlabs_loops_in_training_only(cudnn_calls):
    layer = LSTM(6, recurrent_dropout=0.3, seed=1)
    x = sequences()
    layer(x, training=True)
    assert cudnn_calls == []
    layer(x, training=False)  # no recurrent dropout at inference: cuDNN's form
    assert len(cudnn_calls) == 1


def test_a_right_padded_mask_runs_compacted_through_the_kernel(cudnn_calls):
    layer = GRU(6)
    x = sequences()
    mask = np.arange(5)[None, :] < np.array([5, 3, 1])[:, None]
    layer(x, mask=mask)
    (call,) = cudnn_calls
    assert call["mask"] is None  # the loop runs unmasked on the compacted sequences
    np.testing.assert_array_equal(np.asarray(call["inputs"]), x)  # right-padded: unmoved


def test_a_kernel_that_refuses_leaves_seqlabs_loop_running(monkeypatch, cudnn_calls):
    def missing(*arguments):
        raise tf.errors.NotFoundError(None, None, "No registered 'CudnnRNNV3' kernel")

    monkeypatch.setattr(TF_RNN, "_cudnn_lstm", missing)
    theirs, ours = twin("lstm", return_sequences=True)
    x = sequences()
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)),
                               atol=1e-5)  # float32 rounding of the loops' products


def test_the_kernel_is_kept_without_a_measurement_unless_a_loop_is_forced(monkeypatch,
                                                                          cudnn_calls):
    def no_measurement(*arguments):
        raise AssertionError("measured on a GPU where cuDNN's kernel runs")

    monkeypatch.setattr(_loop_choice, "measure", no_measurement)
    layer = LSTM(256)
    layer.build((None, None, 64))
    big = tf.zeros((64, 100, 64))  # far above the smallest measured shape
    assert _loop_choice.forward_flops(_loop_choice.loop_key(layer, big, None, True)) > (
        _loop_choice.MIN_MEASURED_FLOPS)
    assert _loop_choice.choose(layer, big, None, True) == "keras"
    monkeypatch.setenv(_loop_choice.ENV_VAR, "unrolled")
    small = LSTM(6)
    small(sequences())
    assert cudnn_calls == []


def test_on_a_gpu_the_layers_that_can_run_cudnn_opt_out_of_xla(monkeypatch):
    # Keras compiles with XLA on a GPU (`jit_compile="auto"`) only where every layer
    # supports it, and cuDNN's op does not compile; read at `compile`, before any trace.
    assert LSTM(3).supports_jit and GRU(3).supports_jit
    monkeypatch.setattr(tf.config, "list_physical_devices",
                        lambda kind=None: ["/physical_device:GPU:0"])
    assert not LSTM(3).supports_jit and not GRU(3).supports_jit
    assert SimpleRNN(3).supports_jit


def test_inside_portable_loops_no_layer_runs_the_kernel(cudnn_calls):
    layer = GRU(6)
    x = sequences()
    with portable_loops():
        with portable_loops():
            layer(x)
        layer(x)  # the inner block's end leaves the outer one on
        assert cudnn_calls == []
        # A trace inside the block holds seqlab's loop (what a SavedModel keeps).
        traced = tf.function(layer).get_concrete_function(tf.TensorSpec((None, None, 4)))
    assert cudnn_calls == []
    assert "while" in {op.type.lower() for op in traced.graph.get_operations()}
    layer(x)
    assert len(cudnn_calls) == 1


@pytest.mark.parametrize("kind", sorted(LAYERS))
def test_use_cudnn_false_never_runs_the_kernel(kind, cudnn_calls):
    theirs, ours = twin(kind, use_cudnn=False)
    x = sequences()
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)),
                               atol=1e-5)  # float32 rounding of the loops' products
    assert cudnn_calls == []


def test_use_cudnn_true_requires_the_kernel_as_kerass_layers_do(monkeypatch):
    x = sequences()
    # No GPU here: Keras's layer and seqlab's refuse alike.
    for layer in (keras.layers.LSTM(6, use_cudnn=True), LSTM(6, use_cudnn=True)):
        with pytest.raises(ValueError, match="use_cudnn=True"):
            layer(x)
    calls = stand_in_gpu(monkeypatch)
    LSTM(6, use_cudnn=True)(x)
    assert len(calls) == 1
    with pytest.raises(ValueError, match="use_cudnn=True"):
        GRU(6, use_cudnn=True, reset_after=False)(x)
    with portable_loops():  # an export's trace: portable before required
        LSTM(6, use_cudnn=True)(x)
    assert len(calls) == 1


def test_use_cudnn_is_checked_kept_in_the_config_and_only_where_keras_has_it():
    assert "use_cudnn" not in SimpleRNN(3).get_config()
    # Files written before the argument existed load with the default.
    config = LSTM(3).get_config()
    assert config.pop("use_cudnn") == "auto" and LSTM.from_config(config).use_cudnn == "auto"
    config = GRU(3, use_cudnn=False).get_config()
    assert config["use_cudnn"] is False and GRU.from_config(config).use_cudnn is False
    wrapper = keras.layers.Bidirectional(LSTM(3, use_cudnn=False))
    assert wrapper.forward_layer.use_cudnn is False and wrapper.backward_layer.use_cudnn is False
    with pytest.raises(ValueError, match="use_cudnn must be"):
        LSTM(3, use_cudnn="yes")
    with pytest.raises(ValueError, match="Unrecognized keyword arguments passed to SimpleRNN"):
        SimpleRNN(3, use_cudnn=False)  # as Keras's SimpleRNN, which has no cuDNN kernel


@pytest.mark.parametrize("kind", sorted(LAYERS))
def test_under_mixed_precision_too(kind, cudnn_calls):
    # Mixed precision is mostly a GPU's: the kernel gets float16 inputs and weights, as
    # from Keras's layer.
    theirs, ours = twin(kind, return_sequences=True, dtype="mixed_float16")
    x = sequences()
    expected, got = theirs(x), ours(x)
    assert cudnn_calls[1]["kernel"].dtype == tf.float16
    assert_same_arguments(cudnn_calls[1], cudnn_calls[0])
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


def test_bidirectional_and_stateful_layers_hand_over_as_kerass(cudnn_calls):
    x = sequences()
    theirs, ours = twin("lstm", return_sequences=True)
    wrapped = [keras.layers.Bidirectional(layer) for layer in (theirs, ours)]
    for wrapper in wrapped:
        wrapper.build((None, None, 4))
    wrapped[1].set_weights(wrapped[0].get_weights())
    expected, got = wrapped[0](x), wrapped[1](x)
    assert len(cudnn_calls) == 4  # forwards and backwards, each
    for mine, theirs_call in zip(cudnn_calls[2:], cudnn_calls[:2], strict=True):
        assert_same_arguments(mine, theirs_call)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))

    cudnn_calls.clear()
    theirs, ours = twin("gru", batch=3, stateful=True)
    for layer in (theirs, ours):
        layer(x)
        layer(x)  # the second call starts from the first call's states
    # Each layer's second call against the built-in's (calls 0 and 1 are the built-in's).
    assert_same_arguments(cudnn_calls[3], cudnn_calls[1])
    assert np.abs(np.asarray(cudnn_calls[3]["states"][0])).max() > 0
    assert np.abs(np.asarray(cudnn_calls[2]["states"][0])).max() == 0  # the first: zeros
