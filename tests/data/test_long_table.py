"""A long table of many series told from one series by its time stamps (`find_id_column`)."""

import warnings

import numpy as np
import pandas as pd
import pytest

from seqlab.data.errors import DataError
from seqlab.data.long_table import (
    IdColumn,
    find_id_column,
    find_id_column_in_file,
    runs_of_series,
)
from seqlab.data.panel import read_panel


def long_table(series=3, first=20, shuffle=True, years=False):
    """statsforecast's `unique_id, ds, y`: series of different lengths and starts."""
    rng = np.random.default_rng(0)
    rows = []
    for index in range(series):
        start = pd.Timestamp("2000-01-01") + pd.DateOffset(months=3 * index)
        for step in range(first + 4 * index):
            stamp = (2000 + index + step) if years else start + pd.DateOffset(months=step)
            rows.append((f"M{index}", stamp if years else str(stamp.date()),
                         round(float(rng.normal(100, 10)), 2)))
    frame = pd.DataFrame(rows, columns=["unique_id", "year" if years else "ds", "y"])
    return frame.sample(frac=1.0, random_state=1) if shuffle else frame


def one_series(rows=60):
    dates = pd.date_range("2020-01-06", periods=rows, freq="D")
    return pd.DataFrame({"date": dates.strftime("%Y-%m-%d"), "weekday": dates.day_name(),
                         "phase": ["before"] * (rows // 2) + ["after"] * (rows - rows // 2),
                         "sales": np.arange(rows, dtype=float)})


def test_statsforecasts_long_format_is_found_with_its_series_and_time_column():
    assert find_id_column(long_table()) == IdColumn("unique_id", "ds", 3)


def test_the_columns_order_and_numeric_ids_do_not_matter():
    frame = long_table()
    frame["unique_id"] = frame["unique_id"].str[1:].astype(int) + 100
    assert find_id_column(frame[["ds", "y", "unique_id"]]) == IdColumn("unique_id", "ds", 3)


def test_whole_numbers_that_increase_within_each_series_are_its_time_stamps():
    assert find_id_column(long_table(years=True, shuffle=False)) == IdColumn(
        "unique_id", "year", 3)


def test_whole_numbers_with_nothing_else_to_forecast_are_no_time_stamps():
    # Counts that grow within each series: no time column, and the only values there are.
    frame = pd.DataFrame({"item": ["a"] * 5 + ["b"] * 5, "count": [1, 2, 3, 4, 5] * 2})
    assert find_id_column(frame) is None
    assert find_id_column(frame.assign(value=0.5)) == IdColumn("item", "count", 2)


def test_one_series_with_text_columns_is_one_series_even_with_a_date_repeated():
    frame = one_series()
    assert find_id_column(frame) is None
    # A row exported twice repeats a date: the weekday column then splits the repeats
    # apart, but one repeat in 61 rows is no calendar shared by series.
    assert find_id_column(pd.concat([frame, frame.iloc[[5]]])) is None


def test_the_coarsest_column_that_keeps_each_series_stamps_apart_names_the_series():
    frame = long_table(series=4, shuffle=False)
    # Finer: each series cut in two halves, which keep the stamps apart too.
    frame["half"] = frame["unique_id"] + (frame.groupby("unique_id").cumcount() % 2).astype(str)
    frame["group"] = frame["unique_id"].isin(["M0", "M1"]).map({True: "a", False: "b"})
    frame["pair"] = frame["unique_id"].str[1:].astype(int) // 2  # coarser: repeats stamps
    assert find_id_column(frame) == IdColumn("unique_id", "ds", 4)


def test_a_row_given_twice_in_a_long_table_leaves_it_a_long_table():
    frame = long_table(series=5, first=40)
    found = find_id_column(pd.concat([frame, frame.iloc[[0]]]))
    assert found == IdColumn("unique_id", "ds", 5)  # the panel reader then names the line


def test_whole_numbers_that_could_each_be_the_others_time_are_ambiguous_unless_named():
    frame = pd.DataFrame([(store, step, float(store + step)) for store in range(5)
                          for step in range(10)], columns=["store", "step", "sales"])
    found = find_id_column(frame)
    assert found.ambiguous and {found.name, found.time_column} == {"store", "step"}
    assert "could each name the series" in found.describe()
    assert find_id_column(frame, "step") == IdColumn("store", "step", 5)
    assert find_id_column(frame, "store") == IdColumn("step", "store", 10)
    # A calendar part by name names no series, but its partner asks all the same.
    assert find_id_column(frame.rename(columns={"step": "day"})).ambiguous
    # Year and month by other names ("mon"): asked, never split into twelve series.
    months = pd.DataFrame([(year, month, 1.0 + month) for year in range(2001, 2011)
                           for month in range(1, 13)], columns=["year", "mon", "sales"])
    assert find_id_column(months).ambiguous


def test_hours_of_a_day_beside_its_dates_are_asked_for_whatever_their_name():
    days = pd.date_range("2020-01-01", periods=20, freq="D").strftime("%Y-%m-%d")
    frame = pd.DataFrame([(day, hour, float(hour)) for day in days for hour in range(1, 25)],
                         columns=["Date", "HE", "Load"])
    assert find_id_column(frame).ambiguous
    # Fifty stores are no hours: found.
    stores = frame[frame["HE"] <= 20].assign(HE=lambda f: f["HE"] + 30)
    assert find_id_column(stores) == IdColumn("HE", "Date", 20)


def test_a_later_column_of_dates_distinct_in_every_row_leaves_a_long_table_one():
    frame = long_table(series=4, shuffle=False)
    frame["loaded_at"] = pd.date_range("2024-01-01", periods=len(frame), freq="min").astype(str)
    assert find_id_column(frame) == IdColumn("unique_id", "ds", 4)


def test_value_columns_named_like_calendar_parts_do_not_make_one_series():
    frame = pd.DataFrame([(f"m{m}", week, 40.0 + m + 0.5 * week) for m in range(3)
                          for week in range(1, 41)], columns=["machine", "week", "hours"])
    assert find_id_column(frame) == IdColumn("machine", "week", 3)


def test_whole_number_stamps_with_a_row_given_twice_still_show_a_long_table():
    frame = pd.DataFrame([(f"s{i}", t, float(i * t)) for i in range(5) for t in range(1, 41)],
                         columns=["unique_id", "ds", "y"])
    assert find_id_column(pd.concat([frame, frame.iloc[[3]]]).sort_values(
        ["unique_id", "ds"], kind="stable")) == IdColumn("unique_id", "ds", 5)


def one_series_by_parts():
    """One series of 3 years by month, with calendar parts beside its dates."""
    months = pd.date_range("2001-01-01", periods=36, freq="MS")
    return pd.DataFrame({"date": months.strftime("%Y-%m-%d"), "year": months.year,
                         "month": months.month, "month_name": months.month_name(),
                         "sales": np.linspace(1.0, 2.0, 36)})


@pytest.mark.parametrize("columns", [
    ["date", "year", "month", "sales"],  # dates distinct in every row
    ["year", "month", "sales"],  # year and month together distinct
    ["year", "month_name", "sales"],  # months by name: no series ids
])
def test_one_series_with_calendar_parts_is_one_series(columns):
    assert find_id_column(one_series_by_parts()[columns]) is None


def test_a_named_time_column_distinct_in_every_row_makes_one_series():
    frame = long_table(series=2, shuffle=False)
    frame["row"] = np.arange(len(frame))
    assert find_id_column(frame, "row") is None
    assert find_id_column(frame, "ds") == IdColumn("unique_id", "ds", 2)


def test_hours_of_one_series_beside_its_stamps_are_no_series():
    stamps = pd.date_range("2020-01-01", periods=96, freq="h")
    frame = pd.DataFrame({"datetime": stamps.strftime("%Y-%m-%d %H:%M"),
                          "date": stamps.strftime("%Y-%m-%d"), "hour": stamps.hour,
                          "load": np.arange(96.0)})
    assert find_id_column(frame) is None
    assert find_id_column(frame.drop(columns="datetime")) is None  # "hour": a calendar part


def test_without_time_stamps_a_table_does_not_tell():
    assert find_id_column(long_table().drop(columns="ds")) is None


def test_the_file_is_read_with_its_delimiter_and_an_unreadable_one_is_left_to_its_reader(
        tmp_path):
    long_table().to_csv(tmp_path / "long.csv", sep=";", index=False)
    assert find_id_column_in_file(tmp_path / "long.csv") == IdColumn("unique_id", "ds", 3)
    (tmp_path / "latin1.csv").write_bytes("id,ds,y\n\xe9,2020-01-01,1\n".encode("latin-1"))
    assert find_id_column_in_file(tmp_path / "latin1.csv") is None
    assert find_id_column_in_file(tmp_path / "missing.csv") is None
    (tmp_path / "empty.csv").write_text("unique_id,ds,y\n")
    assert find_id_column_in_file(tmp_path / "empty.csv") is None
    # A line with a field more than the header: pandas' ParserWarning ("... loss of data with
    # index_col=False") reached the terminal before the reader's own message on the line.
    (tmp_path / "extra.csv").write_text("unique_id,ds,y\na,2020-01-01,1,9\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        find_id_column_in_file(tmp_path / "extra.csv")


def test_a_header_over_the_line_limit_is_left_to_the_reader_unparsed(tmp_path, monkeypatch):
    # A CSV of one 100 MB line was parsed by pandas here for minutes, silently, before the
    # reader's line limit could refuse it.
    import seqlab.data.long_table as long_table_module

    monkeypatch.setattr(long_table_module, "HEADER_CHARS", 50)
    monkeypatch.setattr(long_table_module.pd, "read_csv",
                        lambda *a, **k: pytest.fail("parsed"))
    (tmp_path / "wide.csv").write_text(",".join(f"c{i}" for i in range(40)) + "\n1\n")
    assert find_id_column_in_file(tmp_path / "wide.csv") is None


@pytest.mark.parametrize("cells", [["", "a"], ["a", None], [" ", "M1"]])
def test_an_id_column_with_a_few_empty_cells_still_names_the_series(cells):
    # Left out, the table was read as one series, its series end to end; found, its reader
    # names the empty cells (tests/data/test_panel.py). The empty cells are no series.
    frame = long_table(series=2, shuffle=False)
    frame.loc[frame.index[:2], "unique_id"] = cells
    found = find_id_column(frame)
    assert (found.name, found.time_column) == ("unique_id", "ds")
    assert found.series == len({"M0", "M1", *cells} - {"", " ", None})


def read_with_the_columns_found(frame, path):
    """`read_panel` of `frame` written to `path`, with the columns `find_id_column_in_file`
    finds there."""
    frame.to_csv(path, index=False)
    found = find_id_column_in_file(path)
    return read_panel(path, id_column=found.name, time_column=found.time_column)


def test_the_empty_id_cell_of_a_file_is_then_named_by_its_reader(tmp_path):
    frame = long_table(series=3, shuffle=False)
    frame.loc[frame.index[5], "unique_id"] = ""
    with pytest.raises(DataError, match=r"long\.csv: id column 'unique_id' is empty at lines 7; "
                                        r"expected a series id on every row"):
        read_with_the_columns_found(frame, tmp_path / "long.csv")


def test_a_column_mostly_empty_names_no_series():
    frame = long_table(series=2, shuffle=False)
    frame.loc[frame.index[:23], "unique_id"] = ""  # 23 of 44 rows
    assert find_id_column(frame) is None


def shops(rows=60):
    """Six shops' daily sales, `rows` days each from 2020-01-01, sorted by shop and date."""
    days = pd.date_range("2020-01-01", periods=rows, freq="D").strftime("%Y-%m-%d")
    return pd.DataFrame([(f"shop{s}", day, 100.0 + 10 * s + (d * 7 % 5)) for s in range(6)
                         for d, day in enumerate(days)], columns=["shop", "date", "sales"])


def test_an_id_column_empty_in_an_eighth_of_its_rows_still_names_the_series(tmp_path):
    # Left out (more than a tenth empty), the table was read as one series of 360 rows, its
    # repeated dates dropped as a column that is no number. Found, the reader names the cells.
    frame = shops()
    frame.loc[frame.index[::8], "shop"] = ""
    assert find_id_column(frame) == IdColumn("shop", "date", 6)
    with pytest.raises(DataError, match=r"id column 'shop' is empty at lines 2, 10, 18, 26, 34 "
                                        r"and 40 more; expected a series id on every row"):
        read_with_the_columns_found(frame, tmp_path / "shops.csv")


def test_two_columns_of_dates_that_each_show_the_series_are_asked_which_is_the_time():
    # The first was taken silently (`shipped`, two days after the sale), where the panel
    # reader, with the id column named, refuses the two.
    frame = shops()
    frame.insert(1, "shipped", (pd.to_datetime(frame["date"]) + pd.Timedelta(days=2))
                 .dt.strftime("%Y-%m-%d"))
    found = find_id_column(frame)
    assert found.ambiguous and found.other_times == ("date",)
    assert (found.name, found.time_column) == ("shop", "shipped")
    assert found.describe().startswith("the columns 'shipped', 'date' all hold dates")
    assert found.question() == "expected one time column: name it with --time-column"
    assert find_id_column(frame, "date") == IdColumn("shop", "date", 6)


def test_whole_numbers_out_of_order_within_each_series_are_asked_for():
    # Days 1..60 of each shop: in order, its time stamps; shuffled, read as one series of 360
    # scrambled rows, the shops dropped as a column left out.
    frame = shops().assign(day=np.tile(np.arange(1, 61), 6))[["shop", "day", "sales"]]
    assert find_id_column(frame) == IdColumn("shop", "day", 6)
    found = find_id_column(frame.sample(frac=1.0, random_state=0))
    assert found.ambiguous and found.unordered and (found.name, found.time_column) == (
        "shop", "day")
    assert "do not increase within them in the file's order" in found.describe()
    assert "--id-column" in found.question()
    assert find_id_column(frame.sample(frac=1.0, random_state=0), "day") == IdColumn(
        "shop", "day", 6)


@pytest.mark.parametrize("values, runs", [
    (["a", "a", "b", "b", "c", "c"], 3),
    ([1, 1, 1, 2, 2], 2),
    (["a", "a", "b", "b", "a", "a"], 0),  # a value back again: periods, not series
    (["a", "a", "b"], 0),  # too short to tell
    (["a", "a", "a", "b"], 0),  # a run of one row
    (["a"] * 6, 0),
    (["mon", "tue", "wed", "mon", "tue", "wed"], 0),
])
def test_runs_of_series_counts_one_run_per_value(values, runs):
    assert runs_of_series(pd.Series(values)) == runs
