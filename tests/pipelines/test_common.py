"""Tests of pipelines/common.py: the run directory, epoch history, tables."""

import json

import pytest

from seqlab.pipelines.common import (
    EpochHistory,
    RunDirectory,
    UsageError,
    format_table,
    open_run,
    write_text_atomic,
)


# --- the run directory -------------------------------------------------------------------------


def finished_run(out, settings, task="toy"):
    run = RunDirectory(out, task)
    run.start(settings)
    run.write_json("metrics.json", {"score": 1})
    return run.finish()


def test_run_is_written_under_partial_and_renamed_when_finished(tmp_path):
    out = tmp_path / "run"
    run = RunDirectory(out, "toy")
    assert run.start({"a": 1}) is False
    assert (tmp_path / "run.partial" / "config.json").is_file() and not out.exists()
    run.write_json("metrics.json", {"score": 1})
    assert run.finish() == out
    assert not (tmp_path / "run.partial").exists()
    record = json.loads((out / "config.json").read_text())
    assert record["task"] == "toy" and record["settings"] == {"a": 1}
    assert {"python", "tensorflow", "keras", "numpy"} <= set(record["versions"])
    assert open_run(out, "toy").settings == {"a": 1}


def test_finished_run_is_refused_unless_overwrite(tmp_path):
    out = finished_run(tmp_path / "run", {"a": 1})
    with pytest.raises(UsageError, match=r"already holds a finished run; pass --overwrite"):
        RunDirectory(out, "toy").start({"a": 1})
    run = RunDirectory(out, "toy", overwrite=True)
    run.start({"a": 2})
    assert (out / "metrics.json").is_file()  # the old run stays until the new one is finished
    run.finish()
    assert open_run(out, "toy").settings == {"a": 2}
    assert not (out / "metrics.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_a_directory_that_is_not_a_run_is_never_replaced(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep me")
    with pytest.raises(UsageError, match=r"exists and is not a seqlab run"):
        RunDirectory(tmp_path / "notes", "toy", overwrite=True).start({})


def test_unfinished_run_is_resumed_only_with_the_same_settings(tmp_path):
    RunDirectory(tmp_path / "run", "toy").start({"a": 1, "b": 2})
    assert RunDirectory(tmp_path / "run", "toy").start({"a": 1, "b": 2}) is True
    with pytest.raises(UsageError, match=r"holds an unfinished run with other settings "
                                         r"\(b: 2 -> 3\); rerun with the same settings"):
        RunDirectory(tmp_path / "run", "toy").start({"a": 1, "b": 3})
    assert RunDirectory(tmp_path / "run", "toy", overwrite=True).start({"a": 1, "b": 3}) is False


def test_open_run_refuses_unfinished_runs_and_other_tasks(tmp_path):
    RunDirectory(tmp_path / "run", "toy").start({})
    with pytest.raises(UsageError, match=r"not a finished seqlab run.*holds an unfinished run"):
        open_run(tmp_path / "run", "toy")
    out = finished_run(tmp_path / "other", {})
    with pytest.raises(UsageError, match=r"is a run of task 'toy', not 'timeseries'"):
        open_run(out, "timeseries")


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    write_text_atomic(tmp_path / "sub" / "a.txt", "one")
    write_text_atomic(tmp_path / "sub" / "a.txt", "two")
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["a.txt"]
    assert (tmp_path / "sub" / "a.txt").read_text() == "two"


# --- history and tables ------------------------------------------------------------------------


def test_epoch_history_replaces_rows_of_repeated_epochs(tmp_path):
    path = tmp_path / "history.csv"
    first = EpochHistory(path)
    first.on_epoch_end(0, {"loss": 3.0})
    first.on_epoch_end(1, {"loss": 2.0})
    resumed = EpochHistory(path)  # a resumed run repeats epoch 2
    resumed.on_epoch_end(1, {"loss": 1.5})
    resumed.on_epoch_end(2, {"loss": 1.0})
    assert path.read_text().splitlines() == ["epoch,loss", "1,3.0", "2,1.5", "3,1.0"]


def test_format_table_aligns_columns():
    table = format_table(["name", "rmse"], [["model", 1.23456], ["naive", 10.0]])
    assert table.splitlines() == [
        "name      rmse",
        "-----  -------",
        "model   1.2346",
        "naive  10.0000",
    ]
