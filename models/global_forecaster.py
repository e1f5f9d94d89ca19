"""`GlobalForecaster`: one network for many series, each window normalised on its own; its
training windows drawn across a panel by `panel_training_dataset`, and `last_windows` to
forecast from the end of every series.

Univariate, direct multi-step: `[batch, lookback] -> [batch, horizon]`. As N-BEATS and DeepAR
do, the network is global (it learns from windows of every series of a set) and scale-free:
every window is shifted by its last value and divided by its spread inside `call`, and the
forecast mapped back, so a series in the thousands and one in single digits share one set of
weights.

How a user trains it (the loss is computed on the normalised scale, see `compute_loss`):

```python
settings = default_settings(horizon=48, season=24, lengths=[len(s) for s in series])
lookback = settings["lookback"]
series = [s for s in series if len(s) >= minimum_series_length(lookback, 48)]
keras.utils.set_random_seed(0)                           # the initial weights
model = GlobalForecaster(lookback, 48, kind=settings["kind"], units=settings["units"],
                         layers=settings["layers"], blocks=settings["blocks"], seed=0)
model.compile(optimizer=keras.optimizers.Adam(settings["learning_rate"], clipnorm=1.0),
              loss="mae")
dataset = panel_training_dataset(series, lookback, 48, settings["batch_size"], seed=0)
model.fit(dataset, steps_per_epoch=250, epochs=settings["steps"] // 250, shuffle=False)
forecasts = model.predict(last_windows(series, lookback))   # [n_series, 48], original units
```

The dataset is infinite: `steps_per_epoch` is required. `shuffle=False` only silences Keras's
warning (the draws are already random). Series shorter than `minimum_series_length` are
refused by the dataset; forecast them another way (`last_windows` itself pads any length).

Imports `seqlab.layers` (through `Forecaster`'s recurrent stack) and TensorFlow's tf.data (the
panel's windows are gathered in the graph); no pipeline code.
"""

import keras
import numpy as np
import tensorflow as tf

from seqlab.layers._frozen import KeepsFrozenLayers
from seqlab.models._training import ScalesItsLoss, TracesTrainingOnce
from seqlab.models.forecaster import checked_window, float_windows, recurrent_stack

KINDS = ("nbeats", "gru", "lstm")
NORMALIZATIONS = ("shift", "level")
# With "shift", the spread (standard deviation over the window) is floored at this fraction
# of the window's level: a flat window is not blown up into noise, and the floor scales with
# the series, so invariance under scaling is kept.
RELATIVE_SPREAD_FLOOR = 1e-2
# Networks saved before `scale_floor` existed floored every window's scale at this many units
# of the series; their configs have no `scale_floor`, and `from_config` gives them this one so
# that they forecast as they did. New networks have none (0.0): the floor made a series of
# values around 1e-9 read as nearly flat windows and an all-zero window forecast +-2e-9.
LEGACY_SCALE_FLOOR = 1e-6


def _window_statistics(windows, normalization, floor=0.0):
    """`(shift, scale, has_scale)` per window, `[batch, 1]` each: the network reads
    `(window - shift) / scale` and its output is mapped back by `* scale + shift`.

    The scale is the window's spread or level (below), at least `floor`. A window without a
    scale (every value 0: level and spread 0) has `has_scale` False and scale 1: it reads as
    zeros, forecasts its shift (0, the naive forecast) and adds nothing to the loss.
    """
    level = keras.ops.mean(keras.ops.abs(windows), axis=1, keepdims=True)
    if normalization == "level":
        shift, scale = keras.ops.zeros_like(level), level
    else:
        spread = keras.ops.std(windows, axis=1, keepdims=True)
        shift, scale = windows[:, -1:], keras.ops.maximum(spread, RELATIVE_SPREAD_FLOOR * level)
    scale = keras.ops.maximum(scale, floor)
    has_scale = scale > 0
    return shift, keras.ops.where(has_scale, scale, keras.ops.ones_like(scale)), has_scale


@keras.saving.register_keras_serializable(package="seqlab")
class GlobalForecaster(KeepsFrozenLayers, ScalesItsLoss, TracesTrainingOnce, keras.Model):
    """A global univariate forecaster: a window of one series in, its next `horizon` values out.

    `[batch, lookback] float32 -> [batch, horizon] float32`, in the series' own units.

    Kinds:
    - "nbeats": the generic N-BEATS stack (Oreshkin et al. 2020, ICLR). `blocks` blocks, each
      `layers` ReLU `Dense(units)` layers, then a linear backcast head (`lookback` values) and
      a linear forecast head (`horizon` values). Doubly residual: each block reads the previous
      block's input minus its backcast, and the forecast is the sum of the blocks' forecasts
      (the last block has no backcast head: nothing would read it).
    - "gru" / "lstm": `layers` stacked seqlab `GRU` / `LSTM` layers of `units` read the window
      as `[batch, lookback, 1]`; a `Dense(horizon)` head forecasts from the last state.

    Per-window normalisation (inside `call`, so that it travels with the saved model):
    - "shift" (the default): the window minus its last value, divided by its standard
      deviation over the window (floored at `RELATIVE_SPREAD_FLOOR` x the window's level, the
      mean of its absolute values); the forecast is mapped back by the
      same shift and scale, so a zero output is the naive forecast. The normalised error is
      then a multiple of the window's own variation, what MASE weighs.
    - "level": the window is divided by its level and the forecast multiplied by it. The
      normalised error is a percentage of the series' level, what sMAPE weighs.
    Both: a window scaled by `c > 0` gives its forecast scaled by `c`, whatever the series'
    units (no absolute floor: values around 1e-9 are read as values around 1 are); a constant
    window gives a finite forecast, and an all-zero window forecasts zeros and adds nothing to
    the loss (it has no scale to read it on).

    Why "shift" is the default: measured on M4 hourly and weekly (benchmarks/
    global_forecaster.py), the same N-BEATS network trained with "level" had a slightly lower
    sMAPE but a much worse MASE (hourly, lookback 4 horizons: sMAPE 11.23 vs 11.64, MASE 1.43
    vs 1.08, seasonal naive 13.91 / 1.19): dividing by the level makes the smooth series with
    a high level and little movement cheap to get wrong, and MASE punishes exactly those.
    "shift" beat seasonal naive on both figures.

    The loss: `compute_loss` applies the compiled loss to the targets and forecasts on the
    window's normalised scale (`(y - shift) / scale`), not in the series' units; otherwise
    the largest series would dominate the gradient. With `loss="mae"` (what we use) this is
    the absolute error in units of the window's spread ("shift"; a MASE-like error whose
    scale is known at forecast time) or of its level ("level"; a MAPE-like error close to
    sMAPE), with a gradient that stays bounded where sMAPE's does not (near-zero values).
    Compiled metrics still see the original units. `normalized_targets` gives the same
    normalised values for a loss computed outside `fit`.

    Args:
        lookback: values per window (left-padded windows of short series included).
        horizon: values forecast.
        kind: "nbeats", "gru" or "lstm".
        units: width of the N-BEATS fully connected layers, or the recurrent units.
        layers: fully connected layers per N-BEATS block, or stacked recurrent layers.
        blocks: N-BEATS blocks (ignored by the recurrent kinds).
        dropout: dropout after each N-BEATS hidden layer, or on the recurrent inputs.
        seed: seed of the dropout masks.
        normalization: "shift" or "level" (see above).
        scale_floor: the least scale a window is read on, in the series' units (default 0.0:
            none). Only networks saved before this argument existed use one
            (`LEGACY_SCALE_FLOOR`, given by `from_config`).

    Example:

    ```python
    model = GlobalForecaster(lookback=8, horizon=4, units=16, layers=2, blocks=2)
    model.compile(optimizer="adam", loss="mae")
    model.fit(panel_training_dataset(series, 8, 4, batch_size=32, seed=0),
              steps_per_epoch=50, epochs=2)
    ```
    """

    def __init__(self, lookback, horizon, kind="nbeats", units=256, layers=4, blocks=3,
                 dropout=0.0, seed=None, normalization="shift", scale_floor=0.0, **kwargs):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}. Received: kind={kind!r}")
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {', '.join(NORMALIZATIONS)}. "
                             f"Received: normalization={normalization!r}")
        for name, value in (("lookback", lookback), ("horizon", horizon), ("units", units),
                            ("layers", layers), ("blocks", blocks)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1. Received: {name}={value}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1). Received: dropout={dropout}")
        if not 0.0 <= scale_floor < float("inf"):
            raise ValueError(f"scale_floor must be finite and at least 0. "
                             f"Received: scale_floor={scale_floor}")
        kwargs.setdefault("name", f"global_forecast_{kind}")
        # The windows' statistics, the residuals and the forecast in the series' units are
        # float32 under a mixed-precision policy too (float16 ends at 65504); the hidden
        # layers follow the policy.
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.lookback, self.horizon, self.kind = lookback, horizon, kind
        self.units, self.num_layers, self.blocks = units, layers, blocks
        self.dropout, self.seed, self.normalization = dropout, seed, normalization
        self.scale_floor = float(scale_floor)
        if kind == "nbeats":
            self.hidden = [
                [keras.layers.Dense(units, activation="relu", name=f"block_{block}_dense_{index}")
                 for index in range(layers)]
                for block in range(blocks)
            ]
            self.dropouts = [
                keras.layers.Dropout(dropout, seed=None if seed is None else seed + block,
                                     name=f"block_{block}_dropout")
                for block in range(blocks)
            ] if dropout else []
            # The last block's backcast would feed nothing: it is left out (no dead weights).
            self.backcasts = [keras.layers.Dense(lookback, name=f"block_{block}_backcast",
                                                 dtype=self.dtype_policy)
                              for block in range(blocks - 1)]
            self.forecasts = [keras.layers.Dense(horizon, name=f"block_{block}_forecast",
                                                 dtype=self.dtype_policy)
                              for block in range(blocks)]
        else:
            self.recurrent = recurrent_stack(kind, units, layers, dropout, seed)
            self.head = keras.layers.Dense(horizon, name="head", dtype=self.dtype_policy)

    def build(self, input_shape=None):
        # Every size is known from the constructor: one call on zeros builds every weight.
        self.call(keras.ops.zeros((1, self.lookback)))

    def window_statistics(self, windows):
        """`(shift, scale)`, `[batch, 1]` each: the network reads `(windows - shift) / scale`
        and forecasts `output * scale + shift` (an all-zero window: scale 1, forecast 0)."""
        shift, scale, _ = self._statistics(keras.ops.convert_to_tensor(windows, "float32"))
        return shift, scale

    def _statistics(self, windows):
        return _window_statistics(windows, self.normalization, self.scale_floor)

    def normalized_targets(self, windows, targets):
        """`targets` (any values aligned with `windows`' rows, e.g. the actuals or the
        forecasts) on the normalised scale of their windows: `(targets - shift) / scale`
        (0 for an all-zero window, which has no scale)."""
        windows = keras.ops.convert_to_tensor(windows, "float32")
        return self._normalized(windows, keras.ops.convert_to_tensor(targets, "float32"))

    def _normalized(self, windows, values):
        shift, scale, has_scale = self._statistics(windows)
        return keras.ops.where(has_scale, (values - shift) / scale,
                               keras.ops.zeros_like(values))

    def call(self, windows, training=False):
        expected = (f"GlobalForecaster expects windows of shape [batch, lookback] = "
                    f"[batch, {self.lookback}]")
        if len(windows.shape) != 2:
            raise ValueError(f"{expected}. Received: {tuple(windows.shape)} (rank "
                             f"{len(windows.shape)}; one window per row)")
        steps = windows.shape[1]
        if steps is not None and steps != self.lookback:
            # A recurrent network would read any length, a forecast of another question.
            raise ValueError(f"{expected}. Received: {tuple(windows.shape)}")
        windows = float_windows(windows, self.compute_dtype)
        if steps is None:  # traced for any length: checked when it runs
            windows = checked_window(windows, [self.lookback], expected)
        shift, scale, has_scale = self._statistics(windows)
        forecast = self._forecast((windows - shift) / scale, training) * scale + shift
        return keras.ops.where(has_scale, forecast, shift)

    def _forecast(self, read, training):
        if self.kind != "nbeats":
            hidden = keras.ops.expand_dims(read, -1)
            for layer in self.recurrent:
                hidden = layer(hidden, training=training)
            return self.head(hidden)
        residual, forecast = read, None
        for block in range(self.blocks):
            hidden = residual
            for layer in self.hidden[block]:
                hidden = layer(hidden)
            if self.dropouts:
                hidden = self.dropouts[block](hidden, training=training)
            if block < self.blocks - 1:
                residual = residual - self.backcasts[block](hidden)
            part = self.forecasts[block](hidden)
            forecast = part if forecast is None else forecast + part
        return forecast

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The compiled loss on the normalised scale of each window: `loss((y - shift) / scale,
        (y_pred - shift) / scale)` (see the class docstring), so that every series counts
        alike whatever its units."""
        if x is not None and y is not None and y_pred is not None:
            y = self._normalized(x, keras.ops.cast(y, y_pred.dtype))
            y_pred = self._normalized(x, y_pred)
        return super().compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                    training=training)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.horizon)

    def get_config(self):
        return {
            **super().get_config(),
            "lookback": self.lookback,
            "horizon": self.horizon,
            "kind": self.kind,
            "units": self.units,
            "layers": self.num_layers,
            "blocks": self.blocks,
            "dropout": self.dropout,
            "seed": self.seed,
            "normalization": self.normalization,
            "scale_floor": self.scale_floor,
        }

    @classmethod
    def from_config(cls, config):
        # A network saved before `scale_floor` existed was trained with the legacy floor.
        return super().from_config({"scale_floor": LEGACY_SCALE_FLOOR, **config})


# --- the panel's windows ------------------------------------------------------------------------


def default_min_history(lookback, horizon):
    """The fewest real values before a training forecast origin, by default:
    `max(1, min(lookback // 2, horizon))`.

    Why: a window that is mostly padding teaches little about the windows the model forecasts
    from (the end of a series, padded only when the series is shorter than `lookback`), so an
    origin needs half a window of real history; but a short series should still give training
    windows, so a horizon's worth is enough when that is less.
    """
    return max(1, min(lookback // 2, horizon))


def minimum_series_length(lookback, horizon, min_history=None):
    """The shortest series `panel_training_dataset` accepts: `min_history + horizon` (one
    forecast origin with its whole target)."""
    if min_history is None:
        min_history = default_min_history(lookback, horizon)
    return min_history + horizon


def _as_float_series(series):
    arrays = [np.asarray(values, dtype="float32").reshape(-1) for values in series]
    if not arrays:
        raise ValueError("series must hold at least one series. Received: none")
    for index, values in enumerate(arrays):
        if not np.isfinite(values).all():
            raise ValueError(f"series must hold finite values only. Received: a NaN or "
                             f"infinite value in series {index}")
    return arrays


def panel_training_dataset(series, lookback, horizon, batch_size, seed, min_history=None):
    """An infinite dataset of training windows drawn across many series.

    Each element is one batch `(windows [batch_size, lookback], targets [batch_size,
    horizon])`, float32. Each row: a series drawn uniformly (every series equally likely,
    whatever its length, so that long series do not crowd out short ones), then a forecast
    origin `t` drawn uniformly among the series' valid ones, `min_history <= t <= n - horizon`
    (`n` the series' length); the window is `x[t - lookback:t]` and the target `x[t:t +
    horizon]`. Where `t < lookback` the window is left-padded with the series' first value (as
    N-BEATS pads short histories): the padded window looks like a series that was flat
    before it began.

    Memory: one concatenated float32 tensor of every series plus their offsets and lengths;
    each batch's indices are drawn and gathered in the graph (`tf.random.stateless_uniform`,
    `tf.gather`), so no window is ever stored beyond its batch.

    Deterministic: batch `k` is a function of `(seed, k)` only (stateless random numbers),
    the same on every run and for any prefetching.

    Args:
        series: a list of 1-D float arrays of different lengths (finite values).
        lookback: values per window.
        horizon: values per target.
        batch_size: rows per batch.
        seed: integer seed of the draws (None: a random one).
        min_history: the fewest real values before an origin; default
            `default_min_history(lookback, horizon)` = `max(1, min(lookback // 2, horizon))`.

    Returns:
        An infinite `tf.data.Dataset`; pass `steps_per_epoch` to `model.fit`.

    Raises:
        ValueError: a series shorter than `min_history + horizon` (the message counts them and
            names the minimum length; filter them out first, `minimum_series_length`), bad
            sizes, or non-finite values.
    """
    for name, value in (("lookback", lookback), ("horizon", horizon),
                        ("batch_size", batch_size)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1. Received: {name}={value}")
    if min_history is None:
        min_history = default_min_history(lookback, horizon)
    if min_history < 1:
        raise ValueError(f"min_history must be at least 1. Received: min_history={min_history}")
    arrays = _as_float_series(series)
    lengths = np.array([len(values) for values in arrays], dtype="int64")
    shortest = min_history + horizon
    too_short = np.flatnonzero(lengths < shortest)
    if too_short.size:
        shown = ", ".join(f"{index} ({lengths[index]} values)" for index in too_short[:5])
        more = f" and {too_short.size - 5} more" if too_short.size > 5 else ""
        raise ValueError(
            f"{too_short.size} of {len(arrays)} series are too short for one training window: "
            f"each needs at least {shortest} values (min_history={min_history} + "
            f"horizon={horizon}). Received: series {shown}{more}")
    if seed is None:
        seed = int(np.random.default_rng().integers(2**31))
    flat = tf.constant(np.concatenate(arrays))
    offsets = tf.constant(np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype("int64"))
    origins = tf.constant(lengths - horizon - min_history + 1)  # valid origins per series
    n_series = len(arrays)
    window_steps = tf.range(-lookback, 0, dtype=tf.int64)
    target_steps = tf.range(horizon, dtype=tf.int64)

    def draw(step):
        uniform = tf.random.stateless_uniform((2, batch_size), seed=tf.stack(
            [tf.constant(seed, tf.int64), step]), dtype=tf.float64)
        chosen = tf.minimum(tf.cast(uniform[0] * n_series, tf.int64), n_series - 1)
        count = tf.gather(origins, chosen)
        origin = min_history + tf.minimum(
            tf.cast(uniform[1] * tf.cast(count, tf.float64), tf.int64), count - 1)
        start = tf.gather(offsets, chosen)[:, None]
        # Positions before the series' start read its first value (the left padding).
        window_at = start + tf.maximum(origin[:, None] + window_steps, 0)
        target_at = start + origin[:, None] + target_steps
        return tf.gather(flat, window_at), tf.gather(flat, target_at)

    return (tf.data.Dataset.counter(dtype=tf.int64)
            .map(draw, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            .prefetch(tf.data.AUTOTUNE))


def last_windows(series, lookback):
    """The inputs to forecast from the end of each series: `[n_series, lookback]` float32,
    each row the series' last `lookback` values, left-padded with its first value when the
    series is shorter (as `panel_training_dataset` pads)."""
    if lookback < 1:
        raise ValueError(f"lookback must be at least 1. Received: lookback={lookback}")
    arrays = _as_float_series(series)
    windows = np.empty((len(arrays), lookback), dtype="float32")
    for row, values in enumerate(arrays):
        if not values.size:
            raise ValueError(f"every series needs at least one value. Received: series {row} "
                             f"is empty")
        tail = values[-lookback:]
        windows[row, :lookback - tail.size] = values[0]
        windows[row, lookback - tail.size:] = tail
    return windows


def default_settings(horizon, season, lengths):
    """The settings a `GlobalForecaster` and its training default to, derived from the data.

    - kind "nbeats", normalisation "shift" (the constructor's default): measured on M4 hourly
      and weekly (benchmarks/global_forecaster.py), the N-BEATS stack beat a GRU by a wide
      margin in less time on both (weekly, lookback 52: sMAPE 6.4 vs 8.2 in 90 s vs 150 s;
      hourly: 11.6 vs 17.2), and seqlab's recurrent layers run a Python-level loop over the
      window, several times slower per step on CPU.
    - lookback `4 * horizon`, at least `2 * season` (two seasonal cycles in every window), at
      most the median of `lengths` (most series fill the window; the rest are padded): 4
      horizons beat 2 clearly on both sets (hourly sMAPE 11.6 vs 13.2, weekly 6.4 vs 8.9; a
      weekly window of 2 horizons is half a year); 7 horizons was worse on hourly (12.0 / 1.11
      vs 11.6 / 1.08) and mixed on weekly (6.25 / 2.08 vs 6.42 / 2.04; two seeds of the same
      run differ by 0.16 sMAPE), for more time per step.
    - 256 units, 4 layers, 3 blocks: N-BEATS' generic block at half its width and a tenth of
      its depth, about 25 ms a step of 256 windows on 2 cores.
    - 6000 steps of 256 windows, Adam at 1e-3: on hourly, two seeds gave sMAPE / MASE
      11.47 / 0.89 and 11.42 / 0.94 at 6000 steps against 11.64 / 1.08 and 11.85 / 0.93 at
      3000 (weekly: 6.57 / 2.03 against 6.42 / 2.04 and 6.59 / 2.04, no worse); about 2.5
      minutes on 2 free cores, 3 to 3.5 on the loaded ones measured. Early stopping on the
      last horizon of each series held out did not help: it stopped hourly at 3750 steps with
      11.93 / 0.95 and weekly at 4500 with 7.22 / 2.08 (the held-out values are the most
      recent, and the choice is noisy), so the default trains on every value for all steps.
      The number of steps does not grow with the number of series: one network for a set
      costs the same for 400 series or 10,000 (more series only means more windows to draw
      from).

    Args:
        horizon: values to forecast.
        season: the seasonal period (1: none).
        lengths: the lengths of the histories the network reads (the many-series pipeline
            passes each series' history at its validation origin: the training part without
            its last `horizon` values).

    Returns:
        `{"kind", "lookback", "units", "layers", "blocks", "steps", "batch_size",
        "learning_rate"}`.
    """
    if horizon < 1 or season < 1:
        raise ValueError(f"horizon and season must be at least 1. Received: horizon={horizon}, "
                         f"season={season}")
    lengths = np.asarray(lengths)
    if not lengths.size:
        raise ValueError("lengths must name at least one series. Received: none")
    lookback = max(4 * horizon, 2 * season)
    lookback = int(max(1, min(lookback, np.median(lengths))))
    return {"kind": "nbeats", "lookback": lookback, "units": 256, "layers": 4, "blocks": 3,
            "steps": 6000, "batch_size": 256, "learning_rate": 1e-3}
