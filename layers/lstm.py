"""The long short-term memory cell and layer."""

import keras
import tensorflow as tf
from keras import ops

from seqlab.layers._loop import StepBackward
from seqlab.layers.registry import serializable
from seqlab.layers.rnn_base import RecurrentCell, RecurrentLayer

_EQUATIONS = """
    Equations (DESIGN.md section 3), sigma = `recurrent_activation` (sigmoid),
    tanh = `activation`, (.) the element-wise product:

        i_t  = sigma(W_xi x_t + W_hi h_{t-1} + b_i)      input gate
        f_t  = sigma(W_xf x_t + W_hf h_{t-1} + b_f)      forget gate
        c~_t = tanh(W_xc x_t + W_hc h_{t-1} + b_c)       candidate
        o_t  = sigma(W_xo x_t + W_ho h_{t-1} + b_o)      output gate
        c_t  = f_t (.) c_{t-1} + i_t (.) c~_t
        h_t  = o_t (.) tanh(c_t)

    Weights, in Keras's layout with the gates fused in the order i, f, c~, o:
    `kernel` `(input_dim, 4 * units)`, `recurrent_kernel` `(units, 4 * units)`,
    `bias` `(4 * units,)`.
"""

_ARGS = """
        units: positive integer, dimensionality of h and c.
        activation: the candidate's and the output's activation. Default: tanh.
        recurrent_activation: the gates' activation. Default: sigmoid.
        use_bias: whether to add the biases b.
        kernel_initializer, recurrent_initializer, bias_initializer,
        kernel_regularizer, recurrent_regularizer, bias_regularizer,
        kernel_constraint, recurrent_constraint, bias_constraint: as in Keras.
        unit_forget_bias: initialise b_f to 1 (Jozefowicz et al., 2015).
        dropout: fraction of the inputs dropped (one mask per sequence).
        recurrent_dropout: fraction of h_{t-1} dropped in the recurrent product.
        seed: seed of the dropout masks."""


@serializable
class LSTMCell(RecurrentCell):
    __doc__ = (
        """One step of a long short-term memory network.
"""
        + _EQUATIONS
        + """
    Args:"""
        + _ARGS
        + """

    Call arguments:
        inputs: `[batch, input_dim]`.
        states: list `[h_{t-1}, c_{t-1}]`, each `[batch, units]`.
        training: whether dropout is applied.

    Returns:
        `(h_t, [h_t, c_t])`.

    Example:

    >>> rnn = keras.layers.RNN(LSTMCell(4))
    >>> rnn(np.zeros((2, 3, 5), "float32")).shape
    TensorShape([2, 4])
    """
    )

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="sigmoid",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        unit_forget_bias=True,
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(
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
            **kwargs,
        )
        self.recurrent_activation = keras.activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias

    # The loop of the shapes that are not measured (`layers/_loop_choice.py`). Earlier
    # measurements on 2 cores favoured the hand-scheduled BPTT at 256 and 512 units and in the
    # sentiment pipeline's masked BiLSTM of 64 units; measured shapes choose for themselves.
    hand_backprop_min_units = 1

    @property
    def state_size(self):
        return [self.units, self.units]

    def build(self, input_shape):
        self._add_kernels(input_shape[-1], gates=4)
        self.bias = None
        if self.use_bias:
            initializer = self.bias_initializer
            if self.unit_forget_bias:
                base, units = self.bias_initializer, self.units

                def initializer(_, dtype=None, **kwargs):
                    return ops.concatenate(
                        [
                            base((units,), dtype=dtype, **kwargs),
                            ops.ones((units,), dtype=dtype),
                            base((units * 2,), dtype=dtype, **kwargs),
                        ]
                    )

            self._add_bias((4 * self.units,), initializer)

    def finish_step(self, projected_inputs, inner, states, axis=-1):
        output, new_states, _ = self._finish_step_saving(projected_inputs, inner, states, axis)
        return output, new_states

    @property
    def step_backward(self):
        """The step's vector-Jacobian product written out, for the hand-scheduled BPTT: the
        forward loop saves the gates and tanh(c_t) instead of the backward loop recomputing
        them, and each gate's gradient is one fused `SigmoidGrad` / `TanhGrad`. Only for the
        default sigmoid / tanh (None otherwise: the loop differentiates `finish_step`)."""
        if (self.recurrent_activation is not keras.activations.sigmoid
                or self.activation is not keras.activations.tanh):
            return None
        return StepBackward(self._finish_step_saving, _lstm_step_backward, 5)

    def _finish_step_saving(self, projected_inputs, inner, states, axis=-1):
        # The step after the products; it also hands back what the written-out VJP reads.
        c_previous = states[1]
        z = projected_inputs + inner
        z_i, z_f, z_c, z_o = ops.split(z, 4, axis=axis)
        i = self.recurrent_activation(z_i)
        f = self.recurrent_activation(z_f)
        candidate = self.activation(z_c)
        c = f * c_previous + i * candidate
        o = self.recurrent_activation(z_o)
        tanh_c = self.activation(c)
        h = o * tanh_c
        return h, [h, c], (i, f, candidate, o, tanh_c)

    def get_config(self):
        config = {
            "recurrent_activation": keras.activations.serialize(self.recurrent_activation),
            "unit_forget_bias": self.unit_forget_bias,
        }
        return {**super().get_config(), **config}


def _lstm_step_backward(saved, states, d_output, d_states):
    """d z_t and d c_{t-1} from d h_t (the output's and the state's) and d c_t; h_{t-1} is not
    read by the step (its gradient comes through U alone). SigmoidGrad(y, dy) = dy y (1 - y),
    TanhGrad(y, dy) = dy (1 - y^2): the derivatives from the saved activations."""
    i, f, candidate, o, tanh_c = saved
    d_h = d_states[0] if d_output is None else d_output + d_states[0]
    d_c = d_states[1] + tf.raw_ops.TanhGrad(y=tanh_c, dy=d_h * o)
    d_z = tf.concat([
        tf.raw_ops.SigmoidGrad(y=i, dy=d_c * candidate),
        tf.raw_ops.SigmoidGrad(y=f, dy=d_c * states[1]),
        tf.raw_ops.TanhGrad(y=candidate, dy=d_c * i),
        tf.raw_ops.SigmoidGrad(y=o, dy=d_h * tanh_c),
    ], axis=-1)
    return d_z, [None, d_c * f]


@serializable
class LSTM(RecurrentLayer):
    __doc__ = (
        """Long short-term memory layer: `LSTMCell` run over time.
"""
        + _EQUATIONS
        + """
    The time loop is the one measured fastest for the shape on this machine:
    Keras's own, seqlab's with four steps per iteration (in the usual layout or
    transposed, `[units, batch]`), or (training) one input projection for all
    steps and the backward pass scheduled by hand (one dU product over all
    steps); see `layers/_loop_choice.py`.
    `ours.set_weights(keras.layers.LSTM(...)
    .get_weights())` gives the same function.

    Args:"""
        + _ARGS
        + """
        activity_regularizer: regularizer on the layer's output.
        return_sequences: return h_t of every step, not only the last.
        return_state: also return the last states h_T and c_T.
        go_backwards: process the sequence backwards (and return the reversed
            sequence).
        use_cudnn: Keras's argument: `"auto"` runs cuDNN's fused kernel where
            Keras's built-in layer would (a GPU; docs/performance.md, "On a GPU"),
            False never, True requires it (an error where it cannot run).
        stateful: keep the last states of batch k as the initial states of
            batch k+1 (needs a fixed batch size); reset with
            `layers.reset_states`.

    Call arguments:
        sequences: `[batch, time, input_dim]`.
        initial_state: optional list `[h_0, c_0]`.
        mask: optional boolean `[batch, time]`; masked steps keep the states.
        training: whether dropout is applied.

    Returns:
        `[batch, units]`, or `[batch, time, units]` with `return_sequences`;
        with `return_state`, a list `[output, h_T, c_T]`.

    Example:

    >>> layer = LSTM(4, return_state=True)
    >>> output, h, c = layer(np.zeros((2, 3, 5), "float32"))
    >>> output.shape, c.shape
    (TensorShape([2, 4]), TensorShape([2, 4]))
    """
    )

    fused_kernel = "lstm"

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="sigmoid",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        unit_forget_bias=True,
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
        use_cudnn="auto",
        **kwargs,
    ):
        cell = LSTMCell(
            units,
            activation=activation,
            recurrent_activation=recurrent_activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            unit_forget_bias=unit_forget_bias,
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
            name="lstm_cell",
        )
        super().__init__(
            cell,
            activity_regularizer=activity_regularizer,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            use_cudnn=use_cudnn,
            **kwargs,
        )

    @property
    def recurrent_activation(self):
        return self.cell.recurrent_activation

    @property
    def unit_forget_bias(self):
        return self.cell.unit_forget_bias
