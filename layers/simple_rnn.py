"""The Elman recurrent cell and layer."""

import keras
import tensorflow as tf

from seqlab.layers._loop import StepBackward
from seqlab.layers.registry import serializable
from seqlab.layers.rnn_base import RecurrentCell, RecurrentLayer

_CELL_DOC = """
    Equations (DESIGN.md section 3), for input x_t and previous state h_{t-1}:

        h_t = f(W_x x_t + W_h h_{t-1} + b_h)

    with f = `activation` (tanh by default). The output at step t is h_t; the
    readout y_t = W_y h_t + b_y is a `Dense` layer on top.

    Weights, in Keras's layout: `kernel` = W_x `(input_dim, units)`,
    `recurrent_kernel` = W_h `(units, units)`, `bias` = b_h `(units,)`.
"""


@serializable
class SimpleRNNCell(RecurrentCell):
    __doc__ = (
        """One step of a fully connected recurrent network.
"""
        + _CELL_DOC
        + """
    Args:
        units: positive integer, dimensionality of the state and output.
        activation: activation f. Default: tanh. `None` means identity.
        use_bias: whether to add b_h.
        kernel_initializer, recurrent_initializer, bias_initializer,
        kernel_regularizer, recurrent_regularizer, bias_regularizer,
        kernel_constraint, recurrent_constraint, bias_constraint: as in Keras.
        dropout: fraction of the inputs dropped (one mask per sequence).
        recurrent_dropout: fraction of h_{t-1} dropped in the recurrent product.
        seed: seed of the dropout masks.

    Call arguments:
        inputs: `[batch, input_dim]`.
        states: list with one tensor h_{t-1} `[batch, units]`.
        training: whether dropout is applied.

    Returns:
        `(h_t, [h_t])`.

    Example:

    >>> rnn = keras.layers.RNN(SimpleRNNCell(4))
    >>> rnn(np.zeros((2, 3, 5), "float32")).shape
    TensorShape([2, 4])
    """
    )

    state_is_output = True

    def build(self, input_shape):
        self._add_kernels(input_shape[-1], gates=1)
        self.bias = None
        if self.use_bias:
            self._add_bias((self.units,))

    def finish_step(self, projected_inputs, inner, states, axis=-1):
        output = self.activation(projected_inputs + inner)
        return output, [output]

    @property
    def step_backward(self):
        """The step's vector-Jacobian product written out, for the hand-scheduled BPTT: the
        forward loop saves h_t and the backward takes one fused `TanhGrad` from it instead of
        recomputing the step. Only for the default tanh (None otherwise)."""
        if self.activation is not keras.activations.tanh:
            return None
        return StepBackward(self._finish_step_saving, _tanh_step_backward, 1)

    def _finish_step_saving(self, projected_inputs, inner, states):
        output, new_states = self.finish_step(projected_inputs, inner, states)
        return output, new_states, (output,)


def _tanh_step_backward(saved, states, d_output, d_states):
    """d z_t = (d h_t from the output and the state) (1 - h_t^2); h_{t-1} is not read by the
    step (its gradient comes through W_h alone)."""
    (output,) = saved
    d_h = d_states[0] if d_output is None else d_output + d_states[0]
    return tf.raw_ops.TanhGrad(y=output, dy=d_h), [None]


@serializable
class SimpleRNN(RecurrentLayer):
    __doc__ = (
        """Fully connected recurrent layer: `SimpleRNNCell` run over time.
"""
        + _CELL_DOC
        + """
    The time loop is the one measured fastest for the shape on this machine
    (Keras's own or seqlab's; see `layers/_loop_choice.py`).
    `ours.set_weights(keras.layers.SimpleRNN(...)
    .get_weights())` gives the same function.

    Args:
        units, activation, use_bias, initializers, regularizers, constraints,
        dropout, recurrent_dropout, seed: see `SimpleRNNCell`.
        activity_regularizer: regularizer on the layer's output.
        return_sequences: return the output of every step, not only the last.
        return_state: also return the last state.
        go_backwards: process the sequence backwards (and return the reversed
            sequence).
        stateful: keep the last state of batch k as the initial state of batch
            k+1 (needs a fixed batch size); reset with `layers.reset_states`.

    Call arguments:
        sequences: `[batch, time, input_dim]`.
        initial_state: optional list with h_0 `[batch, units]`.
        mask: optional boolean `[batch, time]`; masked steps keep the state.
        training: whether dropout is applied.

    Returns:
        `[batch, units]`, or `[batch, time, units]` with `return_sequences`;
        with `return_state`, a list `[output, h_T]`.

    Example:

    >>> layer = SimpleRNN(4, return_sequences=True)
    >>> layer(np.zeros((2, 3, 5), "float32")).shape
    TensorShape([2, 3, 4])
    """
    )

    def __init__(
        self,
        units,
        activation="tanh",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        **kwargs,
    ):
        cell = SimpleRNNCell(
            units,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            seed=seed,
            dtype=kwargs.get("dtype"),
            name="simple_rnn_cell",
        )
        super().__init__(
            cell,
            activity_regularizer=activity_regularizer,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            **kwargs,
        )
