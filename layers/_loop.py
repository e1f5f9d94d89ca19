"""The time loops shared by seqlab's recurrent layers.

Keras keeps its own loop (`backend.rnn`) private, so the layers run theirs here.
Both loops follow its conventions, so that outputs match Keras's built-in layers
step for step: at a masked step the states are carried over unchanged, and the
output is either the previous step's output or zeros (`zero_output_for_mask`).

`run_recurrence` runs any step function and leaves the gradient to TensorFlow.
`run_separable_recurrence` is for steps of the form

    inner_t = (h_{t-1} (.) recurrent_mask) @ U + b
    output_t, states_t = finish(x_t, inner_t, states_{t-1})

where `finish` is element-wise. It schedules backpropagation through time
itself: the backward loop takes `finish`'s vector-Jacobian product (written out
by the cell where it gives a `StepBackward`, from tensors the forward loop
saved: the LSTM's gates, one fused SigmoidGrad / TanhGrad each; otherwise by
recomputing `finish` from the saved states and differentiating it), carries
dL/dh back through U^T, and the gradient of U
is formed after the loop as ONE matrix product over all steps,
dU = sum_t h_{t-1}^T dinner_t, instead of one product and one accumulation per
step as automatic differentiation of a while loop does. The gradient is exact
(the same equations, only summed in another order).
"""

import typing

import tensorflow as tf


def _time_major_mask(mask, go_backwards):
    mask = tf.transpose(tf.cast(mask, tf.bool))[:, :, None]
    return tf.reverse(mask, [0]) if go_backwards else mask


def _hold_masked_step(
    keep, output, new_states, previous_output, states, zero_output, zero_output_for_mask
):
    """Keras's rule at a masked step: keep the states; repeat (or zero) the output."""
    fallback = zero_output if zero_output_for_mask else previous_output
    output = tf.where(keep, output, fallback)
    return output, [tf.where(keep, new, old) for new, old in zip(new_states, states)]


class StepBackward(typing.NamedTuple):
    """A separable step's vector-Jacobian product, written out (`run_separable_recurrence`).

    Attributes:
        forward: `(x_t, inner_t, states) -> (output_t, new_states, saved)`, the step's
            `finish` also handing back the `n_saved` tensors its backward reads.
        backward: `(saved, states, d_output, d_new_states) -> (d_z, d_states)`: the gradient
            of z = x_t + inner_t (or, with `shared_gradient` False, the pair `(d x_t,
            d inner_t)`) and of each state before the step (None: not read). `d_output`
            is None where the step's output has no gradient of its own: the output is
            the first new state, whose gradient `d_new_states[0]` then holds all of it.
        n_saved: how many tensors `forward` saves per step.
        shared_gradient: whether the step reads `x_t + inner_t` only, so that both have one
            gradient (LSTM, SimpleRNN); the GRU's candidate reads `x_t + r_t (.) inner_t`.
    """

    forward: typing.Callable
    backward: typing.Callable
    n_saved: int
    shared_gradient: bool = True


def _zeros_if_none(gradient, like):
    return tf.zeros_like(like) if gradient is None else gradient


# `unroll` that writes every step out in the graph, without a `tf.while_loop`: for a
# number of steps the trace knows (a Python int).
ALL_STEPS = "all"


def _for_each_step(step_body, steps, loop_vars, unroll=1, reverse=False):
    """`loop_vars = step_body(t, *loop_vars)` for t = 0 .. steps - 1 (or back from the end).

    A `tf.while_loop` runs `unroll` steps per iteration, written out in its body,
    then the steps left over one per iteration. Fewer iterations save the
    loop's own per-iteration cost; the graph grows. With `unroll=ALL_STEPS`
    (`steps` a Python int) every step is written out and `t` is a Python int.
    Returns the final loop_vars.
    """
    if unroll == ALL_STEPS:
        for i in range(steps):
            loop_vars = step_body(steps - 1 - i if reverse else i, *loop_vars)
        return list(loop_vars)

    def iteration(steps_per_iteration):
        def body(i, *state):
            for k in range(steps_per_iteration):
                t = steps - 1 - (i + k) if reverse else i + k
                state = step_body(t, *state)
            return (i + steps_per_iteration, *state)

        return body

    options = dict(parallel_iterations=32, swap_memory=True)
    state = (tf.constant(0), *loop_vars)
    if unroll > 1:
        state = tf.while_loop(
            lambda i, *_: i + unroll <= steps, iteration(unroll), state,
            maximum_iterations=steps // unroll, **options,
        )
    _, *state = tf.while_loop(
        lambda i, *_: i < steps, iteration(1), state, maximum_iterations=steps, **options
    )
    return state


def _steps(inputs, unroll):
    """The number of steps of time-major `inputs`: a Python int with `unroll=ALL_STEPS`."""
    return inputs.shape[0] if unroll == ALL_STEPS else tf.shape(inputs)[0]


def _step_array(inputs, steps, unroll=1):
    """A TensorArray of `steps` elements of `inputs`' dtype, one per step of a loop (with
    `unroll=ALL_STEPS`, a `_WrittenOutSteps`)."""
    if unroll == ALL_STEPS:
        return _WrittenOutSteps()
    return tf.TensorArray(inputs.dtype, size=steps)


class _WrittenOutSteps:
    """A TensorArray's `write` and `stack` where every step is written out
    (`ALL_STEPS`): the steps' tensors are kept in Python and stacked once, instead
    of an array operation per step."""

    def __init__(self):
        self._values = {}

    def write(self, t, value):
        self._values[t] = value
        return self

    def stack(self):
        return tf.stack([self._values[t] for t in sorted(self._values)])


def _by_step(values, unroll, steps):
    """`values` `[time, ...]` as something whose `[t]` is a step: the tensor itself, or
    with `unroll=ALL_STEPS` its `steps` steps unstacked once (one operation, not a slice
    per step; `steps` given, as a mask's time axis may be unknown to the trace where the
    inputs' is known)."""
    return tf.unstack(values, num=steps) if unroll == ALL_STEPS else values


def _compiled(function):
    """`function` compiled by XLA, with the gradient of the uncompiled `function`.

    A gradient tape that saw the compiled call would ask it for its own gradient,
    whose while loop's accumulators (TensorLists) cannot leave an XLA function.
    So the compiled call runs on arguments no tape records, and where a gradient
    of its results is asked for (a second-order gradient: `function` is itself a
    gradient's loop), the uncompiled `function` is run again and differentiated,
    as `hand_bptt` would be.
    """
    compiled = tf.function(function, jit_compile=True, autograph=False)

    def call(*args):
        structure = {}

        @tf.custom_gradient
        def run(*flat):
            arguments = tf.nest.pack_sequence_as(args, [tf.stop_gradient(v) for v in flat])
            results = compiled(*arguments)
            structure["results"] = results

            def grad(*d_results):
                with tf.GradientTape() as tape:
                    tape.watch(flat)
                    again = function(*tf.nest.pack_sequence_as(args, flat))
                return tape.gradient(tf.nest.flatten(again), list(flat),
                                     output_gradients=list(d_results),
                                     unconnected_gradients=tf.UnconnectedGradients.ZERO)

            return tf.nest.flatten(results), grad

        flat_results = run(*tf.nest.flatten(args))
        return tf.nest.pack_sequence_as(structure["results"], flat_results)

    return call


def run_recurrence(
    step_fn,
    inputs,
    initial_states,
    output_size,
    mask=None,
    go_backwards=False,
    zero_output_for_mask=False,
    return_all_outputs=True,
    unroll=1,
    feature_major=False,
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
        unroll: steps per iteration of the time loop (see `_for_each_step`), or
            `ALL_STEPS`: every step written out in the graph, no `tf.while_loop`, for a
            time axis the trace knows (a loop's iteration costs its control operations
            and a TensorArray read and write, which dominate a small step; the graph
            and its trace grow with the steps).
        feature_major: run `step_fn` on transposed tensors, `x_t^T [features,
            batch]` and states `[size, batch]`, returning `output_t^T`
            (`RecurrentCell.feature_major_step`); inputs, states and results
            here keep their usual layout.

    Returns:
        `(last_output [batch, units], outputs [batch, time or 1, units],
        final_states)`.
    """
    if go_backwards:
        inputs = tf.reverse(inputs, [0])
    time_mask = None if mask is None else _time_major_mask(mask, go_backwards)
    # An output's shape, as a tensor and as far as it is known while tracing.
    output_shape = [tf.shape(inputs)[1], output_size]
    static_output_shape = [inputs.shape[1], output_size]
    if feature_major:
        inputs = tf.transpose(inputs, [0, 2, 1])
        initial_states = [tf.transpose(state) for state in initial_states]
        if time_mask is not None:
            time_mask = tf.transpose(time_mask, [0, 2, 1])
        output_shape, static_output_shape = output_shape[::-1], static_output_shape[::-1]
    steps = _steps(inputs, unroll)
    if unroll == ALL_STEPS:
        if not steps:
            raise ValueError("every step written out needs a time axis of known, nonzero "
                             f"length. Received: inputs of shape {inputs.shape}")
        read_input = _by_step(inputs, unroll, steps).__getitem__
        if time_mask is not None:
            time_mask = _by_step(time_mask, unroll, steps)
        outputs_ta = _WrittenOutSteps()
    else:
        # Read through a TensorArray, not `inputs[t]`: the gradient of a slice is a
        # dense tensor of the whole input, which would make backpropagation
        # quadratic in the number of steps.
        read_input = tf.TensorArray(inputs.dtype, size=steps).unstack(inputs).read
        outputs_ta = tf.TensorArray(
            inputs.dtype,
            size=steps if return_all_outputs else 0,
            element_shape=tf.TensorShape(static_output_shape),
        )
    zero_output = tf.zeros(output_shape, dtype=inputs.dtype)

    def step(t, outputs_ta, previous_output, states):
        output, new_states = step_fn(read_input(t), list(states))
        if time_mask is not None:
            output, new_states = _hold_masked_step(
                time_mask[t], output, new_states, previous_output, states, zero_output,
                zero_output_for_mask,
            )
        if return_all_outputs:
            outputs_ta = outputs_ta.write(t, output)
        return outputs_ta, output, tuple(new_states)

    outputs_ta, last_output, final_states = _for_each_step(
        step, steps, (outputs_ta, zero_output, tuple(initial_states)), unroll=unroll
    )
    final_states = list(final_states)
    if feature_major:
        last_output = tf.transpose(last_output)
        final_states = [tf.transpose(state) for state in final_states]
    if not return_all_outputs:
        return last_output, last_output[:, None, :], final_states
    outputs = tf.transpose(outputs_ta.stack(), [2, 0, 1] if feature_major else [1, 0, 2])
    return last_output, outputs, final_states


def run_separable_recurrence(
    finish_fn,
    recurrent_kernel,
    recurrent_bias,
    inputs,
    initial_states,
    output_size,
    mask=None,
    go_backwards=False,
    zero_output_for_mask=False,
    return_all_outputs=True,
    recurrent_mask=None,
    unroll=1,
    step_backward=None,
    compiled=False,
):
    """`run_recurrence` for separable steps, with hand-scheduled BPTT.

    Args:
        finish_fn: `(x_t, inner_t, states) -> (output_t, new_states)`, the
            element-wise rest of the step; it must not read variables, and its output
            must be its first new state (the same tensor: h_t), which the backward loop
            relies on (checked where the step is traced).
        step_backward: optional `StepBackward`, the step's vector-Jacobian
            product written out: the forward loop saves what it needs instead of
            recomputing `finish` (where the step reads `x_t + inner_t` only, the
            two share one gradient). Without it the backward loop recomputes
            `finish` and differentiates it.
        recurrent_kernel: U, `[units, width]`.
        recurrent_bias: b, `[width]`, or None.
        inputs: time-major projected inputs `[time, batch, width]`.
        recurrent_mask: optional dropout mask on h_{t-1} `[batch, units]`.
        unroll: steps per iteration of the forward and the backward loop.
        compiled: compile the forward and the backward loop each with XLA
            (`tf.function(jit_compile=True)`), which fuses a step's element-wise
            operations and runs the loop without TensorFlow's per-operation
            dispatch. Each is compiled once per shape of its inputs. The
            gradient of a `tf.while_loop` cannot cross an XLA function's
            boundary (its accumulators are TensorLists); these two loops hand
            each other plain tensors, the stacked states and saved gates.
        The other arguments and the return value are as in `run_recurrence`.
    """
    if go_backwards:
        inputs = tf.reverse(inputs, [0])
    time_mask = None if mask is None else _time_major_mask(mask, go_backwards)
    has_bias = recurrent_bias is not None
    n_states = len(initial_states)
    bias = recurrent_bias if has_bias else tf.zeros([0], inputs.dtype)
    # Whether x_t and inner_t have one gradient: then one array holds it.
    shared_gradient = step_backward is not None and step_backward.shared_gradient

    def forward_loop(inputs, kernel, bias, *initial_states):
        """`(outputs, last_output, final_states, states before each step, saved)`."""
        steps = _steps(inputs, unroll)
        batch = tf.shape(inputs)[1]
        zero_output = tf.zeros([batch, output_size], dtype=inputs.dtype)

        def inner_product(h):
            if recurrent_mask is not None:
                h = h * recurrent_mask
            inner = tf.matmul(h, kernel)
            return inner + bias if has_bias else inner

        def new_array():
            return _step_array(inputs, steps, unroll)

        step_inputs = _by_step(inputs, unroll, steps)
        step_mask = None if time_mask is None else _by_step(time_mask, unroll, steps)

        def step(t, outputs_ta, saved_states_ta, inners_ta, previous_output, states):
            inner = inner_product(states[0])
            if step_backward is None:
                output, new_states = finish_fn(step_inputs[t], inner, list(states))
                saved = (inner,)
            else:
                output, new_states, saved = step_backward.forward(
                    step_inputs[t], inner, list(states))
            if output is not new_states[0]:
                raise ValueError(
                    "run_separable_recurrence needs a step whose output is its first new "
                    "state (the same tensor), as the backward loop gives the last output's "
                    f"gradient to the final state. Received: output {output!r}, new states "
                    f"{new_states!r}")
            if step_mask is not None:
                output, new_states = _hold_masked_step(
                    step_mask[t], output, new_states, previous_output, states, zero_output,
                    zero_output_for_mask,
                )
            if outputs_ta:
                outputs_ta = (outputs_ta[0].write(t, output),)
            saved_states_ta = tuple(ta.write(t, s) for ta, s in zip(saved_states_ta, states))
            inners_ta = tuple(ta.write(t, s) for ta, s in zip(inners_ta, saved))
            return outputs_ta, saved_states_ta, inners_ta, output, tuple(new_states)

        n_saved = 1 if step_backward is None else step_backward.n_saved
        outputs_ta, saved_states_ta, saved_ta, last_output, final_states = _for_each_step(
            step,
            steps,
            (
                (new_array(),) if return_all_outputs else (),
                tuple(new_array() for _ in range(n_states)),
                tuple(new_array() for _ in range(n_saved)),
                zero_output,
                tuple(initial_states),
            ),
            unroll=unroll,
        )
        # Where only the last output leaves the function, no array of every step's: the
        # last output stands in for them.
        outputs = outputs_ta[0].stack() if outputs_ta else last_output[None]
        saved_states = [ta.stack() for ta in saved_states_ta]  # states before each step
        saved = [ta.stack() for ta in saved_ta]  # inner_t, or what step_backward saved
        return outputs, last_output, list(final_states), saved_states, saved

    def backward_loop(d_outputs, d_last_output, d_final_states, inputs, kernel, bias,
                      saved_states, saved):
        """The gradients of `recurrence`'s arguments, from its results' and the forward
        loop's saved tensors."""
        steps = _steps(inputs, unroll)

        def new_array():
            return _step_array(inputs, steps, unroll)

        if unroll == ALL_STEPS and return_all_outputs:
            d_outputs = tf.unstack(d_outputs, num=steps)
        step_inputs = _by_step(inputs, unroll, steps)
        step_mask = None if time_mask is None else _by_step(time_mask, unroll, steps)
        step_states = [_by_step(s, unroll, steps) for s in saved_states]
        step_saved = [_by_step(s, unroll, steps) for s in saved]
        kernel_t = tf.transpose(kernel)
        # Unmasked, the last output is the last step's output, which is its first new state
        # (h_t, for every cell here): its gradient joins the final state's before the loop,
        # and where no sequence of outputs left the function a step's output has no
        # gradient of its own (no zeros added at every step). Masked, the last output is
        # the last unmasked step's: its gradient is carried back through the masked steps
        # after it, as the loop's first carry (a tensor_scatter_nd_add into d_outputs
        # copied them, and refused a batch of no rows, as a group of `grouped` may have).
        carries_output = step_mask is not None
        if not carries_output:
            d_final_states = [d_final_states[0] + d_last_output, *d_final_states[1:]]

        def backward_step(t, d_inputs_ta, d_inners_ta, *carry):
            *d_carried_output, d_states = carry
            states = [s[t] for s in step_states]
            d_output = d_outputs[t] if return_all_outputs else None
            passed_states = None
            if carries_output:
                d_output = d_carried_output[0] if d_output is None else (
                    d_output + d_carried_output[0])
                keep = step_mask[t]
                zeros = tf.zeros_like(d_output)
                d_carried_output = [
                    zeros if zero_output_for_mask else tf.where(keep, zeros, d_output)]
                d_output = tf.where(keep, d_output, zeros)
                passed_states = [tf.where(keep, tf.zeros_like(d), d) for d in d_states]
                d_states = [tf.where(keep, d, tf.zeros_like(d)) for d in d_states]
            elif d_output is None and step_backward is None:
                d_output = tf.zeros_like(d_states[0])
            if step_backward is None:
                x_t, inner = step_inputs[t], step_saved[0][t]
                with tf.GradientTape() as tape:
                    tape.watch([x_t, inner] + states)
                    output, new_states = finish_fn(x_t, inner, states)
                d_x, d_inner, *d_previous = tape.gradient(
                    [output] + list(new_states),
                    [x_t, inner] + states,
                    output_gradients=[d_output] + list(d_states),
                    unconnected_gradients=tf.UnconnectedGradients.ZERO,
                )
            else:
                d_z, d_previous = step_backward.backward(
                    [s[t] for s in step_saved], states, d_output, list(d_states))
                d_x, d_inner = (d_z, d_z) if shared_gradient else d_z
                d_previous = list(d_previous)
            d_h = tf.matmul(d_inner, kernel_t)
            if recurrent_mask is not None:
                d_h = d_h * recurrent_mask
            d_previous[0] = d_h if d_previous[0] is None else d_previous[0] + d_h
            d_previous = [tf.zeros_like(s) if d is None else d
                          for d, s in zip(d_previous, states)]
            if passed_states is not None:
                d_previous = [d + p for d, p in zip(d_previous, passed_states)]
            d_arrays = (d_inputs_ta.write(t, d_x),) + (
                () if shared_gradient else (d_inners_ta[0].write(t, d_inner),))
            return (d_arrays[0], d_arrays[1:], *d_carried_output, tuple(d_previous))

        d_inputs_ta, d_inners_ta, *_, d_initial_states = _for_each_step(
            backward_step,
            steps,
            (new_array(), () if shared_gradient else (new_array(),),
             *((d_last_output,) if carries_output else ()), tuple(d_final_states)),
            unroll=unroll,
            reverse=True,
        )
        d_inputs = d_inputs_ta.stack()
        d_inners = d_inputs if shared_gradient else d_inners_ta[0].stack()
        width = tf.shape(d_inners)[-1]
        previous_h = saved_states[0]
        if recurrent_mask is not None:
            previous_h = previous_h * recurrent_mask
        # The one product over all steps: dU = sum_t h_{t-1}^T dinner_t.
        d_kernel = tf.matmul(
            tf.reshape(previous_h, [-1, tf.shape(kernel)[0]]),
            tf.reshape(d_inners, [-1, width]),
            transpose_a=True,
        )
        d_bias = tf.reduce_sum(d_inners, axis=[0, 1]) if has_bias else tf.zeros_like(bias)
        return (d_inputs, d_kernel, d_bias, *d_initial_states)

    if compiled:
        forward_loop = _compiled(forward_loop)
        backward_loop = _compiled(backward_loop)

    @tf.custom_gradient
    def recurrence(inputs, kernel, bias, *initial_states):
        outputs, last_output, final_states, saved_states, saved = forward_loop(
            inputs, kernel, bias, *initial_states)

        def grad(d_outputs, d_last_output, *d_final_states):
            d_last_output = _zeros_if_none(d_last_output, last_output)
            d_final_states = [_zeros_if_none(d, s) for d, s in zip(d_final_states, final_states)]
            if not return_all_outputs:
                # Only the last output left the function (`outputs` is a copy of it, whose
                # gradient, if any, is not read): see `backward_loop`.
                d_outputs = ()
            elif d_outputs is None:
                d_outputs = tf.zeros_like(outputs)
            return backward_loop(d_outputs, d_last_output, d_final_states, inputs, kernel,
                                 bias, saved_states, saved)

        return (outputs, last_output, *final_states), grad

    outputs, last_output, *final_states = recurrence(
        inputs, recurrent_kernel, bias, *initial_states
    )
    if return_all_outputs:
        outputs = tf.transpose(outputs, [1, 0, 2])
    else:
        outputs = last_output[:, None, :]
    return last_output, outputs, final_states
