"""Whether a table is one series or a long table of many, from its time stamps (`find_id_column`).

A long table (one row per series and time, the series named in a column: statsforecast's
`unique_id, ds, y`, a store's sales by `store, date, sales`) read as one series would put every
series end to end, one after the other, and forecast that. Its time stamps tell it apart: they
repeat in the table, once a series, and never among the rows of one series.

Imports neither TensorFlow nor the readers of `data.timeseries`, so that the command line can
look before the run starts (`find_id_column_in_file`).
"""

import dataclasses
import warnings

import numpy as np
import pandas as pd

# The share of a column's cells that must hold dates for it to be taken as a time column when
# none is named. Below 1, so that a few cells that are not (an empty one, a typo, a
# spreadsheet's "Total" row) do not quietly turn the time stamps into a column left out:
# reading the column then names them, as it does for a time column named.
DATE_SHARE = 0.9
# A time column shows many series where it has at most this share of distinct stamps (one
# series has one a row; two on one calendar, a half): a stamp or two repeated by mistake in one
# series does not make it many.
SHARED_STAMPS = 0.9
# At most this share of rows may repeat a series' stamp (a row exported twice): the series'
# reader then names them, as it would with the id column named.
REPEATS = 0.01
# Dates are dates throughout: at most this many cells of a column are parsed to tell.
_DATE_SAMPLE = 2000
_DELIMITERS = (",", ";", "\t")


@dataclasses.dataclass(frozen=True)
class IdColumn:
    """A long table's series id column as `find_id_column` found it: its `name`, the
    `time_column` whose stamps showed it, and the number of `series`."""

    name: str
    time_column: str
    series: int
    ambiguous: bool = False

    def describe(self):
        """Why the column names the series, for a summary."""
        if self.ambiguous:
            return (f"the columns {self.name!r} and {self.time_column!r} could each name the "
                    "series and be their time stamps (whole numbers, each value of one "
                    "repeating the other's values once): a long table of many series")
        return (f"{self.series} series named by column {self.name!r}: the {self.time_column!r} "
                "stamps repeat in the table, not within the rows of one of its values")


def find_id_column(frame, time_column=None):
    """The column that names each row's series in `frame`, a long table of many series, or None.

    Where a time column's stamps repeat in the table (at most `SHARED_STAMPS` of its rows are
    distinct) but not among the rows of one value of another column (in at most `REPEATS` of
    the rows), that column names the series (one series never repeats a stamp; many series on
    one calendar repeat each stamp once a series). Of several such columns, the one
    with the fewest values: a finer one (a row number) splits series. The time column is
    `time_column`, else each column of dates (in at least `DATE_SHARE` of its cells), else each
    column of whole numbers that increase within the rows of every value of the id column
    (years; steps 1, 2, ...) where another column of numbers is left to forecast; a time
    column of dates or named is taken before those. An id
    column holds text or whole numbers, in every row, with at least 2 and at most half as many
    values as the table has rows. Two columns of whole numbers that could each be the other's
    time (store and day of a table sorted by both) are `IdColumn.ambiguous`: the caller asks.

    Args:
        frame: the table, its cells as read (text or numbers).
        time_column: the time column named, or None.

    Returns:
        An `IdColumn` (perhaps `ambiguous`), or None: a table of one series, or one whose stamps
        do not tell.

    Example:

    >>> table = pd.DataFrame({"unique_id": ["a", "a", "b", "b"],
    ...                       "ds": ["2020-01-01", "2020-02-01"] * 2, "y": [1, 2, 3, 4]})
    >>> find_id_column(table)
    IdColumn(name='unique_id', time_column='ds', series=2)
    """
    columns = [str(c) for c in frame.columns]
    frame = frame.set_axis(columns, axis=1)
    texts = {}
    for name in columns:
        text = frame[name].astype(str).str.strip()
        if frame[name].notna().all() and not (text == "").any():
            texts[name] = text
    numbers = {name: pd.to_numeric(text, errors="coerce") for name, text in texts.items()}
    whole = [name for name, column in numbers.items()
             if column.notna().all() and bool((column == np.round(column)).all())]
    counts = {name: text.nunique() for name, text in texts.items()}
    ids = [name for name in texts if (name in whole or numbers[name].isna().all())
           and 2 <= counts[name] <= len(frame) // 2]
    if time_column is not None:
        times = [time_column] if time_column in texts else []
    else:
        times = [name for name in texts if name not in whole and _dated(texts[name])] + whole
    found = []
    for time in times:
        if texts[time].nunique() > SHARED_STAMPS * len(frame):
            continue  # one series, perhaps with a stamp repeated by mistake
        for name in ids:
            if name == time:
                continue
            repeats = pd.DataFrame({"id": texts[name], "time": texts[time]}).duplicated().sum()
            if repeats > REPEATS * len(frame):
                continue
            if time_column is None and time in whole and not (
                    _increasing_within(numbers[time], texts[name])
                    and any(numbers[other].notna().all() for other in texts
                            if other not in (name, time))):
                continue  # no time, or the only numbers there are to forecast
            found.append(IdColumn(name, time, int(counts[name])))
    if not found:
        return None
    stamped = [f for f in found if f.time_column not in whole or time_column is not None]
    best = min(stamped or found, key=lambda f: f.series)
    if not stamped and any((f.name, f.time_column) == (best.time_column, best.name)
                           for f in found):
        # Whole numbers both: a store's days and a day's stores tell nothing apart.
        return dataclasses.replace(best, ambiguous=True)
    return best


def runs_of_series(column):
    """The number of runs of rows in which `column` holds each of its values once (`a a b b
    c c`: 3), where there are at least 2 runs of at least 2 rows each; else 0. Without time
    stamps nothing tells whether such a column names series or a period of one series, so the
    summary of a run read as one series points at it."""
    values = pd.Series(column).astype(str).to_numpy()
    if values.size < 4:
        return 0
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    lengths = np.diff(np.r_[starts, values.size])
    if starts.size < 2 or lengths.min() < 2 or len(set(values[starts])) != starts.size:
        return 0
    return int(starts.size)


def find_id_column_in_file(path, time_column=None):
    """`find_id_column` of a CSV file read as text (its delimiter the one of `,` `;` and tab
    that splits the header most), or None where the file cannot be read: its reader then says
    why, as it would without this look."""
    try:
        with open(path, encoding="utf-8", newline="") as file:
            header = file.readline()
        delimiter = max(_DELIMITERS, key=header.count)
        frame = pd.read_csv(path, sep=delimiter, dtype=str, keep_default_na=False,
                            index_col=False, encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError):
        return None
    if frame.empty:
        return None
    return find_id_column(frame, time_column)


def _dated(text):
    """Whether a column (as text) holds dates in at least `DATE_SHARE` of its cells."""
    sample = text.iloc[:: max(1, len(text) // _DATE_SAMPLE)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dates = pd.to_datetime(sample, errors="coerce", format="mixed")
    return bool(dates.notna().mean() >= DATE_SHARE)


def _increasing_within(time, ids):
    """Whether `time` increases, row after row, within the rows of each id."""
    steps = pd.DataFrame({"id": ids, "time": time}).groupby("id", sort=False)["time"].diff()
    return bool((steps.dropna() > 0).all())
