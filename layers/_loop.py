"""The time loop shared by seqlab's recurrent layers.

Keras keeps its own loop (`backend.rnn`) private, so the layers run theirs here.
It follows the same conventions, so that outputs match Keras's built-in layers
step for step: at a masked step the states are carried over unchanged, and the
output is either the previous step's output or zeros (`zero_output_for_mask`).
"""

import tensorflow as tf


def run_recurrence(
    step_fn,
    inputs,
    initial_states,
    output_size,
    mask=None,
    go_backwards=False,
    zero_output_for_mask=False,
    return_all_outputs=True,
):
    """Runs `step_fn` over the time axis of time-major `inputs`.

    Args:
        step_fn: `(input_t, states) -> (output_t, new_states)`, where `states`
            is a list of tensors `[batch, size]`.
        inputs: time-major tensor `[time, batch, features]`.
        initial_states: list of tensors `[batch, size]`.
        output_size: the last dimension of `output_t`.
        mask: optional boolean tensor `[batch, time]`, False at skipped steps.
        go_backwards: iterate from the last step to the first; the returned
            sequence is then in the reversed (processing) order, as in Keras.
        zero_output_for_mask: output zeros at masked steps instead of
            repeating the previous output.
        return_all_outputs: keep the output of every step; otherwise only
            the last one is kept (less memory).

    Returns:
        `(last_output [batch, units], outputs [batch, time or 1, units],
        final_states)`.
    """
    if go_backwards:
        inputs = tf.reverse(inputs, [0])
    steps = tf.shape(inputs)[0]
    batch = tf.shape(inputs)[1]
    inputs_ta = tf.TensorArray(inputs.dtype, size=steps).unstack(inputs)
    outputs_ta = tf.TensorArray(
        inputs.dtype,
        size=steps if return_all_outputs else 1,
        element_shape=tf.TensorShape([inputs.shape[1], output_size]),
    )
    zero_output = tf.zeros([batch, output_size], dtype=inputs.dtype)
    initial_states = tuple(initial_states)

    if mask is None:

        def body(t, outputs_ta, previous_output, states):
            output, new_states = step_fn(inputs_ta.read(t), list(states))
            outputs_ta = outputs_ta.write(t if return_all_outputs else 0, output)
            return t + 1, outputs_ta, output, tuple(new_states)

    else:
        mask = tf.transpose(tf.cast(mask, tf.bool))[:, :, None]
        if go_backwards:
            mask = tf.reverse(mask, [0])
        mask_ta = tf.TensorArray(tf.bool, size=steps).unstack(mask)

        def body(t, outputs_ta, previous_output, states):
            output, new_states = step_fn(inputs_ta.read(t), list(states))
            keep = mask_ta.read(t)
            fallback = zero_output if zero_output_for_mask else previous_output
            output = tf.where(keep, output, fallback)
            new_states = [tf.where(keep, new, old) for new, old in zip(new_states, states)]
            outputs_ta = outputs_ta.write(t if return_all_outputs else 0, output)
            return t + 1, outputs_ta, output, tuple(new_states)

    _, outputs_ta, last_output, final_states = tf.while_loop(
        lambda t, *_: t < steps,
        body,
        (tf.constant(0), outputs_ta, zero_output, initial_states),
        maximum_iterations=steps,
        parallel_iterations=32,
        swap_memory=True,
    )
    outputs = tf.transpose(outputs_ta.stack(), [1, 0, 2])
    return last_output, outputs, list(final_states)
