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
- `choose_season`: the season of the seasonal-naive baseline: the calendar's (24 for hourly time
  stamps, 7 daily, 52 weekly, 12 monthly, 4 quarterly: `calendar_season`) unless the training
  rows contradict it, else the strongest autocorrelation peak that clears the noise
  (`estimate_season`).
"""

import collections
import csv
import dataclasses
import io
import math
import re
import statistics
import warnings

import numpy as np
import pandas as pd
import tensorflow as tf

from seqlab.data.datasets import resolve_path
from seqlab.data.errors import (
    MAX_ABS_VALUE,
    DataError,
    decode_utf8,
    empty_file,
    listed,
    normalize_line_endings,
    not_a_file,
    quoted,
    refuse_values_lost_in_float32,
)
from seqlab.data.long_table import DATE_SHARE

SUNSPOTS_SOURCE = "statsmodels sunspots (yearly, 1700-2008)"
SUNSPOTS_TIME_COLUMN = "YEAR"
SUNSPOTS_TARGET = "SUNACTIVITY"

FILL_METHODS = ("ffill", "interpolate")
# What `--fill` does with the rows it cannot repair: those before a column's first value (and,
# for "interpolate", after its last): drop them (reported), copy the nearest value, or refuse.
FILL_ENDS = ("drop", "nearest", "refuse")
# The parts a time stamp can be built from, in the order they must be given (a prefix of it).
TIME_PARTS = ("year", "month", "day", "hour", "minute", "second")
SCALER_METHODS = ("minmax", "standard")

# The delimiters `read_csv` recognises, and the longest line it reads (a file without line breaks
# is refused at this many bytes instead of being read whole).
CSV_DELIMITERS = (",", ";", "\t")
MAX_LINE_BYTES = 2**20
# How many columns a message or summary line lists (a file of 5,000 columns gave a line of
# 35,000 characters).
COLUMNS_SHOWN = 20

# How many offending rows an error message lists before it says "and N more".
_ROWS_SHOWN = 5
# The most memory `WindowGenerator.arrays` takes for the windows of one split, all at once.
MAX_WINDOW_BYTES = 4 * 2**30
# The most values (windows x rows x columns) `WindowGenerator.chunks` and the forecaster's
# least-squares fit and forecasts (pipelines/timeseries_members.py) gather at once
# (`chunk_windows`): 2**22 values are 17 MB as float32 and 84 MB with their index and float64
# copies; 85,598 windows of 48 rows of one value and a target.
CHUNK_VALUES = 2**22


def chunk_windows(values_per_window):
    """How many windows of `values_per_window` values one chunk holds (`CHUNK_VALUES`; at
    least one)."""
    return max(1, CHUNK_VALUES // max(int(values_per_window), 1))


def window_rows(rows, starts, offsets):
    """float32 `rows[start + offsets]` for each of `starts`, `[len(starts), len(offsets),
    columns]` of 2-D `rows`: the windows starting there (`offsets` 0..lookback-1), or their
    targets (lookback..lookback+horizon-1)."""
    return rows[starts[:, None] + offsets].astype("float32")


def load_sunspots():
    """The yearly sunspot numbers 1700-2008 that ship inside statsmodels.

    Returns:
        A DataFrame with the columns `YEAR` (float years) and `SUNACTIVITY`, 309 rows.
    """
    # statsmodels is slow to import and only this default needs it.
    from statsmodels.datasets import sunspots

    return sunspots.load_pandas().data


def read_csv(path, text_columns=()):
    """Reads a CSV file into a DataFrame, reporting unreadable input as `DataError`.

    The delimiter is the one of `,` `;` and tab that splits the header into the most fields
    and the first rows into as many (`,` when none splits the header). Every row must have as
    many fields as the header. Lines longer than `MAX_LINE_BYTES` are refused as soon as one is
    met, so that a file without line breaks is never read whole. Blank lines are kept as rows of
    missing values, so that row `i` of the frame is always line `i + 2` of the file (line 1 is
    the header) and error messages can name lines; blank lines at the end of the file (an
    editor's or a spreadsheet's) are not rows.
    Line endings are normalised as Python's text mode does ("\\r\\n" and a lone "\\r" end a line
    like "\\n"), so no column name or value of a Windows file keeps a "\\r".

    Args:
        path: the CSV file, or a registered data-set name (`data.datasets.resolve_path`).
        text_columns: columns kept as the text written (names, such as series ids: "007"
            stays "007" and "NA" stays "NA"; an empty field is ""); absent ones are ignored.

    Returns:
        The raw `pandas.DataFrame`, the other columns as pandas typed them;
        `frame.attrs["delimiter"]` is the delimiter used.

    Raises:
        DataError: the file is missing or a folder, empty, not UTF-8 text, has a line longer than
            `MAX_LINE_BYTES`, a row whose number of fields differs from the header's, is otherwise
            malformed, or has no data rows.
    """
    path = resolve_path(path)
    raw = decode_utf8(_read_bounded(path), path)
    text = _without_trailing_blank_lines(normalize_line_endings(raw))
    if not text.strip():
        raise empty_file(raw, "a CSV header and data rows", path)
    delimiter = _delimiter(text)
    _check_field_counts(text, delimiter, path)
    try:
        frame = pd.read_csv(
            io.StringIO(text), sep=delimiter, skip_blank_lines=False, index_col=False,
            converters={name: str for name in text_columns},
        )
    except pd.errors.EmptyDataError:
        raise DataError("the file is empty; expected a CSV header and data rows", path=path)
    except pd.errors.ParserError as error:
        raise DataError(f"not a well-formed CSV file ({error})", path=path)
    if frame.empty:
        raise DataError("the file has a header but no data rows", path=path)
    frame.attrs["delimiter"] = delimiter
    return frame


def _delimiter(text, rows=5):
    """The one of `CSV_DELIMITERS` that splits the header into the most fields and the first
    `rows` rows into as many, counting none inside quotes (`date;"price, eur"` and its rows
    `2020-01-01;1.5` are split by ";"); "," where none splits the header."""
    lines = [line for line in text.split("\n", rows + 1)[:rows + 1] if line]

    def fit(delimiter):
        try:
            counts = [len(row) for row in csv.reader(lines, delimiter=delimiter)]
        except csv.Error:  # a field over the csv module's limit: `_check_field_counts` says so
            return False, 0
        return counts[0] > 1 and all(count == counts[0] for count in counts), counts[0]

    delimiter = max(CSV_DELIMITERS, key=fit)
    return delimiter if fit(delimiter)[1] > 1 else ","


def _without_trailing_blank_lines(text):
    """`text` ending with its last line that holds more than spaces and tabs, and one "\\n"."""
    lines = text.split("\n")
    while lines and not lines[-1].strip(" \t"):
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


_LINE_BREAK = re.compile(rb"\r\n?|\n")
_READ_BLOCK = 2**20  # bytes `_read_bounded` reads at a time


def _read_bounded(path):
    """The bytes of `path`, as they are; a line over `MAX_LINE_BYTES` stops the reading. Lines
    end at "\r\n", "\r" or "\n", as in Python's text mode and the readers after this (a file
    of old-Mac line ends over 1 MiB was one line, refused)."""
    if path.is_dir():
        raise DataError("is a folder, not a file; expected a CSV file", path=path)
    if not path.is_file():
        raise not_a_file(path)
    blocks, line, length, carriage_return = [], 1, 0, False
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(_READ_BLOCK), b""):
            # The "\n" of a "\r\n" split between two blocks ends no second line.
            start = 1 if carriage_return and block.startswith(b"\n") else 0
            carriage_return = block.endswith(b"\r")
            for end in _LINE_BREAK.finditer(block, start):
                if length + end.start() - start > MAX_LINE_BYTES:
                    break
                line, length, start = line + 1, 0, end.end()
            length += len(block) - start
            if length > MAX_LINE_BYTES:
                raise DataError(
                    f"the line is longer than the limit of {MAX_LINE_BYTES} bytes "
                    f"({MAX_LINE_BYTES // 2**20} MiB); expected one CSV row per line",
                    path=path,
                    line=line,
                )
            blocks.append(block)
    return b"".join(blocks)


def _check_field_counts(text, delimiter, path):
    """Raises `DataError` naming the first row whose number of fields differs from the header's
    (pandas would otherwise shift the columns or fill them with missing values)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
        expected = len(header)
        # pandas renames a repeated name (`value`, `value.1`), a column the file does not have.
        # (Empty names, a spreadsheet's trailing empty columns, pandas names by position.)
        first = {}
        repeated = next((k for k, name in enumerate(header)
                         if name and first.setdefault(name, k) != k), None)
        if repeated is not None:
            raise DataError(f"the header names the column {quoted(header[repeated])} twice (fields "
                            f"{first[header[repeated]] + 1} and {repeated + 1}); "
                            "expected distinct column names", path=path, line=1)
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
        f"{_line(r)} ({quoted(values[i])})" if values is not None else str(_line(r))
        for i, r in enumerate(rows[:_ROWS_SHOWN])
    ]
    more = f" and {len(rows) - _ROWS_SHOWN} more" if len(rows) > _ROWS_SHOWN else ""
    return ", ".join(shown) + more


def parse_numbers(column):
    """Float values of `column`, with NaN where a value is missing or not a number, and +-inf
    where it is a number beyond float64's range: pandas reads `1e999` as not a number (which
    `--fill` would then repair as missing), Python's `float` as infinite."""
    if pd.api.types.is_bool_dtype(column):
        return column.astype("float64")
    values = pd.to_numeric(column, errors="coerce").astype("float64")
    unread = values.isna() & column.notna()
    if unread.any():
        values[unread] = column[unread].map(_beyond_float64)
    return values


def _beyond_float64(field):
    """+-inf where `field` is a decimal number too large for float64 (`1e999`), else NaN."""
    text = str(field).strip()
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        return math.nan
    return float(text) if math.isinf(float(text)) else math.nan


def _is_numeric_column(column):
    """True when most present values of `column` are numbers (a few typos do not count)."""
    if pd.api.types.is_numeric_dtype(column):
        return True
    present = column.dropna()
    if present.empty:
        return False
    return parse_numbers(present).notna().mean() >= 0.5


def _parse_time(column, name, source, dayfirst=None):
    """`(time, note)`: numbers stay numbers; anything else must parse as dates (`parse_dates`,
    whose note it hands on). Must strictly increase."""
    if column.isna().any():
        rows = np.flatnonzero(column.isna().to_numpy())
        raise DataError(
            f"time column {name!r} has missing values at lines {_rows_text(rows)}; expected a "
            "time stamp on every row",
            path=source,
        )
    note = None
    if pd.api.types.is_numeric_dtype(column):
        time = column.astype("float64")
    else:
        time, _, note = parse_dates(column, name, source, dayfirst)
        bad = np.flatnonzero(time.isna().to_numpy())
        if len(bad):
            raise DataError(
                f"time column {name!r} has values that are not dates at lines "
                f"{_rows_text(bad, column.iloc[bad].tolist())}",
                path=source,
            )
    _check_increasing(time, f"time column {name!r}", column, source)
    return time.reset_index(drop=True), note


# Dates of numbers only with the day or the month first (`31/01/2020`, `1.2.20`): pandas reads
# them month first unless told otherwise (and a value with no month there, day first).
_NUMERIC_DATE = re.compile(r"^\s*(\d{1,2})[/.-](\d{1,2})[/.-]\d{2,4}(?!\d)")


def parse_dates(column, name, source=None, dayfirst=None):
    """`(dates, dayfirst, note)`: the text time stamps `column` as naive datetime64 (NaT where a
    value is not a date), whether they were read day first, and what reading them decided, a
    line for the run's summary (or None).

    - Dates of numbers only (`01/02/2020`) are read month first (pandas' default) or day first
      as `dayfirst` says (a run reads new data as it read its training data); None decides
      from the data: the one reading under which every value is a date (`13/01/2020` has no
      month 13), else the one that spaces the distinct stamps more evenly (their steps'
      logarithms vary less): a monthly `01/MM/YYYY` read month first would be twelve days
      of January a year.
    - Stamps with a UTC offset (`Z`, `+01:00`) keep their local time where they share one
      offset, and are taken to UTC where they do not (a daylight-saving change), which keeps
      their order and their steps.

    Raises:
        DataError: some stamps have an offset and some do not.
    """
    fields = _numeric_date_fields(column)  # read once: a long column's regex is slow
    numeric = fields[0].notna().to_numpy()
    if not numeric.all():  # not dates of numbers only
        # Among other forms (`2021-01-31` and `31/01/2021`: two sources), unless a stamp has a
        # UTC offset: the whole column is then read as one (offsets taken together, below).
        if numeric.any() and not column.astype(str).str.contains(_UTC_OFFSET).any():
            return _mixed_forms(column, numeric, name, source, dayfirst)
        dates, note = _to_dates(column, name, source, dayfirst=False)
        return dates, False, note
    fields = fields.astype(int)
    no_month = [np.flatnonzero((fields[k] > 12).to_numpy()) for k in (0, 1)]
    if no_month[0].size and no_month[1].size:  # neither reading: not dates of one form
        dates, note = _to_dates(column, name, source, dayfirst=False)
        return dates, False, note
    readings = {}  # dayfirst -> (dates, note), parsed where needed
    if no_month[0].size or no_month[1].size:  # one reading only (the other is not parsed)
        found = bool(no_month[0].size)  # a first field above 12: day first
        row = (no_month[0] if found else no_month[1])[0]
        why = f"{column.iloc[row]} has no month {fields.iloc[row, 0 if found else 1]}"
    else:
        readings = {first: _to_dates(column, name, source, dayfirst=first)
                    for first in (False, True)}
        if readings[True][0].equals(readings[False][0]):
            dates, note = readings[False]
            return dates, False, note
        found = _step_spread(readings[True][0]) < _step_spread(readings[False][0])
        why = ("they are evenly spaced only that way" if found
               else "day first they would be less evenly spaced")
    if dayfirst is not None and dayfirst != found:
        found, why = dayfirst, "as the run read its training data"
    dates, note = readings.get(found) or _to_dates(column, name, source, dayfirst=found)
    order = "day" if found else "month"
    return dates, found, _joined(note, _reading_note(column, dates, name, order, why))


# A time with a UTC offset at its end (`...T10:00Z`, `10:00+01:00`, `10:00 -0500`).
_UTC_OFFSET = re.compile(r"\d:\d\d(?::\d\d(?:\.\d+)?)?\s*(?:Z|[+-]\d\d:?\d\d)\s*$")


def _mixed_forms(column, numeric, name, source, dayfirst):
    """`parse_dates` of a `column` whose dates of numbers only (`numeric`, a mask) stand among
    other forms: those read day or month first as `parse_dates` decides on them alone, the
    others each in its own form. pandas' reading of the whole column (`format="mixed"`) took
    each numeric date month first where it could and day first where it could not, so one
    source's `02/01/2021` was 1 February and its `13/01/2021` 13 January."""
    rows, other_rows = np.flatnonzero(numeric), np.flatnonzero(~numeric)
    numbers, found, note = parse_dates(column.iloc[rows], name, source, dayfirst)
    others, other_note = _to_dates(column.iloc[other_rows], name, source, dayfirst=False)
    # Put back by position (the index may repeat).
    stamps = np.full(len(column), np.datetime64("NaT"), dtype="datetime64[ns]")
    stamps[rows] = numbers.to_numpy(dtype="datetime64[ns]")
    stamps[other_rows] = others.to_numpy(dtype="datetime64[ns]")
    dates = pd.Series(stamps, index=column.index)
    first_other = int(other_rows[0])
    mixed = (f"time column {name!r} mixes date forms: {rows.size} of numbers only (such as "
             f"{column.iloc[rows[0]]}) among others (such as {column.iloc[first_other]}), each "
             "read in its own form")
    return dates, found, _joined(mixed, note, other_note)


def _numeric_date_fields(column):
    """The first two numbers of each of `column`'s values that is a date of numbers only
    (`_NUMERIC_DATE`), as a frame of text columns 0 and 1, missing for the other values."""
    return column.astype(str).str.extract(_NUMERIC_DATE)


def _joined(*notes):
    """The notes that are not None, one line each (None if none is)."""
    return "\n".join(note for note in notes if note) or None


def _to_dates(column, name, source, *, dayfirst):
    """`(dates, note)` of `parse_dates` for one reading of the day and month."""
    dates = _parsed(column, dayfirst)
    if isinstance(dates.dtype, pd.DatetimeTZDtype):  # one offset: its local time
        return dates.dt.tz_localize(None), None
    if not pd.api.types.is_object_dtype(dates):
        return dates, None
    aware = np.array([getattr(stamp, "tzinfo", None) is not None for stamp in dates])
    known = dates.notna().to_numpy()
    if not aware[known].all():
        row = int(np.flatnonzero(known & ~aware)[0])
        raise DataError(
            f"time column {name!r} has stamps with a UTC offset and stamps without one (line "
            f"{_line(row)}: {quoted(column.iloc[row])}); expected one kind throughout",
            path=source,
        )
    offsets = sorted({str(stamp.strftime("%z")) for stamp in dates[known]})
    dates = _parsed(column, dayfirst, utc=True).dt.tz_convert(None)
    shown = ", ".join(f"{o[:3]}:{o[3:]}" for o in offsets[:4]) + (", ..." if len(offsets) > 4
                                                                   else "")
    return dates, (f"time column {name!r}: stamps at several UTC offsets ({shown}), read as UTC "
                   "times")


def _parsed(column, dayfirst, utc=False):
    """`pandas.to_datetime` of the text `column` (NaT where a value is not a date): in the one
    format its first stamp shows, applied to all at once, where every value has it; else each
    value in its own (`format="mixed"`, about 20 times slower: 6 s for 150,000 stamps)."""
    with warnings.catch_warnings():
        # No format to infer (the mixed reading follows), or several UTC offsets (handled by
        # `_to_dates`): pandas warns of both.
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", FutureWarning)
        try:
            dates = pd.to_datetime(column, errors="coerce", dayfirst=dayfirst, utc=utc)
        except (ValueError, TypeError):
            dates = None
        if dates is None or dates.isna().sum() > column.isna().sum():
            dates = pd.to_datetime(column, errors="coerce", format="mixed", dayfirst=dayfirst,
                                   utc=utc)
    return dates


def _step_spread(dates):
    """How unevenly the distinct stamps `dates` are spaced: the standard deviation of the
    logarithms of the steps between them in time order."""
    stamps = np.unique(dates.dropna().to_numpy().astype("datetime64[ms]").astype("float64"))
    return float(np.std(np.log(np.diff(stamps)))) if stamps.size > 2 else 0.0


def _reading_note(column, dates, name, order, why):
    """The summary's line for numeric dates read `order` ("day" or "month") first, with an
    example that shows it."""
    row = int(np.argmax((dates.dt.day != dates.dt.month).to_numpy()))
    return (f"time column {name!r}: dates read {order} first ({column.iloc[row]} is "
            f"{dates.iloc[row]:%d %B %Y}): {why}")


def _plain(value):
    """`value` as the Python number or text it stands for (numpy's scalars print as
    `np.int64(49)`)."""
    return value.item() if isinstance(value, np.generic) else value


def _check_increasing(time, what, shown, source):
    """Raises `DataError` at the first row of `time` that does not come after the row before
    (`shown`: the values to quote, as the file has them)."""
    steps = np.diff(time.to_numpy())
    backwards = np.flatnonzero(steps <= steps.dtype.type(0))
    if len(backwards):
        row = backwards[0] + 1
        this, before = (_plain(shown.iloc[r]) for r in (row, row - 1))
        raise DataError(
            f"{what} does not increase at line {_line(row)} "
            f"({this!r} after {before!r}); expected rows in time order "
            "without repeats",
            path=source,
        )


def time_part_units(names, source=None):
    """The part of a time stamp (`TIME_PARTS`) each of the columns `names` holds.

    By name when every name is one (any case, singular or plural: `Year`, `months`), else by
    position: the columns are year, month, day, hour, minute, second in the order given. The
    parts must be year and month, then optionally day, hour, minute and second in that order
    without a gap.

    Raises:
        DataError: fewer than two or more than six columns, a part given twice or missing.
    """
    expected = "year, month[, day[, hour[, minute[, second]]]]"
    if not 2 <= len(names) <= len(TIME_PARTS):
        raise DataError(
            f"time columns {', '.join(names)}: expected 2 to {len(TIME_PARTS)} columns that hold "
            f"{expected}",
            path=source,
        )
    by_name = [str(name).lower().removesuffix("s") for name in names]
    if not all(unit in TIME_PARTS for unit in by_name):
        return list(TIME_PARTS[: len(names)])
    if sorted(by_name, key=TIME_PARTS.index) != list(TIME_PARTS[: len(names)]):
        raise DataError(
            f"time columns {', '.join(names)} hold {', '.join(by_name)}; expected {expected} "
            "(each once, without a gap)",
            path=source,
        )
    return by_name


def _assemble_time(frame, names, source):
    """Time stamps built from the columns `names` (year, month, day, hour, ... as whole numbers;
    a missing day or month is the first). Must strictly increase."""
    units = time_part_units(names, source)
    parts = {}
    # Hours up to 24: some files count the hours of a day 1-24 (24 is midnight of the next day).
    highest = {"hour": 24, "minute": 59, "second": 59}
    for name, unit in zip(names, units):
        raw = frame[name]
        if raw.isna().any():
            rows = np.flatnonzero(raw.isna().to_numpy())
            raise DataError(
                f"time column {name!r} ({unit}) has missing values at lines {_rows_text(rows)}; "
                f"expected a {unit} on every row",
                path=source,
            )
        numbers = parse_numbers(raw)
        bad = numbers.isna() | (numbers != numbers.round()) | (numbers < 0)
        if unit in highest:
            bad |= numbers > highest[unit]
        if bad.any():
            rows = np.flatnonzero(bad.to_numpy())
            limit = f" from 0 to {highest[unit]}" if unit in highest else ""
            raise DataError(
                f"time column {name!r} ({unit}) has values that are not whole numbers{limit} at "
                f"lines {_rows_text(rows, raw.iloc[rows].tolist())}",
                path=source,
            )
        parts[unit] = numbers.astype("int64")
    for unit in ("month", "day"):
        parts.setdefault(unit, 1)
    time = pd.to_datetime(pd.DataFrame(parts, index=frame.index), errors="coerce")
    if time.isna().any():
        rows = np.flatnonzero(time.isna().to_numpy())
        shown = [" ".join(f"{unit}={int(parts[unit].iloc[r])}" for unit in units) for r in rows]
        raise DataError(
            f"time columns {', '.join(names)} do not make a date at lines "
            f"{_rows_text(rows, shown)}",
            path=source,
        )
    _check_increasing(time, f"time columns {', '.join(names)}", _time_texts(time), source)
    return time.reset_index(drop=True)


def _time_texts(time):
    """Time stamps as text: "2020-05-01", or with the time of day when any stamp has one."""
    time = pd.Series(time)
    dates_only = bool((time.dt.normalize() == time).all())
    return time.dt.strftime("%Y-%m-%d" if dates_only else "%Y-%m-%d %H:%M:%S")


def _time_span(time):
    """`[first, last]` of the time stamps `time` as text (numbers as they are)."""
    if pd.api.types.is_datetime64_any_dtype(time):
        return _time_texts(time.iloc[[0, -1]]).tolist()
    return [f"{value:g}" for value in time.iloc[[0, -1]]]


def _dropped_note(end, report, fill):
    """The summary line of rows dropped at the `end` ("first" or "last") of a series."""
    rows, (first, last) = report["rows"], report["lines"]
    if rows == 1:
        what = f"the {end} row (line {first}"
    else:
        what = f"the {end} {rows} rows (lines {first}-{last}"
    if report["time"] is not None:
        span = report["time"][0] if rows == 1 else " to ".join(report["time"])
        what += f", {span}"
    if end == "first":
        verb = "carry" if fill == "ffill" else "interpolate"
        why = f"no value before line {last + 1} to {verb} from"
    else:
        why = f"no value after line {first - 1} to interpolate to"
    return f"dropped {what}): {report['column']} has {why} (--fill-ends drop)"


# The share of whole numbers from which columns named year, month, ... are taken for time stamps
# split over columns (as `long_table.DATE_SHARE` of a column of dates): a few missing or
# fractional values among them are refused with their lines (`_assemble_time`), not read as a
# sign that the columns are no time (one hour of 6.5 read an hourly file without its stamps,
# its season estimated as 25, without a word).
TIME_PART_SHARE = 0.9


def _date_part_columns(frame, columns):
    """Columns named year and month (then day, hour, minute, second as far as they go) holding
    whole numbers (`TIME_PART_SHARE` of their rows at least): the time stamps a file split over
    columns, or [] when it has none."""
    by_unit = {}
    for name in columns:
        unit = name.lower().removesuffix("s")
        if unit in TIME_PARTS and unit not in by_unit:
            by_unit[unit] = name
    names = []
    for unit in TIME_PARTS:
        if unit not in by_unit:
            break
        names.append(by_unit[unit])
    kept = []
    for name in names:  # a column mostly of other numbers ends the stamps' parts there
        numbers = parse_numbers(frame[name])
        if (numbers.notna() & (numbers == numbers.round())).mean() < TIME_PART_SHARE:
            break
        kept.append(name)
    return kept if len(kept) >= 2 else []


# A number written with a comma (`10,5`, `1,000`, `1,240,668`, `1.234,5`), which
# `parse_numbers` does not read.
_DECIMAL_COMMA = re.compile(
    r"\s*[-+]?(\d+,\d+|\d{1,3}(,\d{3})+(\.\d+)?|\d{1,3}(\.\d{3})+,\d+)\s*")


def _comma_numbers(column):
    """`(row, value)` of the first value of `column` that is a number written with a comma,
    where every present value is a number, with or without one (a European spreadsheet's
    decimal commas, thousands separators); else None."""
    present = column.dropna()
    words = present[parse_numbers(present).isna()]
    if words.empty or not words.astype(str).map(_DECIMAL_COMMA.fullmatch).map(bool).all():
        return None
    return int(column.index.get_loc(words.index[0])), words.iloc[0]


def _not_a_number(column):
    """An example of a column that is not numbers, its first value that is not one, for a
    message."""
    present = column.dropna()
    if present.empty:
        return "it has no values"
    words = present[parse_numbers(present).isna()]
    value = words.iloc[0] if len(words) else None
    comma = _DECIMAL_COMMA.fullmatch(str(value))
    return f"e.g. {quoted(value)}" + (": a comma inside a number (decimal or thousands) is not read"
                                if comma else "")


# pandas' name for a CSV's first column when its header is empty (the row index
# `DataFrame.to_csv()` writes by default; also the header it writes for it after a reading).
ROW_INDEX_NAME = "Unnamed: 0"


def row_index_column(frame):
    """The name of `frame`'s first column where it is the file's row index, else None: a column
    `DataFrame.to_csv()` writes by default, with an empty header (pandas' "Unnamed: 0") and the
    row numbers 0..n-1 or 1..n in order, as whole numbers. A table of that column alone is data,
    and an unnamed first column of anything else (dates, other numbers) is read as before."""
    if len(frame.columns) < 2 or str(frame.columns[0]) != ROW_INDEX_NAME:
        return None
    column = frame.iloc[:, 0]
    if not pd.api.types.is_integer_dtype(column) or pd.api.types.is_bool_dtype(column):
        return None
    values = column.to_numpy()
    for first in (0, 1):
        if np.array_equal(values, np.arange(first, first + len(values))):
            return frame.columns[0]
    return None


def row_index_note(frame, name):
    """The note on `frame`'s row index column `name` left out (`row_index_column`)."""
    values = frame[name]
    return (f"column {name!r} (an empty header; {values.iloc[0]} to {values.iloc[-1]}, the row "
            "numbers) is the file's row index, as DataFrame.to_csv() writes it: left out")


def is_date_column(column):
    """Whether a column without a time column named holds dates (in at least `DATE_SHARE` of
    its rows): the time column a reader takes when none is named."""
    return _date_reading(column)[0]


def _date_reading(column):
    """`(looks like dates, read day first)` of a column without a time column named: the
    second is None where it is not known (reading them says why they are not one kind)."""
    present = column.dropna()
    if pd.api.types.is_numeric_dtype(column) or present.empty:
        return False, None
    try:
        dates, dayfirst, _ = parse_dates(present, str(column.name))
    except DataError:  # dates, with and without a UTC offset: reading them says so
        return True, None
    # Of every row, not only of those with a value: a column of one date among hundreds of
    # empty cells (a promotion's date) is no time column.
    return bool(dates.notna().sum() >= DATE_SHARE * len(column)), dayfirst


@dataclasses.dataclass
class PreparedSeries:
    """A checked series of float columns, ready for windowing.

    Attributes:
        values: float64 columns: the model inputs (`SeriesSchema.input_columns`) followed by any
            target that is not an input; row order is time order.
        time: the time column (datetime64 or float), or None when the data has none.
        fill_report: what `--fill` repaired: `{"method": ..., "filled_values": {column: count}}`
            (values filled, in the rows kept), with `"dropped_rows"` when rows it could not
            repair were dropped (`{"first"/"last": {"rows", "lines", "time", "column"}}`) and
            `"filled_at_ends"` (`{column: count}`) when they were copied from the nearest value;
            None when nothing was filled or dropped.
        source: where the data came from, for messages.
        notes: what reading did to the data, one line each, for the run's summary (time stamps
            built from several columns, values filled, rows dropped, the row index left out).
        row_index: the file's row index column left out (`row_index_column`), or None.
    """

    values: pd.DataFrame
    time: pd.Series | None
    fill_report: dict | None
    source: str
    notes: list = dataclasses.field(default_factory=list)
    row_index: str | None = None

    def time_labels(self, rows):
        """The time stamps of `rows` (for plots), or the row numbers without a time column."""
        if self.time is None:
            return np.asarray(rows)
        return self.time.iloc[np.asarray(rows)].to_numpy()


@dataclasses.dataclass
class SeriesSchema:
    """How a raw table becomes a numeric series: time, targets, features, encoding, repair.

    Attributes:
        time_column: the column holding time stamps (dates or numbers), a list of the columns
            whose whole numbers make them (year, month, day, hour, ...: `time_part_units`), or
            None.
        targets: the columns to forecast (numeric).
        features: the raw columns the model sees, numeric or categorical, in order.
        categories: for each one-hot encoded column, its categories in encoding order.
        fill: how missing or non-numeric values are repaired (`"ffill"`, `"interpolate"`), or
            None to refuse them.
        skipped_columns: columns left out of the default features, not numeric or with no
            value at all (reported, not silently dropped).
        fill_ends: what `fill` does with the rows it cannot repair, before a column's first
            value (and with `"interpolate"` after its last): `"drop"` them (reported),
            `"nearest"` (copy the nearest value) or `"refuse"`. The default here is seqlab
            0.1.0's behaviour, for schema files written without it; `infer` defaults to
            `"drop"`.
        dayfirst: whether the time column's dates of numbers only (`01/02/2020`) are read
            day first (`parse_dates`), as `infer` found them; None decides from each file
            (schema files written without it).
    """

    time_column: str | list | None
    targets: list
    features: list
    categories: dict = dataclasses.field(default_factory=dict)
    fill: str | None = None
    skipped_columns: list = dataclasses.field(default_factory=list)
    fill_ends: str = "refuse"
    dayfirst: bool | None = None

    @property
    def time_columns(self):
        """The time column(s) as a list (empty without a time column)."""
        if self.time_column is None:
            return []
        return [self.time_column] if isinstance(self.time_column, str) else list(self.time_column)

    @property
    def time_label(self):
        """The name of the time stamps in outputs (a forecast CSV): the time column, or "time"
        when several columns make them."""
        return self.time_column if isinstance(self.time_column, str) else "time"

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
        fill_ends="drop",
    ):
        """Chooses the schema for `frame` from the user's choices and the data.

        Args:
            frame: the raw DataFrame.
            time_column: the time column, or a list of columns that together make the time
                stamps (`["year", "month", "day", "hour"]`; a name with commas,
                `"year,month,day,hour"`, is split when no column has that name). None picks the
                first column when its values are dates (in at least `DATE_SHARE` of the rows:
                reading it then names the cells that are missing or not dates), else the columns
                named year and month (then day, hour, minute, second) when they hold whole
                numbers, else the series has no time column.
            targets: the columns to forecast; None means the only numeric feature column.
            features: the model's input columns; None means every numeric column besides time,
                plus the `categorical` ones.
            The file's row index (`row_index_column`) is left out of the time column, targets
            and features unless one of these names it.
            categorical: columns to one-hot encode (their categories are the values seen here).
            fill: None, "ffill" or "interpolate".
            source: the file, for error messages.
            fill_ends: what `fill` does with the rows it cannot repair (`FILL_ENDS`).

        Returns:
            The `SeriesSchema`.

        Raises:
            DataError: a named column is missing, a named feature is not numeric and not listed
                as categorical, or the target is ambiguous.
        """
        if fill is not None and fill not in FILL_METHODS:
            raise ValueError(f"fill must be one of {FILL_METHODS}. Received: fill={fill!r}")
        if fill_ends not in FILL_ENDS:
            raise ValueError(f"fill_ends must be one of {FILL_ENDS}. Received: "
                             f"fill_ends={fill_ends!r}")
        columns = [str(c) for c in frame.columns]
        frame = frame.set_axis(columns, axis=1)
        categorical = list(categorical or [])

        def require(names, what):
            for name in names:
                if name not in columns:
                    raise DataError(
                        f"{what} column {name!r} not found; the columns are: "
                        f"{listed(columns, COLUMNS_SHOWN)}",
                        path=source,
                    )

        time_columns = []
        for name in [time_column] if isinstance(time_column, str) else time_column or []:
            if name in columns or "," not in name:
                time_columns.append(name)
            else:
                time_columns.extend(part.strip() for part in name.split(",") if part.strip())
        # The row index `DataFrame.to_csv()` writes (`row_index_column`) is no time, target or
        # feature unless named: it hid the date column after it, and made the target ambiguous.
        index = row_index_column(frame)
        named = {*time_columns, *categorical, *(targets or []), *(features or [])}
        read = [c for c in columns if index is None or c != index or c in named]
        found_dayfirst = None  # the first column's reading, where it was found to be dates
        if not time_columns and len(read) > 1:
            looks_like_dates, reading = _date_reading(frame[read[0]])
            if looks_like_dates:
                time_columns, found_dayfirst = [read[0]], reading
            else:
                time_columns = _date_part_columns(frame, read)
        require(time_columns, "time")
        if len(time_columns) > 1:
            time_part_units(time_columns, source)
        require(categorical, "categorical")
        require(targets or [], "target")
        require(features or [], "feature")

        others = [c for c in read if c not in time_columns]
        skipped = []
        if features is None:
            features = []
            for name in others:
                # A column with no value at all (a trailing delimiter on every line) is no
                # feature: it would make the target ambiguous, then fail as all missing.
                if name in categorical or (_is_numeric_column(frame[name])
                                           and frame[name].notna().any()):
                    features.append(name)
                else:
                    skipped.append(name)
            if any(name not in categorical for name in features):
                # Left out, they were silently not read: an Excel file's "Temperatur" of
                # "100,50" went out and its whole-number "Menge" was forecast instead.
                for name in skipped:
                    found = _comma_numbers(frame[name])
                    if found is not None:
                        raise DataError(
                            f"column {name!r} holds numbers written with a comma (e.g. "
                            f"{quoted(found[1])} at line {_line(found[0])}), which are not "
                            "read: a point is the decimal mark and numbers have no thousands "
                            "separators; expected numbers such as 1234.5 (save the file so), "
                            "or the columns to read named with --features and --target",
                            path=source,
                        )
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
            if not numeric:
                raise DataError(
                    "no column holds numbers to forecast"
                    + "".join(f"; {name} does not ({_not_a_number(frame[name])})"
                              for name in skipped[:5])
                    + "; expected a column of numbers besides the time",
                    path=source,
                )
            if len(numeric) != 1:
                raise DataError(
                    "cannot tell which column to forecast among "
                    f"{listed(numeric, COLUMNS_SHOWN)}; name it with --target (or several, "
                    "forecast together: --target A B); for each column as a series of its own, "
                    "write the table long, one row per series and time (id, time, value)",
                    path=source,
                )
            targets = numeric
        for name in targets:
            if name in categorical or not _is_numeric_column(frame[name]):
                raise DataError(
                    f"target column {name!r} is not numeric ({_not_a_number(frame[name])}); "
                    "expected numbers to forecast",
                    path=source,
                )
        categories = {}
        for name in categorical:
            values = frame[name].dropna().astype(str)
            categories[name] = sorted(values.unique().tolist())
        dayfirst = found_dayfirst
        if (dayfirst is None and len(time_columns) == 1
                and not pd.api.types.is_numeric_dtype(frame[time_columns[0]])):
            column = frame[time_columns[0]]
            # Only dates of numbers only can be read two ways, alone or among other forms (a
            # long column parses slowly).
            dayfirst = bool(_numeric_date_fields(column)[0].notna().any()) and parse_dates(
                column, time_columns[0], source)[1]
        return cls(
            time_column=time_columns[0] if len(time_columns) == 1 else time_columns or None,
            targets=list(targets),
            features=list(features),
            categories=categories,
            fill=fill,
            skipped_columns=skipped,
            fill_ends=fill_ends,
            dayfirst=dayfirst,
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

        With `fill`, the rows it cannot repair (before a column's first value, and with
        `"interpolate"` after its last) are dropped, filled from the nearest value or refused as
        `fill_ends` says; `PreparedSeries.fill_report` and `.notes` say which.

        Args:
            frame: the raw DataFrame (from `read_csv` or `load_sunspots`).
            source: the file, for error messages.

        Returns:
            A `PreparedSeries`.

        Raises:
            DataError: a column is missing; missing or non-numeric values without `fill` (naming
                the column and the first lines); values `fill` cannot repair with
                `fill_ends="refuse"`, a column without any value, or no row left after dropping;
                a category not seen in training; a time column that is not in increasing order,
                or time columns that are not whole numbers making a date.
        """
        frame = frame.set_axis([str(c) for c in frame.columns], axis=1).reset_index(drop=True)
        needed = self.time_columns + self.features
        needed += [t for t in self.targets if t not in self.features]
        for name in needed:
            if name not in frame.columns:
                raise DataError(
                    f"column {name!r} not found; the columns are: "
                    f"{listed(frame.columns, COLUMNS_SHOWN)}",
                    path=source,
                )
        time, notes = None, []
        row_index = row_index_column(frame)
        if row_index in needed:  # named in training: read as any column
            row_index = None
        if row_index is not None:
            notes.append(row_index_note(frame, row_index))
        if len(self.time_columns) == 1:
            (name,) = self.time_columns
            time, note = _parse_time(frame[name], name, source, self.dayfirst)
            notes += [note] if note else []
        elif self.time_columns:
            time = _assemble_time(frame, self.time_columns, source)
            units = time_part_units(self.time_columns, source)
            parts = ", ".join(
                name if name.lower().removesuffix("s") == unit else f"{name} ({unit})"
                for name, unit in zip(self.time_columns, units)
            )
            first, last = _time_texts(time.iloc[[0, -1]])
            notes.append(f"time stamps from the columns {parts}: {first} to {last}")
        if time is not None:
            notes += _gap_notes(time)

        columns = {}
        for name in dict.fromkeys(self.features + self.targets):
            columns[name] = self._read_column(frame[name], name, source)
        start, stop, dropped = 0, len(frame), {}
        if self.fill is not None:
            start, stop, dropped = self._ends(columns, time, source)
        filled, filled_at_ends = {}, {}
        for name, values in columns.items():
            kept = values.iloc[start:stop].reset_index(drop=True)
            if kept.isna().any():
                filled[name] = int(kept.isna().sum())
                if self.fill_ends == "nearest":
                    present = np.flatnonzero(kept.notna().to_numpy())
                    ends = int(present[0])
                    if self.fill == "interpolate" and name not in self.categories:
                        ends += len(kept) - 1 - int(present[-1])
                    if ends:
                        filled_at_ends[name] = ends
                kept = self._repair(kept, name)
            columns[name] = kept

        inputs = {}
        for name in self.features:
            if name in self.categories:
                inputs.update(self._one_hot(columns[name], name, source, start))
            else:
                inputs[name] = columns[name]
        for name in self.targets:
            inputs.setdefault(name, columns[name])
        values = pd.DataFrame(inputs)[self.value_columns].astype("float64")
        if time is not None:
            time = time.iloc[start:stop].reset_index(drop=True)
        fill_report = None
        if filled or dropped:
            fill_report = {"method": self.fill, "filled_values": filled}
        if filled:
            notes.append(f"filled with {self.fill}: {filled}")
        if filled_at_ends:
            fill_report["filled_at_ends"] = filled_at_ends
            notes.append("of them copied from the nearest value at the ends of the series "
                         f"(--fill-ends nearest): {filled_at_ends}")
        if dropped:
            fill_report["dropped_rows"] = dropped
            notes.extend(_dropped_note(end, report, self.fill) for end, report in dropped.items())
        return PreparedSeries(values=values, time=time, fill_report=fill_report, source=source,
                              notes=notes, row_index=row_index)

    def _read_column(self, raw, name, source):
        """Column `name` as floats (strings for a categorical one), NaN where missing or not a
        number; without `fill`, a missing or non-numeric value is a `DataError`."""
        if name in self.categories:
            values = raw.astype("string")
            missing = np.flatnonzero(values.isna().to_numpy())
            if self.fill is None and len(missing):
                raise DataError(
                    f"column {name!r} has missing values at lines {_rows_text(missing)} "
                    f"({len(missing)} rows); a run trained with --fill ffill repairs them",
                    path=source,
                )
            return values
        values = parse_numbers(raw)
        extreme = np.flatnonzero((values.abs() > MAX_ABS_VALUE).to_numpy())  # inf too, not NaN
        if len(extreme):
            raise DataError(
                f"column {name!r} has values that are infinite or beyond +-{MAX_ABS_VALUE:g} at "
                f"lines {_rows_text(extreme, raw.iloc[extreme].tolist())}; expected finite "
                "numbers of at most that size (the model computes in float32)",
                path=source,
            )
        refuse_values_lost_in_float32(values.dropna(), f"column {name!r}", source)
        not_numbers = np.flatnonzero((values.isna() & raw.notna()).to_numpy())
        # --fill repairs what is not a number: "12,5" among "12.5"s is one, written so.
        comma = [row for row in not_numbers if _DECIMAL_COMMA.fullmatch(str(raw.iloc[row]))
                 ] if self.fill is not None else []
        if comma:
            raise DataError(
                f"column {name!r} has numbers written with a comma at lines "
                f"{_rows_text(comma, raw.iloc[comma].tolist())}, which --fill {self.fill} would "
                "replace as missing; expected numbers such as 1234.5 (a point is the decimal "
                "mark and numbers have no thousands separators)",
                path=source,
            )
        if self.fill is None:
            if len(not_numbers):
                raise DataError(
                    f"column {name!r} has non-numeric values at lines "
                    f"{_rows_text(not_numbers, raw.iloc[not_numbers].tolist())}; expected "
                    "numbers (a run trained with --fill ffill|interpolate treats them as "
                    "missing and repairs them)",
                    path=source,
                )
            missing = np.flatnonzero(raw.isna().to_numpy())
            if len(missing):
                raise DataError(
                    f"column {name!r} has missing values at lines {_rows_text(missing)} "
                    f"({len(missing)} rows); a run trained with --fill ffill or --fill "
                    "interpolate repairs them",
                    path=source,
                )
        return values

    def _ends(self, columns, time, source):
        """`(start, stop, dropped)`: the rows to keep, and what was dropped (`"first"` /
        `"last"` reports), after the rows `fill` cannot repair are handled as `fill_ends` says.

        `fill` cannot repair the rows before a column's first value, nor with "interpolate" the
        rows after a numeric column's last value (a category is always carried forward).
        """
        n_rows = len(next(iter(columns.values())))
        leading, trailing = {}, {}
        for name, values in columns.items():
            present = np.flatnonzero(values.notna().to_numpy())
            if not len(present):
                raise DataError(f"column {name!r} has no values; --fill {self.fill} needs at "
                                "least one to repair the others from", path=source)
            leading[name] = int(present[0])
            interpolated = self.fill == "interpolate" and name not in self.categories
            trailing[name] = n_rows - 1 - int(present[-1]) if interpolated else 0
            if self.fill_ends == "refuse" and (leading[name] or trailing[name]):
                rows = np.r_[np.arange(leading[name]), np.arange(n_rows - trailing[name], n_rows)]
                after = ", or after them to interpolate to" if trailing[name] else ""
                what = "category" if name in self.categories else "number"
                raise DataError(
                    f"column {name!r}: --fill {self.fill} cannot repair lines {_rows_text(rows)} "
                    f"(no value before them to carry or interpolate from{after}); expected a "
                    f"{what} there (--fill-ends drop drops these rows, --fill-ends nearest copies "
                    "the nearest value)",
                    path=source,
                )
        if self.fill_ends != "drop":
            return 0, n_rows, {}
        first_column = max(leading, key=leading.get)
        last_column = max(trailing, key=trailing.get)
        start, stop = leading[first_column], n_rows - trailing[last_column]
        if start >= stop:
            raise DataError(
                f"--fill {self.fill} --fill-ends drop leaves no rows: column {first_column!r} has "
                f"no value before line {_line(start)}, and column {last_column!r} none after "
                f"line {_line(stop - 1)}",
                path=source,
            )
        dropped = {}
        for end, rows, column in (("first", range(0, start), first_column),
                                  ("last", range(stop, n_rows), last_column)):
            if len(rows):
                dropped[end] = {
                    "rows": len(rows),
                    "lines": [_line(rows[0]), _line(rows[-1])],
                    "time": None if time is None else _time_span(time.iloc[[rows[0], rows[-1]]]),
                    "column": column,
                }
        return start, stop, dropped

    def _repair(self, values, name):
        """Fills the missing `values` of column `name` by `fill` (a category is carried
        forward: it cannot be interpolated), and with `fill_ends="nearest"` also its ends."""
        if self.fill == "ffill" or name in self.categories:
            repaired = values.ffill()
        else:
            repaired = values.interpolate(method="linear", limit_area="inside")
        if self.fill_ends == "nearest":
            repaired = repaired.ffill().bfill()
        return repaired

    def _one_hot(self, values, name, source, first_row):
        """One float column per known category of the (filled) strings `values`, whose first
        row is row `first_row` of the file."""
        known = self.categories[name]
        unknown = np.flatnonzero(~values.isin(known).to_numpy())
        if len(unknown):
            raise DataError(
                f"column {name!r} has categories not seen in training at lines "
                f"{_rows_text(unknown + first_row, values.iloc[unknown].tolist())}; known: "
                f"{', '.join(known)}",
                path=source,
            )
        return {f"{name}={c}": (values == c).astype("float64") for c in known}

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, config):
        """The schema of a `to_dict` (schema.json), its fields checked.

        Raises:
            ValueError: a field is missing, unknown or of the wrong kind (the message names the
                file, when `config` knows it as `source`, and the field).
        """
        where = _record_source(config, "schema")
        _check_record(config, where, required=("time_column", "targets", "features"),
                      optional=("categories", "fill", "skipped_columns", "fill_ends", "dayfirst"))
        for name in ("targets", "features", "skipped_columns"):
            if name in config and not _is_list_of(config[name], str):
                raise ValueError(f"{where}: the field {name!r} must be a list of column names. "
                                 f"Received: {config[name]!r}")
        if not config["targets"]:
            raise ValueError(f"{where}: the field 'targets' names no column")
        time_column = config["time_column"]
        if not (time_column is None or isinstance(time_column, str)
                or _is_list_of(time_column, str)):
            raise ValueError(f"{where}: the field 'time_column' must be a column name, a list of "
                             f"them or null. Received: {time_column!r}")
        categories = config.get("categories", {})
        if not (isinstance(categories, dict)
                and all(_is_list_of(known, str) for known in categories.values())):
            raise ValueError(f"{where}: the field 'categories' must map columns to lists of "
                             f"categories. Received: {categories!r}")
        if config.get("dayfirst") is not None and not isinstance(config["dayfirst"], bool):
            raise ValueError(f"{where}: the field 'dayfirst' must be true, false or null. "
                             f"Received: {config['dayfirst']!r}")
        for name, choices in (("fill", (None, *FILL_METHODS)), ("fill_ends", FILL_ENDS)):
            if name in config and config[name] not in choices:
                raise ValueError(f"{where}: the field {name!r} must be one of "
                                 f"{', '.join(map(str, choices))}. Received: {config[name]!r}")
        return cls(**config)


def _record_source(record, default):
    """The file a JSON record came from (`pipelines.common.read_json` records it), or
    `default`."""
    return getattr(record, "source", None) or default


def _is_list_of(value, kind):
    return isinstance(value, list) and all(isinstance(item, kind) and not isinstance(item, bool)
                                           for item in value)


def _check_record(record, where, required, optional=()):
    """`record` is a JSON object with the `required` fields and no others than `optional`."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object. Received: {type(record).__name__}")
    missing = [name for name in required if name not in record]
    if missing:
        raise ValueError(f"{where}: the field {missing[0]!r} is missing")
    unknown = sorted(set(record) - set(required) - set(optional))
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r}")


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
        # Names as text, as `fit` keeps them (a frame's numbered column 0 is "0").
        missing = [c for c in columns if str(c) not in self.columns]
        if missing:
            raise ValueError(f"column {missing[0]!r} is not one the scaler was fitted on: "
                             f"{self.columns}")
        index = [self.columns.index(str(c)) for c in columns]
        return np.asarray(self.offset)[index], np.asarray(self.scale)[index]

    def transform(self, values, columns=None):
        """Scales `values` (last axis = `columns`, default all columns)."""
        values, offset, scale = self._matched(values, columns)
        return (values - offset) / scale

    def inverse_transform(self, values, columns=None):
        """Maps scaled `values` (last axis = `columns`, default all columns) back to original
        units."""
        values, offset, scale = self._matched(values, columns)
        return values * scale + offset

    def _matched(self, values, columns):
        """`values` as float64 with the parameters of `columns`, one per entry of the last
        axis: a last axis of another length was broadcast against them (a one-target array
        came back with a column per fitted column, the target scaled by each)."""
        if isinstance(columns, str):
            columns = [columns]
        columns = list(self.columns if columns is None else columns)
        offset, scale = self._parameters(columns)
        values = np.asarray(values, dtype="float64")
        if values.ndim == 0 or values.shape[-1] != len(columns):
            raise ValueError(
                f"values of shape {values.shape} for the {len(columns)} columns "
                f"{columns}: expected a last axis of {len(columns)}, one entry per column "
                "(name the columns the values hold with `columns=`)")
        return values, offset, scale

    def parameters(self, columns):
        """`(offset, scale)` float32 arrays for `columns`, for scaling inside a graph."""
        offset, scale = self._parameters(columns)
        return offset.astype("float32"), scale.astype("float32")

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, config):
        """The scaler of a `to_dict` (scaler.json), its fields checked: one offset of at most
        `MAX_ABS_VALUE` in magnitude and one scale above 0 (at most twice that) per column.

        Raises:
            ValueError: naming the file (when `config` knows it as `source`) and the field.
        """
        where = _record_source(config, "scaler")
        _check_record(config, where, required=("method", "columns", "offset", "scale"))
        if config["method"] not in SCALER_METHODS:
            raise ValueError(f"{where}: the field 'method' must be one of "
                             f"{', '.join(SCALER_METHODS)}. Received: {config['method']!r}")
        if not _is_list_of(config["columns"], str) or not config["columns"]:
            raise ValueError(f"{where}: the field 'columns' must be a list of column names. "
                             f"Received: {config['columns']!r}")
        for name in ("offset", "scale"):
            values = config[name]
            if not (_is_list_of(values, (int, float)) and len(values) == len(config["columns"])
                    and all(np.isfinite(values))):
                raise ValueError(
                    f"{where}: the field {name!r} must hold one finite number per column "
                    f"({len(config['columns'])}). Received: {values!r}")
        # Fitted on values within +-MAX_ABS_VALUE: a range or a standard deviation (> 0, at
        # most twice that) and a minimum or a mean (at most that in magnitude).
        if not all(0 < value <= 2 * MAX_ABS_VALUE for value in config["scale"]):
            raise ValueError(f"{where}: the field 'scale' must hold numbers above 0 and at most "
                             f"{2 * MAX_ABS_VALUE:g}. Received: {config['scale']!r}")
        if not all(abs(value) <= MAX_ABS_VALUE for value in config["offset"]):
            raise ValueError(f"{where}: the field 'offset' must hold numbers of at most "
                             f"{MAX_ABS_VALUE:g} in magnitude. Received: {config['offset']!r}")
        return cls(**config)


def _is_whole_number(value):
    """A Python or numpy integer, or a float of a whole value (not a bool, None or NaN)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    return isinstance(value, (float, np.floating)) and math.isfinite(value) \
        and value == int(value)


def _refuse_scaled_beyond_float32(names, scaled, source):
    """Refuses scaled values that float32 windows would hold as inf: the training rows'
    scale far below a later value's (numpy only warned of the overflow in its cast)."""
    beyond = np.argwhere(np.abs(scaled) > np.finfo("float32").max)
    if beyond.size:
        row, column = (int(k) for k in beyond[0])
        raise DataError(
            f"column {names[column]!r} at row {row} scales to {scaled[row, column]:.3g} (its "
            "value less the training rows' offset, over their scale), beyond float32's range: "
            "the windows would hold inf; expected scaled values within about 3.4e38 (rescale "
            "the column, or fit the scaler on rows that span its range)", path=source)


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
    split by time first; the scaler is fitted on the training rows only. A window starting at row
    `s` holds the inputs of rows `s .. s+lookback-1` and the targets of rows
    `s+lookback .. s+lookback+horizon-1`.

    Splits apply to the TARGETS (as forecasters evaluate): a window belongs to the split that
    holds all its target rows, and its lookback may reach back into earlier splits (those rows
    are known at forecast time), never into a later one. So every validation and test row is
    forecast (with horizon 1, exactly once), and a short test split is not wasted on lookback.
    `split_targets=False` gives seqlab 0.1.0's windows, cut inside each split (for its runs).

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
        split_targets: True (default): splits hold the windows' targets; False: windows lie
            wholly inside their split (seqlab 0.1.0).

    Raises:
        DataError: the training split is shorter than one window, or the validation or test
            split shorter than one horizon (the message says how many rows the series needs).

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
        split_targets=True,
    ):
        for name, value in (("lookback", lookback), ("horizon", horizon), ("stride", stride),
                            ("batch_size", batch_size)):
            if not _is_whole_number(value) or value < 1:
                raise ValueError(f"{name} must be a positive integer. Received: {name}={value!r}")
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"frame must be a pandas DataFrame of named columns. Received: "
                            f"{type(frame).__name__} (pd.DataFrame({{'y': values}}) makes one)")
        self.lookback = int(lookback)
        self.horizon = int(horizon)
        self.stride = int(stride)
        self.batch_size = int(batch_size)
        self.shuffle_seed = shuffle_seed
        self.split_targets = bool(split_targets)
        # One name is one column (a string was read as a list of its letters).
        self.targets = [targets] if isinstance(targets, str) else list(targets)
        self.features = (list(frame.columns) if features is None
                         else [features] if isinstance(features, str) else list(features))
        if not self.targets:
            raise ValueError("targets must name at least one column to forecast. Received: "
                             "targets=[]")
        for name in self.targets + self.features:
            if name not in frame.columns:
                raise ValueError(f"column {name!r} is not in the frame: {list(frame.columns)}")
        # Columns go by their names as text (the scaler keeps them so, for its JSON): a frame
        # of numbered columns (`pd.DataFrame(array)`) failed looking 0 up among "0", "1".
        names = [str(name) for name in frame.columns]
        if len(set(names)) < len(names):
            raise ValueError(f"the frame's column names must differ as text. Received: "
                             f"{list(frame.columns)}")
        self.targets = [str(name) for name in self.targets]
        self.features = [str(name) for name in self.features]
        self.frame = frame.reset_index(drop=True).set_axis(names, axis=1)
        used = list(dict.fromkeys(self.features + self.targets))
        text = [name for name in used if not pd.api.types.is_numeric_dtype(self.frame[name])]
        if text:
            raise DataError(f"column {text[0]!r} is not numeric ({self.frame[text[0]].dtype}); "
                            "expected float columns (encode categories first, as "
                            "SeriesSchema.prepare does)", path=source)
        values = self.frame[used].to_numpy(dtype="float64")
        bad = np.argwhere(~np.isfinite(values))
        if bad.size:  # one NaN made the scaler's offset NaN, and so every window of its column
            row, column = (int(k) for k in bad[0])
            raise DataError(f"column {used[column]!r} holds {values[row, column]} at row {row}; "
                            "expected finite numbers (a SeriesSchema with fill= repairs "
                            "missing values)", path=source)
        self.bounds = split_bounds(len(frame), val_fraction, test_fraction)
        self._check_lengths(val_fraction, test_fraction, source)
        train_start, train_end = self.bounds["train"]
        if isinstance(scaler, Scaler):
            self.scaler = scaler
        else:
            self.scaler = Scaler.fit(scaler, self.frame[used].iloc[train_start:train_end])
        self._inputs = self.scaler.transform(self.frame[self.features].to_numpy(), self.features)
        self._targets = self.scaler.transform(self.frame[self.targets].to_numpy(), self.targets)
        for names, scaled in ((self.features, self._inputs), (self.targets, self._targets)):
            _refuse_scaled_beyond_float32(names, scaled, source)

    @property
    def window_size(self):
        """Rows one window spans: lookback + horizon."""
        return self.lookback + self.horizon

    def _rows_needed(self, split):
        """Rows `split` must hold for one window: a whole window for the training split (and
        for every split with `split_targets=False`), one horizon of targets otherwise."""
        return self.window_size if split == "train" or not self.split_targets else self.horizon

    def _check_lengths(self, val_fraction, test_fraction, source):
        def short_splits(bounds):
            return [(name, b - a) for name, (a, b) in bounds.items()
                    if not (name == "val" and val_fraction == 0)
                    and b - a < self._rows_needed(name)]

        short = short_splits(self.bounds)
        if not short:
            return
        split, rows = short[0]
        # The split bounds round: find the shortest series these fractions accept. A split of
        # n rows holds at most n * share + 1 rows, so none shorter than (rows - 1) / share
        # does: the search starts there (a long window would otherwise take a step per row).
        shares = {"train": 1 - val_fraction - test_fraction, "val": val_fraction,
                  "test": test_fraction}
        needed = max(len(self.frame) + 1, *(
            int((self._rows_needed(name) - 1) / share) - 1
            for name, share in shares.items() if share > 0))
        while short_splits(split_bounds(needed, val_fraction, test_fraction)):
            needed += 1
        whole_window = self._rows_needed(split) == self.window_size
        what = (f"one window needs lookback + horizon = {self.lookback} + {self.horizon} = "
                f"{self.window_size} rows" if whole_window
                else f"it must hold one horizon = {self.horizon} of forecast targets")
        # A split of targets only is longer with a larger share, not a shorter lookback.
        sizes = (("lookback", self.lookback), ("horizon", self.horizon)) if whole_window \
            else (("horizon", self.horizon),)
        shorter = " or ".join(f"--{name}" for name, value in sizes if value > 1)
        remedies = [f"a shorter {shorter}"] if shorter else []
        if split != "train":
            remedies.append(f"a larger --{split}-fraction")
        raise DataError(
            f"the series is too short: the {split} split has {rows} rows, but {what}; with "
            f"these split fractions the series needs at least {needed} rows (it has "
            f"{len(self.frame)})" + (f", or use {' or '.join(remedies)}" if remedies else ""),
            path=source,
        )

    def window_starts(self, split, stride=None):
        """Row indices (into the whole series) where the windows of `split` start, one every
        `stride` rows (default: the generator's `stride` for "train", else 1)."""
        if split not in self.bounds:
            raise ValueError(f"split must be one of {', '.join(map(repr, self.bounds))}. "
                             f"Received: split={split!r}")
        start, stop = self.bounds[split]
        if stride is None:
            stride = self.stride if split == "train" else 1
        if self.split_targets:
            # The first target row of a window is s + lookback: from the split's first row.
            start = max(start - self.lookback, 0)
        return np.arange(start, stop - self.window_size + 1, stride)

    def _starts(self, split, limit):
        """The window starts of `split`: all, or at most `limit` evenly spaced (`arrays`)."""
        if limit is not None and (int(limit) != limit or limit < 2):
            raise ValueError(f"limit must be an integer of at least 2. Received: limit={limit}")
        starts = self.window_starts(split)
        if limit is not None and len(starts) > limit:
            # Distinct positions, as there are more starts than positions.
            starts = starts[np.linspace(0, len(starts) - 1, int(limit)).round().astype(int)]
        return starts

    def arrays(self, split, limit=None):
        """`(inputs, targets)` float32 arrays of the windows of `split`, in scaled units: all
        of them, or at most `limit` evenly spaced over the split (its first and last window
        included, in time order).

        Raises:
            DataError: the windows would take more than `MAX_WINDOW_BYTES` of memory (every
                window holds its own copy of `lookback` rows; `dataset` gathers them batch by
                batch instead).
        """
        starts = self._starts(split, limit)
        values = len(starts) * (self.lookback * len(self.features)
                                + self.horizon * len(self.targets))
        # The row indices (int64) and the gathered float64 values, then the float32 copy.
        if values * 20 > MAX_WINDOW_BYTES:
            raise DataError(
                f"the {len(starts):,} {split} windows of {self.lookback} rows x "
                f"{len(self.features)} inputs would take {_size_text(values * 20)} of memory "
                f"at once (at most {_size_text(MAX_WINDOW_BYTES)}); expected a shorter "
                "--lookback, a larger --stride or fewer rows (or --model gru, lstm, rnn or "
                "transformer, which read them batch by batch)")
        return self._gather(starts)

    def chunks(self, split, size=None):
        """`arrays(split)` in chunks of at most `size` windows (default: `chunk_windows`, about
        `CHUNK_VALUES` values a chunk), in time order: what a sum over the windows (the
        least-squares fit's normal equations) reads, without every window of a long series in
        memory at once."""
        starts = self.window_starts(split)
        size = size or chunk_windows(self.lookback * len(self.features)
                                     + self.horizon * len(self.targets))
        for begin in range(0, len(starts), size):
            yield self._gather(starts[begin:begin + size])

    def _gather(self, starts):
        """`(inputs, targets)` float32 arrays of the windows starting at the rows `starts`."""
        return (window_rows(self._inputs, starts, np.arange(self.lookback)),
                window_rows(self._targets, starts, self.lookback + np.arange(self.horizon)))

    def dataset(self, split, shuffle=None, limit=None):
        """A batched `tf.data.Dataset` of `(window, target)` for `split`.

        Args:
            split: `"train"`, `"val"` or `"test"`.
            shuffle: shuffle the windows each epoch; default True for `"train"` only.
            limit: at most this many windows, evenly spaced over the split (`arrays`); None:
                every window.
        """
        # The windows are gathered batch by batch from the scaled rows, not stored: a window
        # of `lookback` rows per start would hold every row `lookback` times over.
        starts = self._starts(split, limit)
        inputs = tf.constant(self._inputs.astype("float32"))
        targets = tf.constant(self._targets.astype("float32"))
        input_offsets = tf.range(self.lookback, dtype=tf.int64)
        target_offsets = tf.range(self.lookback, self.lookback + self.horizon, dtype=tf.int64)

        def gather(batch_starts):
            return (tf.gather(inputs, batch_starts[:, None] + input_offsets),
                    tf.gather(targets, batch_starts[:, None] + target_offsets))

        dataset = tf.data.Dataset.from_tensor_slices(starts.astype("int64"))
        if split == "train" if shuffle is None else shuffle:
            dataset = dataset.shuffle(
                len(starts), seed=self.shuffle_seed, reshuffle_each_iteration=True
            )
        return (dataset.batch(self.batch_size).map(gather, num_parallel_calls=tf.data.AUTOTUNE)
                .prefetch(tf.data.AUTOTUNE))

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


def _size_text(size):
    """A number of bytes as a person reads it: `4.0 GiB`, `12.5 MiB`."""
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.1f} MiB"


def _detrended(values):
    """`values` (1-D floats) less their least-squares straight line."""
    values = np.asarray(values, dtype="float64")
    if len(values) < 3:  # no line to fit (too short a series is refused later, with its length)
        return values - values.mean() if len(values) else values
    steps = np.arange(len(values))
    return values - np.polyval(np.polyfit(steps, values, 1), steps)


# Detrended values whose root mean square is at most this share of the series' largest
# magnitude are the rounding left by detrending a constant (or a straight line): no season.
# That rounding measured at most 3.3 units in the last place (float64's 2.2e-16 of the
# magnitude; 30 to 1,000,000 values of 1 to 1e15); this is about 22 of them, so that a season
# of 1e-14 of the level (a swing of 80 on values near 9e14, whose float64 spacing is 0.125)
# is found. At 1e-13 it was not.
CONSTANT_SHARE = 5e-15


def _autocorrelation(values, max_lag, level=None):
    """`acf[k]`, k = 0..max_lag, of `values` (acf[0] = 1; all 0 beyond lag 0 when `values` are
    constant up to rounding: their root mean square at most `CONSTANT_SHARE` of `level`, the
    largest magnitude of the series before detrending, default of `values` themselves):
    `sum(values[:-k] * values[k:]) / sum(values ** 2)`, computed with one FFT, so that long
    series cost `n log n`, not `n * max_lag`. Scale-free: the values are divided by their
    largest magnitude first, so a series in tiny units (1e-7) has the season it would have
    in any other unit, and squares of values below 1e-154 do not underflow to 0."""
    values = np.asarray(values, dtype="float64")
    largest = np.max(np.abs(values)) if len(values) else 0.0
    level = largest if level is None else level
    if not largest > 0:  # all 0 (or NaN): nothing to correlate
        return np.r_[1.0, np.zeros(max_lag)]
    values = values / largest
    size = 1 << (2 * len(values) - 1).bit_length()
    spectrum = np.fft.rfft(values, size)
    sums = np.fft.irfft(spectrum * np.conj(spectrum), size)[: max_lag + 1]
    if sums[0] <= (CONSTANT_SHARE * level / largest) ** 2 * len(values):
        return np.r_[1.0, np.zeros(max_lag)]
    return sums / sums[0]


def _detrended_autocorrelation(values, max_lag):
    """`_autocorrelation` of `values` less their straight line, "constant" judged against the
    largest magnitude of `values` themselves (the line's rounding is relative to it)."""
    values = np.asarray(values, dtype="float64")
    level = np.max(np.abs(values)) if len(values) else 0.0
    return _autocorrelation(_detrended(values), max_lag, level)


# A peak is a season only when its autocorrelation r_k clears the noise: more than z of
# Bartlett's standard errors, sqrt((1 + 2 (r_1^2 + ... + r_{k-1}^2)) / n), the test the Theta
# method (R's forecast::thetaf, statsforecast) applies to the one lag the calendar names. Here
# the highest of several peaks is taken, so the level is split among them (Bonferroni): z is the
# normal quantile of 1 - SEASON_PEAK_LEVEL / peaks. At a single level of 5 % per peak, 83 % of
# white-noise series of 300 rows had a "season"; with the split, 2 %.
SEASON_PEAK_LEVEL = 0.05


# Bartlett's bound assumes light tails. A few outlying values (spikes of a sensor, the rare
# non-zero counts of intermittent demand) make peaks wherever two of them lie a lag apart: of
# 300 rows of noise with 2 % spikes, 69 % had a "season" by that bound alone. So a peak must
# also rise above the highest autocorrelation (at any lag) that the same values reach when
# shuffled, which keeps their distribution and loses their order: above the shuffles' value
# of rank ceil((k + 1)(1 - SEASON_PEAK_LEVEL)) from the lowest of k (`SEASON_SHUFFLES`: of 99,
# the fifth highest; fewer above `SEASON_SHUFFLE_ROWS` rows, where each costs an FFT of the
# series: of 19, the highest), a test at SEASON_PEAK_LEVEL whatever the values' distribution.
SEASON_SHUFFLES, SEASON_SHUFFLES_LONG, SEASON_SHUFFLE_ROWS = 99, 19, 65536


@dataclasses.dataclass(frozen=True)
class SeasonPeak:
    """The highest autocorrelation peak of a series: its lag, autocorrelation, the noise bound
    at that lag (`SEASON_PEAK_LEVEL`), what the same values shuffled reach (`shuffled`, where
    the peak clears the bound: `SEASON_SHUFFLES`) and whether it clears both. `multiple`: the
    longer lag the highest peak was at, where that peak is a multiple of this one
    (`season_peak`)."""

    lag: int
    correlation: float
    bound: float
    multiple: int | None = None
    shuffled: float | None = None

    @property
    def significant(self):
        return self.correlation > self.bound and (self.shuffled is None
                                                  or self.correlation > self.shuffled)


def _shuffled_bound(detrended, max_lag, level):
    """The highest autocorrelation at lags 2..`max_lag` of `detrended` shuffled that a peak must
    exceed (see `SEASON_SHUFFLES`; a fixed seed: the same series gets the same answer)."""
    shuffles = (SEASON_SHUFFLES if len(detrended) <= SEASON_SHUFFLE_ROWS
                else SEASON_SHUFFLES_LONG)
    generator = np.random.default_rng(0)
    highest = sorted(
        np.max(_autocorrelation(generator.permutation(detrended), max_lag, level)[2:])
        for _ in range(shuffles))
    return float(highest[math.ceil((shuffles + 1) * (1 - SEASON_PEAK_LEVEL)) - 1])


def season_peak(values, max_lag=None):
    """The `SeasonPeak` `estimate_season` chooses from, or None when there is no peak at all.

    The highest peak that clears its noise bound, or the season it is a multiple of
    (`_season_period`) where that clears it; when none does, the highest peak (not
    significant: `estimate_season` then answers 1). A peak that clears the bound is compared
    with what the values shuffled reach too (`_shuffled_bound`).
    """
    values = np.asarray(values, dtype="float64")
    max_lag = min(max_lag or len(values) // 3, len(values) - 2)
    if max_lag < 3:
        return None
    # `_detrended_autocorrelation`, with the detrended values kept for the shuffles.
    detrended = _detrended(values)
    level = np.max(np.abs(values))
    acf = _autocorrelation(detrended, max_lag + 1, level)
    lags = np.arange(2, max_lag + 1)
    is_peak = (acf[lags] > 0) & (acf[lags] >= acf[lags - 1]) & (acf[lags] >= acf[lags + 1])
    peaks = lags[is_peak]
    negative = np.flatnonzero(acf < 0)
    if len(negative) and (peaks > negative[0]).any():
        peaks = peaks[peaks > negative[0]]
    if not len(peaks):
        return None
    # bound[k] for k = 0..max_lag: Bartlett's standard error of r_k from r_1..r_{k-1}.
    squares = np.concatenate([[0.0, 0.0], np.cumsum(acf[1:max_lag] ** 2)])
    z = statistics.NormalDist().inv_cdf(1 - SEASON_PEAK_LEVEL / len(peaks))
    bound = z * np.sqrt((1 + 2 * squares) / len(values))
    significant = peaks[acf[peaks] > bound[peaks]]
    candidates = significant if len(significant) else peaks
    lag = int(candidates[np.argmax(acf[candidates])])
    period = _season_period(acf, is_peak, lag)
    if not acf[period] > bound[period]:  # nothing clears the noise: the highest peak, as found
        period = lag
    shuffled = (_shuffled_bound(detrended, max_lag, level)
                if acf[period] > bound[period] else None)
    return SeasonPeak(period, float(acf[period]), float(bound[period]),
                      multiple=lag if period != lag else None, shuffled=shuffled)


def _season_period(acf, is_peak, lag):
    """The period of which the peak at `lag` is a multiple: of the divisors `d`
    of `lag` whose every multiple up to `lag` is a peak (`is_peak[k - 2]` for lag k) and whose
    autocorrelation is at least `lag`'s, the one with the highest (the shortest of equals);
    `lag` itself where none is.

    The highest peak after the autocorrelation first turns negative may be a multiple of the
    season, whose own peak came before that: a daily series without dates with a weekly cycle
    and days that persist (each day's value is much like the last, so the autocorrelation first
    turns negative only after the week) peaks at 7, 14 and 21, and the peak kept was 21, not 7;
    a quarterly one 4 and 8 (8 kept). Its peaks at every multiple are what a noise bump before
    the first negative value lacks, and a season's autocorrelation is the highest at one
    season: where a multiple's is higher (a monthly series whose peak at 6 is half a year's
    swing, at 12 all of it: 12, whether the peak found was at 12 or at 84), the multiple is
    kept. A season whose peaks drift off its exact multiples (half-hourly data peaking at 47,
    not 48) keeps the peak found.
    """
    periods = [period for period in range(2, lag // 2 + 1)
               if lag % period == 0 and acf[period] >= acf[lag]
               and all(is_peak[k - 2] for k in range(period, lag, period))]
    return max(periods, key=lambda period: (acf[period], -period), default=lag)


def estimate_season(values, max_lag=None):
    """The lag of the highest significant autocorrelation peak of `values`, or 1 without one.

    A peak is a lag `k >= 2` whose autocorrelation is positive and at least that of both
    neighbours. A straight-line trend is removed first (a trend alone would make the
    autocorrelation decay slowly and hide the peaks). Peaks after the autocorrelation first drops
    below zero are preferred: before that the curve is still decaying from lag 0, and its bumps
    are short-term noise (daily temperatures have bumps at 12 and 18 days that are higher than the
    yearly peak), unless the peak kept is a multiple of one of them (`_season_period`: a weekly
    cycle in days that persist peaks at 7, 14 and 21, and its season is 7). A peak counts only
    when it clears the noise (`SEASON_PEAK_LEVEL`): in 100 rows of white noise some lag always
    has the highest positive autocorrelation (the yearly counts of great inventions had a
    "season" of 7 years, Lake Huron's levels one of 23). Only periods up
    to a third of the rows are searched by default: a longer one repeats fewer than three times,
    and its autocorrelation rests on too few pairs of rows (an hourly series of 43,800 rows once
    gave a "season" of 10,152 rows).

    Args:
        values: a 1-D array (the training split of the target).
        max_lag: the longest period considered; default a third of the series length.

    Returns:
        The estimated season length in rows (1 means no seasonality found).
    """
    peak = season_peak(values, max_lag)
    return peak.lag if peak is not None and peak.significant else 1


# The season a regular spacing of time stamps implies: (spacing, season, stamps, cycle).
_CALENDAR_SEASONS = (
    (pd.Timedelta(days=1), 7, "daily time stamps", "a week"),
    (pd.Timedelta(weeks=1), 52, "weekly time stamps", "a year"),
)
# Months and quarters vary in length: a spacing within these days counts as one.
_MONTH_DAYS, _QUARTER_DAYS = (28, 31), (89, 92)
# The share of the steps that must have the spacing for the time stamps to count as regular.
_REGULAR_SHARE = 0.9


def _duration_text(spacing):
    for unit, name in ((pd.Timedelta(hours=1), "hour"), (pd.Timedelta(minutes=1), "minute"),
                       (pd.Timedelta(seconds=1), "second")):
        if spacing % unit == pd.Timedelta(0):
            count = spacing // unit
            return f"{count} {name}s" if count > 1 else name
    return str(spacing)


def calendar_season(time):
    """`(season, stamps, cycle)` that regularly spaced dated time stamps imply, or None.

    Hourly time stamps give 24 (a day), other spacings that divide a day the steps of a day (15
    minutes: 96), daily 7 (a week; business days, without weekends, 5), weekly 52, monthly 12,
    quarterly 4 (a year). The stamps count as regular when at least 90 % of their steps have the
    median spacing (any 28-31 days for months, 89-92 for quarters). Yearly, irregular or numeric
    time stamps have no calendar season.

    Args:
        time: a Series of time stamps (or None).

    Returns:
        `(season, stamps, cycle)`, e.g. `(24, "hourly time stamps", "a day")`, or None.
    """
    if time is None or len(time) < 3 or not pd.api.types.is_datetime64_any_dtype(time):
        return None
    stamps = pd.Series(pd.DatetimeIndex(time))
    steps = stamps.diff().iloc[1:]
    spacing = steps.median()
    day = pd.Timedelta(days=1)

    def share(low, high=None):
        return float(steps.between(low, high if high is not None else low).mean())

    if pd.Timedelta(0) < spacing < day and day % spacing == pd.Timedelta(0):
        if share(spacing) < _REGULAR_SHARE:
            return None
        if spacing == pd.Timedelta(hours=1):
            return 24, "hourly time stamps", "a day"
        return int(day // spacing), f"time stamps {_duration_text(spacing)} apart", "a day"
    if spacing == day and (stamps.dt.dayofweek < 5).all() and (steps == 3 * day).any():
        if float(steps.isin([day, 3 * day]).mean()) >= _REGULAR_SHARE:
            return 5, "business-day time stamps", "a week"
        return None
    for regular, season, stamps, cycle in _CALENDAR_SEASONS:
        if spacing == regular:
            return (season, stamps, cycle) if share(spacing) >= _REGULAR_SHARE else None
    for (low, high), season, stamps in ((_MONTH_DAYS, 12, "monthly time stamps"),
                                        (_QUARTER_DAYS, 4, "quarterly time stamps")):
        if low * day <= spacing <= high * day:
            regular = share(low * day, high * day) >= _REGULAR_SHARE
            return (season, stamps, "a year") if regular else None
    return None


def choose_season(values, time=None, name=None):
    """`(season, where it came from)` for the seasonal-naive baseline, from the training rows.

    The calendar's season (`calendar_season`: hourly time stamps 24, daily 7, weekly 52, monthly
    12, quarterly 4) when it fits at least three times in the training rows and their
    autocorrelation at that lag is positive (a daily series with a 12-day cycle is not weekly);
    for time stamps within a day, the week (168 hours) instead where it fits three times and
    its autocorrelation is the higher (a weekend unlike the weekdays);
    else the highest autocorrelation peak that clears the noise among the periods up to a third
    of the training rows (`estimate_season`), or 1 (the seasonal naive is then the naive
    forecast) without one.

    Args:
        values: the training rows of the target (1-D).
        time: their time stamps, or None.
        name: the target's name, for the description.

    Returns:
        `(season, description)`, e.g. `(24, "from the hourly time stamps (24 a day)")` or
        `(11, "estimated from the autocorrelation of SUNACTIVITY (train split)")`.

    Example:

    >>> hours = pd.Series(pd.date_range("2024-01-01", periods=24 * 60, freq="h"))
    >>> choose_season(np.sin(2 * np.pi * np.arange(len(hours)) / 24), hours)
    (24, 'from the hourly time stamps (24 a day)')
    """
    values = np.asarray(values, dtype="float64")
    calendar = calendar_season(time)
    aside = ""
    if calendar is not None:
        season, stamps, cycle = calendar
        if season > len(values) // 3:
            aside = (f"; the {stamps} suggest {season}, more than a third of the {len(values)} "
                     "training rows")
        else:
            # Time of day repeats within a week that may repeat more strongly (weekends): the
            # cycle whose autocorrelation is higher, from one autocorrelation up to the week.
            week = 7 * season
            weekly = cycle == "a day" and week <= len(values) // 3
            correlation = _detrended_autocorrelation(values, week if weekly else season)
            if weekly and correlation[week] > max(correlation[season], 0):
                return week, (f"from the {stamps} ({week} a week: its autocorrelation "
                              f"{correlation[week]:.2f} is above the day's, "
                              f"{correlation[season]:.2f} at {season})")
            if correlation[season] > 0:
                return season, f"from the {stamps} ({season} {cycle})"
            aside = (f"; the {stamps} suggest {season}, but the autocorrelation there is "
                     f"{correlation[season]:.2f}")
    peak = season_peak(values)
    what = f"the autocorrelation of {name}" if name else "the autocorrelation"
    if peak is not None and peak.significant:
        multiple = ""
        if peak.multiple is not None:
            lags = [str(lag) for lag in range(peak.lag, peak.multiple + 1, peak.lag)]
            listed = (f"{', '.join(lags[:-1])} and {lags[-1]}" if len(lags) <= 4
                      else f"every multiple of {peak.lag} up to {peak.multiple}")
            multiple = f"; peaks at {listed}: a period of {peak.lag}"
        return peak.lag, f"estimated from {what} (train split{multiple}){aside}"
    if peak is None:
        why = "no peak"
    elif peak.correlation > peak.bound:  # clear of Bartlett's bound, not of the shuffles'
        why = (f"its highest peak, {peak.correlation:.2f} at lag {peak.lag}, is no higher than "
               f"the same values shuffled reach ({peak.shuffled:.2f}: chance, or a few "
               "outlying values, can make such a peak)")
    else:
        why = (f"its highest peak, {peak.correlation:.2f} at lag {peak.lag}, is within the "
               f"noise (bound {peak.bound:.2f})")
    return 1, (f"estimated from {what} (train split): {why}, so the seasonal naive is the naive "
               f"forecast{aside}")


def _gap_notes(time):
    """What `data.panel.stamp_gaps` finds in one series' increasing time stamps (a pandas
    Series of dates, as `_parse_time` reads them, or of numbers), as summary lines: rows are
    read one step apart, so a missing stamp shifts the season's phase after it."""
    from seqlab.data.panel import stamp_gaps

    time = time.to_numpy()
    calendar = None
    if np.issubdtype(time.dtype, np.datetime64):
        frequency = calendar_frequency(time)
        if frequency is not None and not isinstance(pd.tseries.frequencies.to_offset(frequency),
                                                    pd.offsets.Tick):
            calendar = frequency  # months, quarters, years, business days: unequal steps
    elif not np.issubdtype(time.dtype, np.number):
        return []
    return [f"{note} (rows are read one step apart)"
            for note in stamp_gaps(time, calendar=calendar)[1]]


# `calendar_frequency`: the stretches of this many stamps in which it looks for a frequency
# where a gap hides the whole series' one, and at most this many stretches (from the end).
_STRETCH = 8
_STRETCHES = 64


def calendar_frequency(stamps):
    """The calendar frequency of increasing date stamps (a pandas alias: "MS", "B", "h"), or
    None for irregular ones. pandas infers none where one stamp is missing (a month of a
    monthly series, a holiday of business days), and a fixed step of the most common length
    then drifted (31 days from a month start: 2020-03-03, 2020-04-03, ...; business days into
    weekends): the frequency of the gap-free stretches is taken where every stamp is on it."""
    stamps = pd.DatetimeIndex(stamps)
    if len(stamps) < 3:
        return None
    frequency = pd.infer_freq(stamps)
    if frequency is not None:
        return frequency
    found = collections.Counter()
    for end in range(len(stamps), _STRETCH - 1, -(_STRETCH // 2))[:_STRETCHES]:
        found[pd.infer_freq(stamps[end - _STRETCH:end])] += 1
    found.pop(None, None)
    if not found:
        return None
    frequency = found.most_common(1)[0][0]
    offset = pd.tseries.frequencies.to_offset(frequency)
    if isinstance(offset, pd.offsets.Tick):
        # A fixed step (hours, days): every stamp is on it. (Checking each one took 1.8 s for a
        # million hourly stamps; stamps of a calendar offset, months or business days, are
        # seldom that many, and a range of the offset's dates to compare them with at once
        # would span any gap between them and could fail in a time zone.)
        return frequency
    return frequency if all(offset.is_on_offset(stamp) for stamp in stamps) else None


def future_times(time, horizon, like=None):
    """The `horizon` time stamps after the end of `time` (dates or numbers), or None.

    Dates continue with the frequency pandas infers (monthly stays on month starts); irregular
    dates and numbers continue with their most common step. `like`: another series of the same
    kind whose frequency or step is taken instead (a series too short to have its own).
    """
    if time is None:
        return None
    like = time if like is None else like
    last = time.iloc[-1]
    if pd.api.types.is_datetime64_any_dtype(like):
        frequency = calendar_frequency(like)
        step = (pd.tseries.frequencies.to_offset(frequency) if frequency is not None
                else like.diff().mode().iloc[0])
        return pd.DatetimeIndex([last + step * k for k in range(1, horizon + 1)])
    step = like.diff().mode().iloc[0]
    values = last + step * np.arange(1, horizon + 1)
    return values.astype(int) if np.all(values == np.round(values)) else values


def future_time_labels(time, horizon):
    """The `horizon` time stamps after the end of `time` as CSV text ("2020-05-01", or with the
    time of day when the data's or the future stamps have one, so an hourly forecast that
    starts at midnight still shows "00:00:00"; numbers as they are), or None without a time
    column."""
    times = future_times(time, horizon)
    if isinstance(times, pd.DatetimeIndex):
        stamps = pd.concat([pd.Series(time), pd.Series(times)], ignore_index=True)
        return _time_texts(stamps).iloc[-horizon:].tolist()
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
