"""Time-series input: CSV reading and checking, scaling, and windowed tf.data datasets.

The pieces, in the order a forecasting run uses them:

- `read_csv` / `load_sunspots`: a raw `pandas.DataFrame` from a file or the embedded series.
- `SeriesSchema`: which column is time, which are targets and features, how categorical columns
  are one-hot encoded and how missing values are repaired. `SeriesSchema.infer` chooses it from a
  raw frame and the user's choices; `SeriesSchema.prepare` checks a raw frame against it and
  returns a `PreparedSeries` of float columns. The schema is saved as JSON with a run, so that
  `predict` and `evaluate` read new files exactly as training did.
- `Scaler`: min-max or standard scaling, fitted on the training split only, saved as JSON.
- `WindowGenerator`: splits a series in time order, scales it and cuts windows
  `(window[batch, lookback, n_features], target[batch, horizon, n_targets])` that never cross a
  split boundary.
- `estimate_season`: the period of the strongest autocorrelation peak, for the seasonal-naive
  baseline.
"""

import csv
import dataclasses
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import tensorflow as tf

from seqlab.data.errors import DataError, decode_utf8

SUNSPOTS_SOURCE = "statsmodels sunspots (yearly, 1700-2008)"
SUNSPOTS_TIME_COLUMN = "YEAR"
SUNSPOTS_TARGET = "SUNACTIVITY"

FILL_METHODS = ("ffill", "interpolate")
SCALER_METHODS = ("minmax", "standard")

# The delimiters `read_csv` recognises, and the longest line it reads (a file without line breaks
# is refused at this many bytes instead of being read whole).
CSV_DELIMITERS = (",", ";", "\t")
MAX_LINE_BYTES = 2**20

# How many offending rows an error message lists before it says "and N more".
_ROWS_SHOWN = 5


def load_sunspots():
    """The yearly sunspot numbers 1700-2008 that ship inside statsmodels.

    Returns:
        A DataFrame with the columns `YEAR` (float years) and `SUNACTIVITY`, 309 rows.
    """
    # statsmodels is slow to import and only this default needs it.
    from statsmodels.datasets import sunspots

    return sunspots.load_pandas().data


def read_csv(path):
    """Reads a CSV file into a DataFrame, reporting unreadable input as `DataError`.

    The delimiter is the one of `,` `;` and tab that occurs most often in the header line (`,`
    when none does). Every row must have as many fields as the header. Lines longer than
    `MAX_LINE_BYTES` are refused as soon as one is met, so that a file without line breaks is
    never read whole. Blank lines are kept as rows of missing values, so that row `i` of the frame
    is always line `i + 2` of the file (line 1 is the header) and error messages can name lines.

    Args:
        path: the CSV file.

    Returns:
        The raw `pandas.DataFrame`, columns as pandas typed them; `frame.attrs["delimiter"]` is
        the delimiter used.

    Raises:
        DataError: the file is missing or a folder, empty, not UTF-8 text, has a line longer than
            `MAX_LINE_BYTES`, a row whose number of fields differs from the header's, is otherwise
            malformed, or has no data rows.
    """
    path = Path(path)
    text = decode_utf8(_read_bounded(path), path)
    if not text.strip():
        raise DataError("the file is empty; expected a CSV header and data rows", path=path)
    header_line = text.split("\n", 1)[0]
    delimiter = max(CSV_DELIMITERS, key=header_line.count)
    if not header_line.count(delimiter):
        delimiter = ","
    _check_field_counts(text, delimiter, path)
    try:
        frame = pd.read_csv(
            io.StringIO(text), sep=delimiter, skip_blank_lines=False, index_col=False
        )
    except pd.errors.EmptyDataError:
        raise DataError("the file is empty; expected a CSV header and data rows", path=path)
    except pd.errors.ParserError as error:
        raise DataError(f"not a well-formed CSV file ({error})", path=path)
    if frame.empty:
        raise DataError("the file has a header but no data rows", path=path)
    frame.attrs["delimiter"] = delimiter
    return frame


def _read_bounded(path):
    """The bytes of `path`, read line by line; a line over `MAX_LINE_BYTES` stops the reading."""
    if path.is_dir():
        raise DataError("is a folder, not a file; expected a CSV file", path=path)
    if not path.is_file():
        raise DataError("file not found", path=path)
    lines = []
    with open(path, "rb") as file:
        while True:
            line = file.readline(MAX_LINE_BYTES + 2)
            if not line:
                break
            if len(line.rstrip(b"\r\n")) > MAX_LINE_BYTES:
                raise DataError(
                    f"the line is longer than the limit of {MAX_LINE_BYTES} bytes "
                    f"({MAX_LINE_BYTES // 2**20} MiB); expected one CSV row per line",
                    path=path,
                    line=len(lines) + 1,
                )
            lines.append(line)
    return b"".join(lines)


def _check_field_counts(text, delimiter, path):
    """Raises `DataError` naming the first row whose number of fields differs from the header's
    (pandas would otherwise shift the columns or fill them with missing values)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
        expected = len(header)
        start = reader.line_num + 1
        for row in reader:
            if row and len(row) != expected:
                header_text = delimiter.join(header)
                if len(header_text) > 80:
                    header_text = header_text[:77] + "..."
                raise DataError(
                    f"the row has {len(row)} fields separated by {delimiter!r}; expected "
                    f"{expected} like the header ({header_text!r})",
                    path=path,
                    line=start,
                )
            start = reader.line_num + 1
    except csv.Error as error:
        raise DataError(f"not a well-formed CSV file ({error})", path=path,
                        line=reader.line_num) from None


def _line(row):
    """The file line of 0-based data row `row` (line 1 is the header)."""
    return int(row) + 2


def _rows_text(rows, values=None):
    shown = [
        f"{_line(r)} ({values[i]!r})" if values is not None else str(_line(r))
        for i, r in enumerate(rows[:_ROWS_SHOWN])
    ]
    more = f" and {len(rows) - _ROWS_SHOWN} more" if len(rows) > _ROWS_SHOWN else ""
    return ", ".join(shown) + more


def _parse_numbers(column):
    """Float values of `column`, with NaN where a value is missing or not a number."""
    if pd.api.types.is_bool_dtype(column):
        return column.astype("float64")
    return pd.to_numeric(column, errors="coerce").astype("float64")


def _is_numeric_column(column):
    """True when most present values of `column` are numbers (a few typos do not count)."""
    if pd.api.types.is_numeric_dtype(column):
        return True
    present = column.dropna()
    if present.empty:
        return False
    return _parse_numbers(present).notna().mean() >= 0.5


def _parse_time(column, name, source):
    """Numbers stay numbers; anything else must parse as dates. Must strictly increase."""
    if column.isna().any():
        rows = np.flatnonzero(column.isna().to_numpy())
        raise DataError(
            f"time column {name!r} has missing values at lines {_rows_text(rows)}; expected a "
            "time stamp on every row",
            path=source,
        )
    if pd.api.types.is_numeric_dtype(column):
        time = column.astype("float64")
    else:
        time = pd.to_datetime(column, errors="coerce", format="mixed")
        bad = np.flatnonzero(time.isna().to_numpy())
        if len(bad):
            raise DataError(
                f"time column {name!r} has values that are not dates at lines "
                f"{_rows_text(bad, column.iloc[bad].tolist())}",
                path=source,
            )
    steps = np.diff(time.to_numpy())
    backwards = np.flatnonzero(steps <= steps.dtype.type(0))
    if len(backwards):
        row = backwards[0] + 1
        raise DataError(
            f"time column {name!r} does not increase at line {_line(row)} "
            f"({column.iloc[row]!r} after {column.iloc[row - 1]!r}); expected rows in time order "
            "without repeats",
            path=source,
        )
    return time.reset_index(drop=True)


def _looks_like_dates(column):
    if pd.api.types.is_numeric_dtype(column) or column.isna().any():
        return False
    return pd.to_datetime(column, errors="coerce", format="mixed").notna().all()


@dataclasses.dataclass
class PreparedSeries:
    """A checked series of float columns, ready for windowing.

    Attributes:
        values: float64 columns: the model inputs (`SeriesSchema.input_columns`) followed by any
            target that is not an input; row order is time order.
        time: the time column (datetime64 or float), or None when the data has none.
        fill_report: what `--fill` repaired: `{"method": ..., "filled_values": {column: count}}`,
            or None when nothing was filled.
        source: where the data came from, for messages.
    """

    values: pd.DataFrame
    time: pd.Series | None
    fill_report: dict | None
    source: str

    def time_labels(self, rows):
        """The time stamps of `rows` (for plots), or the row numbers without a time column."""
        if self.time is None:
            return np.asarray(rows)
        return self.time.iloc[np.asarray(rows)].to_numpy()


@dataclasses.dataclass
class SeriesSchema:
    """How a raw table becomes a numeric series: time, targets, features, encoding, repair.

    Attributes:
        time_column: the column holding time stamps (dates or numbers), or None.
        targets: the columns to forecast (numeric).
        features: the raw columns the model sees, numeric or categorical, in order.
        categories: for each one-hot encoded column, its categories in encoding order.
        fill: how missing or non-numeric values are repaired (`"ffill"`, `"interpolate"`), or
            None to refuse them.
        skipped_columns: non-numeric columns left out of the default features (reported, not
            silently dropped).
    """

    time_column: str | None
    targets: list
    features: list
    categories: dict = dataclasses.field(default_factory=dict)
    fill: str | None = None
    skipped_columns: list = dataclasses.field(default_factory=list)

    @classmethod
    def infer(
        cls,
        frame,
        time_column=None,
        targets=None,
        features=None,
        categorical=(),
        fill=None,
        source=None,
    ):
        """Chooses the schema for `frame` from the user's choices and the data.

        Args:
            frame: the raw DataFrame.
            time_column: the time column; None picks the first column when all its values are
                dates, else the series has no time column.
            targets: the columns to forecast; None means the only numeric feature column.
            features: the model's input columns; None means every numeric column besides time,
                plus the `categorical` ones.
            categorical: columns to one-hot encode (their categories are the values seen here).
            fill: None, "ffill" or "interpolate".
            source: the file, for error messages.

        Returns:
            The `SeriesSchema`.

        Raises:
            DataError: a named column is missing, a named feature is not numeric and not listed
                as categorical, or the target is ambiguous.
        """
        if fill is not None and fill not in FILL_METHODS:
            raise ValueError(f"fill must be one of {FILL_METHODS}. Received: fill={fill!r}")
        columns = [str(c) for c in frame.columns]
        frame = frame.set_axis(columns, axis=1)
        categorical = list(categorical or [])

        def require(names, what):
            for name in names:
                if name not in columns:
                    raise DataError(
                        f"{what} column {name!r} not found; the columns are: {', '.join(columns)}",
                        path=source,
                    )

        if time_column is None and len(columns) > 1 and _looks_like_dates(frame[columns[0]]):
            time_column = columns[0]
        require([time_column] if time_column else [], "time")
        require(categorical, "categorical")
        require(targets or [], "target")
        require(features or [], "feature")

        others = [c for c in columns if c != time_column]
        skipped = []
        if features is None:
            features = []
            for name in others:
                if name in categorical or _is_numeric_column(frame[name]):
                    features.append(name)
                else:
                    skipped.append(name)
        else:
            features = list(features) + [c for c in categorical if c not in features]
        for name in features:
            if name not in categorical and not _is_numeric_column(frame[name]):
                example_row = int(np.flatnonzero(frame[name].notna().to_numpy())[0])
                raise DataError(
                    f"column {name!r} is not numeric (e.g. {frame[name].iloc[example_row]!r} at "
                    f"line {_line(example_row)}); leave it out of --features or one-hot encode it "
                    f"with --categorical {name}",
                    path=source,
                )
        if targets is None:
            numeric = [c for c in features if c not in categorical]
            if len(numeric) != 1:
                raise DataError(
                    f"cannot tell which column to forecast among {', '.join(numeric) or 'none'}; "
                    "name it with --target",
                    path=source,
                )
            targets = numeric
        for name in targets:
            if name in categorical or not _is_numeric_column(frame[name]):
                raise DataError(
                    f"target column {name!r} is not numeric; expected numbers to forecast",
                    path=source,
                )
        categories = {}
        for name in categorical:
            values = frame[name].dropna().astype(str)
            categories[name] = sorted(values.unique().tolist())
        return cls(
            time_column=time_column,
            targets=list(targets),
            features=list(features),
            categories=categories,
            fill=fill,
            skipped_columns=skipped,
        )

    @property
    def input_columns(self):
        """The model's input columns after one-hot encoding (`"column=category"` names)."""
        names = []
        for name in self.features:
            if name in self.categories:
                names.extend(f"{name}={category}" for category in self.categories[name])
            else:
                names.append(name)
        return names

    @property
    def value_columns(self):
        """The columns of `PreparedSeries.values`: inputs, then targets that are not inputs."""
        inputs = self.input_columns
        return inputs + [t for t in self.targets if t not in inputs]

    def prepare(self, frame, source=None):
        """Checks `frame` against this schema and returns its float columns.

        Args:
            frame: the raw DataFrame (from `read_csv` or `load_sunspots`).
            source: the file, for error messages.

        Returns:
            A `PreparedSeries`.

        Raises:
            DataError: a column is missing; missing or non-numeric values without `fill` (naming
                the column and the first lines); values `fill` cannot repair (at the start or end
                of the series); a category not seen in training; a time column that is not in
                increasing order.
        """
        frame = frame.set_axis([str(c) for c in frame.columns], axis=1).reset_index(drop=True)
        needed = ([self.time_column] if self.time_column else []) + self.features
        needed += [t for t in self.targets if t not in self.features]
        for name in needed:
            if name not in frame.columns:
                raise DataError(
                    f"column {name!r} not found; the columns are: {', '.join(frame.columns)}",
                    path=source,
                )
        time = None
        if self.time_column:
            time = _parse_time(frame[self.time_column], self.time_column, source)

        filled = {}
        numeric = {}
        for name in dict.fromkeys(self.features + self.targets):
            if name in self.categories:
                continue
            raw = frame[name]
            values = _parse_numbers(raw)
            missing = np.flatnonzero(raw.isna().to_numpy())
            not_numbers = np.flatnonzero((values.isna() & raw.notna()).to_numpy())
            if self.fill is None:
                if len(not_numbers):
                    raise DataError(
                        f"column {name!r} has non-numeric values at lines "
                        f"{_rows_text(not_numbers, raw.iloc[not_numbers].tolist())}; expected "
                        "numbers (--fill ffill|interpolate treats them as missing and repairs "
                        "them)",
                        path=source,
                    )
                if len(missing):
                    raise DataError(
                        f"column {name!r} has missing values at lines {_rows_text(missing)} "
                        f"({len(missing)} rows); pass --fill ffill or --fill interpolate to "
                        "repair them",
                        path=source,
                    )
            elif values.isna().any():
                filled[name] = int(values.isna().sum())
                values = self._repair(values, name, source)
            numeric[name] = values

        columns = {}
        for name in self.features:
            if name in self.categories:
                columns.update(self._one_hot(frame[name], name, source, filled))
            else:
                columns[name] = numeric[name]
        for name in self.targets:
            columns.setdefault(name, numeric[name])
        values = pd.DataFrame(columns)[self.value_columns].astype("float64")
        fill_report = None
        if filled:
            fill_report = {"method": self.fill, "filled_values": filled}
        return PreparedSeries(values=values, time=time, fill_report=fill_report, source=source)

    def _repair(self, values, name, source):
        if self.fill == "ffill":
            repaired = values.ffill()
        else:
            repaired = values.interpolate(method="linear", limit_area="inside")
        left = np.flatnonzero(repaired.isna().to_numpy())
        if len(left):
            raise DataError(
                f"column {name!r}: --fill {self.fill} cannot repair lines {_rows_text(left)} "
                "(no value before them to carry or interpolate from); expected a number there",
                path=source,
            )
        return repaired

    def _one_hot(self, raw, name, source, filled):
        values = raw.astype("string")
        missing = np.flatnonzero(values.isna().to_numpy())
        if len(missing):
            if self.fill is None:
                raise DataError(
                    f"column {name!r} has missing values at lines {_rows_text(missing)} "
                    f"({len(missing)} rows); pass --fill ffill to repair them",
                    path=source,
                )
            # A category cannot be interpolated, so both fill methods carry the last one forward.
            filled[name] = len(missing)
            values = values.ffill()
            if values.isna().any():
                rows = np.flatnonzero(values.isna().to_numpy())
                raise DataError(
                    f"column {name!r}: cannot fill lines {_rows_text(rows)} (no earlier category)",
                    path=source,
                )
        known = self.categories[name]
        unknown = np.flatnonzero(~values.isin(known).to_numpy())
        if len(unknown):
            raise DataError(
                f"column {name!r} has categories not seen in training at lines "
                f"{_rows_text(unknown, values.iloc[unknown].tolist())}; known: {', '.join(known)}",
                path=source,
            )
        return {f"{name}={c}": (values == c).astype("float64") for c in known}

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, config):
        return cls(**config)


@dataclasses.dataclass
class Scaler:
    """Per-column affine scaling `scaled = (value - offset) / scale`, fitted on training rows.

    `"minmax"` maps the training range to [0, 1]; `"standard"` to mean 0, standard deviation 1.
    A column that is constant in training keeps scale 1, so it never divides by zero.

    Attributes:
        method: `"minmax"` or `"standard"`.
        columns: the column names, in order.
        offset: per-column offsets.
        scale: per-column scales.
    """

    method: str
    columns: list
    offset: list
    scale: list

    @classmethod
    def fit(cls, method, frame):
        """Fits `method` on the rows of `frame` (pass the training split only)."""
        if method not in SCALER_METHODS:
            raise ValueError(f"scaler must be one of {SCALER_METHODS}. Received: scaler={method!r}")
        values = frame.to_numpy(dtype="float64")
        if method == "minmax":
            offset = values.min(axis=0)
            scale = values.max(axis=0) - offset
        else:
            offset = values.mean(axis=0)
            scale = values.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        return cls(method, [str(c) for c in frame.columns], offset.tolist(), scale.tolist())

    def _parameters(self, columns):
        index = [self.columns.index(c) for c in columns]
        return np.asarray(self.offset)[index], np.asarray(self.scale)[index]

    def transform(self, values, columns=None):
        """Scales `values` (last axis = `columns`, default all columns)."""
        offset, scale = self._parameters(columns or self.columns)
        return (np.asarray(values, dtype="float64") - offset) / scale

    def inverse_transform(self, values, columns=None):
        """Maps scaled `values` (last axis = `columns`) back to original units."""
        offset, scale = self._parameters(columns or self.columns)
        return np.asarray(values, dtype="float64") * scale + offset

    def parameters(self, columns):
        """`(offset, scale)` float32 arrays for `columns`, for scaling inside a graph."""
        offset, scale = self._parameters(columns)
        return offset.astype("float32"), scale.astype("float32")

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, config):
        return cls(**config)


def split_bounds(n_rows, val_fraction, test_fraction):
    """Row ranges `{"train": (0, a), "val": (a, b), "test": (b, n_rows)}` in time order."""
    if not (0 <= val_fraction < 1 and 0 < test_fraction < 1 and val_fraction + test_fraction < 1):
        raise ValueError(
            "val_fraction and test_fraction must lie in [0, 1) and (0, 1) with a sum below 1. "
            f"Received: val_fraction={val_fraction}, test_fraction={test_fraction}"
        )
    train_end = int(round(n_rows * (1 - val_fraction - test_fraction)))
    val_end = int(round(n_rows * (1 - test_fraction)))
    return {"train": (0, train_end), "val": (train_end, val_end), "test": (val_end, n_rows)}


class WindowGenerator:
    """Windows of a series for forecasting, split in time order, scaled on training rows.

    In the spirit of TensorFlow's time-series tutorial: one object knows the lookback, the
    horizon and the columns, and produces the train / validation / test datasets. The series is
    split by time first; the scaler is fitted on the training rows only; windows are cut inside
    each split, so no window crosses a split boundary. A window starting at row `s` holds the
    inputs of rows `s .. s+lookback-1` and the targets of rows `s+lookback .. s+lookback+horizon-1`.

    Args:
        frame: a DataFrame of float columns in time order (e.g. `PreparedSeries.values`).
        lookback: rows the model sees per window.
        horizon: rows to forecast after the window.
        targets: the columns to forecast.
        features: the model's input columns; None means all columns of `frame`.
        stride: rows between the starts of consecutive training windows. Validation and test use
            every window, so that their metrics cover the whole split.
        val_fraction: the share of rows for validation (after training rows).
        test_fraction: the share of rows for testing (the last rows).
        scaler: `"minmax"` or `"standard"`, or a fitted `Scaler` to reuse.
        batch_size: windows per batch.
        shuffle_seed: seed of the shuffle of the training windows (reshuffled each epoch).
        source: the data's origin, for error messages.

    Raises:
        DataError: a split is shorter than one window (the message says how many rows a window
            and the whole series need).

    Example:

    >>> frame = pd.DataFrame({"y": np.arange(100.0)})
    >>> windows = WindowGenerator(frame, lookback=8, horizon=2, targets=["y"])
    >>> inputs, targets = next(iter(windows.train))
    >>> inputs.shape, targets.shape  # (batch, lookback, features), (batch, horizon, targets)
    (TensorShape([32, 8, 1]), TensorShape([32, 2, 1]))
    """

    def __init__(
        self,
        frame,
        lookback,
        horizon,
        targets,
        features=None,
        stride=1,
        val_fraction=0.15,
        test_fraction=0.15,
        scaler="standard",
        batch_size=32,
        shuffle_seed=None,
        source=None,
    ):
        for name, value in (("lookback", lookback), ("horizon", horizon), ("stride", stride),
                            ("batch_size", batch_size)):
            if int(value) != value or value < 1:
                raise ValueError(f"{name} must be a positive integer. Received: {name}={value}")
        self.lookback = int(lookback)
        self.horizon = int(horizon)
        self.stride = int(stride)
        self.batch_size = int(batch_size)
        self.shuffle_seed = shuffle_seed
        self.targets = list(targets)
        self.features = list(frame.columns) if features is None else list(features)
        for name in self.targets + self.features:
            if name not in frame.columns:
                raise ValueError(f"column {name!r} is not in the frame: {list(frame.columns)}")
        self.frame = frame.reset_index(drop=True)
        self.bounds = split_bounds(len(frame), val_fraction, test_fraction)
        self._check_lengths(val_fraction, test_fraction, source)
        columns = list(dict.fromkeys(self.features + self.targets))
        train_start, train_end = self.bounds["train"]
        if isinstance(scaler, Scaler):
            self.scaler = scaler
        else:
            self.scaler = Scaler.fit(scaler, self.frame[columns].iloc[train_start:train_end])
        self._inputs = self.scaler.transform(self.frame[self.features].to_numpy(), self.features)
        self._targets = self.scaler.transform(self.frame[self.targets].to_numpy(), self.targets)

    @property
    def window_size(self):
        """Rows one window spans: lookback + horizon."""
        return self.lookback + self.horizon

    def _check_lengths(self, val_fraction, test_fraction, source):
        for split, (start, stop) in self.bounds.items():
            if split == "val" and val_fraction == 0:
                continue
            if stop - start < self.window_size:
                shares = [f for f in (1 - val_fraction - test_fraction, val_fraction,
                                      test_fraction) if f > 0]
                needed = math.ceil(self.window_size / min(shares))
                # Rounding of the split bounds can need a row or two more than the estimate.
                while any(b - a < self.window_size
                          for name, (a, b) in split_bounds(needed, val_fraction,
                                                           test_fraction).items()
                          if not (name == "val" and val_fraction == 0)):
                    needed += 1
                raise DataError(
                    f"the series is too short: the {split} split has {stop - start} rows, but one "
                    f"window needs lookback + horizon = {self.lookback} + {self.horizon} = "
                    f"{self.window_size} rows; with these split fractions the series needs at "
                    f"least {needed} rows (it has {len(self.frame)}), or use a shorter --lookback",
                    path=source,
                )

    def window_starts(self, split):
        """Row indices (into the whole series) where the windows of `split` start."""
        start, stop = self.bounds[split]
        stride = self.stride if split == "train" else 1
        return np.arange(start, stop - self.window_size + 1, stride)

    def arrays(self, split):
        """`(inputs, targets)` float32 arrays of all windows of `split`, in scaled units."""
        starts = self.window_starts(split)
        input_rows = starts[:, None] + np.arange(self.lookback)
        target_rows = starts[:, None] + self.lookback + np.arange(self.horizon)
        inputs = self._inputs[input_rows].reshape(len(starts), self.lookback, len(self.features))
        targets = self._targets[target_rows].reshape(len(starts), self.horizon, len(self.targets))
        return inputs.astype("float32"), targets.astype("float32")

    def dataset(self, split, shuffle=None):
        """A batched `tf.data.Dataset` of `(window, target)` for `split`.

        Args:
            split: `"train"`, `"val"` or `"test"`.
            shuffle: shuffle the windows each epoch; default True for `"train"` only.
        """
        inputs, targets = self.arrays(split)
        dataset = tf.data.Dataset.from_tensor_slices((inputs, targets))
        if split == "train" if shuffle is None else shuffle:
            dataset = dataset.shuffle(
                len(inputs), seed=self.shuffle_seed, reshuffle_each_iteration=True
            )
        return dataset.batch(self.batch_size).prefetch(tf.data.AUTOTUNE)

    @property
    def train(self):
        """Training windows, shuffled each epoch."""
        return self.dataset("train")

    @property
    def val(self):
        """Validation windows, in time order."""
        return self.dataset("val")

    @property
    def test(self):
        """Test windows, in time order."""
        return self.dataset("test")

    def __repr__(self):
        def span(split):
            start, stop = self.bounds[split]
            return f"{split} {stop - start} [{start}, {stop})"

        counts = ", ".join(f"{s} {len(self.window_starts(s))}" for s in self.bounds)
        return (
            f"WindowGenerator(lookback={self.lookback}, horizon={self.horizon}, "
            f"stride={self.stride}, scaler={self.scaler.method!r}, batch_size={self.batch_size})\n"
            f"  features ({len(self.features)}): {', '.join(self.features)}\n"
            f"  targets ({len(self.targets)}): {', '.join(self.targets)}\n"
            f"  rows: {', '.join(span(s) for s in self.bounds)}\n"
            f"  windows: {counts} (each {self.lookback} input rows -> next {self.horizon})"
        )


def estimate_season(values, max_lag=None):
    """The lag of the highest autocorrelation peak of `values`, or 1 when there is none.

    A peak is a lag `k >= 2` whose autocorrelation is positive and at least that of both
    neighbours. A straight-line trend is removed first (a trend alone would make the
    autocorrelation decay slowly and hide the peaks). Peaks after the autocorrelation first drops
    below zero are preferred: before that
    the curve is still decaying from lag 0, and its bumps are short-term noise (daily temperatures
    have bumps at 12 and 18 days that are higher than the yearly peak).

    Args:
        values: a 1-D array (the training split of the target).
        max_lag: the longest period considered; default half the series length.

    Returns:
        The estimated season length in rows (1 means no seasonality found).
    """
    values = np.asarray(values, dtype="float64")
    steps = np.arange(len(values))
    values = values - np.polyval(np.polyfit(steps, values, 1), steps)
    max_lag = min(max_lag or len(values) // 2, len(values) - 2)
    denominator = np.dot(values, values)
    # A series that is a straight line (up to rounding) has no season.
    if max_lag < 3 or denominator <= 1e-12 * len(values):
        return 1
    # acf[k] is the autocorrelation at lag k (acf[0] = 1).
    acf = np.array(
        [1.0] + [np.dot(values[:-lag], values[lag:]) / denominator for lag in range(1, max_lag + 2)]
    )
    peaks = [
        lag for lag in range(2, max_lag + 1)
        if acf[lag] > 0 and acf[lag] >= acf[lag - 1] and acf[lag] >= acf[lag + 1]
    ]
    negative = np.flatnonzero(acf < 0)
    if len(negative):
        after_zero = [lag for lag in peaks if lag > negative[0]]
        peaks = after_zero or peaks
    if not peaks:
        return 1
    return int(max(peaks, key=lambda lag: acf[lag]))


def future_times(time, horizon):
    """The `horizon` time stamps after the end of `time` (dates or numbers), or None.

    Dates continue with the frequency pandas infers (monthly stays on month starts); irregular
    dates and numbers continue with their most common step.
    """
    if time is None:
        return None
    if pd.api.types.is_datetime64_any_dtype(time):
        frequency = pd.infer_freq(time) if len(time) >= 3 else None
        if frequency is not None:
            return pd.date_range(time.iloc[-1], periods=horizon + 1, freq=frequency)[1:]
        step = time.diff().mode().iloc[0]
        return pd.DatetimeIndex([time.iloc[-1] + step * k for k in range(1, horizon + 1)])
    step = time.diff().mode().iloc[0]
    values = time.iloc[-1] + step * np.arange(1, horizon + 1)
    return values.astype(int) if np.all(values == np.round(values)) else values


def future_time_labels(time, horizon):
    """The `horizon` time stamps after the end of `time` as CSV text ("2020-05-01", or with the
    time of day when the stamps have one; numbers as they are), or None without a time column."""
    times = future_times(time, horizon)
    if isinstance(times, pd.DatetimeIndex):
        dates_only = bool((times.normalize() == times).all())
        return list(times.strftime("%Y-%m-%d" if dates_only else "%Y-%m-%d %H:%M:%S"))
    return None if times is None else list(times)


def every_window_start(n_rows, lookback, horizon, source=None):
    """The start row of every window of `lookback` rows followed by `horizon` rows.

    `horizon=0` asks for the windows a forecast can start from (the last one is the forecast
    of the rows after the end).

    Raises:
        DataError: the series is shorter than one window.
    """
    needed = lookback + horizon
    if n_rows < needed:
        what = (
            f"one window needs lookback + horizon = {lookback} + {horizon} = {needed} rows"
            if horizon else f"a forecast needs the last lookback = {lookback} rows"
        )
        raise DataError(f"the series is too short: {what}, and the data has {n_rows}",
                        path=source)
    return np.arange(n_rows - needed + 1)
