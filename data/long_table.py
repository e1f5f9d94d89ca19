"""Whether a table is one series or a long table of many, from its time stamps (`find_id_column`).

A long table (one row per series and time, the series named in a column: statsforecast's
`unique_id, ds, y`, a store's sales by `store, date, sales`) read as one series would put every
series end to end, one after the other, and forecast that. Its time stamps tell it apart: they
repeat in the table, once a series, and never among the rows of one series.

Imports neither TensorFlow nor the readers of `data.timeseries`, so that the command line can
look before the run starts (`find_id_column_in_file`).
"""

import calendar
import dataclasses
import warnings

import numpy as np
import pandas as pd

from seqlab.data.errors import DataError

# The share of a column's cells that must hold dates for it to be taken as a time column when
# none is named. Below 1, so that a few cells that are not (an empty one, a typo, a
# spreadsheet's "Total" row) do not quietly turn the time stamps into a column left out:
# reading the column then names them, as it does for a time column named.
DATE_SHARE = 0.9
# A time column shows many series where it has at most this share of distinct stamps (one
# series has one a row; two on one calendar, a half): a stamp or two repeated by mistake in one
# series does not make it many.
SHARED_STAMPS = 0.9
# A text column empty in fewer than this share of its rows can still name the series: its reader
# then refuses the empty cells, naming their lines.
ID_EMPTY_SHARE = 0.5
# At most this share of rows may repeat a series' stamp (a row exported twice): the series'
# reader then names them, as it would with the id column named.
REPEATS = 0.01
# Column names (lower case, without a plural "s") of calendar parts, which are never series
# ids: a table of one series by month repeats its years once a month, as a long table of
# twelve series would. `_TIME_PARTS`: the ones `data.timeseries` builds the time stamps of one
# series from (year and month, then day, hour, minute, second), and quarter and week.
CALENDAR_PARTS = {"year", "quarter", "qtr", "month", "week", "weekday", "day", "dayofweek",
                  "day_of_week", "dow", "dayofyear", "day_of_year", "doy", "hour", "minute",
                  "second", "date", "time", "period", "season", "weekend", "holiday"}
_TIME_PARTS = {"year", "quarter", "month", "week", "day", "hour", "minute", "second"}
_CALENDAR_WORDS = {word.lower() for word in (
    *calendar.month_name[1:], *calendar.month_abbr[1:], *calendar.day_name, *calendar.day_abbr)}
# The whole numbers of one cycle of a calendar part: hours, minutes, weekdays, months,
# quarters, weeks of a year.
_CYCLES = ((0, 23), (1, 24), (0, 59), (0, 6), (1, 7), (1, 12), (1, 4), (1, 52), (1, 53))
# Dates are dates throughout: at most this many cells of a column are parsed to tell.
_DATE_SAMPLE = 2000
_DELIMITERS = (",", ";", "\t")


@dataclasses.dataclass(frozen=True)
class IdColumn:
    """A long table's series id column as `find_id_column` found it: its `name`, the
    `time_column` whose stamps showed it, and the number of `series`. `ambiguous`: the caller
    asks instead of reading it; `other_times` (the other columns of dates whose stamps show
    the series too) and `unordered` (`time_column`'s whole numbers do not increase within
    each series) say why, else the pair of columns could each be the other's time."""

    name: str
    time_column: str
    series: int
    ambiguous: bool = False
    other_times: tuple = ()
    unordered: bool = False

    def describe(self):
        """Why the column names the series, for a summary."""
        if self.other_times:
            times = ", ".join(map(repr, (self.time_column, *self.other_times)))
            return (f"the columns {times} all hold dates, whose stamps each repeat in the table "
                    f"but not within the rows of one value of column {self.name!r} "
                    f"({self.series} series)")
        if self.unordered:
            return (f"the whole numbers of column {self.time_column!r} repeat in the table but "
                    f"not within the rows of one value of column {self.name!r}, yet do not "
                    "increase within them in the file's order: "
                    f"{self.series} series named by {self.name!r} with their rows out of time "
                    f"order, or one series in which {self.time_column!r} is a value")
        if self.ambiguous:
            return (f"the columns {self.name!r} and {self.time_column!r} could each name the "
                    f"series, or be one series' time stamps together ({self.name!r} holds whole "
                    "numbers that may be series ids, hours or another part of a time): a long "
                    "table of many series or one series")
        return (f"{self.series} series named by column {self.name!r}: the {self.time_column!r} "
                "stamps repeat in the table, not within the rows of one of its values")

    def question(self, id_flag="--id-column", time_flag="--time-column"):
        """What the user names to settle an `ambiguous` table (the flags, or a config's
        keys)."""
        if self.other_times:
            return f"expected one time column: name it with {time_flag}"
        return f"name the one that names the series with {id_flag} and the time with {time_flag}"

    def refusal(self, path):
        """The `DataError` of a run that would read this long table as one series (every
        series end to end) because no id column was named."""
        if self.other_times:
            return DataError(f"{self.describe()}; {self.question('id_column', 'time_column')}",
                             path=path)
        named = "" if self.ambiguous else f"={self.name!r} (--id-column {self.name})"
        return DataError(f"{self.describe()}, which one series would read end to end; expected "
                         f"id_column{named} naming the series, or time_column naming a column "
                         "whose stamps differ in every row for one series", path=path)


def find_id_column(frame, time_column=None):
    """The column that names each row's series in `frame`, a long table of many series, or None.

    Where a time column's stamps repeat in the table (at most `SHARED_STAMPS` of its rows are
    distinct) but not among the rows of one value of another column (in at most `REPEATS` of
    the rows), that column names the series (one series never repeats a stamp; many series on
    one calendar repeat each stamp once a series). Of several such columns, the one with the
    fewest values: a finer one (a row number) splits series. The time column is `time_column`,
    else each column of dates (in at least `DATE_SHARE` of its cells), else each column of
    whole numbers that increase within the rows of every value of the id column (years; steps
    1, 2, ...) where another column of numbers is left to forecast; a time column of dates or
    named is taken before those. An id column holds text (empty in fewer than
    `ID_EMPTY_SHARE` of the rows, which its reader then refuses, naming them; its series are
    told apart on the other rows) or whole numbers, with
    at least 2 and at most half as many values as the table has rows, and is no calendar part
    (`CALENDAR_PARTS` by name, month or day names by value: the months of one series repeat
    its years once a month). Two columns of whole numbers that could each be the other's time
    (store and day of a table sorted by both) are `IdColumn.ambiguous`: the caller asks.

    A table is one series, whatever else it holds, where the time stamps a reader takes are
    distinct in every row: the time column named, the first column of dates, or its whole-number
    calendar parts together where they include year and month (those `data.timeseries` reads as
    the time of one series). Whole numbers that could be a calendar part's cycle (hours 1-24
    beside dates), or a pair of columns each of which could be the other's time, are
    `IdColumn.ambiguous`: the caller asks; so are two columns of dates that each show the
    series (`IdColumn.other_times`), and whole numbers that would show series but do not
    increase within them (`IdColumn.unordered`: a table out of time order, or a value column).

    Args:
        frame: the table, its cells as read (text or numbers).
        time_column: the time column named, or None.

    Returns:
        An `IdColumn` (perhaps `ambiguous`), or None: a table of one series, or one whose stamps
        do not tell.

    Example:

    >>> table = pd.DataFrame({"unique_id": ["a", "a", "b", "b"],
    ...                       "ds": ["2020-01-01", "2020-02-01"] * 2, "y": [1, 2, 3, 4]})
    >>> found = find_id_column(table)
    >>> found.name, found.time_column, found.series
    ('unique_id', 'ds', 2)
    """
    rows = len(frame)
    columns = _Columns(frame)
    if time_column is not None:
        if time_column not in columns.complete or columns.count(time_column) == rows:
            return None
        times = [time_column]
    else:
        dated = [name for name in columns.complete
                 if not columns.is_whole(name) and _dated(columns.text(name))]
        parts = [name for name in columns.complete
                 if name.lower().removesuffix("s") in _TIME_PARTS]
        year_and_month = {"year", "month"} <= {name.lower().removesuffix("s") for name in parts}
        if (dated and columns.count(dated[0]) == rows) or (
                year_and_month and all(columns.is_whole(name) for name in parts)
                and not columns.repeated(parts)):
            return None  # one series: the stamps a reader takes are distinct in every row
        times = dated + [name for name in columns.complete if columns.is_whole(name)]
    ids = [name for name in columns.complete + columns.gappy_text
           if 2 <= columns.within(name).count(name) <= rows // 2
           and (columns.is_whole(name) or not columns.is_numeric(name))
           and name.lower().removesuffix("s") not in CALENDAR_PARTS
           and not columns.calendar_words(name)]
    found, unordered = [], []
    for time in times:
        for name in ids:
            within = columns.within(name)  # a gappy column's rows with an id
            shown = _names_series(within, name, time, time_column is None)
            if shown:
                found.append(IdColumn(name, time, within.count(name)))
            elif shown is None:
                unordered.append(IdColumn(name, time, within.count(name), ambiguous=True,
                                          unordered=True))
    if not found:
        # Whole numbers that would show series but for their order (a long table shuffled,
        # or one series with a value column of whole numbers): read as one series, its rows
        # scrambled or its series end to end; asked instead.
        return min(unordered, key=lambda f: f.series) if unordered else None
    stamped = [f for f in found if not columns.is_whole(f.time_column) or time_column]
    best = min(stamped or found, key=lambda f: f.series)
    if time_column is None:
        # Two columns of dates that each show the series (sent and received, say): which is
        # the time only the user can tell, as the panel reader refuses them with the id named.
        other_times = tuple(dict.fromkeys(
            f.time_column for f in found
            if f.time_column in dated and f.time_column != best.time_column))
        if other_times:
            return dataclasses.replace(best, ambiguous=True, other_times=other_times)
    whole_pair = columns.is_whole(best.name) and columns.is_whole(best.time_column)
    if ((columns.is_whole(best.name) and columns.is_calendar_cycle(best.name))
            or (time_column is None and whole_pair
                and _names_series(columns, best.time_column, best.name, True))):
        # Whole numbers that may be hours of a day (1..24 beside dates), or a pair each of
        # which could be the other's time (a store's days and a day's stores): ask.
        return dataclasses.replace(best, ambiguous=True)
    return best


def _names_series(columns, name, time, time_found):
    """Whether column `name` names series whose stamps are column `time`'s: the stamps repeat
    in the table but not within one series; `time_found` (not named): whole-number stamps
    must also leave a column of numbers to forecast, and increase within each series (None
    where all else holds but that: the rows may be out of time order, or `time` a value)."""
    rows = len(columns.frame)
    if (name == time or columns.count(time) > SHARED_STAMPS * rows
            or columns.count(name) * columns.count(time) < (1 - REPEATS) * rows
            or columns.repeated([name, time]) > REPEATS * rows):
        return False
    if time_found and columns.is_whole(time):
        if not any(columns.is_numeric(other) for other in columns.complete
                   if other not in (name, time)):
            return False
        return True if _increasing_within(columns.numbers(time), columns.codes(name)) else None
    return True


class _Columns:
    """A table's complete columns (a value in every cell) as text, codes and numbers, each
    computed once and only when asked for (a million rows: a fraction of a second a column)."""

    def __init__(self, frame):
        self.frame = frame.set_axis([str(c) for c in frame.columns], axis=1)
        self._text, self._codes, self._numbers = {}, {}, {}
        empty = {name: (self.frame[name].isna() | (self.text(name) == "")).to_numpy()
                 for name in self.frame.columns}
        self.complete = [name for name, cells in empty.items() if not cells.any()]
        # Text columns with some empty cells (fewer than `ID_EMPTY_SHARE`): an id column with
        # empty cells is still the id column, and its reader then names the cells; left out,
        # the table was read as one series, its series end to end or its rows scrambled.
        self._empty = empty
        self.gappy_text = [name for name, cells in empty.items()
                           if 0 < cells.sum() < ID_EMPTY_SHARE * len(self.frame)
                           and np.isnan(self.numbers(name)[~cells]).any()]
        self._within = {}

    def within(self, name):
        """The columns of the rows where column `name` has a value: a gappy id column's
        series are told apart there (its empty cells, one value "", would repeat stamps)."""
        if name not in self.gappy_text:
            return self
        if name not in self._within:
            self._within[name] = _Columns(self.frame[~self._empty[name]])
        return self._within[name]

    def text(self, name):
        if name not in self._text:
            self._text[name] = self.frame[name].astype(str).str.strip()
        return self._text[name]

    def codes(self, name):
        if name not in self._codes:
            self._codes[name] = pd.factorize(self.text(name))[0].astype("int64")
        return self._codes[name]

    def count(self, name):
        return int(self.codes(name).max()) + 1 if len(self.frame) else 0

    def numbers(self, name):
        if name not in self._numbers:
            self._numbers[name] = pd.to_numeric(self.text(name), errors="coerce").to_numpy()
        return self._numbers[name]

    def is_numeric(self, name):
        return bool(np.isfinite(self.numbers(name)).all())

    def is_whole(self, name):
        numbers = self.numbers(name)
        return self.is_numeric(name) and bool((numbers == np.round(numbers)).all())

    def is_calendar_cycle(self, name):
        """Whether the whole numbers of the column are one cycle of a calendar part: hours
        (0-23, 1-24), minutes, weekdays, months, quarters, weeks of a year."""
        values = set(np.unique(self.numbers(name)).astype(int).tolist())
        return any(values == set(range(first, last + 1)) for first, last in _CYCLES)

    def calendar_words(self, name):
        """Whether the column holds names of months or days (and nothing else)."""
        return not self.is_numeric(name) and set(self.text(name).str.lower().unique()) <= \
            _CALENDAR_WORDS

    def repeated(self, names):
        """How many rows repeat an earlier row's values in the columns `names`."""
        key = np.zeros(len(self.frame), dtype="int64")
        for name in names:  # each count at most the rows: no overflow up to 3e6 rows a part
            if self.count(name) and key.max(initial=0) > (2**62) // self.count(name):
                return int(self.frame[names].astype(str).duplicated().sum())
            key = key * self.count(name) + self.codes(name)
        return int(pd.Series(key).duplicated().sum())


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


# The longest header this look reads (the readers' line limit, data/timeseries.py's
# MAX_LINE_BYTES); a longer one is left to the reader to refuse.
HEADER_CHARS = 2**20


def find_id_column_in_file(path, time_column=None):
    """`find_id_column` of a CSV file read as text (its delimiter the one of `,` `;` and tab
    that splits the header most), or None where the file cannot be read: its reader then says
    why, as it would without this look."""
    try:
        with open(path, encoding="utf-8", newline="") as file:
            header = file.readline(HEADER_CHARS + 1)
        if len(header) > HEADER_CHARS:  # one line of 100 MB: pandas parsed it for minutes
            return None
        delimiter = max(_DELIMITERS, key=header.count)
        with warnings.catch_warnings():  # a line of more fields than the header: its reader
            warnings.simplefilter("ignore", pd.errors.ParserWarning)  # names it, not pandas
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
    """Whether `time` increases, row after row, within the rows of each id (codes); at most
    `REPEATS` of the rows may repeat the stamp before them (a row given twice)."""
    order = np.argsort(ids, kind="stable")  # each id's rows together, in file order
    same = ids[order][1:] == ids[order][:-1]
    steps = np.diff(time[order])[same]
    return bool((steps >= 0).all() and (steps == 0).sum() <= REPEATS * len(time))
