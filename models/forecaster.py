"""`Forecaster`: a window of past rows in, the next `horizon` rows of the targets out."""

import keras

from seqlab.layers import GRU, LSTM, PositionalEncoding, SimpleRNN, TransformerEncoderLayer

RECURRENT_LAYERS = {"lstm": LSTM, "gru": GRU, "rnn": SimpleRNN}
KINDS = (*RECURRENT_LAYERS, "transformer", "linear")
NORMALIZATIONS = ("window", "none")
# Added to the window's variance: a flat window is not blown up (inputs are standardised).
WINDOW_VARIANCE_FLOOR = 1e-2


@keras.saving.register_keras_serializable(package="seqlab")
class Forecaster(keras.Model):
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
    not defeat the model. `"none"` feeds the window as it is (seqlab 0.1.0).

    Args:
        lookback: rows per window.
        n_features: input columns per row.
        horizon: future rows to forecast.
        n_targets: columns to forecast.
        kind: "lstm", "gru", "rnn" or "transformer".
        units: units per recurrent layer, or the Transformer's model width.
        layers: stacked recurrent or encoder layers.
        dropout: dropout rate of the layers' inputs.
        num_heads: Transformer attention heads.
        ff_dim: Transformer feed-forward width.
        seed: seed of the recurrent layers' dropout masks.
        normalization: "window" or "none" (see above).
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
        if target_features is None:
            target_features = list(range(n_targets))
        target_features = [None if index is None else int(index) for index in target_features]
        if len(target_features) != n_targets or any(
                index is not None and not 0 <= index < n_features for index in target_features):
            raise ValueError(f"target_features must name one input feature (or None) per "
                             f"target. Received: target_features={target_features} for "
                             f"n_targets={n_targets}, n_features={n_features}")
        for name, value in (("lookback", lookback), ("n_features", n_features),
                            ("horizon", horizon), ("n_targets", n_targets), ("units", units),
                            ("layers", layers), ("num_heads", num_heads), ("ff_dim", ff_dim)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1. Received: {name}={value}")
        kwargs.setdefault("name", f"forecast_{kind}")
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
            self.flatten = keras.layers.Flatten(name="window_flat")
        else:
            self.recurrent = [
                RECURRENT_LAYERS[kind](
                    units,
                    return_sequences=index < layers - 1,
                    dropout=dropout,
                    seed=None if seed is None else seed + index,
                    name=f"{kind}_{index}",
                )
                for index in range(layers)
            ]
        self.head = keras.layers.Dense(horizon * n_targets, name="head")
        self.reshape = keras.layers.Reshape((horizon, n_targets), name="forecast")

    def build(self, input_shape=None):
        # Every size is known from the constructor: build the weights with one call on zeros,
        # so that the model has them before `fit` (BackupAndRestore needs them) and on load.
        self.call(keras.ops.zeros((1, self.lookback, self.n_features)))

    def _window_statistics(self, window):
        """Per window and feature: the last row `[batch, 1, n_features]` and the standard
        deviation over time (floored) of the same shape."""
        level = window[:, -1:, :]
        variance = keras.ops.var(window, axis=1, keepdims=True)
        return level, keras.ops.sqrt(variance + WINDOW_VARIANCE_FLOOR)

    def _target_statistics(self, statistics):
        """The window statistics of each target's input column: `[batch, 1, n_targets]`."""
        columns = [
            statistics[:, :, index:index + 1] if index is not None
            else keras.ops.zeros_like(statistics[:, :, :1])
            for index in self.target_features
        ]
        return keras.ops.concatenate(columns, axis=-1)

    def call(self, window, training=False):
        if self.normalization == "window":
            level, scale = self._window_statistics(window)
            change = self._forecast((window - level) / scale, training)
            target_scale = self._target_statistics(scale - 1.0) + 1.0
            return change * target_scale + self._target_statistics(level)
        return self._forecast(window, training)

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
