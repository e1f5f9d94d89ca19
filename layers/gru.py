"""The gated recurrent unit cell and layer."""

import keras
import tensorflow as tf
from keras import ops

from seqlab.layers._loop import StepBackward
from seqlab.layers.registry import serializable
from seqlab.layers.rnn_base import RecurrentCell, RecurrentLayer, plus_bias

_EQUATIONS = """
    Equations (DESIGN.md section 3), sigma = `recurrent_activation` (sigmoid),
    tanh = `activation`, (.) the element-wise product:

        z_t  = sigma(W_z x_t + U_z h_{t-1} + b_z)        update gate
        r_t  = sigma(W_r x_t + U_r h_{t-1} + b_r)        reset gate
        h~_t = tanh(W x_t + U (r_t (.) h_{t-1}) + b)     (reset_after=False)
        h~_t = tanh(W x_t + r_t (.) (U h_{t-1} + b'))    (reset_after=True)
        h_t  = z_t (.) h_{t-1} + (1 - z_t) (.) h~_t

    The update uses Keras's form: z_t weights the previous state. Seed 001
    writes h_t = (1 - z_t) h_{t-1} + z_t h~_t; that is the same family with z
    relabelled, and Keras's form lets Keras weights load unchanged.
    `reset_after=False` is the seeds' equation; `reset_after=True` (Keras's
    and cuDNN's default) applies r_t after the recurrent product and has a
    separate recurrent bias b'.

    Weights, in Keras's layout with the gates fused in the order z, r, h~:
    `kernel` `(input_dim, 3 * units)`, `recurrent_kernel` `(units, 3 * units)`,
    `bias` `(3 * units,)`, or `(2, 3 * units)` (input bias, recurrent bias)
    with `reset_after=True`.
"""

_ARGS = """
        units: positive integer, dimensionality of h.
        activation: the candidate's activation. Default: tanh.
        recurrent_activation: the gates' activation. Default: sigmoid.
        use_bias: whether to add the biases.
        kernel_initializer, recurrent_initializer, bias_initializer,
        kernel_regularizer, recurrent_regularizer, bias_regularizer,
        kernel_constraint, recurrent_constraint, bias_constraint: as in Keras.
        dropout: fraction of the inputs dropped (one mask per sequence).
        recurrent_dropout: fraction of h_{t-1} dropped in the recurrent
            products (the update z_t (.) h_{t-1} uses the undropped state).
        seed: seed of the dropout masks.
        reset_after: apply the reset gate after the recurrent product."""


@serializable
class GRUCell(RecurrentCell):
    __doc__ = (
        """One step of a gated recurrent unit network.
"""
        + _EQUATIONS
        + """
    Args:"""
        + _ARGS
        + """

    Call arguments:
        inputs: `[batch, input_dim]`.
        states: list with one tensor h_{t-1} `[batch, units]`.
        training: whether dropout is applied.

    Returns:
        `(h_t, [h_t])`.

    Example:

    >>> rnn = keras.layers.RNN(GRUCell(4, reset_after=False))
    >>> rnn(np.zeros((2, 3, 5), "float32")).shape
    TensorShape([2, 4])
    """
    )

    state_is_output = True

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="sigmoid",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        reset_after=True,
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
        self.reset_after = reset_after

    def build(self, input_shape):
        self._add_kernels(input_shape[-1], gates=3)
        self.bias = None
        if self.use_bias:
            self._add_bias((2, 3 * self.units) if self.reset_after else (3 * self.units,))

    def input_weights(self):
        bias = None
        if self.use_bias:
            bias = self.bias[0] if self.reset_after else self.bias
        return self.kernel, bias

    @property
    def separable(self):
        # With the reset gate before the product, U_h multiplies r_t (.) h_{t-1}.
        return self.reset_after

    def recurrent_weights(self):
        bias = self.bias[1] if self.use_bias and self.reset_after else None
        return self.recurrent_kernel, bias

    def finish_step(self, projected_inputs, inner, states, axis=-1):
        output, new_states, _ = self._finish_step_saving(projected_inputs, inner, states, axis)
        return output, new_states

    @property
    def step_backward(self):
        """The step's vector-Jacobian product written out, for the hand-scheduled BPTT
        (`reset_after=True` only: the other form is not separable): the forward loop saves
        z_t, r_t, h~_t and the candidate's recurrent product, and each gate's gradient is one
        fused `SigmoidGrad` / `TanhGrad`. Only for the default sigmoid / tanh (None
        otherwise: the loop differentiates `finish_step`)."""
        if (not self.reset_after
                or self.recurrent_activation is not keras.activations.sigmoid
                or self.activation is not keras.activations.tanh):
            return None
        return StepBackward(self._finish_step_saving, _gru_step_backward, 4,
                            shared_gradient=False)

    def _finish_step_saving(self, projected_inputs, inner, states, axis=-1):
        # The step after the products; it also hands back what the written-out VJP reads.
        x_z, x_r, x_h = ops.split(projected_inputs, 3, axis=axis)
        u_z, u_r, u_h = ops.split(inner, 3, axis=axis)
        z = self.recurrent_activation(x_z + u_z)
        r = self.recurrent_activation(x_r + u_r)
        candidate = self.activation(x_h + r * u_h)
        h = z * states[0] + (1.0 - z) * candidate
        return h, [h], (z, r, candidate, u_h)

    def step_function(self, recurrent_mask=None):
        # The gates' and the candidate's products are taken separately with the
        # kernels sliced once per sequence: no split of [batch, 3 * units]
        # products at every step, and one bias add for z and r.
        units = self.units
        kernel_zr, kernel_h = self.kernel[:, : 2 * units], self.kernel[:, 2 * units :]
        recurrent_zr = self.recurrent_kernel[:, : 2 * units]
        recurrent_h = self.recurrent_kernel[:, 2 * units :]
        bias_zr = bias_h = recurrent_bias_h = None
        if self.use_bias:
            input_bias = self.bias[0] if self.reset_after else self.bias
            bias_zr, bias_h = input_bias[: 2 * units], input_bias[2 * units :]
            if self.reset_after:
                bias_zr = bias_zr + self.bias[1][: 2 * units]
                recurrent_bias_h = self.bias[1][2 * units :]

        def step(inputs, states):
            h_previous = states[0]
            h_dropped = h_previous if recurrent_mask is None else h_previous * recurrent_mask
            zr = ops.matmul(inputs, kernel_zr) + ops.matmul(h_dropped, recurrent_zr)
            z, r = ops.split(self.recurrent_activation(plus_bias(zr, bias_zr)), 2, axis=-1)
            if self.reset_after:
                u_h = r * plus_bias(ops.matmul(h_dropped, recurrent_h), recurrent_bias_h)
            else:
                u_h = ops.matmul(r * h_dropped, recurrent_h)
            candidate = self.activation(plus_bias(ops.matmul(inputs, kernel_h), bias_h) + u_h)
            # z * h_{t-1} + (1 - z) * h~, with one product fewer.
            h = candidate + z * (h_previous - candidate)
            return h, [h]

        return step

    def get_config(self):
        config = {
            "recurrent_activation": keras.activations.serialize(self.recurrent_activation),
            "reset_after": self.reset_after,
        }
        return {**super().get_config(), **config}


def _gru_step_backward(saved, states, d_output, d_states):
    """(d x_t, d inner_t) and d h_{t-1} from d h_t (the output's and the state's), for
    h_t = z h_{t-1} + (1 - z) h~, h~ = tanh(x_h + r (.) u_h): x_t and inner_t share the gates'
    gradients, and the candidate's part of inner_t gets r (.) that of x_t. SigmoidGrad(y, dy) =
    dy y (1 - y), TanhGrad(y, dy) = dy (1 - y^2): the derivatives from the saved activations."""
    z, r, candidate, u_h = saved
    d_h = d_states[0] if d_output is None else d_output + d_states[0]
    d_candidate = tf.raw_ops.TanhGrad(y=candidate, dy=d_h * (1.0 - z))
    d_z = tf.raw_ops.SigmoidGrad(y=z, dy=d_h * (states[0] - candidate))
    d_r = tf.raw_ops.SigmoidGrad(y=r, dy=d_candidate * u_h)
    d_inputs = tf.concat([d_z, d_r, d_candidate], axis=-1)
    d_inner = tf.concat([d_z, d_r, d_candidate * r], axis=-1)
    return (d_inputs, d_inner), [d_h * z]


@serializable
class GRU(RecurrentLayer):
    __doc__ = (
        """Gated recurrent unit layer: `GRUCell` run over time.
"""
        + _EQUATIONS
        + """
    The time loop is the one measured fastest for the shape on this machine
    (Keras's own or seqlab's; see `layers/_loop_choice.py`).
    `ours.set_weights(keras.layers.GRU(...,
    reset_after=same).get_weights())` gives the same function.

    Args:"""
        + _ARGS
        + """
        activity_regularizer: regularizer on the layer's output.
        return_sequences: return h_t of every step, not only the last.
        return_state: also return the last state h_T.
        go_backwards: process the sequence backwards (and return the reversed
            sequence).
        use_cudnn: Keras's argument: `"auto"` runs cuDNN's fused kernel where
            Keras's built-in layer would (a GPU; docs/performance.md, "On a GPU"),
            False never, True requires it (an error where it cannot run).
        stateful: keep the last state of batch k as the initial state of batch
            k+1 (needs a fixed batch size); reset with `layers.reset_states`.

    Call arguments:
        sequences: `[batch, time, input_dim]`.
        initial_state: optional list `[h_0]`.
        mask: optional boolean `[batch, time]`; masked steps keep the state.
        training: whether dropout is applied.

    Returns:
        `[batch, units]`, or `[batch, time, units]` with `return_sequences`;
        with `return_state`, a list `[output, h_T]`.

    Example:

    >>> layer = GRU(4, return_sequences=True, reset_after=False)
    >>> layer(np.zeros((2, 3, 5), "float32")).shape
    TensorShape([2, 3, 4])
    """
    )

    fused_kernel = "gru"

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="sigmoid",
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
        reset_after=True,
        use_cudnn="auto",
        **kwargs,
    ):
        cell = GRUCell(
            units,
            activation=activation,
            recurrent_activation=recurrent_activation,
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
            reset_after=reset_after,
            dtype=kwargs.get("dtype"),
            name="gru_cell",
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
    def reset_after(self):
        return self.cell.reset_after
