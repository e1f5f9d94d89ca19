"""The time loops: hand-scheduled BPTT and partial unrolling against the plain loop."""

import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import GRUCell, LSTMCell
from seqlab.layers._loop import run_recurrence, run_separable_recurrence

BATCH, STEPS, FEATURES, UNITS = 3, 5, 4, 6


def _cell(kind):
    cell = LSTMCell(UNITS) if kind == "lstm" else GRUCell(UNITS, bias_initializer="random_normal")
    cell.build((BATCH, FEATURES))
    return cell


def _run_both(cell, mask, go_backwards, zero_output_for_mask, return_all_outputs, unroll=1):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(STEPS, BATCH, FEATURES)), tf.float32)
    n_states = len(cell.state_size) if isinstance(cell.state_size, list) else 1
    states = [tf.constant(rng.normal(size=(BATCH, UNITS)), tf.float32) for _ in range(n_states)]
    recurrent_mask = tf.constant(rng.integers(0, 2, size=(BATCH, UNITS)) * 2.0, tf.float32)
    weights = [tf.constant(rng.normal(size=(STEPS, BATCH, UNITS)), tf.float32) for _ in range(4)]
    options = dict(
        output_size=UNITS,
        mask=mask,
        go_backwards=go_backwards,
        zero_output_for_mask=zero_output_for_mask,
        return_all_outputs=return_all_outputs,
    )
    def loss(result):
        last, outputs, final = result
        total = tf.reduce_sum(last * weights[0][0])
        total += tf.reduce_sum(outputs * tf.transpose(weights[1], [1, 0, 2])[:, : outputs.shape[1]])
        for i, state in enumerate(final):
            total += tf.reduce_sum(state * weights[2 + i][0])
        return total

    results = []
    for separable in (False, True):
        with tf.GradientTape() as tape:
            projected = cell.project_inputs(x)
            kernel, bias = cell.recurrent_weights()
            tape.watch(states)
            if separable:
                result = run_separable_recurrence(
                    cell.finish_step,
                    tf.convert_to_tensor(kernel),
                    None if bias is None else tf.convert_to_tensor(bias),
                    projected,
                    states,
                    recurrent_mask=recurrent_mask,
                    unroll=unroll,
                    **options,
                )
            else:
                result = run_recurrence(
                    lambda x_t, s: cell.recurrent_step(x_t, s, recurrent_mask),
                    projected,
                    states,
                    **options,
                )
            value = loss(result)
        grads = tape.gradient(value, cell.trainable_weights + states)
        results.append((tf.nest.flatten(result), grads))
    return results


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("zero_output_for_mask", [False, True])
@pytest.mark.parametrize("return_all_outputs", [False, True])
@pytest.mark.parametrize("unroll", [1, 3])
def test_separable_loop_equals_plain_loop(
    kind, masked, go_backwards, zero_output_for_mask, return_all_outputs, unroll
):
    mask = None
    if masked:
        # Left and right padding and a gap: every masking branch is used.
        mask = tf.constant(
            np.array([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 0, 1, 1, 0]], dtype=bool)
        )
    (plain_values, plain_grads), (values, grads) = _run_both(
        _cell(kind), mask, go_backwards, zero_output_for_mask, return_all_outputs, unroll
    )
    for a, b in zip(values, plain_values):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5)
    for a, b in zip(grads, plain_grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5, rtol=1e-5)


def test_reset_before_gru_is_not_separable():
    assert not GRUCell(2, reset_after=False).separable
    assert GRUCell(2).separable and LSTMCell(2).separable


@pytest.mark.parametrize("unroll", [2, 3, 5, 8])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("return_all_outputs", [False, True])
def test_unrolled_loop_equals_one_step_per_iteration(unroll, masked, return_all_outputs):
    # STEPS = 5: unroll 2 and 3 leave a remainder, 5 has none, 8 runs only the remainder loop.
    cell = _cell("gru")
    rng = np.random.default_rng(3)
    x = tf.constant(rng.normal(size=(STEPS, BATCH, FEATURES)), tf.float32)
    h0 = tf.constant(rng.normal(size=(BATCH, UNITS)), tf.float32)
    mask = tf.constant(np.array([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 0, 1, 1, 0]], bool))
    results = []
    for steps_per_iteration in (1, unroll):
        with tf.GradientTape() as tape:
            tape.watch(h0)
            last, outputs, (final,) = run_recurrence(
                lambda x_t, s: cell.recurrent_step(cell.project_inputs(x_t), s),
                x,
                [h0],
                output_size=UNITS,
                mask=mask if masked else None,
                go_backwards=True,
                return_all_outputs=return_all_outputs,
                unroll=steps_per_iteration,
            )
            loss = tf.reduce_sum(outputs * outputs) + tf.reduce_sum(final * last)
        grads = tape.gradient(loss, cell.trainable_weights + [h0])
        results.append([last, outputs, final, *grads])
    assert results[0][1].shape[1] == (STEPS if return_all_outputs else 1)
    for a, b in zip(*results):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)


def test_reset_before_gru_has_no_separable_step():
    cell = GRUCell(UNITS, reset_after=False)
    cell.build((BATCH, FEATURES))
    with pytest.raises(NotImplementedError, match="not separable"):
        cell.recurrent_step(tf.zeros([BATCH, 3 * UNITS]), [tf.zeros([BATCH, UNITS])])


def test_separable_loop_refuses_a_step_whose_output_is_not_its_first_state():
    """The backward loop gives the last output's gradient to the final state (the same h_t
    in every cell here): a step whose output is another tensor would get a wrong gradient
    without a word, so the trace refuses it."""
    inputs = tf.ones([3, 2, 4])

    def finish(x_t, inner, states):
        h = tf.tanh(x_t + inner)
        return 2.0 * h, [h]

    with pytest.raises(ValueError, match="output is its first new state"):
        run_separable_recurrence(finish, tf.ones([4, 4]), None, inputs, [tf.zeros([2, 4])], 4)
