"""What seqlab's recurrent cells and layers share.

A cell splits one step into two parts: `project_inputs` (the input kernel and
bias, which does not depend on the previous state) and `recurrent_step` (the
rest of the equations). `cell.call` runs both for one step, which is what
`keras.layers.RNN` uses. seqlab's layers run one of seven time loops over the
same two parts, whichever they measured fastest for the shape on this machine
(`layers/_loop_choice.py`): Keras's own loop, seqlab's loop with several steps
per iteration, the same with its tensors transposed to `[units, batch]`
(`feature_major_step`), every step written out without a loop (a short time axis
the trace knows), (training) one input projection for all steps and the
backpropagation through time scheduled by hand (`layers/_loop.py`), as it is or
compiled by XLA, or the batch's rows in groups, each group's loop running beside
the others'. The same equations in the same order, so the numbers
agree with the per-step cell.
"""

import contextlib
import importlib
import threading

import keras
import tensorflow as tf
from keras import ops

from seqlab.layers import _loop_choice
from seqlab.layers._checks import check_positive_int, check_rate
from seqlab.layers._loop import ALL_STEPS, run_recurrence, run_separable_recurrence

# Steps per iteration of the time loop (see `run_recurrence`). Measured with
# benchmarks/recurrent.py on 2 cores: 2, 4 and 8 all beat 1; 4 was the best
# balance across the three layers and both modes.
UNROLLED_STEPS = 4

# The longest time axis the `fully_unrolled` loop writes out step by step (`unroll=ALL_STEPS`
# in layers/_loop.py): its trace grows with the steps, and past a few dozen steps the
# per-iteration cost it saves is a small part of a step.
MAX_FULLY_UNROLLED_STEPS = 64

# Keras's TensorFlow backend module of `lstm`, `gru` and `cudnn_ok` (imported by name: the
# package's `rnn` attribute is a function of that name).
_TENSORFLOW_RNN = importlib.import_module("keras.src.backend.tensorflow.rnn")

# Activations whose values stay finite however long a loop runs on padding
# (`RecurrentLayer._can_compact_mask`).
_BOUNDED_ACTIVATIONS = (
    keras.activations.tanh,
    keras.activations.sigmoid,
    keras.activations.hard_sigmoid,
    keras.activations.softsign,
)


class RecurrentCell(keras.layers.Layer):
    """Base class of the cells: weights' arguments, dropout masks, one step.

    Dropout is variational (one mask per sequence, reused at every step), as in
    Keras: the cell creates the input and recurrent masks on first use and keeps
    them until `reset_dropout_mask()` / `reset_recurrent_dropout_mask()`, which
    seqlab's layers call after every sequence.

    Subclasses create their weights in `build` and implement `project_inputs`
    and `finish_step` (a separable step), or override `step_function`.
    """

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
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("units", units)
        check_rate("dropout", dropout)
        check_rate("recurrent_dropout", recurrent_dropout)
        self.units = units
        self.activation = keras.activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = keras.regularizers.get(recurrent_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.recurrent_constraint = keras.constraints.get(recurrent_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.dropout = float(dropout)
        self.recurrent_dropout = float(recurrent_dropout)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self._dropout_mask = None
        self._recurrent_dropout_mask = None

    # The Keras RNN API.
    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def get_initial_state(self, batch_size=None):
        sizes = self.state_size if isinstance(self.state_size, list) else [self.state_size]
        return [ops.zeros((batch_size, size), dtype=self.compute_dtype) for size in sizes]

    def call(self, inputs, states, training=False):
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        if training and self.dropout > 0:
            inputs = inputs * self.get_dropout_mask(inputs)
        recurrent_mask = (
            self.get_recurrent_dropout_mask(states[0])
            if training and self.recurrent_dropout > 0
            else None
        )
        if self.separable:
            # One step on its own: the fused products, as Keras's cells take them
            # (`step_function` may prepare per-sequence slices, which would be
            # redone at every step here).
            return self.recurrent_step(self.project_inputs(inputs), states, recurrent_mask)
        return self.step_function(recurrent_mask)(inputs, states)

    def step_function(self, recurrent_mask=None):
        """The whole step from the raw input: `(x_t, states) -> (output, new_states)`.

        The layers call this once per sequence, outside the time loop, so what
        it derives from the weights (slices, summed biases) is computed once,
        not at every step.

        Args:
            recurrent_mask: optional dropout mask on h_{t-1} `[batch, units]`.
        """
        return lambda inputs, states: self.recurrent_step(
            self.project_inputs(inputs), states, recurrent_mask
        )

    # The split of one step.
    def input_weights(self):
        """`(W, b)`: the input kernel and the bias added to x_t @ W, or None."""
        return self.kernel, self.bias if self.use_bias else None

    def project_inputs(self, inputs):
        """`inputs @ kernel (+ input bias)`, for one step or for all steps."""
        kernel, bias = self.input_weights()
        projected = ops.matmul(inputs, kernel)
        return projected if bias is None else projected + bias

    @property
    def separable(self):
        """Whether the step is `finish_step(x, h_{t-1} @ U + b, states)`."""
        return True

    # Whether the cell's state is its output alone (SimpleRNN, GRU: h_t), so that the final
    # state of a masked sequence is the output at its last unmasked step
    # (`RecurrentLayer.run_loop`).
    state_is_output = False

    # From how many units seqlab's layers train this (separable) cell with the hand-scheduled
    # BPTT of `layers/_loop.py` where they do not measure the loops (shapes too small to
    # measure, a distribution strategy; `layers/_loop_choice.py`); None: never.
    hand_backprop_min_units = None

    @property
    def backprop_by_hand(self):
        """Whether an unmeasured shape trains with the hand-scheduled BPTT."""
        threshold = self.hand_backprop_min_units
        return self.separable and threshold is not None and self.units >= threshold

    def recurrent_weights(self):
        """`(U, b)`: the recurrent kernel and the bias added to h_{t-1} @ U, or None."""
        return self.recurrent_kernel, None

    def finish_step(self, projected_inputs, inner, states, axis=-1):
        """The element-wise rest of a separable step. Returns `(output, new_states)`, the
        output being the first new state itself (the same tensor, h_t), as the
        hand-scheduled BPTT needs (`layers._loop.run_separable_recurrence`).

        `axis` is the one of the units (and gates): -1, or 0 in the feature-major loop.
        """
        raise NotImplementedError

    def feature_major_step(self, recurrent_mask=None):
        """The separable step with every tensor transposed, `[size, batch]`:
        `(x_t^T, states^T) -> (output^T, new_states^T)`, its products W^T x_t^T and
        U^T h_{t-1}^T (the `feature_major` loop of `layers/_loop.py`). The same equations;
        TensorFlow's CPU products can be much faster with the batch as the short side
        (docs/performance.md).

        Args:
            recurrent_mask: optional dropout mask on h_{t-1} `[batch, units]`.
        """
        kernel, input_bias = self.input_weights()
        recurrent_kernel, recurrent_bias = self.recurrent_weights()
        kernel_t = ops.transpose(kernel)
        recurrent_t = ops.transpose(recurrent_kernel)
        input_bias = None if input_bias is None else input_bias[:, None]
        recurrent_bias = None if recurrent_bias is None else recurrent_bias[:, None]
        mask_t = None if recurrent_mask is None else ops.transpose(recurrent_mask)

        def step(inputs, states):
            h_previous = states[0] if mask_t is None else states[0] * mask_t
            projected = plus_bias(ops.matmul(kernel_t, inputs), input_bias)
            inner = plus_bias(ops.matmul(recurrent_t, h_previous), recurrent_bias)
            return self.finish_step(projected, inner, states, axis=0)

        return step

    # A `StepBackward` (`layers/_loop.py`) for the hand-scheduled BPTT, or None: the backward
    # loop then differentiates `finish_step` itself.
    step_backward = None

    def recurrent_step(self, projected_inputs, states, recurrent_mask=None):
        """Everything of a separable step after the input projection.

        Returns `(output, new_states)`.
        """
        if not self.separable:
            raise NotImplementedError(
                f"{type(self).__name__} with these arguments is not separable; "
                "run it with `step_function`"
            )
        h_previous = states[0] if recurrent_mask is None else states[0] * recurrent_mask
        kernel, bias = self.recurrent_weights()
        inner = ops.matmul(h_previous, kernel)
        if bias is not None:
            inner = inner + bias
        return self.finish_step(projected_inputs, inner, states)

    # Dropout masks, cached for the length of one sequence.
    def get_dropout_mask(self, step_input):
        if self._dropout_mask is None and self.dropout > 0:
            self._dropout_mask = keras.random.dropout(
                ops.ones_like(step_input), rate=self.dropout, seed=self.seed_generator
            )
        return self._dropout_mask

    def get_recurrent_dropout_mask(self, step_state):
        if self._recurrent_dropout_mask is None and self.recurrent_dropout > 0:
            self._recurrent_dropout_mask = keras.random.dropout(
                ops.ones_like(step_state),
                rate=self.recurrent_dropout,
                seed=self.seed_generator,
            )
        return self._recurrent_dropout_mask

    def reset_dropout_mask(self):
        self._dropout_mask = None

    def reset_recurrent_dropout_mask(self):
        self._recurrent_dropout_mask = None

    def _add_kernels(self, input_dim, gates):
        self.kernel = self.add_weight(
            shape=(input_dim, gates * self.units),
            name="kernel",
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, gates * self.units),
            name="recurrent_kernel",
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )

    def _add_bias(self, shape, initializer=None):
        self.bias = self.add_weight(
            shape=shape,
            name="bias",
            initializer=initializer or self.bias_initializer,
            regularizer=self.bias_regularizer,
            constraint=self.bias_constraint,
        )

    def get_config(self):
        config = {
            "units": self.units,
            "activation": keras.activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": keras.initializers.serialize(
                self.recurrent_initializer
            ),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            "recurrent_regularizer": keras.regularizers.serialize(
                self.recurrent_regularizer
            ),
            "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
            "recurrent_constraint": keras.constraints.serialize(
                self.recurrent_constraint
            ),
            "bias_constraint": keras.constraints.serialize(self.bias_constraint),
            "dropout": self.dropout,
            "recurrent_dropout": self.recurrent_dropout,
            "seed": self.seed,
        }
        return {**super().get_config(), **config}


# Whether this thread traces inside `portable_loops` (no fused kernel).
_PORTABLE = threading.local()


def _in_portable_loops():
    return getattr(_PORTABLE, "on", False)


@contextlib.contextmanager
def portable_loops():
    """Inside this block (this thread), seqlab's recurrent layers trace loops of ordinary
    TensorFlow operations, never cuDNN's fused kernel, so that a SavedModel traced here
    serves on a machine without a GPU as well. Keras's own layers traced on a GPU hold
    cuDNN's op, which has no CPU kernel (keras-team/keras#18504); seqlab's export commands
    trace inside this block."""
    previous = _in_portable_loops()
    _PORTABLE.on = True
    try:
        yield
    finally:
        _PORTABLE.on = previous


class RecurrentLayer(keras.layers.RNN):
    """Base class of the layers: runs a `RecurrentCell` over time.

    `keras.layers.RNN` provides the Keras behaviour (initial and stateful
    states, masks, `return_sequences`, `return_state`, `go_backwards`,
    `Bidirectional` support); this class replaces its per-step loop with its
    choice of loops (`layers/_loop_choice.py`): Keras's own, seqlab's with
    several steps per iteration (in the usual layout or transposed, `[units,
    batch]`) or with every step written out, or one input projection for all
    steps and a hand-scheduled backward pass (`layers/_loop.py`), whichever it
    measured fastest for the shape on this machine.
    """

    # Keras's fused kernel of the whole loop for this layer (`"lstm"` or `"gru"`: the
    # `keras.src.backend` functions that Keras's built-in layers call, which run cuDNN's
    # kernel on a GPU), or None.
    fused_kernel = None

    def __init__(self, cell, activity_regularizer=None, use_cudnn="auto", **kwargs):
        if kwargs.pop("unroll", False):
            raise ValueError(
                "seqlab's recurrent layers choose their own loop (written out, where that "
                "is faster) and take no unroll argument. "
                "Received: unroll=True"
            )
        if self.fused_kernel is None and use_cudnn != "auto":
            raise ValueError(f"Unrecognized keyword arguments passed to {type(self).__name__}: "
                             f"{{'use_cudnn': {use_cudnn!r}}}")
        if use_cudnn not in ("auto", True, False):
            raise ValueError("use_cudnn must be 'auto', True or False (Keras's argument). "
                             f"Received: use_cudnn={use_cudnn!r}")
        super().__init__(cell, activity_regularizer=activity_regularizer, **kwargs)
        self.input_spec = keras.layers.InputSpec(ndim=3)
        # Keras's LSTM and GRU argument: "auto" runs cuDNN's kernel where it can (see
        # `runs_fused_kernel`), False never, True requires it (an error where it cannot).
        self.use_cudnn = use_cudnn
        # Whether the layer is being called as one direction of a Bidirectional, whose other
        # direction's loop runs beside its own (`_loop_choice.runs_beside_another`).
        self._beside_another = False
        if (self.fused_kernel is not None and use_cudnn is not False
                and tf.config.list_physical_devices("GPU")):
            # As Keras's LSTM and GRU: cuDNN's op does not compile with XLA, and `compile`
            # (`jit_compile="auto"`, XLA on a GPU where every layer supports it) reads this
            # before the first trace. Physical devices: listing them leaves TensorFlow's
            # runtime (its thread settings) unconfigured.
            self.supports_jit = False

    def call(self, sequences, initial_state=None, mask=None, training=False):
        """Keras's `RNN.call`, after checks whose failures read as TensorFlow's otherwise (a
        matrix product's sizes, a slice out of bounds, a list index)."""
        name = f"{type(self).__name__} {self.name!r}"
        kernel = getattr(self.cell, "kernel", None)
        features = sequences.shape[-1]
        if kernel is not None and features is not None and features != kernel.shape[0]:
            raise ValueError(f"{name} was built for {kernel.shape[0]} input features per "
                             f"step; received inputs of shape {tuple(sequences.shape)}")
        if sequences.shape[1] == 0:
            raise ValueError(f"{name} needs at least one time step; received inputs of shape "
                             f"{tuple(sequences.shape)}")
        if initial_state is not None:
            given = list(initial_state) if isinstance(initial_state, (list, tuple)) else [
                initial_state]
            sizes = self.cell.state_size
            sizes = list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]
            if len(given) != len(sizes):
                raise ValueError(
                    f"{name} takes {len(sizes)} initial state tensor"
                    f"{'s' if len(sizes) > 1 else ''} of shape [batch, {sizes[0]}] "
                    f"({'h and c' if len(sizes) == 2 else 'h'}); received {len(given)}")
        return super().call(sequences, initial_state=initial_state, mask=mask,
                            training=training)

    def inner_loop(self, sequences, initial_state, mask, training=False, final_states=None):
        """Keras's hook (`keras.layers.RNN.call`): `(last_output, outputs, final_states)`.

        `final_states`: whether the caller reads the final states (None: where the layer
        returns or keeps them, `return_state` or `stateful`). Where it does not, a masked
        LSTM returns none (an empty list; see `run_loop`).
        """
        if (self.use_cudnn is True and not self.runs_fused_kernel(training)
                and not _in_portable_loops()):
            raise ValueError(
                "use_cudnn=True was specified, but cuDNN's kernel cannot run this layer here "
                "(it needs a GPU, tanh and sigmoid activations, a bias, reset_after=True for a "
                "GRU, and no recurrent dropout in training). Pass use_cudnn='auto' to run "
                "seqlab's loops where it cannot."
            )
        # Keras hands a stateful layer's states (and a caller's variables) over as variables,
        # which seqlab's loops would stack or capture as variables in eager mode: read them.
        initial_state = [tf.convert_to_tensor(state) for state in initial_state]
        self._beside_another = _loop_choice.runs_beside_another(self)
        variant = _loop_choice.choose(self, sequences, mask, training)
        last_output, outputs, states = self.run_loop(
            variant, sequences, initial_state, mask, training, final_states)
        if self.return_sequences:
            # seqlab's loops stack the steps in a TensorArray of a size known only when
            # it runs; the trace keeps the number of steps it knows, as Keras's loop does
            # (a Flatten and a Dense after the layer need it to build).
            outputs.set_shape(sequences.shape[:2] + outputs.shape[2:])
        return last_output, outputs, states

    def run_loop(self, variant, sequences, initial_state, mask, training=False,
                 final_states=None, backward=None):
        """Runs the time loop `variant` (one of `layers._loop_choice.VARIANTS`).

        All of them compute the same function (the same equations in the same
        order); they differ in speed, which depends on the machine and the
        sizes (`layers/_loop_choice.py`). A mask runs as compacted sequences
        (`_run_compacted`) where that gives the final states the caller reads
        (`inner_loop`): always for a cell whose one state is its output, for
        another (the LSTM) only where its states are not read; it then returns an
        empty list of them. `backward`: whether the loop will be differentiated (None: in
        training), which decides how `fully_unrolled` runs; the loop measurement times
        training's loops without dropout (`training=False`) but differentiated.
        """
        if variant not in _loop_choice.VARIANTS:
            raise ValueError(f"Unknown loop variant. Received: variant={variant!r}")
        if final_states is None:
            final_states = self.return_state or self.stateful
        backward = training if backward is None else backward
        cell = self.cell
        try:
            if mask is None or not self._can_compact_mask(training, final_states):
                return self._run_variant(variant, sequences, initial_state, mask, training,
                                         self.go_backwards, self.return_sequences, backward)
            return self._run_compacted(variant, sequences, initial_state, mask, training,
                                       backward)
        finally:
            cell.reset_dropout_mask()
            cell.reset_recurrent_dropout_mask()

    def compiles_loops(self, sequences):
        """Whether an XLA-compiled loop may run on `sequences` (`compiled_bptt`): where the
        trace knows the number of steps (XLA compiles once per shape of its inputs; a
        time axis of varying length would compile again for each), and not inside
        `portable_loops`."""
        return sequences.shape[1] is not None and not _in_portable_loops()

    def unrolls_fully(self, sequences):
        """Whether the `fully_unrolled` loop may run on `sequences`: where the trace knows
        the number of steps, from 1 to `MAX_FULLY_UNROLLED_STEPS`."""
        steps = sequences.shape[1]
        return steps is not None and 1 <= steps <= MAX_FULLY_UNROLLED_STEPS

    def runs_fused_kernel(self, training):
        """Whether the `keras` loop runs Keras's fused kernel (cuDNN's), as Keras's built-in
        layer would: a GPU visible, and cuDNN's form of the cell (tanh and sigmoid, a bias,
        a GRU with `reset_after`), without recurrent dropout in training; not inside
        `portable_loops`."""
        if (self.fused_kernel is None or self.use_cudnn is False
                or (training and self.cell.recurrent_dropout > 0)
                or _in_portable_loops()):
            return False
        cell = self.cell
        return _TENSORFLOW_RNN.cudnn_ok(
            cell.activation, cell.recurrent_activation, unroll=False, use_bias=cell.use_bias,
            reset_after=getattr(cell, "reset_after", None),
        )

    def _run_fused(self, sequences, initial_state, training, go_backwards, return_sequences):
        """The unmasked loop as Keras's fused kernel (see `runs_fused_kernel`), with the
        input dropout applied first as Keras's layers do; None where the kernel refuses
        (Keras's backend raises NotImplementedError where cuDNN's op is not found)."""
        cell = self.cell
        if training and cell.dropout > 0:
            sequences = sequences * ops.expand_dims(cell.get_dropout_mask(sequences[:, 0, :]), 1)
        options = {"reset_after": cell.reset_after} if self.fused_kernel == "gru" else {}
        try:
            return getattr(keras.src.backend, self.fused_kernel)(
                sequences, *initial_state, None, kernel=cell.kernel,
                recurrent_kernel=cell.recurrent_kernel, bias=cell.bias,
                activation=cell.activation, recurrent_activation=cell.recurrent_activation,
                return_sequences=return_sequences, go_backwards=go_backwards, **options,
            )
        except NotImplementedError:
            return None

    def _can_compact_mask(self, training, final_states=False):
        """Whether a mask may run as compacted sequences: where the final states are read,
        only for a cell whose one state is its output (the loop runs on past each
        sequence's last step; the output there is read), and in training only for bounded
        activations (the steps past the end get no gradient, but an unbounded state there
        could overflow and make 0 x inf = NaN of the weights')."""
        cell = self.cell
        if final_states and not cell.state_is_output:
            return False
        activations = [cell.activation, getattr(cell, "recurrent_activation", cell.activation)]
        return not training or all(a in _BOUNDED_ACTIVATIONS for a in activations)

    def _run_compacted(self, variant, sequences, initial_state, mask, training, backward):
        """The loop over each sequence's unmasked steps moved to its front, without a mask.

        Keras's rule at a masked step (keep the states; repeat the last output, or zeros
        with `zero_output_for_mask`) costs every step a mask read and three or four
        `where`s. The same result: the unmasked steps of each sequence first, in order (a
        right-padded sequence as it is), the loop run unmasked (past each sequence's
        end on the rest, discarded), then each step's output read once after the loop
        from the last unmasked step up to it. Going backwards, the sequences are reversed
        first, as Keras does. Returns `(last_output, outputs, final_states)` as the masked
        loop does; the final states `[h]` of a cell whose state is its output, else [].
        """
        mask = tf.cast(mask, tf.bool)
        if self.go_backwards:
            sequences, mask = tf.reverse(sequences, [1]), tf.reverse(mask, [1])
        order = tf.argsort(tf.cast(tf.logical_not(mask), tf.int32), axis=1, stable=True)
        sequences = _gather_steps(sequences, order)
        _, outputs, _ = self._run_variant(variant, sequences, initial_state, None, training,
                                          go_backwards=False, return_sequences=True,
                                          backward=backward)
        counts = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
        last_step = _gather_steps(outputs, tf.maximum(counts - 1, 0)[:, None])[:, 0]
        has_steps = (counts > 0)[:, None]
        held = tf.where(has_steps, last_step, tf.zeros_like(last_step))
        states = []
        if self.cell.state_is_output:
            # A sequence without unmasked steps keeps its initial state.
            states = [tf.where(has_steps, last_step, tf.cast(initial_state[0], last_step.dtype))]
        last_output = held
        if self.zero_output_for_mask:
            last_output = tf.where(mask[:, -1:], held, tf.zeros_like(held))
        if not self.return_sequences:
            return last_output, last_output[:, None, :], states
        # Step t's output: that of the last unmasked step up to t.
        seen = tf.cumsum(tf.cast(mask, tf.int32), axis=1)
        outputs = _gather_steps(outputs, tf.maximum(seen - 1, 0))
        keep = mask if self.zero_output_for_mask else seen > 0
        return last_output, tf.where(keep[:, :, None], outputs, tf.zeros_like(outputs)), states

    def _run_variant(self, variant, sequences, initial_state, mask, training, go_backwards,
                     return_sequences, backward):
        cell = self.cell
        if variant == "keras" and mask is None and self.runs_fused_kernel(training):
            fused = self._run_fused(sequences, initial_state, training, go_backwards,
                                    return_sequences)
            if fused is not None:
                return fused
        if variant == "grouped":
            return self._run_grouped(sequences, initial_state, mask, training, go_backwards,
                                     return_sequences, backward)
        if variant == "keras":
            # Keras's own loop over the cell's `call`, which applies the dropout masks.
            cell_kwargs = {"training": training} if cell._call_has_training_arg else {}

            def step(inputs, states):
                return cell(inputs, states, **cell_kwargs)

            return keras.src.backend.rnn(
                step,
                sequences,
                list(initial_state),
                go_backwards=go_backwards,
                mask=mask,
                input_length=sequences.shape[1],
                zero_output_for_mask=self.zero_output_for_mask,
                return_all_outputs=return_sequences,
            )
        if training and cell.dropout > 0:
            step_mask = cell.get_dropout_mask(sequences[:, 0, :])
            sequences = sequences * ops.expand_dims(step_mask, 1)
        recurrent_mask = (
            cell.get_recurrent_dropout_mask(initial_state[0])
            if training and cell.recurrent_dropout > 0
            else None
        )
        time_major = tf.transpose(sequences, [1, 0, 2])
        loop_options = dict(
            initial_states=initial_state,
            output_size=cell.output_size,
            mask=mask,
            go_backwards=go_backwards,
            zero_output_for_mask=self.zero_output_for_mask,
            return_all_outputs=return_sequences,
        )
        if variant == "fully_unrolled" and not self.unrolls_fully(sequences):
            variant = "unrolled"  # where it cannot run, as `_loop_choice.choose`
        if variant == "fully_unrolled" and not (backward and cell.separable):
            if not cell.separable:
                return run_recurrence(cell.step_function(recurrent_mask), inputs=time_major,
                                      unroll=ALL_STEPS, **loop_options)
            # Every step's input projected with one product: written out, a step is then
            # its recurrent product and the cell's element-wise rest.
            return run_recurrence(
                lambda inputs, states: cell.recurrent_step(inputs, states, recurrent_mask),
                inputs=cell.project_inputs(time_major),
                unroll=ALL_STEPS,
                **loop_options,
            )
        if variant in ("hand_bptt", "compiled_bptt", "fully_unrolled") and cell.separable:
            # Schedule BPTT by hand (see _loop.py). It needs the inputs of
            # all steps projected at once. Compiled by XLA, the loops run one step per
            # iteration: XLA's loop costs little per iteration, and a shorter body compiles
            # faster (a masked BiLSTM's first epoch: 3.0-3.5 s against 6.8-7.1 s unrolled).
            # Training with every step written out schedules it by hand too: TensorFlow's
            # differentiation of the written-out steps traced twice as many operations
            # (a GRU of 32 units over 22 steps: 2,566 against 1,224; 0.94 s against 0.42 s).
            kernel, bias = cell.recurrent_weights()
            compiled = variant == "compiled_bptt"
            unroll = {"compiled_bptt": 1, "fully_unrolled": ALL_STEPS}.get(variant,
                                                                           UNROLLED_STEPS)
            return run_separable_recurrence(
                cell.finish_step,
                tf.convert_to_tensor(kernel),
                None if bias is None else tf.convert_to_tensor(bias),
                inputs=cell.project_inputs(time_major),
                recurrent_mask=recurrent_mask,
                unroll=unroll,
                step_backward=cell.step_backward,
                compiled=compiled,
                **loop_options,
            )
        # Each step projects its own input, as Keras's cells do: one large
        # product over all steps writes a [time, batch, gates * units]
        # result that does not stay in cache.
        feature_major = variant == "feature_major" and cell.separable
        return run_recurrence(
            cell.feature_major_step(recurrent_mask) if feature_major
            else cell.step_function(recurrent_mask),
            inputs=time_major,
            unroll=UNROLLED_STEPS,
            feature_major=feature_major,
            **loop_options,
        )

    def _run_grouped(self, sequences, initial_state, mask, training, go_backwards,
                     return_sequences, backward):
        """The `grouped` loop: the batch's rows in `_loop_choice.loop_groups` groups, each
        run through a loop of its own (`unrolled`; in training `hand_bptt` for a separable
        cell), the results joined. The rows of a batch do not depend on each other, so the
        groups' loops are independent chains of operations, which TensorFlow's executor
        runs side by side on its inter-op threads: a recurrent step is too small for one
        operation to keep two cores busy (Keras's LSTM at batch 64 and 256 units took as
        long on two threads as on one), and the groups' steps run at once instead.

        The dropout masks are drawn once for the whole batch, as every loop draws them,
        and each group's loop reads its rows of them from the cell's cache (the masks of
        one sequence)."""
        cell = self.cell
        inner = _loop_choice.group_loop(cell, backward)
        groups = _loop_choice.loop_groups(self)
        rows = sequences.shape[0]
        if rows is not None:
            sizes = [rows // groups + (group < rows % groups) for group in range(groups)]
        else:
            rows = tf.shape(sequences)[0]
            sizes = rows // groups + tf.cast(tf.range(groups) < rows % groups, rows.dtype)

        def split(value):
            if value is None:
                return [None] * groups
            return tf.split(value, sizes, axis=0, num=groups)

        input_masks = recurrent_masks = split(None)
        if training and cell.dropout > 0:
            input_masks = split(cell.get_dropout_mask(sequences[:, 0, :]))
        if training and cell.recurrent_dropout > 0:
            recurrent_masks = split(cell.get_recurrent_dropout_mask(initial_state[0]))
        states_by_group = zip(*[split(state) for state in initial_state])
        results = []
        for part, states, part_mask, input_mask, recurrent_mask in zip(
                split(sequences), states_by_group, split(mask), input_masks, recurrent_masks):
            cell._dropout_mask, cell._recurrent_dropout_mask = input_mask, recurrent_mask
            results.append(self._run_variant(inner, part, list(states), part_mask, training,
                                             go_backwards, return_sequences, backward))
        last_outputs, outputs, final_states = zip(*results)

        def join(values):
            joined = tf.concat(values, axis=0)
            joined.set_shape(sequences.shape[:1].concatenate(joined.shape[1:]))
            return joined

        return (join(last_outputs), join(outputs),
                [join(list(group_states)) for group_states in zip(*final_states)])

    def get_config(self):
        config = super().get_config()
        del config["cell"], config["unroll"]
        # The layer is rebuilt from the cell's flat arguments, as Keras's are.
        cell_config = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell_config.pop(key, None)
        config.update(cell_config)
        config["activity_regularizer"] = keras.regularizers.serialize(
            self.activity_regularizer
        )
        if self.fused_kernel is not None:  # Keras's SimpleRNN has no such argument either
            config["use_cudnn"] = self.use_cudnn
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _gather_steps(values, steps):
    """`values[b, steps[b, t]]` for `values` `[batch, time, ...]` and int `steps` `[batch, n]`.

    One gather on the flattened steps rather than `tf.gather(..., batch_dims=1)`, whose
    gradient took about 65 ms to trace each time (a masked tagger's `fit` traced it 20
    times).
    """
    shape = tf.shape(values)
    flat = tf.reshape(values, tf.concat([[shape[0] * shape[1]], shape[2:]], 0))
    return tf.gather(flat, steps + tf.range(shape[0])[:, None] * shape[1])


def plus_bias(value, bias):
    """`value + bias`, or `value` where there is no bias (None)."""
    return value if bias is None else value + bias


def _forward_to_cell(name):
    return property(lambda self: getattr(self.cell, name), doc=f"The cell's `{name}`.")


# The layers expose their cell's arguments as attributes, as Keras's layers do.
for _name in (
    "units",
    "activation",
    "use_bias",
    "kernel_initializer",
    "recurrent_initializer",
    "bias_initializer",
    "kernel_regularizer",
    "recurrent_regularizer",
    "bias_regularizer",
    "kernel_constraint",
    "recurrent_constraint",
    "bias_constraint",
    "dropout",
    "recurrent_dropout",
    "seed",
):
    setattr(RecurrentLayer, _name, _forward_to_cell(_name))


def reset_states(model):
    """Resets every stateful recurrent layer in `model` to zero states.

    Keras 3 has no model-level `reset_states()`; this walks the model, nested
    models and wrappers (`Bidirectional`, `TimeDistributed`) included, and
    resets each stateful layer it finds.

    Args:
        model: a `keras.Model` or a single layer.

    Returns:
        The number of stateful layers reset.
    """
    count = 0
    pending = [model]
    seen = set()
    while pending:
        layer = pending.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        if isinstance(layer, keras.layers.Bidirectional):
            pending.extend([layer.forward_layer, layer.backward_layer])
            continue
        if getattr(layer, "stateful", False) and hasattr(layer, "reset_state"):
            layer.reset_state()
            count += 1
        pending.extend(getattr(layer, "layers", None) or [])
        wrapped = getattr(layer, "layer", None)
        if isinstance(wrapped, keras.layers.Layer):
            pending.append(wrapped)
    return count
