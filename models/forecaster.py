"""`Forecaster`: a window of past rows in, the next `horizon` rows of the targets out;
`AutoForecaster`: a neural and a least-squares linear `Forecaster`, the better one kept."""

import math
import numbers

import keras
import numpy as np
import tensorflow as tf

from seqlab.layers import GRU, LSTM, PositionalEncoding, SimpleRNN, TransformerEncoderLayer
from seqlab.layers._frozen import KeepsFrozenLayers
from seqlab.models._training import ForgetsItsStepsOnANewChoice, ScalesItsLoss, TracesTrainingOnce

RECURRENT_LAYERS = {"lstm": LSTM, "gru": GRU, "rnn": SimpleRNN}
KINDS = (*RECURRENT_LAYERS, "transformer", "linear")


def recurrent_stack(kind, units, layers, dropout, seed):
    """`layers` recurrent layers of `kind` (a key of `RECURRENT_LAYERS`), each but the last
    returning its sequence, named `<kind>_<index>` and seeded `seed + index`: a window encoder
    (`Forecaster`, `GlobalForecaster`)."""
    return [
        RECURRENT_LAYERS[kind](
            units,
            return_sequences=index < layers - 1,
            dropout=dropout,
            seed=None if seed is None else seed + index,
            name=f"{kind}_{index}",
        )
        for index in range(layers)
    ]
NORMALIZATIONS = ("window", "shift", "none")
# Added to the window's variance: a flat window is not blown up (inputs are standardised).
WINDOW_VARIANCE_FLOOR = 1e-2
# The most weights per output `fit_least_squares` solves for (lookback x n_features + the bias):
# its normal equations are a float64 matrix of that size squared (4097: 134 MB, a few seconds).
MAX_LEAST_SQUARES_COLUMNS = 4097


class LeastSquaresTooWide(ValueError):
    """A linear forecaster with more weights per output than `fit_least_squares` solves for.

    Attributes:
        weights: lookback x n_features + 1 (the bias).
        limit: `MAX_LEAST_SQUARES_COLUMNS` when it was raised.
    """

    def __init__(self, weights, limit, message):
        super().__init__(message)
        self.weights, self.limit = weights, limit


def _batches(data):
    """`data` as an iterable of `(windows, targets)` batches: one pair of arrays becomes one
    batch."""
    if isinstance(data, tuple) and len(data) == 2 and hasattr(data[0], "shape"):
        return [data]
    return data


def float_windows(windows, dtype):
    """`windows` cast to `dtype` where they hold whole numbers (their statistics are
    fractions: the normalisation failed on int64 windows), else as they are."""
    if keras.backend.is_float_dtype(windows.dtype):
        return windows
    return keras.ops.cast(windows, dtype)


def _check_finite(windows, targets, batch, caller):
    """Refuses a batch holding a NaN or infinite value, naming it."""
    for name, values in (("windows", windows), ("targets", targets)):
        values = np.asarray(values, dtype="float64")
        bad = int(np.size(values) - np.count_nonzero(np.isfinite(values)))
        if bad:
            raise ValueError(f"{caller} needs finite windows and targets. Received: {bad} NaN "
                             f"or infinite values in the {name} of batch {batch}")


def checked_window(window, shape, message):
    """`window` if its sizes after the batch axis are `shape`, else an `InvalidArgumentError`
    with `message` when the graph runs; with that static shape.

    The refusing branch returns zeros of the expected shape after its assertion: TensorFlow's
    graph optimisations may run the forecast's operations (a reshape to the lookback) beside
    the assertion rather than after it, and these must not fail first with another message.
    """
    def refuse():
        check = tf.debugging.assert_equal(tf.shape(window)[1:1 + len(shape)],
                                          tf.constant(shape), message=message)
        with tf.control_dependencies([check]):
            return tf.zeros(tf.concat([tf.shape(window)[:1], shape], 0), window.dtype)

    fits = tf.reduce_all(tf.equal(tf.shape(window)[1:1 + len(shape)], tf.constant(shape)))
    window = tf.cond(fits, lambda: tf.identity(window), refuse)
    window.set_shape([None, *shape])
    return window


@keras.saving.register_keras_serializable(package="seqlab")
class Forecaster(KeepsFrozenLayers, ScalesItsLoss, TracesTrainingOnce, keras.Model):
    """Stacked recurrent or Transformer layers and a dense head over one window.

    `[batch, lookback, n_features] -> [batch, horizon, n_targets]`. A recurrent forecaster
    reads the window with `layers` stacked seqlab `LSTM`, `GRU` or `SimpleRNN` layers and
    forecasts from the last one's final state; a Transformer forecaster projects each row to
    `units`, adds sinusoidal positions, runs `layers` encoder layers and forecasts from every
    position (the window has a fixed length). The model works in whatever units it is fed:
    the pipeline scales inputs and targets with the training split's scaler.

    With `normalization="window"` (reversible instance normalisation, as RevIN / N-BEATS):
    each window is shifted by its last row and divided by its standard deviation over time,
    per feature, before the layers, and the forecast is mapped back with the targets' shift and
    scale. The layers then learn the change from the last value (zero output is the naive
    forecast), so a forecast can leave the range of the training rows: a trending series does
    not defeat the model. `"shift"` only subtracts the last row (and adds it back): the model
    learns the change in the series' own units. `"none"` feeds the window as it is (seqlab
    0.1.0).

    Args:
        lookback: rows per window.
        n_features: input columns per row.
        horizon: future rows to forecast.
        n_targets: columns to forecast.
        kind: "lstm", "gru", "rnn", "transformer" or "linear" (one dense layer over the
            flattened window; `fit_least_squares` fits it in closed form).
        units: units per recurrent layer, or the Transformer's model width.
        layers: stacked recurrent or encoder layers.
        dropout: dropout rate of the layers' inputs.
        num_heads: Transformer attention heads.
        ff_dim: Transformer feed-forward width.
        seed: seed of the recurrent layers' dropout masks.
        normalization: "window", "shift" or "none" (see above).
        target_features: for each target, its column among the input features (`None` for a
            target that is not an input: its forecast is not shifted or scaled); default
            `range(n_targets)`, the targets are the first features.

    Example:

    ```python
    model = Forecaster(lookback=24, n_features=1, horizon=1, n_targets=1, units=16)
    model.compile(optimizer="adam", loss="mse")
    model.fit(windows, targets, epochs=2)  # float32 [n, 24, 1] and [n, 1, 1]
    ```
    """

    def __init__(self, lookback, n_features, horizon=1, n_targets=1, kind="lstm", units=32,
                 layers=1, dropout=0.0, num_heads=4, ff_dim=64, seed=None,
                 normalization="none", target_features=None, **kwargs):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}. Received: kind={kind!r}")
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {', '.join(NORMALIZATIONS)}. "
                             f"Received: normalization={normalization!r}")
        sizes = dict(lookback=lookback, n_features=n_features, horizon=horizon,
                     n_targets=n_targets, units=units, layers=layers, num_heads=num_heads,
                     ff_dim=ff_dim)
        for name, value in sizes.items():
            # A float or a string failed later, in a shape or a comparison of Keras's.
            whole = isinstance(value, numbers.Integral) or (
                isinstance(value, float) and value.is_integer())
            if isinstance(value, bool) or not whole or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1. Received: "
                                 f"{name}={value!r}")
        lookback, n_features, horizon, n_targets, units, layers, num_heads, ff_dim = (
            int(value) for value in sizes.values())
        if target_features is None:
            target_features = list(range(n_targets))
        target_features = [None if index is None else int(index) for index in target_features]
        if len(target_features) != n_targets or any(
                index is not None and not 0 <= index < n_features for index in target_features):
            raise ValueError(f"target_features must name one input feature (or None) per "
                             f"target. Received: target_features={target_features} for "
                             f"n_targets={n_targets}, n_features={n_features}")
        kwargs.setdefault("name", f"forecast_{kind}")
        # The window's statistics and the forecast in its units are float32 under a
        # mixed-precision policy too (float16 ends at 65504); the inner layers follow the
        # policy.
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.lookback, self.n_features = lookback, n_features
        self.horizon, self.n_targets = horizon, n_targets
        self.kind, self.units, self.num_layers = kind, units, layers
        self.dropout, self.num_heads, self.ff_dim, self.seed = dropout, num_heads, ff_dim, seed
        self.normalization, self.target_features = normalization, target_features
        # Sublayer names are those of seqlab 0.1.0's functional forecaster, so that the weights
        # of runs it wrote load by name.
        if kind == "transformer":
            self.input_projection = keras.layers.Dense(units, name="input_projection")
            self.positions = PositionalEncoding(name="positions")
            self.encoders = [
                TransformerEncoderLayer(num_heads=num_heads, ff_dim=ff_dim, dropout=dropout,
                                        name=f"encoder_{index}")
                for index in range(layers)
            ]
            self.flatten = keras.layers.Flatten(name="positions_flat")
        elif kind == "linear":
            self.flatten = keras.layers.Flatten(name="window_flat", dtype=self.dtype_policy)
        else:
            self.recurrent = recurrent_stack(kind, units, layers, dropout, seed)
        self.head = keras.layers.Dense(horizon * n_targets, name="head",
                                       dtype=self.dtype_policy)
        self.reshape = keras.layers.Reshape((horizon, n_targets), name="forecast",
                                            dtype=self.dtype_policy)

    def build(self, input_shape=None):
        # Every size is known from the constructor: build the weights with one call on zeros,
        # so that the model has them before `fit` (BackupAndRestore needs them) and on load.
        self.call(keras.ops.zeros((1, self.lookback, self.n_features)))

    def _window_statistics(self, window):
        """Per window and feature: the last row `[batch, 1, n_features]` and the standard
        deviation over time (floored; 1 with "shift") of the same shape."""
        level = window[:, -1:, :]
        if self.normalization == "shift":
            return level, keras.ops.ones_like(level)
        variance = keras.ops.var(window, axis=1, keepdims=True)
        return level, keras.ops.sqrt(variance + WINDOW_VARIANCE_FLOOR)

    def _normalize(self, window):
        """`(what the layers read, target level, target scale)`: the forecast is
        `layers(read) * scale + level`, `[batch, 1, n_targets]` each (0 and 1 without
        normalisation)."""
        if self.normalization == "none":
            zeros = keras.ops.zeros_like(window[:, :1, :1])
            return window, keras.ops.repeat(zeros, self.n_targets, axis=-1), 1.0 + zeros
        level, scale = self._window_statistics(window)
        return ((window - level) / scale, self._target_statistics(level),
                self._target_statistics(scale - 1.0) + 1.0)

    def _target_statistics(self, statistics):
        """The window statistics of each target's input column: `[batch, 1, n_targets]`."""
        columns = [
            statistics[:, :, index:index + 1] if index is not None
            else keras.ops.zeros_like(statistics[:, :, :1])
            for index in self.target_features
        ]
        return keras.ops.concatenate(columns, axis=-1)

    def call(self, window, training=False):
        expected = (f"Forecaster expects windows of shape [batch, lookback, n_features] = "
                    f"[batch, {self.lookback}, {self.n_features}]")
        if len(window.shape) != 3:  # a 2-D window failed unpacking its shape
            raise ValueError(f"{expected}. Received: {tuple(window.shape)} (rank "
                             f"{len(window.shape)}; one window per row, a feature axis last)")
        steps, features = window.shape[1:3]
        if (steps is not None and steps != self.lookback) or (
                features is not None and features != self.n_features):
            # A recurrent network would read any length, a forecast of another question.
            raise ValueError(f"{expected}. Received: {tuple(window.shape)}")
        window = float_windows(window, self.compute_dtype)
        if steps is None or features is None:
            # Traced for any length (Keras relaxes the shapes of `predict` after a first call):
            # checked when it runs, and traced on from here with the shape it must have. The
            # check is a branch whose output the forecast reads, so that no operation of the
            # forecast (a reshape to the lookback) runs before it.
            window = checked_window(window, [self.lookback, self.n_features], expected)
        if self.normalization == "none":
            return self._forecast(window, training)
        read, level, scale = self._normalize(window)
        return self._forecast(read, training) * scale + level

    def check_least_squares_width(self):
        """The weights per output of the least-squares fit (lookback x n_features + the bias),
        known before any window is built.

        Raises:
            LeastSquaresTooWide: more than `MAX_LEAST_SQUARES_COLUMNS`.
        """
        size = self.lookback * self.n_features + 1
        if size > MAX_LEAST_SQUARES_COLUMNS:
            raise LeastSquaresTooWide(size, MAX_LEAST_SQUARES_COLUMNS,
                f"fit_least_squares solves for at most {MAX_LEAST_SQUARES_COLUMNS} weights per "
                f"output. Received: lookback={self.lookback} x n_features={self.n_features} "
                f"+ 1 bias = {size}")
        return size

    def fit_least_squares(self, data):
        """Sets a linear forecaster's dense layer to the least-squares fit on `data`.

        Minimises `sum || head(flatten(read)) - (target - level) / scale ||^2` over the
        windows in closed form (`read`, `level`, `scale` as `call` normalises; with "none" or
        "shift" exactly the squared forecast error), the bias included: the normal equations
        are summed batch by batch in float64 and solved with `numpy.linalg.lstsq`, whose
        minimum-norm answer also covers columns that are always zero (the last row after a
        shift) or repeat each other.

        Args:
            data: an iterable of `(windows [b, lookback, n_features], targets [b, horizon,
                n_targets])` batches (a batched `tf.data.Dataset` will do), or one such pair
                of arrays.

        Returns:
            The number of windows fitted on.

        Raises:
            LeastSquaresTooWide: more than `MAX_LEAST_SQUARES_COLUMNS` weights per output
                (raised before `data` is read).
            ValueError: the forecaster is not linear, or `data` holds no window.
        """
        if self.kind != "linear":
            raise ValueError(f"fit_least_squares fits a linear forecaster only. Received: "
                             f"kind={self.kind!r}")
        size = self.check_least_squares_width()
        if not self.head.built:
            self.build()
        gram = np.zeros((size, size))
        moments = np.zeros((size, self.horizon * self.n_targets))
        count = 0
        for batch, (windows, targets) in enumerate(_batches(data)):
            # LAPACK printed its own complaints, then failed to converge, on one NaN.
            _check_finite(windows, targets, batch, "fit_least_squares")
            read, level, scale = (np.asarray(part, dtype="float64") for part in
                                  self._normalize(keras.ops.convert_to_tensor(windows)))
            design = np.concatenate(
                [read.reshape(len(read), -1), np.ones((len(read), 1))], axis=1)
            goal = ((np.asarray(targets, dtype="float64") - level) / scale).reshape(
                len(read), -1)
            gram += design.T @ design
            moments += design.T @ goal
            count += len(read)
        if not count:
            raise ValueError("fit_least_squares needs at least one window. Received none.")
        solution = np.linalg.lstsq(gram, moments, rcond=None)[0]
        self.head.set_weights([solution[:-1].astype("float32"), solution[-1].astype("float32")])
        return count

    def _forecast(self, window, training):
        hidden = window
        if self.kind == "transformer":
            hidden = self.positions(self.input_projection(hidden))
            for encoder in self.encoders:
                hidden = encoder(hidden, training=training)
            hidden = self.flatten(hidden)
        elif self.kind == "linear":
            hidden = self.flatten(hidden)
        else:
            for layer in self.recurrent:
                hidden = layer(hidden, training=training)
        return self.reshape(self.head(hidden))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.horizon, self.n_targets)

    def get_config(self):
        return {
            **super().get_config(),
            "lookback": self.lookback,
            "n_features": self.n_features,
            "horizon": self.horizon,
            "n_targets": self.n_targets,
            "kind": self.kind,
            "units": self.units,
            "layers": self.num_layers,
            "dropout": self.dropout,
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "seed": self.seed,
            "normalization": self.normalization,
            "target_features": self.target_features,
        }


MEMBERS = ("neural", "linear")


@keras.saving.register_keras_serializable(package="seqlab")
class AutoForecaster(KeepsFrozenLayers, ForgetsItsStepsOnANewChoice, ScalesItsLoss,
                     TracesTrainingOnce, keras.Model):
    """Two forecasters over the same windows; it forecasts with the one that did better on
    held-out windows.

    `neural` is a `Forecaster` of `kind` (default "gru") with the given sizes and
    normalisation, trained by `fit` as usual. `linear` is a linear `Forecaster` over the
    shifted window (`normalization="shift"`: the next values minus the last one, a linear
    autoregression on the window) whose weights come from `fit_linear` (least squares, closed
    form) and are not trained (`linear.trainable` is False). `choose(data)` scores both on
    held-out windows by mean squared error and sets `choice` to the better one ("linear" on a
    tie); until then (`choice=None`) the model is its neural member, so that `fit` trains it.
    The choice is part of the config: a saved model forecasts with the member it chose.

    Why: on short or trending series a network learns the seasonal profile from few windows,
    and a linear autoregression fitted in closed form can beat it (and the classical
    baselines); on long noisy ones the network wins. The validation split decides.

    Args:
        kind: the neural member's kind ("lstm", "gru", "rnn" or "transformer").
        choice: None, "neural" or "linear".
        All others: as `Forecaster`'s (the linear member shares lookback, n_features,
            horizon, n_targets and target_features).

    Example:

    ```python
    model = AutoForecaster(lookback=24, n_features=1, units=16)
    model.compile(optimizer="adam", loss="mse")
    model.fit_linear((train_windows, train_targets))
    model.fit(train_windows, train_targets, epochs=20)
    model.choose((val_windows, val_targets))  # {"neural": ..., "linear": ...}
    ```
    """

    def __init__(self, lookback, n_features, horizon=1, n_targets=1, kind="gru", units=32,
                 layers=1, dropout=0.0, num_heads=4, ff_dim=64, seed=None,
                 normalization="window", target_features=None, choice=None, **kwargs):
        if kind == "linear" or kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(RECURRENT_LAYERS)}, transformer "
                             f"(the linear member is always there). Received: kind={kind!r}")
        if choice not in (None, *MEMBERS):
            raise ValueError(f"choice must be None or one of {', '.join(MEMBERS)}. "
                             f"Received: choice={choice!r}")
        kwargs.setdefault("name", f"forecast_auto_{kind}")
        kwargs.setdefault("dtype", "float32")  # as its members' (see Forecaster)
        super().__init__(**kwargs)
        shared = dict(lookback=lookback, n_features=n_features, horizon=horizon,
                      n_targets=n_targets, target_features=target_features)
        self.neural = Forecaster(kind=kind, units=units, layers=layers, dropout=dropout,
                                 num_heads=num_heads, ff_dim=ff_dim, seed=seed,
                                 normalization=normalization, name="neural", **shared)
        self.linear = Forecaster(kind="linear", normalization="shift", name="linear", **shared)
        self.linear.trainable = False
        self.choice = choice
        self.member_settings = dict(kind=kind, units=units, layers=layers, dropout=dropout,
                                    num_heads=num_heads, ff_dim=ff_dim, seed=seed,
                                    normalization=normalization)
        self.lookback, self.n_features = lookback, n_features
        self.horizon, self.n_targets = horizon, n_targets
        self.kind = kind

    def build(self, input_shape=None):
        for member in (self.neural, self.linear):
            member.build(input_shape)

    def chosen_member(self):
        """The member the model forecasts with (the neural one before `choose`).

        A method, not a property: Keras's `.keras` saving walks the attributes that hold
        layers, and one that names a different member after `choose` would file that
        member's weights under its own path, so that `load_weights` into a model that has
        not chosen yet would read them into the wrong member.
        """
        return self.linear if self.choice == "linear" else self.neural

    def call(self, window, training=False):
        return self.chosen_member()(window, training=training)

    def fit(self, *args, **kwargs):
        """Trains the neural member, whatever the choice (the linear one is fitted by
        `fit_linear`), and reports its figures, validation's included; the choice stays. With
        "linear" chosen it failed with Keras's "No gradients provided for any variable"."""
        choice, self.choice = self.choice, None
        try:
            return super().fit(*args, **kwargs)
        finally:
            self.choice = choice

    def fit_linear(self, data):
        """Fits the linear member by least squares (`Forecaster.fit_least_squares`)."""
        return self.linear.fit_least_squares(data)

    def member_errors(self, data):
        """Each member's mean squared error over `data` (batches of `(windows, targets)`, or
        one pair of arrays): `{"neural": float, "linear": float}`."""
        sums, count = dict.fromkeys(MEMBERS, 0.0), 0
        for batch, (windows, targets) in enumerate(_batches(data)):
            _check_finite(windows, targets, batch, "member_errors")
            targets = np.asarray(targets, dtype="float64")
            for name in MEMBERS:
                forecast = np.asarray(getattr(self, name)(windows), dtype="float64")
                sums[name] += float(np.sum((forecast - targets) ** 2))
            count += targets.size
        if not count:
            raise ValueError("member_errors needs at least one window. Received none.")
        return {name: total / count for name, total in sums.items()}

    def choose(self, data):
        """Sets `choice` to the member with the lower mean squared error over `data`; a member
        whose forecasts are not finite (a diverged network: NaN error) is never chosen.

        Returns:
            Both members' errors (`member_errors`).

        Raises:
            ValueError: neither member's error is finite, or `data` holds a NaN or infinite
                value.
        """
        errors = self.member_errors(data)
        ranked = {name: error if math.isfinite(error) else math.inf
                  for name, error in errors.items()}
        if min(ranked.values()) == math.inf:
            raise ValueError(f"choose found neither member's forecasts finite. Received: "
                             f"errors {errors}")
        self.choice = "linear" if ranked["linear"] <= ranked["neural"] else "neural"
        return errors

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.horizon, self.n_targets)

    def get_config(self):
        return {
            **super().get_config(),
            "lookback": self.lookback,
            "n_features": self.n_features,
            "horizon": self.horizon,
            "n_targets": self.n_targets,
            **self.member_settings,
            "target_features": self.neural.target_features,
            "choice": self.choice,
        }
