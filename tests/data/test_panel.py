"""Many series at once (data/panel.py): the long-table and folder reader, M4's wide files.

Every panel is built in the test: unsorted rows, gaps, unequal lengths and starts, a series
too short to keep, repeated rows, and small M4-style files, good and broken.
"""

import csv
import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqlab.data.errors import DataError
from seqlab.data.panel import M4_SETS, Panel, read_m4, read_m4_folder, read_panel


def write(folder, name, text):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


LONG = """\
store,date,sales
b,2024-01-03,6
a,2024-01-01,1
a,2024-01-03,3
a,2024-01-02,2
b,2024-01-02,5
b,2024-01-06,8
c,2024-01-01,9
a,2024-01-04,4
"""


# ---------------------------------------------------------------------------------------------
# Long tables


def test_a_long_table_is_grouped_by_series_in_first_seen_order_and_sorted_by_time(tmp_path):
    panel = read_panel(write(tmp_path, "sales.csv", LONG), "store", "date")
    assert panel.ids == ("b", "a", "c")
    assert [v.tolist() for v in panel.values] == [[5, 6, 8], [1, 2, 3, 4], [9]]
    assert panel.lengths.tolist() == [3, 4, 1]
    assert panel.time_kind == "dates" and panel.target == "sales"
    assert [str(t) for t in panel.times[0].astype("datetime64[D]")] == [
        "2024-01-02", "2024-01-03", "2024-01-06"]
    assert all(v.dtype == np.float64 for v in panel.values)
    assert panel.series("a").tolist() == [1, 2, 3, 4]
    with pytest.raises(KeyError):
        panel.series("z")
    # Line 2 holds b's 2024-01-03, which belongs after line 6's 2024-01-02.
    assert any(note.endswith("sales.csv: rows were not in time order within their series "
                             "(series 'b': line 6 is earlier than line 2); sorted by time")
               for note in panel.notes)


def test_the_row_index_to_csv_writes_is_left_out_of_a_long_table(tmp_path):
    # pandas' DataFrame.to_csv() writes its row numbers under an empty header ("Unnamed: 0"):
    # "expected one value column besides the id and time columns, or a target named; the
    # numeric ones are Unnamed: 0, sales".
    path = tmp_path / "sales.csv"
    pd.read_csv(io.StringIO(LONG)).to_csv(path)
    panel = read_panel(path, "store", "date")
    assert panel.target == "sales" and panel.series("a").tolist() == [1, 2, 3, 4]
    assert any(note.endswith("sales.csv: column 'Unnamed: 0' (an empty header; 0 to 7, the row "
                             "numbers) is the file's row index, as DataFrame.to_csv() writes "
                             "it: left out") for note in panel.notes)
    # Named as the target, it is read as any column.
    assert read_panel(path, "store", "date", target="Unnamed: 0").series("c").tolist() == [6]


@pytest.mark.parametrize("seed", range(5))
def test_any_order_of_the_rows_gives_the_same_series(tmp_path, seed):
    rng = np.random.default_rng(seed)
    header, *rows = LONG.splitlines()
    shuffled = [rows[i] for i in rng.permutation(len(rows))]
    panel = read_panel(write(tmp_path, "s.csv", "\n".join([header, *shuffled]) + "\n"),
                       "store", "date")
    assert {i: panel.series(i).tolist() for i in panel.ids} == {
        "a": [1, 2, 3, 4], "b": [5, 6, 8], "c": [9]}
    assert panel.ids == tuple(dict.fromkeys(row.split(",")[0] for row in shuffled))


def test_gaps_are_reported_per_series_and_never_filled(tmp_path):
    panel = read_panel(write(tmp_path, "sales.csv", LONG), "store", "date")
    # b: 01-03 to 01-06 leaves 01-04 and 01-05 out; the usual step is one day.
    assert panel.gaps == {"b": 2}
    assert "series 'b': 2 missing time stamps (gaps; the first after 2024-01-03); not filled" \
        in panel.notes
    assert panel.series("b").size == 3


def test_monthly_stamps_of_28_to_31_days_are_regular_and_a_skipped_month_is_a_gap(tmp_path):
    text = ("id,month,y\nm,2024-01-01,1\nm,2024-02-01,2\nm,2024-03-01,3\nm,2024-05-01,5\n"
            "n,2023-11-01,7\nn,2023-12-01,8\n")
    panel = read_panel(write(tmp_path, "m.csv", text), "id", "month")
    assert panel.gaps == {"m": 1}
    assert panel.notes == ("series 'm': 1 missing time stamps (gaps; the first after "
                           "2024-03-01); not filled",)


def test_day_first_dates_and_utc_offsets_are_read_as_for_one_series(tmp_path):
    text = ("id,day,y\na,12/01/2024,1\nb,12/01/2024,5\na,13/01/2024,2\nb,13/01/2024,6\n"
            "a,14/01/2024,3\n")
    panel = read_panel(write(tmp_path, "d.csv", text), "id", "day")
    assert [str(t) for t in panel.times[0].astype("datetime64[D]")] == [
        "2024-01-12", "2024-01-13", "2024-01-14"]
    assert panel.gaps == {} and panel.values[0].tolist() == [1, 2, 3]
    text = "id,t,y\na,2024-01-01T00:00:00Z,1\na,2024-01-02T00:00:00Z,2\n"
    panel = read_panel(write(tmp_path, "z.csv", text), "id", "t")
    assert [str(t) for t in panel.times[0].astype("datetime64[D]")] == ["2024-01-01",
                                                                        "2024-01-02"]


def test_one_series_with_day_first_dates_among_iso_dates_is_read_day_first_in_order(tmp_path):
    # Two sources in one table: pandas' mixed reading took 02/01/2021 as 1 February and
    # 13/01/2021 as 13 January, so series b was silently reordered and gapped.
    days = pd.date_range("2021-01-01", periods=20)
    rows = [("a", f"{day:%Y-%m-%d}", k) for k, day in enumerate(days)]
    rows += [("b", f"{day:%d/%m/%Y}", 100 + k) for k, day in enumerate(days)]
    text = "id,t,y\n" + "".join(f"{i},{t},{y}\n" for i, t, y in rows)
    panel = read_panel(write(tmp_path, "mixed.csv", text), "id", "t")
    assert panel.gaps == {}
    for times, values, first in zip(panel.times, panel.values, (0, 100)):
        assert list(times.astype("datetime64[D]")) == list(days.values.astype("datetime64[D]"))
        assert values.tolist() == list(range(first, first + 20))
    assert panel.notes[0] == (f"{tmp_path / 'mixed.csv'}: time column 't' mixes date forms: "
                              "20 of numbers only (such as 01/01/2021) among others (such as "
                              "2021-01-01), each read in its own form")
    assert "13/01/2021 has no month 13" in panel.notes[1]


def test_business_days_and_series_of_their_own_frequency_have_no_gaps(tmp_path):
    rows = [("b", day) for day in pd.bdate_range("2024-01-01", periods=30)]  # weekdays only
    rows += [("c", day) for day in pd.bdate_range("2024-01-01", periods=30) if day.day != 10]
    text = "id,day,y\n" + "".join(f"{i},{day:%Y-%m-%d},1\n" for i, day in rows)
    panel = read_panel(write(tmp_path, "b.csv", text), "id", "day")
    assert panel.gaps == {"c": 1}  # Wednesday the 10th; no weekend is a gap
    # A monthly series beside daily ones keeps its own month as its step.
    rows = [("d", day) for day in pd.date_range("2024-01-01", periods=60)]
    rows += [("m", day) for day in pd.date_range("2020-01-01", periods=24, freq="MS")]
    text = "id,day,y\n" + "".join(f"{i},{day:%Y-%m-%d},1\n" for i, day in rows)
    assert read_panel(write(tmp_path, "m.csv", text), "id", "day").gaps == {}


def test_a_series_of_values_lost_in_float32_is_refused_naming_it(tmp_path):
    text = "id,t,y\na,1,5\nb,1,2e-50\na,2,6\nb,2,0\n"
    with pytest.raises(DataError, match=r"tiny\.csv: series 'b' holds no value larger than "
                                        r"2e-50 in magnitude \(lines 3, 5\); expected values of "
                                        r"at least 1e-15"):
        read_panel(write(tmp_path, "tiny.csv", text), "id", "t")
    # All zeros is a series (a product never sold), as for one series.
    read_panel(write(tmp_path, "zero.csv", text.replace("2e-50", "0")), "id", "t")


def test_one_column_as_both_id_and_time_is_refused_as_such(tmp_path):
    path = write(tmp_path, "s.csv", "step,y\n0,1\n1,2\n")
    with pytest.raises(DataError, match=r"s\.csv: the column 'step' is given as the id column "
                                        r"and the time column; expected a column of its own"):
        read_panel(path, "step", "step")


def test_numeric_time_steps_and_gaps(tmp_path):
    text = "id,t,y\nx,10,1\nx,11,2\nx,14,3\ny,3,7\ny,4,8\n"
    panel = read_panel(write(tmp_path, "p.csv", text), "id", "t")
    assert panel.time_kind == "numbers"
    assert [t.tolist() for t in panel.times] == [[10, 11, 14], [3, 4]]
    assert panel.gaps == {"x": 2}
    assert not any("order" in note for note in panel.notes)


def test_a_series_shorter_than_the_minimum_is_left_out_with_a_note(tmp_path):
    panel = read_panel(write(tmp_path, "sales.csv", LONG), "store", "date", min_length=2)
    assert panel.ids == ("b", "a")
    assert "left out 1 series shorter than 2 values: 'c' (1)" in panel.notes
    with pytest.raises(DataError, match=r"every series is shorter than the minimum of 10 "
                                        r"values \(the longest has 4\)"):
        read_panel(tmp_path / "sales.csv", "store", "date", min_length=10)


def test_ids_are_read_as_written(tmp_path):
    # pandas alone reads "001" and "1" as the number 1 (two series merged into one, the id
    # changed), "NA" as missing and "1.50" as 1.5; ids are names, kept as text.
    path = write(tmp_path, "ids.csv", "id,y\n001,1\n001,2\n1,10\nNA,5\n1.50,7\n\n 1 ,11\n")
    panel = read_panel(path, id_column="id")
    assert panel.ids == ("001", "1", "NA", "1.50")
    assert [v.tolist() for v in panel.values] == [[1, 2], [10, 11], [5], [7]]
    assert "skipped 1 blank lines (7)" in panel.notes[0]


def test_a_repeated_series_and_time_is_refused_naming_both_lines(tmp_path):
    text = "id,date,y\na,2024-01-01,1\nb,2024-01-01,2\na,2024-01-02,3\na,2024-01-01,4\n"
    path = write(tmp_path, "dup.csv", text)
    # Named as the file wrote it: parsed, it read "2024-01-01 00:00:00", a time never written.
    with pytest.raises(DataError, match=r"dup\.csv, line 5: series 'a' has date '2024-01-01' "
                                        r"twice: line 5 repeats line 2; expected one "
                                        r"row per series and time"):
        read_panel(path, "id", "date")


def test_series_that_interleave_in_time_order_are_grouped_without_a_note(tmp_path):
    text = "date,id,y\n2024-01-01,a,1\n2024-01-01,b,10\n2024-01-02,a,2\n2024-01-02,b,20\n"
    panel = read_panel(write(tmp_path, "p.csv", text), "id", "date")
    assert [v.tolist() for v in panel.values] == [[1, 2], [10, 20]]
    assert panel.notes == ()


def test_blank_lines_are_skipped_with_a_note_and_later_lines_keep_their_numbers(tmp_path):
    text = "id,t,y\n1,1,5\n\n1,2,6\n2,1,x\n"
    path = write(tmp_path, "p.csv", text)
    with pytest.raises(DataError, match=r"value column 'y' has values that are not numbers at "
                                        r"lines 5 \('x'\)"):
        read_panel(path, "id", "t")
    path.write_text("id,t,y\n1,1,5\n\n1,2,6\n2,1,7\n")
    panel = read_panel(path, "id", "t")
    assert panel.ids == ("1", "2")  # whole-number ids, not "1.0"
    assert panel.notes[0].endswith("p.csv: skipped 1 blank lines (3)")


def test_with_holdout_takes_the_last_values_of_every_series(tmp_path):
    panel = read_panel(write(tmp_path, "sales.csv", LONG), "store", "date", min_length=3)
    held = panel.with_holdout(2)
    assert [v.tolist() for v in held.values] == [[5], [1, 2]]
    assert [v.tolist() for v in held.holdout] == [[6, 8], [3, 4]]
    assert held.horizon == 2 and [t.size for t in held.times] == [1, 2]
    assert panel.holdout is None  # the original is unchanged
    with pytest.raises(DataError, match=r"1 series have no more values than the holdout of 3: "
                                        r"'b' \(3\); expected at least 4"):
        panel.with_holdout(3)
    with pytest.raises(DataError, match=r"has a holdout of 2 values already"):
        held.with_holdout(1)


def test_without_a_time_column_rows_keep_their_order_as_steps(tmp_path):
    text = "id,y\na,3\nb,1\na,4\nb,2\na,5\n"
    panel = read_panel(write(tmp_path, "p.csv", text), "id")
    assert panel.time_kind == "steps"
    assert [v.tolist() for v in panel.values] == [[3, 4, 5], [1, 2]]
    assert [t.tolist() for t in panel.times] == [[0, 1, 2], [0, 1]]
    assert panel.notes == () and panel.gaps == {}


def test_a_column_of_dates_is_found_as_the_time_column_when_none_is_named(tmp_path):
    """`find_time`: the rows of LONG (out of order) are read in date order, as with the time
    column named, and a note says which column was taken; without it, the file's order."""
    path = write(tmp_path, "sales.csv", LONG)
    named = read_panel(path, "store", "date")
    found = read_panel(path, "store", find_time=True)
    assert found.time_column == "date" and found.time_kind == "dates"
    assert [v.tolist() for v in found.values] == [v.tolist() for v in named.values]
    assert f"{path}: time column 'date': its values are dates (--time-column names another)" \
        in found.notes
    unfound = read_panel(path, "store")
    assert unfound.time_column is None and unfound.time_kind == "steps"
    assert unfound.values[0].tolist() == [6, 5, 8]  # b's rows as the file has them
    # The value column is never the time column, nor is a column of numbers or of a few dates.
    text = "id,t,note,y\na,1,2024-01-05,3\na,2,,4\na,3,,5\n"
    panel = read_panel(write(tmp_path, "numbers.csv", text), "id", target="y", find_time=True)
    assert panel.time_column is None and panel.time_kind == "steps"
    # Two columns of dates: which is the time is not guessed; a found one's faults say so.
    text = "id,promo_date,date,y\na,2024-03-01,2024-01-01,1\na,2024-03-01,2024-01-02,2\n"
    with pytest.raises(DataError, match=r"the columns 'promo_date', 'date' all hold dates; "
                                        r"expected one time column: name it with --time-column"):
        read_panel(write(tmp_path, "two.csv", text), "id", target="y", find_time=True)
    text = "id,date,y\na,2024-01-01,1\na,2024-01-01,2\n"
    with pytest.raises(DataError, match=r"twice.*\(the time column 'date' was taken for its "
                                        r"dates: name another with --time-column\)"):
        read_panel(write(tmp_path, "twice.csv", text), "id", find_time=True)
    # A run's predict has no flag to name another: the advice is left out, not a wrong flag.
    with pytest.raises(DataError, match=r"twice.*\(the time column 'date' was taken for its "
                                        r"dates\)$"):
        read_panel(tmp_path / "twice.csv", "id", find_time=True, time_flag=None)
    # A folder's files each find theirs.
    folder = tmp_path / "series"
    folder.mkdir()
    write(folder, "north.csv", "date,y\n2024-01-02,5\n2024-01-01,4\n2024-01-03,6\n")
    write(folder, "south.csv", "date,y\n2023-12-30,1\n2023-12-31,2\n")
    panel = read_panel(folder, find_time=True)
    assert panel.time_kind == "dates" and [v.tolist() for v in panel.values] == [[4, 5, 6], [1, 2]]
    # One whose dates fall short of the share reads as steps: the files are named by kind.
    write(folder, "west.csv", "date,y\n2024-01-01,1\nsoon,2\n")
    with pytest.raises(DataError, match=r"differ in kind \(dates: north.csv, south.csv; steps: "
                                        r"west.csv\).*without --time-column"):
        read_panel(folder, find_time=True)


def test_one_file_without_an_id_column_is_one_series_named_by_its_stem(tmp_path):
    panel = read_panel(write(tmp_path, "airline.csv", "Month,Passengers\n1949-01,112\n"
                                                      "1949-02,118\n1949-03,132\n"),
                       time_column="Month")
    assert panel.ids == ("airline",)
    assert panel.values[0].tolist() == [112, 118, 132]


def test_a_second_measure_is_refused_naming_both_until_the_target_is_named(tmp_path):
    # As docs/cli.md says: either could be the one to forecast; with one named, the other is
    # left out and named.
    table = write(tmp_path, "long.csv", "shop,date,remark,sales,price\n"
                                        "a,2024-01-01,ok,3,1.5\na,2024-01-02,ok,4,1.5\n")
    with pytest.raises(DataError, match=r"expected one value column besides the id and time "
                                        r"columns, or a target named; the numeric ones are "
                                        r"sales, price"):
        read_panel(table, "shop", "date")
    assert (f"{table}: columns left out (not the id, time or value column): remark, price"
            in read_panel(table, "shop", "date", "sales").notes)


def test_columns_besides_the_id_time_and_value_columns_are_named_as_left_out(tmp_path):
    # A text column holds no series' values: left out, but said (it was dropped silently).
    table = write(tmp_path, "long.csv", "store,day,sales,remark\na,1,3,x\na,2,4,\nb,1,5,y\n")
    panel = read_panel(table, "store", "day")
    assert panel.values[0].tolist() == [3, 4]
    assert (f"{table}: columns left out (not the id, time or value column): remark"
            in panel.notes)
    plain = write(tmp_path, "plain.csv", "store,day,sales\na,1,3\na,2,4\nb,1,5\n")
    assert not any("left out" in note for note in read_panel(plain, "store", "day").notes)
    folder = tmp_path / "series"
    folder.mkdir()
    write(folder, "a.csv", "date,y,remark\n2024-01-01,1,x\n2024-01-02,2,x\n")
    write(folder, "b.csv", "date,y\n2024-01-01,3\n2024-01-02,4\n")
    write(folder, "c.csv", "date,y,note\n2024-01-01,3,z\n2024-01-02,4,z\n")
    notes = read_panel(folder, time_column="date").notes
    assert (f"{folder}: columns left out (not the time or value column), in 2 of the 3 files: "
            "note, remark") in notes
    (folder / "a.csv").unlink()
    (folder / "c.csv").unlink()
    assert not any("columns left out" in note
                   for note in read_panel(folder, time_column="date").notes)


def test_a_folder_is_one_series_per_file_of_different_lengths_and_starts(tmp_path):
    folder = tmp_path / "series"
    folder.mkdir()
    write(folder, "north.csv", "date,y\n2024-01-02,5\n2024-01-01,4\n2024-01-03,6\n")
    write(folder, "south.csv", "date,y\n2023-12-30,1\n2023-12-31,2\n")
    write(folder, "notes.txt", "not a series")
    (folder / "._north.csv").write_bytes(b"\x00\x05\x16\x07Mac OS X")  # macOS's resource fork
    write(folder, ".backup.csv", "date,y\n2024-01-01,9\n2024-01-02,9\n")
    panel = read_panel(folder, time_column="date")
    assert panel.ids == ("north", "south")
    assert [v.tolist() for v in panel.values] == [[4, 5, 6], [1, 2]]
    assert any("north.csv: rows were not in time order within their series (series 'north': "
               "line 3 is earlier than line 2)" in n for n in panel.notes)
    assert f"{folder}: read the 2 .csv files only, not notes.txt" in panel.notes
    write(folder, "east.csv", "date,sales\n2024-01-01,7\n2024-01-02,8\n")
    mixed = read_panel(folder, time_column="date")
    assert (f"{folder}: the files' value columns are named sales, y; read as one value per file"
            in mixed.notes)
    assert mixed.target is None and panel.target == "y"  # no one name serves every file
    (folder / "east.csv").unlink()
    frame = panel.to_frame()
    assert list(frame.columns) == ["unique_id", "ds", "y"]
    assert frame["unique_id"].tolist() == ["north"] * 3 + ["south"] * 2
    with pytest.raises(DataError, match=r"a folder holds one series per file, named by the "
                                        r"file; expected no id column \(got 'store'\)"):
        read_panel(folder, "store", "date")
    # The time column found: one note for the folder (a folder of M4's 359 files printed 359).
    found = read_panel(folder, find_time=True)
    assert [n for n in found.notes if "its values are dates" in n] == [
        f"{folder}: time column 'date': its values are dates, in 2 of the 2 files "
        "(--time-column names another)"]


def test_two_files_of_one_stem_in_a_folder_are_refused(tmp_path):
    write(tmp_path, "a.csv", "y\n1\n2\n")
    write(tmp_path, "a.CSV", "y\n5\n6\n")
    with pytest.raises(DataError, match=r"a.CSV and a.csv would both be series 'a'; expected "
                       r"one file per series name"):
        read_panel(tmp_path)


def test_an_empty_folder_is_refused(tmp_path):
    with pytest.raises(DataError, match=r"the folder holds no \.csv files"):
        read_panel(tmp_path)


@pytest.mark.parametrize("text, kwargs, message", [
    ("id,date,y\na,2024-01-01,1\n", dict(id_column="store", time_column="date"),
     r"no id column 'store'; the columns are id, date, y"),
    ("id,date,y\na,2024-01-01,1\n,2024-01-02,2\n", dict(id_column="id", time_column="date"),
     r"id column 'id' is empty at lines 3; expected a series id on every row"),
    ("id,date,y\na,2024-01-01,1\na,2024-01-02,\n", dict(id_column="id", time_column="date"),
     r"value column 'y' has missing values at lines 3; expected a number on every row"),
    ("id,date,y\na,2024-01-01,1\na,2024-01-02,lots\n", dict(id_column="id",
                                                            time_column="date"),
     r"value column 'y' has values that are not numbers at lines 3 \('lots'\)"),
    # Infinite or too large for the networks' float32 (the one-series reader's bound): pandas
    # reads "inf" as a float and "1e400" as text, and both are named as written.
    ("id,date,y\na,2024-01-01,1\na,2024-01-02,inf\nb,2024-01-01,2e15\n",
     dict(id_column="id", time_column="date"),
     r"value column 'y' has values that are infinite or beyond \+-1e\+15 at lines 3 \(inf\), "
     r"4 \(2000000000000000.0\); expected finite numbers"),
    ("id,date,y\na,2024-01-01,1\na,2024-01-02,1e400\n", dict(id_column="id", time_column="date"),
     r"value column 'y' has values that are infinite or beyond \+-1e\+15 at lines 3 "
     r"\('1e400'\)"),
    # Python's float() reads "1_000"; no seqlab reader does.
    ("id,date,y\na,2024-01-01,1\na,2024-01-02,1_000\n", dict(id_column="id", time_column="date"),
     r"value column 'y' has values that are not numbers at lines 3 \('1_000'\)"),
    ("id,t,y\na,1,1\na,inf,2\n", dict(id_column="id", time_column="t"),
     r"time column 't' has infinite values at lines 3 \(inf\); expected dates or finite"),
    ("id,date,y\na,2024-01-01,1\na,someday,2\n", dict(id_column="id", time_column="date"),
     r"time column 'date' has values that are not dates or numbers at lines 3 \('someday'\)"),
    # Series a dated, series b counted: both kinds are read, the mix is the error.
    ("id,day,y\na,2024-01-01,1\na,2024-01-02,2\nb,0,3\nb,1,4\n",
     dict(id_column="id", time_column="day"),
     r"time column 'day' mixes dates and numbers: lines 4 \('0'\), 5 \('1'\) hold numbers, "
     r"the others dates; expected one kind in every series"),
    ("id,date,y,z\na,2024-01-01,1,2\n", dict(id_column="id", time_column="date"),
     r"expected one value column besides the id and time columns, or a target named; the "
     r"numeric ones are y, z"),
])
def test_bad_long_tables_are_clear_errors(tmp_path, text, kwargs, message):
    with pytest.raises(DataError, match=message):
        read_panel(write(tmp_path, "bad.csv", text), **kwargs)


def test_a_named_target_is_read_beside_other_columns(tmp_path):
    text = "id,date,y,z\na,2024-01-01,1,2\na,2024-01-02,3,4\n"
    panel = read_panel(write(tmp_path, "p.csv", text), "id", "date", target="z")
    assert panel.values[0].tolist() == [2, 4] and panel.target == "z"


# ---------------------------------------------------------------------------------------------
# M4's wide files


TRAIN = '''"V1","V2","V3","V4","V5"
"W1","10","11","12","13"
"W2","20","21",,
"W3","5",,,
'''
TEST = '''"V1","V2","V3"
"W2","22","23"
"W1","14","15"
"W3","6","7"
'''


def m4_files(tmp_path, train=TRAIN, test=TEST):
    return write(tmp_path, "Weekly-train.csv", train), write(tmp_path, "Weekly-test.csv", test)


def test_m4_wide_files_give_the_training_parts_and_the_holdout_by_id(tmp_path):
    panel = read_m4(*m4_files(tmp_path))
    assert isinstance(panel, Panel)
    assert panel.ids == ("W1", "W2", "W3")
    assert [v.tolist() for v in panel.values] == [[10, 11, 12, 13], [20, 21], [5]]
    # The test file's order differs; the holdout follows the panel's ids.
    assert [v.tolist() for v in panel.holdout] == [[14, 15], [22, 23], [6, 7]]
    assert panel.horizon == 2 and panel.time_kind == "steps"
    assert [t.tolist() for t in panel.times] == [[0, 1, 2, 3], [0, 1], [0]]


def test_m4_folder_reader_checks_the_frequencys_horizon(tmp_path):
    m4_files(tmp_path)
    with pytest.raises(DataError, match=r"Weekly-test\.csv, line 2: series 'W2' has 2 test "
                                        r"values; expected the horizon, 13"):
        read_m4_folder(tmp_path, "weekly")
    with pytest.raises(DataError, match=r"unknown M4 frequency 'fortnightly'"):
        read_m4_folder(tmp_path, "fortnightly")
    assert M4_SETS["weekly"] == {"horizon": 13, "season": 1, "prefix": "W"}
    assert M4_SETS["hourly"]["season"] == 24


@pytest.mark.parametrize("train, test, where, message", [
    ('"V1","V2","V3"\n"W1","1","2"\n"W2","1",,\n', TEST, "train", r"line 3: the row has 4 "
     r"fields; expected 3 like the header"),
    ('"V1","V2","V3"\n"W1","1","2"\n"W2",,"3"\n', TEST, "train", r"line 3: column V3 holds "
     r"'3' after an empty field in column V2; expected the values first"),
    ('"V1","V2","V3"\n"W1","1","x"\n', TEST, "train", r"line 2: column V3 holds 'x'; expected "
     r"a finite number"),
    ('"V1","V2","V3"\n"W1","1","-inf"\n', TEST, "train", r"line 2: column V3 holds '-inf'; "
     r"expected a finite number of at most \+-1e\+15"),
    ('"V1","V2","V3"\n"W1","1","3e15"\n', TEST, "train", r"line 2: column V3 holds '3e15'"),
    ('"V1","V2","V3"\n"","1","2"\n', TEST, "train", r"line 2: the first field \(the series "
     r"id\) is empty"),
    ('"V1","V2","V3"\n"W1","1","2"\n"W1","3","4"\n', TEST, "train", r"line 3: series id 'W1' "
     r"is given twice"),
    ('"V1","V2","V3"\n"W1",,\n', TEST, "train", r"line 2: series 'W1' has no values"),
    (TRAIN, '"V1","V2","V3"\n"W1","1","2"\n"W2","3",\n"W3","4","5"\n', "test",
     r"line 3: series 'W2' has 1 test values; expected the horizon, 2"),
    (TRAIN, '"V1","V2","V3"\n"W1","1","2"\n"W2","3","4"\n"W9","4","5"\n', "test",
     r"the training and test files hold different series: 1 only in the training file \(W3\); "
     r"1 only in the test file \(W9\)"),
    ("", TEST, "train", r"the file is empty"),
    # As every other reader of seqlab refuses them (Python's float() reads both).
    ('"V1","V2","V3"\n"W1","1","1_000"\n', TEST, "train", r"line 2: column V3 holds '1_000'; "
     r"expected a finite number"),
    ('"V1","V2","V3"\n"W1","1","\u0661\u0662"\n', TEST, "train", r"line 2: column V3 holds "
     r"'\u0661\u0662'; expected a finite number"),
    # Values float32 holds as zeros: the network forecast 0 and the set's sMAPE took 200.
    ('"V1","V2","V3"\n"W1","1e-300","2e-300"\n', TEST, "train", r"series 'W1' holds no value "
     r"larger than 2e-300 in magnitude \(line 2\); expected values of at least 1e-15"),
])
def test_broken_m4_files_are_clear_errors_naming_file_and_line(tmp_path, train, test, where,
                                                               message):
    with pytest.raises(DataError, match=message) as raised:
        read_m4(*m4_files(tmp_path, train, test))
    assert raised.value.path.endswith(f"Weekly-{where}.csv")


# ---------------------------------------------------------------------------------------------
# Any long table a careless user writes


# Ids as people write them: numbers with leading zeros, words pandas reads as missing, spaces;
# values mostly numbers, a few not, too large or missing (one draw in 20 each, so that most
# tables read and the rest fail in every way).
def _mostly(good, bad, one_in=20):
    return st.integers(1, one_in).flatmap(lambda k: bad if k == 1 else good)


FUZZ_IDS = _mostly(st.sampled_from(["001", "1", "1.0", "NA", "nan", "a b", " x ", "é"]),
                   st.sampled_from(["", "  "]))
FUZZ_VALUES = _mostly(
    st.one_of(st.floats(-1e15, 1e15).map(repr), st.integers(-10**15, 10**15).map(str)),
    st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
              st.sampled_from(["", "inf", "-inf", "1e400", "1e16", "lots", "NaN", " 7 ",
                               "1,5"])),
)


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(FUZZ_IDS, st.integers(0, 12), FUZZ_VALUES),
                     min_size=1, max_size=40))
def test_any_long_table_reads_into_clean_series_or_is_one_clear_error(tmp_path, rows):
    # Written with the csv module (fields quoted where needed), read back with an id column.
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", "t", "y"])
    writer.writerows(rows)
    path = write(tmp_path, "fuzz.csv", buffer.getvalue())
    try:
        panel = read_panel(path, id_column="id", time_column="t")
    except DataError as error:  # never another exception
        assert str(error).startswith(str(path)) and "\n" not in str(error)
        return
    # Every series is its ids' rows, as written (less the spaces around), sorted by time, and
    # every value finite and within the bound the networks take.
    assert len(set(panel.ids)) == len(panel.ids)
    expected = {}
    for series_id, t, value in rows:
        expected.setdefault(series_id.strip(), {})[t] = float(value)
    assert set(panel.ids) == set(expected)
    for series_id, times, values in zip(panel.ids, panel.times, panel.values):
        assert times.tolist() == sorted(expected[series_id])
        # pandas' parser may be an ulp off Python's float() (seen at 2.4e-296).
        np.testing.assert_allclose(values, [expected[series_id][t] for t in times.tolist()],
                                   rtol=1e-15, atol=1e-300)
        assert np.all(np.abs(values) <= 1e15)
