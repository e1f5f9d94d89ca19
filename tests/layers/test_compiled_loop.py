"""The XLA-compiled hand-scheduled BPTT (`compiled_bptt`): where it may run, that it is
compiled, and that it trains as Keras's layers do, second-order gradients included.

test_loop_choice.py checks it against Keras's built-ins with every other loop (masks,
`go_backwards`, bidirectional, dropout, stateful layers). Tolerances: float32 products and
element-wise kernels that XLA fuses differently from TensorFlow's (atol 1e-5, as there).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import GRU, LSTM, SimpleRNN, _loop_choice, portable_loops
from tests.layers import recurrent_checks as checks
from tests.layers.recurrent_checks import fresh_choices  # noqa: F401 - autouse fixture

LAYERS = {"lstm": (LSTM, keras.layers.LSTM), "gru": (GRU, keras.layers.GRU),
          "simple_rnn": (SimpleRNN, keras.layers.SimpleRNN)}


def _built(cls, units=5, **kwargs):
    layer = cls(units, **kwargs)
    layer(np.zeros((2, 3, 4), "float32"))
    return layer


def test_the_compiled_loop_is_a_candidate_for_training_on_a_known_number_of_steps():
    """XLA compiles once per shape of its inputs: a time axis the trace leaves open would
    compile again for every length, and an export (inference, or inside `portable_loops`)
    must hold plain TensorFlow operations."""
    layer = _built(LSTM)
    known, open_steps = tf.TensorSpec([None, 7, 4]), tf.TensorSpec([None, None, 4])
    assert layer.compiles_loops(known) and not layer.compiles_loops(open_steps)
    assert "compiled_bptt" in _loop_choice.candidates(layer.cell, True, compilable=True)
    assert "compiled_bptt" not in _loop_choice.candidates(layer.cell, False, compilable=True)
    assert "compiled_bptt" not in _loop_choice.candidates(layer.cell, True, compilable=False)
    reset_before = _built(GRU, reset_after=False)
    assert "compiled_bptt" not in _loop_choice.candidates(reset_before.cell, True, True)
    with portable_loops():
        assert not layer.compiles_loops(known)
    # The key tells a known time axis from the stand-in for an open one.
    assert (_loop_choice.loop_key(layer, known, None, True)[-1]
            != _loop_choice.loop_key(layer, tf.TensorSpec([None, None, 4]), None, True)[-1])


def test_forcing_the_compiled_loop_where_it_may_not_run_falls_back(monkeypatch):
    monkeypatch.setenv(_loop_choice.ENV_VAR, "compiled_bptt")
    layer = _built(GRU)
    assert _loop_choice.choose(layer, tf.zeros([2, 3, 4]), None, training=True) == "compiled_bptt"
    assert _loop_choice.choose(layer, tf.zeros([2, 3, 4]), None, training=False) == "unrolled"
    assert _loop_choice.choose(
        layer, tf.TensorSpec([None, None, 4]), None, training=True) == "unrolled"
    with portable_loops():
        assert _loop_choice.choose(layer, tf.zeros([2, 3, 4]), None, True) == "unrolled"


def _compiled_functions(concrete_function):
    """Names of the functions in `concrete_function`'s graph (and the functions it calls)
    that carry XLA's must-compile attribute."""
    graph_def = concrete_function.graph.as_graph_def()
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    return {node.attr["f"].func.name for node in nodes
            if node.attr["_XlaMustCompile"].b and "f" in node.attr}


@pytest.mark.parametrize("variant, compiled", [("compiled_bptt", True), ("hand_bptt", False)])
def test_the_compiled_loop_runs_as_xla_functions(variant, compiled, monkeypatch):
    """A traced training step holds the forward and the backward loop as XLA-compiled
    functions with `compiled_bptt`, and none with `hand_bptt`."""
    monkeypatch.setenv(_loop_choice.ENV_VAR, variant)
    layer = _built(LSTM)

    @tf.function
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x, training=True))
        return tape.gradient(loss, layer.trainable_variables)

    concrete = train_step.get_concrete_function(tf.TensorSpec([None, 6, 4]))
    found = _compiled_functions(concrete)
    if compiled:
        assert any("forward_loop" in name for name in found)
        assert any("backward_loop" in name for name in found)
    else:
        assert not found


@pytest.mark.parametrize("layer", ["lstm", "gru"])
def test_the_compiled_loop_trains_in_fit_on_two_batch_sizes_as_keras_does(layer, monkeypatch):
    """One traced training step, two batch sizes (the last batch is smaller, so XLA compiles
    each loop twice): the weights after `fit` equal those of Keras's layer. Tolerance: two
    epochs of SGD on float32 gradients that agree to 1e-5."""
    monkeypatch.setenv(_loop_choice.ENV_VAR, "compiled_bptt")
    ours_cls, keras_cls = LAYERS[layer]
    x = np.random.default_rng(0).normal(size=(7, 6, 4)).astype("float32")
    y = np.random.default_rng(1).normal(size=(7, 1)).astype("float32")

    def fitted(cls):
        model = keras.Sequential([keras.Input((6, 4)), cls(5, return_sequences=True),
                                  keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])
        model.set_weights(start)
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        return model.get_weights()

    keras.utils.set_random_seed(3)
    start = keras.Sequential([keras.Input((6, 4)), keras_cls(5, return_sequences=True),
                              keras.layers.GlobalAveragePooling1D(),
                              keras.layers.Dense(1)]).get_weights()
    for ours, reference in zip(fitted(ours_cls), fitted(keras_cls)):
        np.testing.assert_allclose(ours, reference, atol=1e-5)


def _penalty_gradients(layer, x, traced):
    """The gradient of a gradient penalty (as a WGAN-GP critic's): d/dW |d loss / d x|^2."""
    def penalty():
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                inner.watch(x)
                loss = checks._weighted_loss(layer(x, training=True))
            gradient = inner.gradient(loss, x)
            penalty = tf.reduce_sum(gradient * gradient)
        return outer.gradient(penalty, layer.trainable_variables)

    return [g.numpy() for g in (tf.function(penalty)() if traced else penalty())]


@pytest.mark.parametrize("variant", ["compiled_bptt", "hand_bptt", "fully_unrolled"])
@pytest.mark.parametrize("layer, traced", [("lstm", True), ("gru", False)])
def test_second_order_gradients_through_the_hand_scheduled_loops_equal_keras(
        layer, traced, variant, monkeypatch):
    """The compiled loops hand each other tensors no tape records; a gradient of the
    gradient is taken by running the uncompiled loop again (not silently zero). The
    hand-scheduled loops, in a while loop or written out, are differentiated again as they
    run."""
    monkeypatch.setenv(_loop_choice.ENV_VAR, variant)
    ours_cls, keras_cls = LAYERS[layer]
    reference = keras_cls(5, return_sequences=True)
    ours = ours_cls(5, return_sequences=True)
    x = tf.constant(checks.random_inputs(4))
    reference(x), ours(x)
    ours.set_weights(reference.get_weights())
    for got, want in zip(_penalty_gradients(ours, x, traced),
                         _penalty_gradients(reference, x, traced)):
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-4)


def test_a_compiled_loop_that_cannot_run_here_is_left_out_of_the_measurement(monkeypatch):
    """Where XLA cannot compile the loop (a platform or an operation it lacks), the other
    candidates are still measured and the fastest of them kept; not the unmeasured default
    for want of one candidate."""
    from seqlab.layers import _loop

    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    layer = _built(GRU)  # unmeasured
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    monkeypatch.setattr(_loop_choice, "MIN_SECONDS", 0)
    monkeypatch.setenv(_loop_choice.MEMORY_VAR, "off")

    def cannot_compile(function):
        def call(*args):
            raise tf.errors.UnimplementedError(None, None, "no XLA here")
        return call

    monkeypatch.setattr(_loop, "_compiled", cannot_compile)
    choice = _loop_choice.choose(layer, tf.zeros([2, 3, 4]), None, training=True)
    (times,) = _loop_choice.measurements().values()
    assert set(times) == {"keras", "unrolled", "hand_bptt", "feature_major", "fully_unrolled"}
    assert choice == _loop_choice.fastest(times)


def test_a_model_trained_with_the_compiled_loop_exports_without_xla(monkeypatch, tmp_path):
    """Training compiled, the export is not: the SavedModel's graph holds no XLA-compiled
    function (TensorFlow Serving would refuse it) and serves what Keras's layer computes with
    the trained weights (tolerance: float32 products summed in another order)."""
    monkeypatch.setenv(_loop_choice.ENV_VAR, "compiled_bptt")
    x = np.random.default_rng(0).normal(size=(8, 6, 4)).astype("float32")
    model = keras.Sequential([keras.Input((6, 4)), LSTM(5), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, x[:, -1, :1], batch_size=4, epochs=1, verbose=0)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serve", model.call,
                         input_signature=[tf.TensorSpec([None, 6, 4], tf.float32)])
    archive.write_out(str(tmp_path / "model"), verbose=False)
    served = tf.saved_model.load(str(tmp_path / "model"))
    assert not _compiled_functions(served.serve.get_concrete_function(
        tf.TensorSpec([None, 6, 4], tf.float32)))
    reference = keras.Sequential([keras.Input((6, 4)), keras.layers.LSTM(5),
                                  keras.layers.Dense(1)])
    reference.set_weights(model.get_weights())
    np.testing.assert_allclose(served.serve(x).numpy(), reference(x).numpy(), atol=1e-5)
