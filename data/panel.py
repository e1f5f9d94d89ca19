"""Many series at once: a panel of series read from one long table, a folder, or M4's files.

One frame for one series or many (DESIGN.md section 10): a `Panel` holds every series by id,
each its own float64 values and time stamps, of any length and start. One series is the panel
with one id.

- `read_panel(path, id_column, time_column=None, target=None)`: a long CSV table, one row per
  (series, time), the series named in `id_column`; or a folder of CSV files, one series each,
  the file stem as its id; or one CSV file without `id_column`, one series named by its stem.
  Each series' rows are sorted by time (with a note when they were not in time order; rows of
  several series may interleave); a repeated (id, time) is refused
  naming both lines; gaps in the time stamps are reported (notes and `Panel.gaps`), never
  filled; series shorter than `min_length` are left out with a note.
- `read_m4(train_path, test_path)`: the M4 competition's wide files (one series a row: the id,
  then the values, shorter series ending in empty fields), the training parts as the panel and
  the test rows as `Panel.holdout`; `read_m4_folder(folder_or_name, frequency)` finds both
  files of one frequency in a folder or a registered set (`m4-hourly`, `m4-weekly`).
- `Panel.with_holdout(horizon)`: the last `horizon` values of every series held out, the
  competition's protocol for a panel read from a long table; `Panel.to_frame()`: the long
  `unique_id, ds, y` frame statsforecast takes.
"""

import csv
import dataclasses
import io
from pathlib import Path

import numpy as np
import pandas as pd

from seqlab.data.datasets import resolve_path
from seqlab.data.errors import (
    MAX_ABS_VALUE,
    DataError,
    listed,
    normalize_line_endings,
    quoted,
    read_utf8,
    refuse_values_lost_in_float32,
)
from seqlab.data.timeseries import parse_dates, parse_numbers

# M4's horizon and seasonal period per frequency, as its organisers scored them (M4
# Competitor's Guide; `Dataset/M4-info.csv`): MASE's scale and Naive2 use the period.
M4_SETS = {
    "hourly": {"horizon": 48, "season": 24, "prefix": "H"},
    "daily": {"horizon": 14, "season": 1, "prefix": "D"},
    "weekly": {"horizon": 13, "season": 1, "prefix": "W"},
    "monthly": {"horizon": 18, "season": 12, "prefix": "M"},
    "quarterly": {"horizon": 8, "season": 4, "prefix": "Q"},
    "yearly": {"horizon": 6, "season": 1, "prefix": "Y"},
}

# How many ids or lines an error message lists before it says "and N more".
_SHOWN = 5
# A step this far from a whole number of the panel's usual step counts as irregular; months
# (28 to 31 days against a usual 31) stay within it.
_STEP_TOLERANCE = 0.25


@dataclasses.dataclass(frozen=True, eq=False)
class Panel:
    """Series by id, each with its own length and time stamps.

    Attributes:
        ids: the series' ids (text), in the order they first appear.
        values: one float64 array per series, in time order.
        times: one array per series: datetime64 stamps, numbers as the file has them, or
            integer steps 0, 1, ... (`time_kind` says which).
        time_kind: "dates", "numbers" or "steps" (no time column).
        source: the file or folder read.
        time_column: the time column read (named, or found by `find_time`), or None.
        target: the value column's name (None for M4's files).
        notes: what reading did (sorted rows, gaps, series left out), one line each.
        gaps: `{id: missing time stamps}` for the series with gaps.
        holdout: for M4's files, the test values of each series (one array per id), else None.
    """

    ids: tuple
    values: tuple
    times: tuple
    time_kind: str
    source: str
    target: str | None = None
    notes: tuple = ()
    time_column: str | None = None
    gaps: dict = dataclasses.field(default_factory=dict)
    holdout: tuple | None = None

    def __len__(self):
        return len(self.ids)

    def __repr__(self):
        lengths = self.lengths
        return (f"Panel({len(self)} series, {lengths.min()} to {lengths.max()} values, "
                f"time {self.time_kind}, source={self.source!r})")

    @property
    def lengths(self):
        """The number of values of each series (an int array)."""
        return np.array([v.size for v in self.values], dtype="int64")

    @property
    def horizon(self):
        """The holdout's length (every series has as many), or None without one."""
        return None if self.holdout is None else int(self.holdout[0].size)

    def series(self, series_id):
        """The values of the series `series_id`.

        Raises:
            KeyError: an unknown id.
        """
        try:
            return self.values[self.ids.index(series_id)]
        except ValueError:
            raise KeyError(series_id) from None

    def with_holdout(self, horizon):
        """The panel with each series' last `horizon` values held out (the competition's
        protocol: forecast them from the end of the rest).

        Returns:
            A new `Panel`: values and times without their last `horizon` entries, `holdout`
            the values taken off.

        Raises:
            DataError: `horizon < 1`, a panel with a holdout already, or series with no more
                than `horizon` values (named; `read_panel(min_length=horizon + 1)` leaves them
                out beforehand).
        """
        if horizon < 1:
            raise DataError(f"the holdout must be at least 1 value; got {horizon}",
                            path=self.source)
        if self.holdout is not None:
            raise DataError(f"the panel has a holdout of {self.horizon} values already",
                            path=self.source)
        short = [f"{quoted(i)} ({v.size})" for i, v in zip(self.ids, self.values)
                 if v.size <= horizon]
        if short:
            raise DataError(
                f"{len(short)} series have no more values than the holdout of {horizon}: "
                f"{_listed(short)}; expected at least {horizon + 1} (read them with "
                f"min_length={horizon + 1} to leave them out)",
                path=self.source,
            )
        return dataclasses.replace(
            self,
            values=tuple(v[:-horizon] for v in self.values),
            times=tuple(t[:-horizon] for t in self.times),
            holdout=tuple(v[-horizon:] for v in self.values),
            notes=self.notes + (f"the last {horizon} values of each series held out",),
        )

    def to_frame(self):
        """The panel as one long DataFrame, the layout of statsforecast and neuralforecast:
        `unique_id`, `ds` (time stamps or steps), `y`."""
        return pd.DataFrame({
            "unique_id": np.repeat(np.array(self.ids, dtype=object), self.lengths),
            "ds": np.concatenate(self.times),
            "y": np.concatenate(self.values),
        })


# ---------------------------------------------------------------------------------------------
# Long tables and folders


def read_panel(path, id_column=None, time_column=None, target=None, min_length=1,
               find_time=False, time_flag="--time-column"):
    """Reads many series from a long CSV table, or from a folder of CSV files.

    Args:
        path: a CSV file (long format: one row per series and time), a folder of CSV files
            (one series each, named by its file stem; `.csv` files only, sorted by name), or a
            registered data-set name.
        id_column: the column that names each row's series. None: the file is one series (a
            folder's files always are), named by the file stem.
        time_column: the time column (dates or numbers); None: no time column, the rows of
            each series are in time order as they stand and get steps 0, 1, ... (unless
            `find_time` finds one).
        target: the value column; None: the one numeric column besides the id and time
            columns.
        min_length: series with fewer values are left out, with a note naming them.
        find_time: without a `time_column`, take the column (besides the id and value
            columns) whose values are dates (`is_date_column`) as the time column, with a
            note; two such columns are refused. Rows would otherwise be read in file order,
            their dates dropped.
        time_flag: how the messages tell the user to name another time column (the command
            line's flag); None where the time column cannot be named (a run's predict).

    Returns:
        A `Panel`.

    Raises:
        DataError: naming the file and line: a missing column, a missing id or time stamp, a
            value that is missing or not a number, a time stamp that is not a date or number,
            an (id, time) given twice; an empty folder; every series shorter than
            `min_length`; one column given as two of id, time and value.
    """
    path = resolve_path(path)
    named = [(name, what) for name, what in ((id_column, "id"), (time_column, "time"),
                                             (target, "value")) if name is not None]
    for index, (name, what) in enumerate(named):
        twice = [other for column, other in named[index + 1:] if column == name]
        if twice:
            raise DataError(f"the column {name!r} is given as the {what} column and the "
                            f"{twice[0]} column; expected a column of its own for each",
                            path=path)
    if path.is_dir():
        if id_column is not None:
            raise DataError(
                f"a folder holds one series per file, named by the file; expected no id column "
                f"(got {id_column!r}); pass a file to read a long table",
                path=path,
            )
        # Hidden files are no series: macOS's "._a.csv" beside a.csv, an editor's backups.
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() == ".csv"
                       and not p.name.startswith("."))
        if not files:
            raise DataError("the folder holds no .csv files; expected one CSV file per series",
                            path=path)
        stems = {}
        for file in files:
            if file.stem in stems:
                raise DataError(f"{stems[file.stem].name} and {file.name} would both be series "
                                f"{file.stem!r}; expected one file per series name", path=path)
            stems[file.stem] = file
        tables = [_read_table(file, None, time_column, target, find_time, time_flag)
                  for file in files]
        others = sorted(p.name for p in path.iterdir() if p not in files
                        and not p.name.startswith("."))
        targets = sorted({table["target"] for table in tables})
        kinds = {table["kind"] for table in tables}
        if len(kinds) > 1:
            by_kind = {kind: [f.name for f, t in zip(files, tables) if t["kind"] == kind]
                       for kind in sorted(kinds)}
            listed = "; ".join(f"{kind}: {_listed(names)}" for kind, names in by_kind.items())
            from seqlab.data.timeseries import DATE_SHARE  # loaded by _read_table already

            without = f"without {time_flag} " if time_flag else ""
            hint = "" if time_column is not None else (
                f" ({without}a file's column counts as its time stamps where "
                f"{DATE_SHARE:.0%} of its cells are dates)")
            raise DataError(
                f"the files' time columns differ in kind ({listed}); expected dates in every "
                f"file or numbers in every file{hint}",
                path=path,
            )
        parts = [series for table in tables for series in table["series"]]
        # The time column found: said once for the folder (it was a line per file).
        found = sorted({table["time_column"] for table in tables if table["time_note"]})
        notes = ([f"{path}: time column {', '.join(map(repr, found))}: its values are dates, "
                  f"in {sum(bool(table['time_note']) for table in tables)} of the "
                  f"{len(tables)} files{_names_another(time_flag)}"] if found else [])
        notes += [note for table in tables for note in table["notes"]]
        if others:  # said, not skipped silently
            notes.append(f"{path}: read the {len(files)} .csv files only, not "
                         f"{', '.join(others[:_SHOWN])}"
                         + (f" and {len(others) - _SHOWN} more" if len(others) > _SHOWN else ""))
        unread = sorted({name for table in tables for name in table["unread"]})
        if unread:  # said, not dropped silently
            in_files = sum(bool(table["unread"]) for table in tables)
            notes.append(f"{path}: columns left out (not the time or value column), in "
                         f"{in_files} of the {len(tables)} files: {_listed(unread)}")
        if len(targets) > 1:
            notes.append(f"{path}: the files' value columns are named {', '.join(targets)}; read "
                         "as one value per file")
        # Value columns named differently: none is the panel's (predict and evaluate read each
        # file's one value column again, as here; the first file's name was refused there).
        kind, target_name = tables[0]["kind"], targets[0] if len(targets) == 1 else None
        time_found = tables[0]["time_column"]
    else:
        table = _read_table(path, id_column, time_column, target, find_time, time_flag)
        parts = table["series"]
        notes = [*([table["time_note"]] if table["time_note"] else []), *table["notes"]]
        if table["unread"]:  # said, not dropped silently
            notes.append(f"{path}: columns left out (not the id, time or value column): "
                         f"{_listed(table['unread'])}")
        kind, target_name = table["kind"], table["target"]
        time_found = table["time_column"]
    gaps, gap_notes = _find_gaps(parts, kind)
    notes += gap_notes
    short = [p for p in parts if p["values"].size < min_length]
    if short:
        if len(short) == len(parts):
            raise DataError(
                f"every series is shorter than the minimum of {min_length} values (the longest "
                f"has {max(p['values'].size for p in parts)})",
                path=path,
            )
        listed = ", ".join(f"{quoted(p['id'])} ({p['values'].size})" for p in short[:_SHOWN])
        more = f" and {len(short) - _SHOWN} more" if len(short) > _SHOWN else ""
        notes.append(f"left out {len(short)} series shorter than {min_length} values: "
                     f"{listed}{more}")
        parts = [p for p in parts if p["values"].size >= min_length]
        gaps = {key: count for key, count in gaps.items()
                if any(p["id"] == key for p in parts)}
    return Panel(
        ids=tuple(p["id"] for p in parts),
        values=tuple(p["values"] for p in parts),
        times=tuple(p["time"] for p in parts),
        time_kind=kind,
        source=str(path),
        target=target_name,
        notes=tuple(notes),
        gaps=gaps,
        time_column=time_found,
    )


def _listed(items):
    """Up to `_SHOWN` of `items`, comma-separated, then "and N more"."""
    return listed(items, _SHOWN)


def _lines(lines):
    """File line numbers, listed briefly."""
    return listed((int(line) for line in lines), _SHOWN)


def _names_another(time_flag):
    """The note's advice after a time column found: `time_flag` names another."""
    return f" ({time_flag} names another)" if time_flag else ""


def _read_table(path, id_column, time_column, target, find_time=False,
                time_flag="--time-column"):
    """One CSV file's series: `{"series": [{"id", "values", "time"}], "notes", "kind",
    "target", "time_column"}` (see `read_panel`)."""
    # Imported here: data.timeseries loads TensorFlow, which M4's reader does not need.
    from seqlab.data.timeseries import (
        is_date_column,
        read_csv,
        row_index_column,
        row_index_note,
    )

    # Ids as written: a column of "001" and "1" is two series, not one series 1.
    frame = read_csv(path, text_columns=[id_column] if id_column is not None else [])
    columns = [str(c) for c in frame.columns]
    for role, name in (("id", id_column), ("time", time_column), ("target", target)):
        if name is not None and name not in frame.columns:
            raise DataError(f"no {role} column {name!r}; the columns are {', '.join(columns)}",
                            path=path)
    notes = []
    # The row index DataFrame.to_csv() writes is no value column unless named: it made the
    # target ambiguous ("the numeric ones are Unnamed: 0, sales").
    index = row_index_column(frame)
    if index is not None and index not in (id_column, time_column, target):
        notes.append(f"{path}: {row_index_note(frame, index)}")
        frame = frame.drop(columns=[index])
    # read_csv keeps blank lines as empty rows (row r is line r + 2): they are skipped, and
    # every other row keeps its line number for the messages.
    missing = frame.isna()
    if id_column is not None:  # read as text: a blank line's id is ""
        missing[id_column] = (frame[id_column].str.strip() == "").to_numpy()
    blank = missing.all(axis=1).to_numpy()
    if blank.any():
        notes.append(f"{path}: skipped {int(blank.sum())} blank lines "
                     f"({_lines(np.flatnonzero(blank) + 2)})")
        frame = frame[~blank]
    lines = frame.index.to_numpy() + 2
    found = False
    if time_column is None and find_time:
        dated = [c for c in frame.columns
                 if c not in (id_column, target) and is_date_column(frame[c])]
        if len(dated) > 1:
            raise DataError(f"the columns {', '.join(map(repr, dated))} all hold dates; "
                            "expected one time column"
                            + (f": name it with {time_flag}" if time_flag else ""), path=path)
        if dated:
            time_column, found = dated[0], True
    time_note = (f"{path}: time column {time_column!r}: its values are dates"
                 f"{_names_another(time_flag)}") if found else None
    if target is None:
        others = [c for c in frame.columns if c not in (id_column, time_column)]
        # Mostly numbers counts as numeric, so that a typo is reported at its line (by
        # `_numbers`) instead of hiding the column.
        numeric = [c for c in others if _mostly_numbers(frame[c])]
        if len(numeric) != 1:
            found = f"the numeric ones are {', '.join(map(str, numeric))}" if numeric else \
                "none is numeric"
            raise DataError(
                f"expected one value column besides the id and time columns, or a target "
                f"named; {found}",
                path=path,
            )
        target = numeric[0]
    if id_column is None:
        ids = np.full(len(frame), Path(path).stem, dtype=object)
    else:
        ids = _ids(frame[id_column], id_column, lines, path)
    values = _numbers(frame[target], f"value column {target!r}", lines, path)
    try:
        if time_column is None:
            kind, time = "steps", None
        else:
            kind, time, note = _parse_times(frame[time_column], time_column, lines, path)
            notes += [f"{path}: {line}" for line in (note or "").splitlines()]
            _refuse_repeats(ids, time, frame[time_column], lines, path)
    except DataError as error:
        if not found:
            raise
        advice = f": name another with {time_flag}" if time_flag else ""
        raise DataError(f"{error.message} (the time column {time_column!r} was taken for its "
                        f"dates{advice})", path=error.path,
                        line=error.line) from error
    # Series in the order of their first row; rows grouped by series, then sorted by time
    # (stable, so without a time column each series keeps its rows' order).
    codes, unique_ids = pd.factorize(ids)
    if time is None:
        order = np.argsort(codes, kind="stable")
    else:
        order = np.lexsort((time, codes))
        within = codes[order]
        # Out of order when a series' rows are out of time order; rows of several series
        # interleaved are merely grouped.
        unsorted = np.flatnonzero((within[1:] == within[:-1]) & (order[1:] < order[:-1]))
        if unsorted.size:
            earlier, later = order[unsorted[0] + 1], order[unsorted[0]]
            notes.append(f"{path}: rows were not in time order within their series (series "
                         f"{quoted(ids[earlier])}: line {lines[later]} is earlier than line "
                         f"{lines[earlier]}); sorted by time")
    bounds = np.r_[0, np.cumsum(np.bincount(codes, minlength=len(unique_ids)))]
    series = []
    for code, series_id in enumerate(unique_ids):
        rows = order[bounds[code]: bounds[code + 1]]
        refuse_values_lost_in_float32(values[rows], f"series {quoted(series_id)}", path,
                                      f" (lines {_lines(np.sort(lines[rows]))})")
        steps = np.arange(rows.size, dtype="int64") if time is None else time[rows]
        series.append({"id": series_id, "values": values[rows], "time": steps})
    unread = [str(c) for c in frame.columns if c not in (id_column, time_column, target)]
    return {"series": series, "notes": notes, "kind": kind, "target": str(target),
            "unread": unread,
            "time_column": None if time_column is None else str(time_column),
            "time_note": time_note}


def _ids(column, name, lines, path):
    """The id column (read as text) without the spaces around each id."""
    ids = column.astype(str).str.strip()
    missing = np.flatnonzero((ids == "").to_numpy())
    if missing.size:
        raise DataError(f"id column {name!r} is empty at lines {_lines(lines[missing])}; "
                        "expected a series id on every row", path=path)
    return ids.to_numpy(dtype=object)


def _mostly_numbers(column):
    """Whether at least half the present values of `column` are numbers."""
    if pd.api.types.is_numeric_dtype(column):
        return True
    present = column.dropna()
    return bool(present.size) and pd.to_numeric(present, errors="coerce").notna().mean() >= 0.5


def _numbers(column, what, lines, path):
    """The column as float64; a missing or non-numeric value is a `DataError` naming lines."""
    missing = np.flatnonzero(column.isna().to_numpy())
    if missing.size:
        raise DataError(f"{what} has missing values at lines {_lines(lines[missing])}; expected "
                        "a number on every row (a panel is read as it is, never filled)",
                        path=path)
    numbers = parse_numbers(column).to_numpy(dtype="float64")  # "1e400": infinite, refused below
    bad = np.flatnonzero(np.isnan(numbers))
    if bad.size:
        raise DataError(f"{what} has values that are not numbers at lines "
                        f"{_shown_fields(column, bad, lines)}", path=path)
    # As for one series (data.timeseries): the networks compute in float32.
    extreme = np.flatnonzero(~(np.abs(numbers) <= MAX_ABS_VALUE))
    if extreme.size:
        raise DataError(f"{what} has values that are infinite or beyond +-{MAX_ABS_VALUE:g} at "
                        f"lines {_shown_fields(column, extreme, lines)}; expected finite numbers "
                        "of at most that size", path=path)
    return numbers


def _shown_fields(column, rows, lines):
    """Up to `_SHOWN` of `column`'s `rows` as "line (value)", then "and N more"."""
    fields = [column.iloc[r] for r in rows[:_SHOWN]]
    shown = ", ".join(f"{lines[r]} ({field if isinstance(field, str) else float(field)!r})"
                      for r, field in zip(rows, fields))
    return shown + (f" and {rows.size - _SHOWN} more" if rows.size > _SHOWN else "")


def _parse_times(column, name, lines, path):
    """`(kind, times, note)`: "numbers" (int64 when all whole, else float64) or "dates"
    (datetime64); `note`, how dates were read where the summary should say (`parse_dates`),
    or None."""
    missing = np.flatnonzero(column.isna().to_numpy())
    if missing.size:
        raise DataError(f"time column {name!r} has missing values at lines "
                        f"{_lines(lines[missing])}; expected a time stamp on every row",
                        path=path)
    if pd.api.types.is_numeric_dtype(column):
        numbers = column.to_numpy(dtype="float64")
        infinite = np.flatnonzero(~np.isfinite(numbers))
        if infinite.size:
            raise DataError(f"time column {name!r} has infinite values at lines "
                            f"{_shown_fields(column, infinite, lines)}; expected dates or finite "
                            "numbers", path=path)
        whole = np.all(numbers == np.round(numbers))
        return "numbers", numbers.astype("int64") if whole else numbers, None
    dates, _, note = parse_dates(column, name, path)
    bad = np.flatnonzero(dates.isna().to_numpy())
    if bad.size:
        shown = ", ".join(f"{lines[r]} ({quoted(column.iloc[r])})" for r in bad[:_SHOWN])
        more = f" and {bad.size - _SHOWN} more" if bad.size > _SHOWN else ""
        if pd.to_numeric(column.iloc[bad], errors="coerce").notna().all():
            raise DataError(f"time column {name!r} mixes dates and numbers: lines {shown}{more} "
                            "hold numbers, the others dates; expected one kind in every series",
                            path=path)
        raise DataError(f"time column {name!r} has values that are not dates or numbers at "
                        f"lines {shown}{more}", path=path)
    return "dates", dates.to_numpy(), note


def _refuse_repeats(ids, time, column, lines, path):
    """Raises `DataError` at the first row whose (id, time) an earlier row already has; a date
    is named as the file wrote it in time column `column` (parsed, "2020-01-04" read
    "2020-01-04 00:00:00", a time the file never had)."""
    keys = pd.DataFrame({"id": ids, "time": time})
    repeated = np.flatnonzero(keys.duplicated().to_numpy())
    if repeated.size:
        row = int(repeated[0])
        first = int(np.flatnonzero((ids == ids[row]) & (time == time[row]))[0])
        time_column = column.name
        stamp = quoted(str(column.iloc[row]).strip()) \
            if np.issubdtype(time.dtype, np.datetime64) else time[row]
        more = f" ({repeated.size} repeated rows in all)" if repeated.size > 1 else ""
        raise DataError(
            f"series {quoted(ids[row])} has {time_column} {stamp} twice: line {lines[row]} repeats "
            f"line {lines[first]}{more}; expected one row per series and time",
            path=path,
            line=int(lines[row]),
        )


def _find_gaps(parts, kind):
    """`({id: missing stamps}, notes)`: steps longer than a series' usual step.

    The usual step is a series' most common one where it has `_OWN_STEPS` steps or more, else
    the most common over all series (a short series alone cannot show its own); a step of k
    usual steps leaves k - 1 stamps missing. Dates of a panel that never falls on a weekend,
    a day apart as a rule, are business days: a weekend is no gap. A step that is not close to
    a whole number of usual steps is noted as irregular.
    """
    if kind == "steps":
        return {}, []
    steps = [np.diff(p["time"]) for p in parts]
    every = np.concatenate(steps) if steps else np.array([])
    if not every.size:
        return {}, []
    panel_usual = _most_common(every)
    business_days = kind == "dates" and _weekdays_only([p["time"] for p in parts])
    gaps, notes = {}, []
    for part, step in zip(parts, steps):
        if not step.size:
            continue
        usual = _most_common(step) if step.size >= _OWN_STEPS else panel_usual
        missing, part_notes = stamp_gaps(part["time"], usual, business_days)
        if missing:
            gaps[part["id"]] = missing
        notes += [f"series {quoted(part['id'])}: {note}" for note in part_notes]
    return gaps, notes


# The most a day's stamps lie off midnight and still count as business days (UTC offsets).
_MIDNIGHT_OFFSET = np.timedelta64(3, "h")


def stamp_gaps(time, usual=None, business_days=None, calendar=None):
    """`(missing stamps, notes)` of one series' increasing time stamps `time` (datetime64 or
    numbers): a step of k `usual` steps (default: the series' most common) leaves k - 1
    stamps missing; a step not close to a whole number of them is irregular. Business days
    (default: every stamp a weekday's midnight, a day apart as a rule): a weekend is no gap.
    `calendar`: a pandas frequency of steps of unequal length ("QS", "MS") on which every
    stamp lies: steps are counted in it (quarters of 90 to 92 days were called irregular)."""
    step = np.diff(time)
    if not step.size:
        return 0, []
    if calendar is not None:  # every stamp on the calendar: its steps are whole
        grid = pd.date_range(time[0], time[-1], freq=calendar)
        ratio = np.diff(grid.get_indexer(time)).astype("float64")
    else:
        if usual is None:
            values, counts = np.unique(step, return_counts=True)
            usual = values[np.argmax(counts)]
            if 2 * counts.max() < step.size:  # no usual step to count missing ones in
                return 0, [f"irregular time stamps: the most common step, {_duration(usual)}, "
                           f"is {counts.max()} of the {step.size}"]
        dated = np.issubdtype(time.dtype, np.datetime64)
        # Days as the nearest midnight: local midnights read as UTC times lie hours off one.
        days = (time + np.timedelta64(12, "h")).astype("datetime64[D]") if dated else None
        if business_days is None:
            business_days = dated and bool(
                np.all(np.abs(time - days.astype(time.dtype)) <= _MIDNIGHT_OFFSET)
                and np.all(np.is_busday(days)))
        if business_days and usual == np.timedelta64(1, "D"):  # dated: days is set
            ratio = np.busday_count(days[:-1], days[1:]).astype("float64")
        else:
            ratio = step / usual
    whole = np.round(ratio)
    missing = int(np.sum(np.maximum(whole - 1, 0)))
    irregular = np.flatnonzero(np.abs(ratio - whole) > _STEP_TOLERANCE)
    notes = []
    if missing:
        at = int(np.flatnonzero(whole > 1)[0])
        notes.append(f"{missing} missing time stamps (gaps; the first after "
                     f"{_stamp(time[at])}); not filled")
    if irregular.size:
        notes.append(f"{irregular.size} steps are not a whole number of the usual step "
                     f"{_duration(usual)} (the first after {_stamp(time[int(irregular[0])])})")
    return missing, notes


# The fewest steps from which a series' own most common step is its usual step (`_find_gaps`).
_OWN_STEPS = 8


def _most_common(steps):
    values, counts = np.unique(steps, return_counts=True)
    return values[np.argmax(counts)]


def _weekdays_only(times):
    """Whether the date stamps `times` (arrays of datetime64) are all midnights of Monday to
    Friday."""
    stamps = np.concatenate(times)
    days = stamps.astype("datetime64[D]")
    return bool(np.all(days == stamps) and np.all(np.is_busday(days)))


def _stamp(value):
    if isinstance(value, np.datetime64):
        stamp = pd.Timestamp(value)
        return str(stamp.date()) if stamp == stamp.normalize() else str(stamp)
    return f"{value:g}"


def _duration(step):
    return str(pd.Timedelta(step)) if isinstance(step, np.timedelta64) else f"{step:g}"


# ---------------------------------------------------------------------------------------------
# M4's wide files


def read_m4(train_path, test_path, horizon=None):
    """Reads one M4 frequency: the training parts as a `Panel`, the test rows as its holdout.

    The files are M4's wide CSV (Mcompetitions/M4-methods `Dataset/Train/<F>-train.csv` and
    `Dataset/Test/<F>-test.csv`): a header (`"V1","V2",...`), then one series a row: its id
    (`H1`, `W1`, ...), then its values; a series shorter than the widest ends in empty fields.
    Every test row holds the same number of values, the horizon. The panel's times are steps
    (the files carry no dates).

    Args:
        train_path: the training file.
        test_path: the test file.
        horizon: the expected number of test values per series; None: what the test file's
            first row holds.

    Returns:
        A `Panel` (ids in the training file's order) with `holdout` in the same order.

    Raises:
        DataError: naming the file and line: a row with more or fewer fields than the header, a
            missing id, an id given twice, a value that is not a number, a value after an empty
            field, a series without values, a test row with a different number of values,
            ids in one file and not the other.
    """
    train_ids, train_values = _read_wide(Path(train_path), exact_length=False)
    test_ids, test_values = _read_wide(Path(test_path), exact_length=True, horizon=horizon)
    only_train = [i for i in train_ids if i not in test_values]
    only_test = [i for i in test_ids if i not in train_values]
    if only_train or only_test:
        parts = [f"{len(missing)} only in the {where} file ({_listed(missing)})"
                 for where, missing in (("training", only_train), ("test", only_test))
                 if missing]
        raise DataError(
            f"the training and test files hold different series: {'; '.join(parts)}; expected "
            f"the same ids in both (training file: {train_path})",
            path=test_path,
        )
    return Panel(
        ids=tuple(train_ids),
        values=tuple(train_values[i] for i in train_ids),
        times=tuple(np.arange(train_values[i].size, dtype="int64") for i in train_ids),
        time_kind="steps",
        source=str(train_path),
        holdout=tuple(test_values[i] for i in train_ids),
    )


def read_m4_folder(folder, frequency):
    """Reads one M4 frequency from a folder holding `<Frequency>-train.csv` and
    `<Frequency>-test.csv` (as `seqlab datasets download m4-hourly` leaves them, or a copy).

    Args:
        folder: the folder, or a registered name (`m4-hourly`, `m4-weekly`), downloaded if
            needed.
        frequency: a key of `M4_SETS` ("hourly", "weekly", ...).

    Returns:
        `read_m4`'s `Panel`, its holdout checked to be the frequency's horizon.

    Raises:
        DataError: an unknown frequency, a missing file, or what `read_m4` refuses.
    """
    if frequency not in M4_SETS:
        raise DataError(f"unknown M4 frequency {frequency!r}; expected one of "
                        f"{', '.join(M4_SETS)}")
    folder = resolve_path(folder)
    name = frequency.capitalize()
    return read_m4(folder / f"{name}-train.csv", folder / f"{name}-test.csv",
                   horizon=M4_SETS[frequency]["horizon"])


def _read_wide(path, exact_length, horizon=None):
    """`(ids in file order, {id: float64 values})` of one wide M4 file."""
    text = normalize_line_endings(read_utf8(path))
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if not header:
            raise DataError("the file is empty; expected a header (\"V1\",\"V2\",...) and one "
                            "series a row", path=path)
        width = len(header)
        ids, values = [], {}
        for row in reader:
            line = reader.line_num
            if not row:
                continue
            if len(row) != width:
                raise DataError(f"the row has {len(row)} fields; expected {width} like the "
                                "header (the id, then the values, empty fields after a shorter "
                                "series' last value)", path=path, line=line)
            series_id = row[0].strip()
            if not series_id:
                raise DataError("the first field (the series id) is empty; expected an id such "
                                "as W1", path=path, line=line)
            if series_id in values:
                first = ids.index(series_id)
                raise DataError(f"series id {series_id!r} is given twice (row {first + 1} of the "
                                "file has it too); expected one row per series",
                                path=path, line=line)
            numbers = _wide_values(row, header, path, line)
            if not exact_length:  # a training row: its values must survive float32
                refuse_values_lost_in_float32(numbers, f"series {series_id!r}", path,
                                              f" (line {line})")
            if horizon is not None and exact_length and numbers.size != horizon:
                raise DataError(f"series {series_id!r} has {numbers.size} test values; expected "
                                f"the horizon, {horizon}", path=path, line=line)
            if exact_length and horizon is None:
                horizon = numbers.size
            ids.append(series_id)
            values[series_id] = numbers
    except csv.Error as error:
        raise DataError(f"not a well-formed CSV file ({error})", path=path,
                        line=reader.line_num) from None
    if not ids:
        raise DataError("the file has a header but no series", path=path)
    return ids, values


def _wide_values(row, header, path, line):
    """The values of one wide row: the fields after the id up to the first empty one."""
    fields = [field.strip() for field in row[1:]]
    length = next((k for k, field in enumerate(fields) if not field), len(fields))
    late = next((k for k in range(length, len(fields)) if fields[k]), None)
    if late is not None:
        raise DataError(f"column {header[late + 1]} holds {fields[late]!r} after an empty field "
                        f"in column {header[length + 1]}; expected the values first, then only "
                        "empty fields", path=path, line=line)
    if not length:
        raise DataError(f"series {row[0].strip()!r} has no values; expected at least one",
                        path=path, line=line)
    try:
        numbers = np.array(fields[:length], dtype="float64")
    except ValueError:
        numbers = None
    # Python's float() also reads "1_000" and other scripts' digits, which no other reader of
    # seqlab takes for numbers (pandas' does not): refused as they are there.
    odd = "_" in (joined := "".join(fields[:length])) or not joined.isascii()
    if odd or numbers is None or not np.all(np.abs(numbers) <= MAX_ABS_VALUE):
        for k, field in enumerate(fields[:length]):
            try:
                bounded = (abs(float(field)) <= MAX_ABS_VALUE and "_" not in field
                           and field.isascii())
            except ValueError:
                bounded = False
            if not bounded:
                raise DataError(f"column {header[k + 1]} holds {field!r}; expected a finite "
                                f"number of at most +-{MAX_ABS_VALUE:g}", path=path, line=line)
    return numbers
