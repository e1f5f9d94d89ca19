"""The time loop a recurrent layer runs: every variant computes Keras's function, and the choice.

Each loop variant (`layers/_loop_choice.py`) is forced with `SEQLAB_RNN_LOOP` and checked
against Keras's built-in layer with copied weights: outputs at atol 1e-5, training gradients
at atol 1e-5 / rtol 1e-4 (`recurrent_checks`), with masks, `go_backwards`, `return_state`,
bidirectional, and dropout. No timings are asserted: the choice logic is tested with a
stand-in measurement.
"""

import json
import os
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import (
    GRU,
    LSTM,
    GRUCell,
    LSTMCell,
    SimpleRNN,
    SimpleRNNCell,
    _loop_choice,
    rnn_base,
)
from seqlab.layers import _loop
from seqlab.layers._loop import run_separable_recurrence
from tests.layers import recurrent_checks as checks
from tests.layers.recurrent_checks import fresh_choices  # noqa: F401 - autouse fixture

LAYERS = {
    "simple_rnn": (SimpleRNN, keras.layers.SimpleRNN, {}),
    "lstm": (LSTM, keras.layers.LSTM, {}),
    "gru": (GRU, keras.layers.GRU, {}),
    "gru_reset_before": (GRU, keras.layers.GRU, {"reset_after": False}),
}
SCENARIOS = ["plain", "masked_sequences", "go_backwards_masked", "return_state_masked",
             "return_state_masked_last", "masked_empty_zero_output", "masked_last_zero_output", "go_backwards_masked_empty",
             "go_backwards_masked_holes"]


# `compiled_bptt` runs `hand_bptt`'s loops compiled by XLA (training only; elsewhere, and
# for a cell that is not separable, it falls back to `unrolled`): it is checked on the
# scenarios that take each of those loops' paths (unmasked, compacted, masked step by step,
# backwards with holes), not on every one again; each compiles its loops anew (about 1 s).
def variant_cases(scenarios, compiled_scenarios):
    """`(variant, layer, scenario)` of every variant, layer and scenario; `compiled_bptt` only
    on `compiled_scenarios` and the layers whose cell it runs (separable)."""
    return [
        (variant, layer, scenario)
        for variant in _loop_choice.VARIANTS for layer in sorted(LAYERS) for scenario in scenarios
        if variant != "compiled_bptt"
        or (scenario in compiled_scenarios and LAYERS[layer][2].get("reset_after", True))
    ]


@pytest.mark.parametrize("variant, layer, scenario", variant_cases(
    SCENARIOS, ["plain", "masked_sequences", "return_state_masked", "return_state_masked_last",
                "go_backwards_masked_holes"]))
def test_every_variant_matches_keras(variant, layer, scenario, monkeypatch):
    monkeypatch.setenv(_loop_choice.ENV_VAR, variant)
    ours_cls, keras_cls, kwargs = LAYERS[layer]
    checks.check_against_keras(ours_cls, keras_cls, scenario, **kwargs)
    checks.check_gradients_against_keras(ours_cls, keras_cls, scenario, **kwargs)


# The hand-scheduled BPTT's written-out step gradient (`StepBackward`) covers the default
# activations only; with others the loop differentiates the step itself.
OTHER_ACTIVATIONS = {
    "lstm_hard_sigmoid": (LSTM, keras.layers.LSTM, {"recurrent_activation": "hard_sigmoid"}),
    "lstm_relu": (LSTM, keras.layers.LSTM, {"activation": "relu"}),
    "simple_rnn_relu": (SimpleRNN, keras.layers.SimpleRNN, {"activation": "relu"}),
    "gru_hard_sigmoid": (GRU, keras.layers.GRU, {"recurrent_activation": "hard_sigmoid"}),
    "gru_relu": (GRU, keras.layers.GRU, {"activation": "relu"}),
}


@pytest.mark.parametrize("layer", sorted(OTHER_ACTIVATIONS))
@pytest.mark.parametrize("scenario", ["plain", "masked_sequences"])
def test_hand_bptt_with_other_activations_matches_keras(layer, scenario, monkeypatch):
    monkeypatch.setenv(_loop_choice.ENV_VAR, "hand_bptt")
    ours_cls, keras_cls, kwargs = OTHER_ACTIVATIONS[layer]
    assert ours_cls(4, **kwargs).cell.step_backward is None
    checks.check_against_keras(ours_cls, keras_cls, scenario, **kwargs)
    checks.check_gradients_against_keras(ours_cls, keras_cls, scenario, **kwargs)


# Projected width: LSTM 4 units, GRU 3 (its candidate reads x_h + r (.) inner_h: x_t and inner_t
# get different gradients), SimpleRNN 1.
@pytest.mark.parametrize("cell_cls, n_states, gates",
                         [(LSTMCell, 2, 4), (GRUCell, 1, 3), (SimpleRNNCell, 1, 1)])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("sequences", [True, False])
def test_written_out_step_gradient_equals_the_differentiated_step(
        cell_cls, n_states, gates, masked, sequences):
    """The loop with the cell's `StepBackward` gives every gradient (projected inputs, U, b,
    initial states) and output that it gives when it differentiates `finish_step` itself,
    with every step's output returned or the last alone (then, unmasked, a step's output has
    no gradient of its own: `StepBackward.backward` gets None for it). The same equations:
    the tolerance only allows for float32 kernels that fuse differently."""
    cell = cell_cls(5)
    cell.build((None, 3))
    assert cell.step_backward is not None
    rng = np.random.default_rng(0)
    steps, batch, width = 7, 4, 5 * gates
    inputs = tf.constant(rng.normal(size=(steps, batch, width)), tf.float32)
    kernel = tf.constant(rng.normal(size=(5, width)) * 0.5, tf.float32)
    bias = tf.constant(rng.normal(size=(width,)), tf.float32)
    states = [tf.constant(rng.normal(size=(batch, 5)), tf.float32) for _ in range(n_states)]
    mask = tf.constant(rng.random((batch, steps)) > 0.3) if masked else None
    weights = [tf.constant(rng.normal(size=shape), tf.float32)
               for shape in [(batch, 5), (batch, steps if sequences else 1, 5)]
               + [(batch, 5)] * n_states]

    def run(step_backward):
        sources = [inputs, kernel, bias, *states]
        with tf.GradientTape() as tape:
            tape.watch(sources)
            last, outputs, final = run_separable_recurrence(
                cell.finish_step, kernel, bias, inputs, states, 5, mask=mask,
                return_all_outputs=sequences, step_backward=step_backward)
            results = [last, outputs, *final]
            loss = sum(tf.reduce_sum(r * w) for r, w in zip(results, weights))
        return results + tape.gradient(loss, sources)

    # Sums of float32 products over the steps, in another order: float32 rounding, 1e-5.
    for written, differentiated in zip(run(cell.step_backward), run(None)):
        np.testing.assert_allclose(written.numpy(), differentiated.numpy(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant, layer, scenario", variant_cases(
    ["masked_sequences", "masked_holes"], ["masked_holes"]))
def test_every_variant_matches_keras_bidirectional(variant, layer, scenario, monkeypatch):
    monkeypatch.setenv(_loop_choice.ENV_VAR, variant)
    ours_cls, keras_cls, kwargs = LAYERS[layer]
    checks.check_bidirectional(ours_cls, keras_cls, checks.SCENARIOS[scenario][1], **kwargs)
    checks.check_gradients_against_keras(
        ours_cls, keras_cls, scenario, bidirectional=True, **kwargs
    )


@pytest.mark.parametrize("variant", _loop_choice.VARIANTS)
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_every_variant_applies_dropout_as_keras_does(variant, layer, monkeypatch):
    monkeypatch.setenv(_loop_choice.ENV_VAR, variant)
    ours_cls, _, kwargs = LAYERS[layer]
    checks.check_recurrent_dropout(ours_cls, **kwargs)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_every_variant_draws_the_same_dropout_masks(layer, monkeypatch):
    """Same seed, same weights: a training call gives the same output in every loop."""
    ours_cls, _, kwargs = LAYERS[layer]
    x = checks.random_inputs(9)
    outputs, weights = {}, None
    for variant in _loop_choice.VARIANTS:
        monkeypatch.setenv(_loop_choice.ENV_VAR, variant)
        layer = ours_cls(checks.UNITS, dropout=0.4, recurrent_dropout=0.4, seed=11,
                         return_sequences=True, **kwargs)
        layer(x)
        if weights is None:
            weights = layer.get_weights()
        layer.set_weights(weights)
        outputs[variant] = keras.ops.convert_to_numpy(layer(x, training=True))
    inference = keras.ops.convert_to_numpy(layer(x, training=False))
    assert not np.allclose(outputs["keras"], inference, atol=1e-3)
    for variant in _loop_choice.VARIANTS:
        np.testing.assert_allclose(outputs[variant], outputs["keras"], atol=checks.ATOL)


@pytest.mark.parametrize("variant", _loop_choice.VARIANTS)
def test_every_variant_keeps_the_state_of_a_stateful_layer(variant, monkeypatch):
    monkeypatch.setenv(_loop_choice.ENV_VAR, variant)
    checks.check_stateful(LSTM, keras.layers.LSTM)


def _layer(cls=LSTM, units=8, **kwargs):
    layer = cls(units, **kwargs)
    layer(np.zeros((2, 3, 4), "float32"))
    return layer


def _inputs(batch=2, steps=3, features=4):
    return tf.zeros([batch, steps, features])


def test_forced_variant_and_its_fallback(monkeypatch):
    layer = _layer()
    monkeypatch.setenv(_loop_choice.ENV_VAR, "keras")
    assert _loop_choice.choose(layer, _inputs(), None, training=True) == "keras"
    monkeypatch.setenv(_loop_choice.ENV_VAR, "hand_bptt")
    assert _loop_choice.choose(layer, _inputs(), None, training=True) == "hand_bptt"
    # No backward pass to schedule at inference, no separable step for reset_after=False.
    assert _loop_choice.choose(layer, _inputs(), None, training=False) == "unrolled"
    gru = _layer(GRU, reset_after=False)
    assert _loop_choice.choose(gru, _inputs(), None, training=True) == "unrolled"
    # The feature-major loop runs separable steps, in training and inference.
    monkeypatch.setenv(_loop_choice.ENV_VAR, "feature_major")
    for training in (True, False):
        assert _loop_choice.choose(layer, _inputs(), None, training) == "feature_major"
        assert _loop_choice.choose(gru, _inputs(), None, training) == "unrolled"
    monkeypatch.setenv(_loop_choice.ENV_VAR, "fastest")
    with pytest.raises(ValueError, match="SEQLAB_RNN_LOOP must be one of auto, keras"):
        _loop_choice.choose(layer, _inputs(), None, training=True)


def test_keras_loop_is_kept_unless_another_is_clearly_faster():
    margin = _loop_choice.KERAS_MARGIN
    assert _loop_choice.fastest({"keras": 10.0, "unrolled": 9.0}) == "unrolled"
    assert _loop_choice.fastest({"keras": 10.0, "unrolled": 10.0 / (1 + margin / 2)}) == "keras"
    assert _loop_choice.fastest({"keras": 8.0, "unrolled": 9.0, "hand_bptt": 7.0}) == "hand_bptt"
    assert _loop_choice.fastest({"unrolled": 9.0, "hand_bptt": 9.5}) == "unrolled"


def test_small_shapes_run_the_default_loop_unmeasured(monkeypatch):
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)

    def refuse(*args):
        raise AssertionError("a small shape was measured")

    monkeypatch.setattr(_loop_choice, "measure", refuse)
    # A time axis the trace knows, of at most MAX_FULLY_UNROLLED_STEPS: every step written out.
    for cls in (LSTM, GRU, SimpleRNN):
        for training in (True, False):
            assert _loop_choice.choose(_layer(cls), _inputs(), None, training) == "fully_unrolled"
    longest = rnn_base.MAX_FULLY_UNROLLED_STEPS
    assert _loop_choice.choose(_layer(), _inputs(steps=longest), None, True) == "fully_unrolled"
    # Longer, or unknown (as `fit` traces a model without a fixed length): a while loop.
    for steps in (longest + 1, None):
        x = tf.TensorSpec([None, steps, 4])
        assert _loop_choice.choose(_layer(), x, None, training=True) == "hand_bptt"
        assert _loop_choice.choose(_layer(), x, None, training=False) == "keras"
        assert _loop_choice.choose(_layer(GRU), x, None, training=True) == "keras"


def test_choice_is_the_fastest_measured_and_is_remembered_per_key(monkeypatch):
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    layer = _layer()
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    calls = []

    def fake_measure(layer, key, variants):
        calls.append((key, tuple(variants)))
        times = {"keras": 3.0, "unrolled": 2.0, "hand_bptt": 1.0, "feature_major": 1.5,
                 "compiled_bptt": 1.2, "fully_unrolled": 1.1}
        if not key[8]:  # inference: Keras's loop fastest
            times["keras"] = 0.5
        return {variant: times[variant] for variant in variants}

    monkeypatch.setattr(_loop_choice, "measure", fake_measure)
    assert _loop_choice.choose(layer, _inputs(), None, training=True) == "hand_bptt"
    assert _loop_choice.choose(layer, _inputs(), None, training=True) == "hand_bptt"
    assert len(calls) == 1
    assert calls[0][1] == ("keras", "unrolled", "fully_unrolled", "hand_bptt", "feature_major",
                           "compiled_bptt")
    assert _loop_choice.choose(layer, _inputs(), None, training=False) == "keras"
    assert calls[1][1] == ("keras", "unrolled", "fully_unrolled", "feature_major")
    # Another size, a mask or another thread setting is another key.
    _loop_choice.choose(layer, _inputs(batch=5), None, training=False)
    _loop_choice.choose(layer, _inputs(), tf.ones([2, 3], tf.bool), training=False)
    monkeypatch.setattr(_loop_choice, "_thread_settings", lambda: (1, 1, 2))
    _loop_choice.choose(layer, _inputs(), None, training=False)
    assert len(calls) == 5
    assert set(_loop_choice.measurements()) == {key for key, _ in calls}
    # Unknown batch and steps (as Keras traces `fit`) are keyed by the stand-ins.
    key = _loop_choice.loop_key(layer, tf.TensorSpec([None, None, 4]), None, True)
    assert key[5:7] == (_loop_choice.STAND_IN_BATCH, _loop_choice.STAND_IN_STEPS)


def _measure_once(monkeypatch, times):
    """A stand-in measurement giving `times`; returns the list of keys it measured."""
    calls = []

    def fake_measure(layer, key, variants):
        calls.append(key)
        return {variant: times[variant] for variant in variants}

    monkeypatch.setattr(_loop_choice, "measure", fake_measure)
    return calls


def test_a_choice_is_remembered_in_a_file_for_the_next_process(monkeypatch, tmp_path):
    """A measured choice is written to the memory file and read back by a process that has
    not measured (here: the same process, its choices forgotten); another machine, another
    revision of the loops or a loop that is no longer a candidate is measured again."""
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    layer = _layer()  # built unmeasured
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    memory = tmp_path / "cache" / "loops.json"
    monkeypatch.setenv(_loop_choice.MEMORY_VAR, str(memory))
    calls = _measure_once(monkeypatch, {"keras": 3.0, "unrolled": 2.0, "hand_bptt": 1.0,
                                        "feature_major": 1.5, "compiled_bptt": 1.2,
                                        "fully_unrolled": 1.1})
    assert _loop_choice.choose(layer, _inputs(), None, training=True) == "hand_bptt"
    [entry] = json.loads(memory.read_text())["choices"].values()
    assert entry["loop"] == "hand_bptt" and entry["ms"]["keras"] == 3.0

    _loop_choice.clear()  # a new process: nothing measured, the file read
    assert _loop_choice.choose(layer, _inputs(), None, training=True) == "hand_bptt"
    assert len(calls) == 1 and _loop_choice.measurements() == {}

    _loop_choice.clear()
    monkeypatch.setattr(_loop_choice, "LOOPS_REVISION", _loop_choice.LOOPS_REVISION + 1)
    _loop_choice.choose(layer, _inputs(), None, training=True)
    assert len(calls) == 2
    assert len(json.loads(memory.read_text())["choices"]) == 2  # both machines kept

    _loop_choice.clear()
    monkeypatch.setattr(_loop_choice, "candidates", lambda *args: ["keras", "unrolled"])
    assert _loop_choice.choose(layer, _inputs(), None, training=True) == "unrolled"
    assert len(calls) == 3


@pytest.mark.parametrize("content", ["{not json", '{"choices": []}', "[1, 2]", None])
def test_a_memory_file_that_cannot_be_read_is_measured_again_and_written_whole(
        content, monkeypatch, tmp_path):
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    layer = _layer()  # built unmeasured
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    memory = tmp_path / "loops.json"
    if content is None:
        memory.mkdir()  # a folder where the file should be: nothing written, no error
    else:
        memory.write_text(content)
    monkeypatch.setenv(_loop_choice.MEMORY_VAR, str(memory))
    calls = _measure_once(monkeypatch, {"keras": 1.0, "unrolled": 2.0, "feature_major": 3.0,
                                        "fully_unrolled": 1.5})
    assert _loop_choice.choose(layer, _inputs(), None, training=False) == "keras"
    assert len(calls) == 1
    if content is not None:
        [entry] = json.loads(memory.read_text())["choices"].values()
        assert entry["loop"] == "keras"
    assert [path.name for path in tmp_path.iterdir()] == ["loops.json"]  # no temporary left


def test_a_temporary_copy_left_by_a_killed_process_is_removed_by_the_next_write(
        monkeypatch, tmp_path):
    """A process killed between writing the memory file's temporary copy and renaming it
    leaves `.loops.json.XXXX`; the next write removes it once it is older than any write in
    progress could be, and leaves a young one (another process's write) and other files."""
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    layer = _layer()  # built unmeasured
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    memory = tmp_path / "loops.json"
    monkeypatch.setenv(_loop_choice.MEMORY_VAR, str(memory))
    stale, young, other = (tmp_path / name for name in (".loops.json.k1ll3d", ".loops.json.n0w",
                                                         ".other.json.k1ll3d"))
    for path in (stale, young, other):
        path.write_text('{"choices": {}')  # cut short, as a kill leaves it
    old = time.time() - _loop_choice.STALE_TEMPORARY_SECONDS - 60
    for path in (stale, other):
        os.utime(path, (old, old))
    _measure_once(monkeypatch, {"keras": 1.0, "unrolled": 2.0, "feature_major": 3.0,
                                        "fully_unrolled": 1.5})
    _loop_choice.choose(layer, _inputs(), None, training=False)
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        ".loops.json.n0w", ".other.json.k1ll3d", "loops.json"]


def test_memory_off_reads_and_writes_nothing(monkeypatch, tmp_path):
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    layer = _layer()  # built unmeasured
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    monkeypatch.setenv(_loop_choice.MEMORY_VAR, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = _measure_once(monkeypatch, {"keras": 1.0, "unrolled": 2.0, "feature_major": 3.0,
                                        "fully_unrolled": 1.5})
    for _ in range(2):
        _loop_choice.clear()
        _loop_choice.choose(layer, _inputs(), None, training=False)
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []
    monkeypatch.delenv(_loop_choice.MEMORY_VAR)
    assert _loop_choice.memory_path() == tmp_path / "seqlab" / "loop_choices.json"


def test_measurement_runs_from_inside_a_trace_and_times_every_candidate(monkeypatch):
    """Keras traces `fit` before the first step: the layer measures from inside that trace."""
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    layer = _layer(GRU)
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    monkeypatch.setattr(_loop_choice, "MIN_SECONDS", 0)
    x = tf.random.normal([2, 3, 4], seed=2)

    @tf.function
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x, training=True))
        return tape.gradient(loss, layer.trainable_variables)

    gradients = train_step(x)
    assert all(g is not None for g in gradients)
    (key, times), = _loop_choice.measurements().items()
    assert key[8] is True
    assert set(times) == {"keras", "unrolled", "hand_bptt", "feature_major", "compiled_bptt",
                          "fully_unrolled"}
    assert all(t > 0 for t in times.values())


def test_no_measurement_under_a_distribution_strategy(monkeypatch):
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    monkeypatch.setattr(_loop_choice, "measure", lambda *args: pytest.fail("measured"))
    with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
        layer = _layer(SimpleRNN)
        assert _loop_choice.choose(layer, _inputs(), None, training=False) == "fully_unrolled"
        x = tf.TensorSpec([None, None, 4])
        assert _loop_choice.choose(layer, x, None, training=False) == "keras"


def test_a_loop_that_cannot_be_measured_falls_back_to_the_default(monkeypatch):
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    layer = _layer()
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)

    def fail(*args):
        raise TypeError("cannot measure here")

    monkeypatch.setattr(_loop_choice, "measure", fail)
    assert _loop_choice.choose(layer, _inputs(), None, training=True) == "fully_unrolled"
    unknown = tf.TensorSpec([None, None, 4])
    assert _loop_choice.choose(layer, unknown, None, training=True) == "hand_bptt"
    assert list(_loop_choice.measurements().values()) == [None, None]


def test_the_measurement_times_training_s_written_out_loop(monkeypatch):
    """A training key is measured without dropout (`training=False`) but differentiated: the
    written-out candidate runs the hand-scheduled BPTT with every step written out, as
    training does, not the inference steps that TensorFlow would differentiate."""
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    monkeypatch.setattr(_loop_choice, "MIN_SECONDS", 0)
    layer = _layer()
    unrolls = []
    real = rnn_base.run_separable_recurrence

    def spy(*args, **kwargs):
        unrolls.append(kwargs["unroll"])
        return real(*args, **kwargs)

    monkeypatch.setattr(rnn_base, "run_separable_recurrence", spy)
    for training in (True, False):
        key = _loop_choice.loop_key(layer, _inputs(), None, training)
        _loop_choice._measure_eagerly(layer, key, ["fully_unrolled"])
        assert unrolls == ([_loop.ALL_STEPS] if training else [])  # traced once
        unrolls.clear()


@pytest.mark.parametrize("kwargs", [{"return_state": True}, {"activation": "relu"}])
@pytest.mark.parametrize("cls", ["lstm", "gru"])
def test_a_mask_of_unknown_length_trains_where_the_inputs_length_is_known(cls, kwargs):
    """A masked step-by-step loop (an LSTM's states read, an unbounded activation in
    training) whose mask's time axis the trace does not know, with the inputs' known: the
    default written-out loop runs and equals Keras's layer (outputs and gradients; float32
    sums in another order: 1e-5)."""
    ours_cls, keras_cls, _ = LAYERS[cls]
    reference, ours = keras_cls(4, **kwargs), ours_cls(4, **kwargs)
    x = tf.constant(checks.random_inputs(5))
    mask = tf.constant(np.arange(6)[None, :] < np.array([[6], [3], [1]]))  # 3 x 6, as x
    reference(x), ours(x)
    ours.set_weights(reference.get_weights())
    signature = [tf.TensorSpec([None, *x.shape[1:]]), tf.TensorSpec([None, None], tf.bool)]

    def run(layer):
        @tf.function(input_signature=signature)
        def call(x, mask):
            with tf.GradientTape() as tape:
                tape.watch(x)
                results = tf.nest.flatten(layer(x, mask=mask, training=True))
                loss = tf.add_n([tf.reduce_sum(r * r) for r in results])
            return results + tape.gradient(loss, [x] + layer.trainable_weights)

        return call(x, mask)

    for got, want in zip(run(ours), run(reference)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5, rtol=1e-5)


def test_a_mixed_precision_layer_runs(monkeypatch):
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    monkeypatch.setattr(_loop_choice, "MIN_SECONDS", 0)
    layer = GRU(4, dtype="mixed_float16")
    output = layer(np.ones((2, 3, 5), "float32"), training=False)
    assert output.dtype == "float16" and output.shape == (2, 4)


@pytest.mark.parametrize("variant", ["keras", "unrolled", "feature_major", "fully_unrolled",
                                     "grouped"])
@pytest.mark.parametrize("layer", ["lstm", "gru"])
def test_every_inference_loop_serves_from_a_saved_model(variant, layer, monkeypatch, tmp_path):
    """The loop traced into an exported SavedModel (a masked bidirectional layer, sequences
    returned) serves what Keras's built-in layer computes; the export holds plain TensorFlow
    operations, nothing that needs the layer's Python code. Tolerance: float32 products summed
    in another order."""
    monkeypatch.setenv(_loop_choice.ENV_VAR, variant)
    ours_cls, keras_cls, kwargs = LAYERS[layer]
    steps = 6 if variant == "fully_unrolled" else None  # it needs a length the trace knows
    ids = keras.Input((steps,), dtype="int32")

    def model(layer_cls):
        embedded = keras.layers.Embedding(20, 6, mask_zero=True)(ids)
        recurrent = keras.layers.Bidirectional(layer_cls(5, return_sequences=True, **kwargs))
        return keras.Model(ids, recurrent(embedded))

    ours, reference = model(ours_cls), model(keras_cls)
    ours.set_weights(reference.get_weights())
    archive = keras.export.ExportArchive()
    archive.track(ours)
    archive.add_endpoint(
        "serve", ours.call, input_signature=[tf.TensorSpec([None, steps], tf.int32)])
    archive.write_out(str(tmp_path / "model"), verbose=False)
    served = tf.saved_model.load(str(tmp_path / "model"))
    batch = np.array([[3, 7, 1, 9, 0, 0], [4, 2, 8, 8, 5, 6]], "int32")
    np.testing.assert_allclose(served.serve(batch).numpy(), reference(batch).numpy(), atol=1e-5)


def test_a_mask_runs_compacted_only_where_that_is_safe():
    """The loop runs past each sequence's end (`RecurrentLayer._run_compacted`): not where
    an LSTM's final states are read (only a state that is the output is read there), nor in
    training with an unbounded activation."""
    assert LSTM(3)._can_compact_mask(training=True)
    assert not LSTM(3)._can_compact_mask(training=False, final_states=True)
    assert GRU(3)._can_compact_mask(training=True, final_states=True)
    assert GRU(3, recurrent_activation="hard_sigmoid")._can_compact_mask(training=True)
    assert SimpleRNN(3, activation="relu")._can_compact_mask(training=False)
    assert not SimpleRNN(3, activation="relu")._can_compact_mask(training=True)


@pytest.mark.parametrize("variant", _loop_choice.VARIANTS)
@pytest.mark.parametrize("layer", ["lstm", "gru", "simple_rnn"])
def test_a_stateful_layer_carries_the_state_of_right_padded_sequences(variant, layer,
                                                                      monkeypatch):
    """Three calls of a stateful layer on right-padded ids, one sequence of the second empty
    (it keeps the state carried from the first call into the third), as Keras's layer does."""
    monkeypatch.setenv(_loop_choice.ENV_VAR, variant)
    ours_cls, keras_cls, kwargs = LAYERS[layer]

    def build(cls):
        ids = keras.Input(batch_shape=(checks.BATCH, checks.STEPS), dtype="int32")
        embedded = keras.layers.Embedding(checks.VOCABULARY, checks.FEATURES,
                                          mask_zero=True)(ids)
        return keras.Model(ids, cls(checks.UNITS, stateful=True, **kwargs)(embedded))

    reference, ours = build(keras_cls), build(ours_cls)
    checks.copy_weights(reference, ours)
    for ids in (checks.padded_token_ids(1), checks.padded_token_ids(2, padding="right_empty"),
                checks.padded_token_ids(3)):
        np.testing.assert_allclose(ours(ids).numpy(), reference(ids).numpy(), atol=checks.ATOL)


@pytest.mark.parametrize("variant", _loop_choice.VARIANTS)
def test_padding_that_overflows_an_unbounded_state_leaves_the_gradients_finite(
        variant, monkeypatch):
    """A ReLU state growing tenfold a step overflows float32 on 60 steps of padding; Keras's
    masked loop never reaches it, and neither may ours (0 x inf in dU would be NaN)."""
    monkeypatch.setenv(_loop_choice.ENV_VAR, variant)
    arguments = dict(activation="relu", kernel_initializer="ones",
                     recurrent_initializer=keras.initializers.Identity(gain=10.0))
    ids = np.zeros((2, 60), "int32")
    ids[0, :3], ids[1, :2] = [1, 2, 3], [4, 5]
    gradients = {}
    for name, cls in (("ours", SimpleRNN), ("keras", keras.layers.SimpleRNN)):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((60,), dtype="int32"),
                                  keras.layers.Embedding(6, 2, mask_zero=True),
                                  cls(3, **arguments)])
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(ids, training=True))
        gradients[name] = [tf.convert_to_tensor(g).numpy()
                           for g in tape.gradient(loss, model.trainable_weights)]
    for ours, reference in zip(gradients["ours"], gradients["keras"]):
        assert np.isfinite(ours).all()
        # float32 rounding relative to the gradient's size (an entry near 0 is no exception).
        np.testing.assert_allclose(ours, reference, rtol=1e-5,
                                   atol=1e-6 * float(np.abs(reference).max()))


@pytest.mark.parametrize("variant", _loop_choice.VARIANTS)
def test_a_traced_call_keeps_the_number_of_steps_it_knows(variant, monkeypatch):
    """As Keras's layer: inside a trace the returned sequences keep a known time axis, so
    that a subclassed model's Flatten and Dense, built on their first (traced) call, build."""
    monkeypatch.setenv(_loop_choice.ENV_VAR, variant)

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.recurrent = GRU(5, return_sequences=True)
            self.flatten = keras.layers.Flatten()
            self.dense = keras.layers.Dense(1)

        def call(self, x, training=False):
            return self.dense(self.flatten(self.recurrent(x, training=training)))

    model = Model()
    for training in (True, False):
        traced = tf.function(lambda x, training=training: model(x, training=training))
        output = traced.get_concrete_function(tf.TensorSpec([None, 6, 4]))
        assert output.structured_outputs.shape.as_list() == [None, 1]
        sequences = tf.function(lambda x, training=training: model.recurrent(
            x, training=training)).get_concrete_function(tf.TensorSpec([3, 6, 4]))
        assert sequences.structured_outputs.shape.as_list() == [3, 6, 5]


@pytest.mark.parametrize("cls", [LSTM, GRU, SimpleRNN])
def test_fully_unrolled_writes_every_step_out_where_the_trace_knows_them(cls, monkeypatch):
    """`fully_unrolled` traces no while loop, training or not, for a time axis of known length
    up to MAX_FULLY_UNROLLED_STEPS; an unknown or longer one runs a while loop (`unrolled`)."""
    monkeypatch.setenv(_loop_choice.ENV_VAR, "fully_unrolled")
    layer = _layer(cls)

    def op_types(steps, training):
        def call(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x, training=training)
            return tape.gradient(y, [x] + layer.trainable_weights)

        graph = tf.function(call).get_concrete_function(tf.TensorSpec([2, steps, 4])).graph
        return {op.type for op in graph.get_operations()}

    longest = rnn_base.MAX_FULLY_UNROLLED_STEPS
    for training in (True, False):
        assert not {"While", "StatelessWhile"} & op_types(5, training)
        assert not {"While", "StatelessWhile"} & op_types(longest, training)
        assert {"While", "StatelessWhile"} & op_types(None, training)
        assert {"While", "StatelessWhile"} & op_types(longest + 1, training)


def test_grouped_is_a_candidate_where_threads_run_the_groups_and_rows_fill_them(monkeypatch):
    """One group per inter-op thread (2 to MAX_GROUPS), offered to the measurement with two
    threads or more and two rows per group (the stand-in batch where the trace has none)."""
    layer = _layer()
    for threads, groups in ((1, 2), (2, 2), (3, 3), (64, _loop_choice.MAX_GROUPS)):
        monkeypatch.setattr(_loop_choice, "inter_op_threads", lambda threads=threads: threads)
        assert _loop_choice.loop_groups(layer) == groups
        assert _loop_choice.groups_help(layer, 2 * groups) == (threads >= 2)
        assert not _loop_choice.groups_help(layer, 2 * groups - 1)
        assert _loop_choice.groups_help(layer, None) == (
            threads >= 2 and _loop_choice.STAND_IN_BATCH >= 2 * groups)
    monkeypatch.setattr(_loop_choice, "inter_op_threads", lambda: 2)
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    calls = _measure_once(monkeypatch, {variant: 1.0 for variant in _loop_choice.VARIANTS})
    for batch, offered in ((4, True), (3, False)):
        _loop_choice.choose(_layer(), _inputs(batch=batch, steps=80), None, training=False)
        assert ("grouped" in _loop_choice.measurements()[calls[-1]]) == offered


@pytest.mark.parametrize("batch", [1, 2, 7])
@pytest.mark.parametrize("layer", ["lstm", "gru"])
def test_grouped_runs_any_batch_traced_without_its_size(batch, layer, monkeypatch):
    """A trace that does not know the batch (as `fit` and a served model's) splits it when it
    runs: a batch smaller than the groups (a group of no rows), or not divisible by them.
    Outputs and final states against Keras's layer; tolerance: float32 sums in another
    order."""
    monkeypatch.setenv(_loop_choice.ENV_VAR, "grouped")
    monkeypatch.setattr(_loop_choice, "inter_op_threads", lambda: 3)
    ours_cls, keras_cls, kwargs = LAYERS[layer]
    reference = keras_cls(5, return_sequences=True, return_state=True, **kwargs)
    ours = ours_cls(5, return_sequences=True, return_state=True, **kwargs)
    x = np.random.default_rng(batch).normal(size=(batch, 6, 4)).astype("float32")
    reference(x)
    ours(x)
    ours.set_weights(reference.get_weights())
    traced = tf.function(ours, input_signature=[tf.TensorSpec([None, 6, 4])])
    for got, expected in zip(traced(x), reference(x)):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=checks.ATOL)

    # Training too (`hand_bptt` in each group), as `fit` traces it: its last batch may be of
    # one row. Tolerance: `recurrent_checks`' for gradients.
    def gradients(layer):
        @tf.function(input_signature=[tf.TensorSpec([None, 6, 4])])
        def step(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = sum(tf.reduce_sum(y ** 2) for y in layer(x, training=True))
            return tape.gradient(loss, [x] + layer.trainable_weights)

        return step(x)

    for got, expected in zip(gradients(ours), gradients(reference)):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=checks.ATOL,
                                   rtol=1e-4)


def test_grouped_runs_each_group_in_a_loop_of_its_own(monkeypatch):
    """The groups' loops are independent (nothing of one reads another's), one per group,
    in inference and in training."""
    monkeypatch.setattr(_loop_choice, "inter_op_threads", lambda: 3)
    layer = _layer()

    def loops(variant, training):
        monkeypatch.setenv(_loop_choice.ENV_VAR, variant)

        def call(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x, training=training)
            return tape.gradient(y, [x] + layer.trainable_weights) if training else y

        graph = tf.function(call).get_concrete_function(tf.TensorSpec([None, 9, 4])).graph
        return sum(op.type in ("While", "StatelessWhile") for op in graph.get_operations())

    assert loops("grouped", False) == 3 * loops("unrolled", False) > 0
    assert loops("grouped", True) == 3 * loops("hand_bptt", True) > 0


@pytest.mark.parametrize("threads, offered, groups", [(2, False, 2), (4, True, 2), (8, True, 4)])
def test_a_direction_of_a_bidirectional_has_half_the_threads_for_its_groups(
        threads, offered, groups, monkeypatch):
    """The other direction's loop runs beside each direction's, so each has half the inter-op
    threads for groups: on 2, the grouped loop is no candidate there (it is for the same
    layer alone); the key tells the two apart."""
    monkeypatch.setattr(_loop_choice, "inter_op_threads", lambda: threads)
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    calls = _measure_once(monkeypatch, {variant: 1.0 for variant in _loop_choice.VARIANTS})
    x = np.zeros((16, 80, 4), "float32")
    alone = LSTM(8)
    alone(x)
    assert not alone._beside_another
    assert "grouped" in _loop_choice.measurements()[calls[-1]]
    wrapper = keras.layers.Bidirectional(LSTM(8))
    wrapper(x)
    for direction in (wrapper.forward_layer, wrapper.backward_layer):
        assert direction._beside_another
        assert _loop_choice.loop_groups(direction) == groups
    assert ("grouped" in _loop_choice.measurements()[calls[-1]]) == offered
    assert calls[-1] != calls[0]


def test_a_direction_of_a_bidirectional_is_timed_beside_a_second_loop(monkeypatch):
    """The measurement times each candidate as it will run: for a direction of a
    Bidirectional, beside a second loop (the other direction's), on inputs of its own."""
    layer = _layer()
    traced = []
    run_loop = layer.run_loop

    def counting(variant, sequences, *args, **kwargs):
        traced.append(sequences)
        return run_loop(variant, sequences, *args, **kwargs)

    monkeypatch.setattr(layer, "run_loop", counting)
    key = _loop_choice.loop_key(layer, tf.zeros([2, 5, 4]), None, True)
    for beside, loops in ((False, 1), (True, 2)):
        layer._beside_another = beside
        traced.clear()
        _loop_choice._measure_eagerly(layer, key, ["unrolled"])
        assert len(traced) == loops  # each loop traced once
        assert all(tuple(sequences.shape) == (2, 5, 4) for sequences in traced)


def test_a_measured_grouped_loop_runs_its_groups_loop_eagerly(monkeypatch):
    """Eagerly (`run_eagerly=True`) the groups would run one after another: where the
    measurement kept `grouped`, an eager call runs the loop of each group on the whole batch;
    a trace runs `grouped`, and a forced `grouped` runs as forced."""
    monkeypatch.setattr(_loop_choice, "inter_op_threads", lambda: 2)
    monkeypatch.delenv(_loop_choice.ENV_VAR, raising=False)
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0)
    times = {variant: 2.0 for variant in _loop_choice.VARIANTS}
    _measure_once(monkeypatch, {**times, "grouped": 1.0})
    layer = _layer()
    x = tf.zeros([8, 80, 4])
    for training, eager in ((False, "unrolled"), (True, "hand_bptt")):
        assert _loop_choice.choose(layer, x, None, training) == eager
        traced = tf.function(lambda x, training=training: tf.constant(
            _loop_choice.choose(layer, x, None, training)))
        assert traced(x).numpy().decode() == "grouped"
    monkeypatch.setenv(_loop_choice.ENV_VAR, "grouped")
    assert _loop_choice.choose(layer, x, None, training=True) == "grouped"


def test_inter_op_threads_follow_tensorflow_s_setting_and_the_cpus_of_this_process(
        monkeypatch):
    monkeypatch.setattr(tf.config.threading, "get_inter_op_parallelism_threads", lambda: 0)
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "3")
    assert _loop_choice.inter_op_threads() == 3
    monkeypatch.delenv("TF_NUM_INTEROP_THREADS")
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
        monkeypatch.setattr(os, "cpu_count", lambda: 64)
        assert _loop_choice.inter_op_threads() == 1
    monkeypatch.setattr(tf.config.threading, "get_inter_op_parallelism_threads", lambda: 5)
    assert _loop_choice.inter_op_threads() == 5


def test_a_direction_of_a_bidirectional_has_a_key_of_its_own_on_one_thread(monkeypatch):
    """On one thread no loop is grouped, but a direction is still timed beside a second loop,
    so its choice is not the one of the same layer alone."""
    monkeypatch.setattr(_loop_choice, "inter_op_threads", lambda: 1)
    layer = _layer()
    x = tf.zeros([4, 80, 4])
    alone = _loop_choice.loop_key(layer, x, None, True)
    layer._beside_another = True
    assert _loop_choice.loop_key(layer, x, None, True) != alone
