"""Tests of pipelines/common.py: the run directory, epoch history, tables."""

import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import LSTM
from seqlab.pipelines import common
from seqlab.pipelines.common import (
    EXPORT_MARKER,
    RUN_MARKER,
    AtomicBackupAndRestore,
    EpochHistory,
    RunDirectory,
    StopOnNonFiniteLoss,
    TrainingDiverged,
    UsageError,
    check_export_path,
    check_output,
    format_table,
    is_saved_model,
    overlap_line,
    open_run,
    pyplot,
    save_figure,
    write_json_atomic,
    write_marker,
    write_text_atomic,
    written_or_refused,
)
from seqlab.pipelines.paths import (
    DATA_FILES,
    check_data_unchanged,
    data_fingerprints,
    export_path,
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


def test_the_folder_the_command_runs_in_is_no_out(tmp_path, monkeypatch):
    # Empty, it was replaced by the run: the shell's current folder was then a removed one,
    # where `ls` showed nothing and `evaluate --run .` found no run.
    here = tmp_path / "here"
    (here / "deeper").mkdir(parents=True)
    monkeypatch.chdir(here / "deeper")
    for out in (".", "..", str(here)):
        with pytest.raises(UsageError, match=r"is the folder this command runs in \(or holds "
                                             r"it\)"):
            RunDirectory(out, "toy").check_out()
    RunDirectory("run", "toy").check_out()  # a new folder inside it is fine
    # A shell left in a removed folder (where a replaced run leaves it) holds no --out.
    (here / "deeper").rmdir()
    RunDirectory(tmp_path / "elsewhere", "toy").check_out()


def test_unfinished_run_is_resumed_only_with_the_same_settings(tmp_path):
    RunDirectory(tmp_path / "run", "toy").start({"a": 1, "b": 2})
    assert RunDirectory(tmp_path / "run", "toy").start({"a": 1, "b": 2}) is True
    with pytest.raises(UsageError, match=r"holds an unfinished run with other settings "
                                         r"\(b: 2 -> 3\); rerun with the same settings"):
        RunDirectory(tmp_path / "run", "toy").start({"a": 1, "b": 3})
    assert RunDirectory(tmp_path / "run", "toy", overwrite=True).start({"a": 1, "b": 3}) is False
    # Another task's unfinished run: said as such, not as 25 changed settings.
    with pytest.raises(UsageError, match=r"holds an unfinished toy run, not a charrnn one; "
                                         r"rerun its seqlab toy train to finish it"):
        RunDirectory(tmp_path / "run", "charrnn").start({"window": 100})


def test_open_run_refuses_unfinished_runs_and_other_tasks(tmp_path):
    RunDirectory(tmp_path / "run", "toy").start({})
    with pytest.raises(UsageError, match=r"run does not exist; expected a run directory that "
                                         r"train wrote \(.*run\.partial holds an unfinished run"):
        open_run(tmp_path / "run", "toy")
    out = finished_run(tmp_path / "other", {})
    with pytest.raises(UsageError, match=r"is a run of task 'toy', not 'timeseries'"):
        open_run(out, "timeseries")
    # A folder named only ".partial" is no unfinished run of a run named "" (that crashed),
    # nor is a folder of the user's named NAME.partial, without the run marker.
    for name in (".partial", "notes.partial"):
        (tmp_path / name).mkdir()
        with pytest.raises(UsageError, match=r"\.partial is not a finished seqlab run: it has "):
            open_run(tmp_path / name, "toy")
    with pytest.raises(UsageError, match=r"run\.partial is an unfinished run: rerun train"):
        open_run(tmp_path / "run.partial", "toy")


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    write_text_atomic(tmp_path / "sub" / "a.txt", "one")
    write_text_atomic(tmp_path / "sub" / "a.txt", "two")
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["a.txt"]
    assert (tmp_path / "sub" / "a.txt").read_text() == "two"


# The é names: one is cut inside a character, whatever the length of the process id.
@pytest.mark.parametrize("name", ["a" * 251 + ".txt", "é" * 125 + ".txt", "aé" + "é" * 124 + ".tx",
                                  "b" * 255])
def test_atomic_write_takes_any_name_the_file_system_takes(tmp_path, name):
    # Names of 241 to 255 bytes were refused, "File name too long": the temporary's name
    # (".NAME.tmp-PID") was longer.
    if hasattr(os, "pathconf") and os.pathconf(tmp_path, "PC_NAME_MAX") < 255:
        pytest.skip("the file system takes shorter names")
    write_text_atomic(tmp_path / name, "one")
    write_text_atomic(tmp_path / name, "two")
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert (tmp_path / name).read_text() == "two"


def test_atomic_write_works_where_the_system_has_no_pathconf(tmp_path, monkeypatch):
    # Windows has no os.pathconf: its AttributeError made every atomic write fail there.
    monkeypatch.delattr(os, "pathconf", raising=False)
    write_text_atomic(tmp_path / "metrics.json", "{}")
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_atomic_write_writes_into_a_named_pipe_or_device_instead_of_replacing_it(tmp_path,
                                                                                   capsys):
    # `--output PIPE` or `--output /dev/null`: a rename over them deleted the pipe or device
    # (as root, /dev/full became a plain file).
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    reader = subprocess.Popen([sys.executable, "-c", f"print(open({str(pipe)!r}).read(), end='')"],
                              stdout=subprocess.PIPE, text=True)
    try:
        write_text_atomic(pipe, "forecast\n")
        assert reader.communicate(timeout=60)[0] == "forecast\n"
    finally:
        reader.kill()
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary beside it
    # No reader yet: the writer says that it waits (it blocked silently), then writes.
    writer = threading.Thread(target=write_text_atomic, args=(pipe, "later\n"), daemon=True)
    writer.start()
    said, deadline = "", time.monotonic() + 60
    while "waiting for a process to read the named pipe" not in said:
        assert time.monotonic() < deadline, said
        time.sleep(0.05)
        said += capsys.readouterr().err
    with open(pipe, encoding="utf-8") as reading:
        assert reading.read() == "later\n"
    writer.join(timeout=60)
    if os.path.exists("/dev/null"):
        write_text_atomic("/dev/null", "discarded")
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    if os.path.exists("/dev/full"):  # a write that fails is one line, and the device stays
        with pytest.raises(UsageError, match=r"/dev/full: cannot write there \(No space left"):
            write_text_atomic("/dev/full", "x" * 100_000)
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


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



def test_backups_cost_at_most_a_tenth_of_training_and_the_first_epoch_is_backed_up(
        tmp_path, monkeypatch):
    # A fake clock: each backup takes 1 s; epochs take 0.3 s. With COST_RATIO 10 a backup is
    # due 10 s after the last one ended, so after epochs 1, 35 and 69 of 100 (the first,
    # then every 34th: 33 epochs of 0.3 s = 9.9 s is not yet 10 s).
    now = [0.0]
    saved = []
    monkeypatch.setattr("seqlab.pipelines.common.time.perf_counter", lambda: now[0])
    callback = AtomicBackupAndRestore(str(tmp_path / "backup"))

    def fake_save():
        saved.append(callback._current_epoch)
        now[0] += 1.0

    def train(epochs, epoch_seconds):
        """The epochs backed up in a training of `epochs` epochs of `epoch_seconds` each."""
        saved.clear()
        callback.on_train_begin()
        for epoch in range(epochs):
            now[0] += epoch_seconds
            callback.on_epoch_end(epoch)
        return saved

    callback._save_model = fake_save
    monkeypatch.setattr(keras.callbacks.BackupAndRestore, "on_train_begin", lambda *a: None)
    assert train(100, 0.3) == [1, 35, 69]
    # Backups longer than an epoch's tenth: every epoch is backed up, as Keras does.
    assert train(5, 20.0) == [1, 2, 3, 4, 5]
    # On several workers every epoch is backed up: each worker timed its own, and a restarted
    # cluster resumed its workers one epoch apart. (A stand-in class for the strategy: a real
    # one would configure this process's collectives.)
    class MultiWorker:
        pass

    monkeypatch.setattr(tf.distribute, "MultiWorkerMirroredStrategy", MultiWorker)
    callback.set_model(types.SimpleNamespace(distribute_strategy=MultiWorker()))
    assert train(5, 0.3) == [1, 2, 3, 4, 5]

def test_a_backup_the_disk_cannot_hold_is_refused_before_h5py_writes(tmp_path, monkeypatch):
    # On a full disk (or under `ulimit -f`) HDF5 failed mid-write and its objects crashed the
    # process as they were freed: a segmentation fault, and a half-written temporary left.
    model = keras.Sequential([keras.Input((3, 2)), LSTM(4), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    model.fit(np.zeros((4, 3, 2)), np.zeros((4, 1)), verbose=0)
    callback = AtomicBackupAndRestore(str(tmp_path / "backup"))
    callback.set_model(model)
    callback._current_epoch, callback._last_batch_seen = 1, 0
    callback._save_model()
    latest = Path(callback._weights_path)
    kept = latest.read_bytes()
    assert len(kept) <= common.weights_file_bytes(model)  # the estimate holds the file
    monkeypatch.setattr(common, "file_size_limit", lambda: 20 * 1024)
    with pytest.raises(UsageError, match=r"latest\.weights\.h5: cannot write there \(about "
                                         r"[\d.]+ KiB, over this process's file size limit of "
                                         r"20\.0 KiB: ulimit -f\)"):
        callback._save_model()
    monkeypatch.setattr(common, "file_size_limit", lambda: None)
    monkeypatch.setattr(common.shutil, "disk_usage",
                        lambda folder: shutil._ntuple_diskusage(10**6, 10**6 - 512, 512))
    with pytest.raises(UsageError, match=r"cannot write there \(No space left on device: "
                                         r"about [\d.]+ KiB needed, 512 B free\)"):
        callback._save_model()
    assert latest.read_bytes() == kept  # the last backup as it was, nothing beside it
    assert sorted(p.name for p in latest.parent.iterdir()) == sorted(
        p.name for p in latest.parent.iterdir() if not p.name.startswith(".latest-"))


def test_format_table_aligns_columns():
    table = format_table(["name", "rmse"], [["model", 1.23456], ["naive", 10.0]])
    assert table.splitlines() == [
        "name      rmse",
        "-----  -------",
        "model   1.2346",
        "naive  10.0000",
    ]


def test_format_table_shows_small_and_large_figures_and_says_n_a_for_undefined_ones():
    # 4 decimals would print 0.0000 for an RMSE in small units; 0 / 0 is not a figure.
    table = format_table(["name", "rmse", "ratio"], [["a", 0.0001234, math.nan],
                                                     ["b", 0.0, 0.5], ["c", 123456.0, math.inf]])
    assert table.splitlines()[2:] == [
        "a     0.0001234     n/a",
        "b        0.0000  0.5000",
        "c     1.235e+05     inf",
    ]


# --- seqlab deletes only folders that carry its marker -------------------------------------------


def _tree(folder):
    return sorted((str(p.relative_to(folder)), p.read_bytes() if p.is_file() else None)
                  for p in folder.rglob("*"))


def test_a_finished_run_carries_the_marker_and_is_replaced_with_overwrite(tmp_path):
    out = finished_run(tmp_path / "run", {"a": 1})
    marker = json.loads((out / RUN_MARKER).read_text())
    assert marker["seqlab"] == "run" and marker["format"] == 1 and marker["task"] == "toy"
    run = RunDirectory(out, "toy", overwrite=True)
    run.start({"a": 2})
    assert run.finish() == out and open_run(out, "toy").settings == {"a": 2}


def test_output_may_not_overwrite_the_runs_files_nor_the_data(tmp_path, monkeypatch):
    data_file, data_folder = tmp_path / "sales.csv", tmp_path / "shops"
    data_file.write_text("y\n1\n")
    data_folder.mkdir()
    (data_folder / "a.csv").write_text("y\n1\n")
    run = RunDirectory(tmp_path / "run", "toy")
    run.start({"data": str(data_file), "test_data": str(data_folder), "out": "run", "k": "x"})
    run.write_json("metrics.json", {"score": 1})
    run.path("plots", "loss.png").write_bytes(b"png")
    out = run.finish()
    # The marker lists what train wrote.
    assert json.loads((out / RUN_MARKER).read_text())["files"] == [
        "config.json", "metrics.json", "plots"]
    settings = open_run(out, "toy").settings
    refused = {
        out: "would overwrite the run directory",
        out / "metrics.json": "would overwrite metrics.json, a file of the run",
        out / "config.json": "would overwrite config.json, a file of the run",
        out / RUN_MARKER: f"would overwrite {RUN_MARKER}, a file of the run",
        out / "plots" / "new.png": "would write into plots/, a folder of the run",
        out / "export" / "1": "would write into export/, a folder of the run",
        data_file: f"would overwrite the data {data_file}; write it elsewhere$",
        data_folder / "a.csv": "outside the data's folder",
        data_folder / "new.csv": "outside the data's folder",
        tmp_path / "other.csv": "would overwrite the data",  # the data this command reads
    }
    for output, message in refused.items():
        with pytest.raises(UsageError, match=message):
            check_output(output, out, settings, [None, tmp_path / "other.csv"])
    # A link is refused, as --out's is: the atomic write had replaced it with a file.
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "link.csv").symlink_to(tmp_path / "notes.txt")
    with pytest.raises(UsageError, match="is a symbolic link; seqlab neither writes through"):
        check_output(tmp_path / "link.csv", out, settings)
    # A run trained on a data set by name reads its cache: predict --output there had replaced
    # the cached monthly-sunspots.csv with the forecast.
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEQLAB_DATA_HOME", str(cache))
    for output in (cache / "monthly-sunspots" / "monthly-sunspots.csv", cache / "new.csv"):
        with pytest.raises(UsageError, match="would write into seqlab's data-set cache"):
            check_output(output, out, {**settings, "data": "monthly-sunspots"})
    # A new name in the run, predict's default file, any other file: written.
    (out / "forecast.csv").write_text("old")
    for output in (out / "forecast.csv", out / "my-forecast.csv", tmp_path / "elsewhere.csv"):
        check_output(output, out, settings, [None, tmp_path / "other.csv"])
    # A run finished before the marker listed its files: all it holds but predict's default.
    marker = json.loads((out / RUN_MARKER).read_text())
    del marker["files"]
    write_json_atomic(out / RUN_MARKER, marker)
    check_output(out / "forecast.csv", out, settings)
    for name in ("metrics.json", "my-forecast.csv"):
        (out / name).write_text("x")
        with pytest.raises(UsageError, match=f"would overwrite {name}, a file of the run"):
            check_output(out / name, out, settings)


def test_output_may_not_overwrite_another_runs_files_nor_an_export(tmp_path):
    run = finished_run(tmp_path / "a", {"k": 1})
    other = RunDirectory(tmp_path / "b", "sentiment")
    other.start({"k": 2})
    other.write_json("metrics.json", {"score": 1})
    other.path("plots", "loss.png").write_bytes(b"png")
    other = other.finish()
    served = tmp_path / "served"
    served.mkdir()
    (served / "saved_model.pb").write_bytes(b"graph")
    write_marker(served, EXPORT_MARKER, "export")
    unfinished = RunDirectory(tmp_path / "c", "toy")
    unfinished.start({"k": 3})
    refused = {
        other / "metrics.json": "would overwrite metrics.json, a file of the run .*b",
        other / "config.json": "would overwrite config.json, a file of the run .*b",
        other / "plots" / "new.png": "would write into plots/, a folder of the run .*b",
        other: "would overwrite the run directory .*b",
        served / "saved_model.pb": "would write into the SavedModel .*served",
        served / "variables" / "x": "would write into the SavedModel .*served",
        # An unfinished run's folder, a new name too: the train that finishes it over again
        # replaces the folder (a predict's file written there was deleted so).
        unfinished.work / "config.json": "is inside .*c.partial, an unfinished run that train "
                                         "replaces or deletes",
        unfinished.work / "mine.csv": "is inside .*c.partial, an unfinished run",
    }
    settings = open_run(run, "toy").settings
    for output, message in refused.items():
        with pytest.raises(UsageError, match=message):
            check_output(output, run, settings)
    # A new name beside another run's files, or beside the export: written.
    for output in (other / "my-figures.json", tmp_path / "figures.json"):
        check_output(output, run, settings)


def test_overwrite_refuses_a_run_holding_files_its_train_did_not_write(tmp_path):
    out = finished_run(tmp_path / "run", {"a": 1})
    (out / "forecast.csv").write_text("predict's default file")
    (out / ".metrics.json.tmp-123").write_text("a killed writer's temporary")
    (out / "export").mkdir()
    RunDirectory(out, "toy", overwrite=True).check_out()  # all of it seqlab's
    (out / "notes.txt").write_text("mine")
    (out / "eval.json").write_text("{}")
    with pytest.raises(UsageError, match=r"holds what its train did not write \(eval\.json, "
                                         r"notes\.txt\); --overwrite replaces the whole run"):
        RunDirectory(out, "toy", overwrite=True).check_out()
    assert (out / "notes.txt").read_text() == "mine"
    # A run finished before the marker listed its files is replaced as before.
    marker = json.loads((out / RUN_MARKER).read_text())
    del marker["files"]
    write_json_atomic(out / RUN_MARKER, marker)
    RunDirectory(out, "toy", overwrite=True).check_out()


def test_overwrite_keeps_files_added_to_the_old_run_while_the_new_one_trained(tmp_path):
    out = finished_run(tmp_path / "run", {"a": 1})
    run = RunDirectory(out, "toy", overwrite=True)
    run.start({"a": 2})
    run.write_json(common.FIT_DONE_NAME, {"best_epoch": 1})
    # Written into the old run after the new train's start (its check) and before its end:
    # the old run, with it, was removed.
    (out / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"now holds what its train did not write \(notes\.txt\)"
                                         r", added while this run trained; .*give the same "
                                         r"command again, which finishes this run"):
        run.finish()
    assert (out / "notes.txt").read_text() == "mine" and open_run(out, "toy").settings == {
        "a": 1}
    # Moved out, the same command finishes the trained run (fit_done.json is still there).
    (out / "notes.txt").rename(tmp_path / "notes.txt")
    again = RunDirectory(out, "toy", overwrite=True)
    assert again.start({"a": 2}) is True
    assert (again.work / common.FIT_DONE_NAME).is_file()
    assert again.finish() == out and open_run(out, "toy").settings == {"a": 2}


def test_a_run_an_overwrite_was_killed_in_the_middle_of_replacing_is_put_back(tmp_path,
                                                                             capsys):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    hidden = tmp_path / f".run.replaced-{int(dead.stdout)}"
    # Killed between replace_directory's two renames: the old run hidden, --out gone.
    out = finished_run(tmp_path / "run", {"a": 1})
    out.rename(hidden)
    RunDirectory(out, "toy", overwrite=True).check_out()
    assert open_run(out, "toy").settings == {"a": 1} and not hidden.exists()
    assert f"put back {out}: an interrupted --overwrite had moved it aside" in (
        capsys.readouterr().out)
    # Killed after both: the replaced run beside the new one is seqlab's garbage.
    shutil.copytree(out, hidden)
    RunDirectory(out, "toy", overwrite=True).check_out()
    assert not hidden.exists() and open_run(out, "toy").settings == {"a": 1}
    # A folder of that name that is no seqlab run is never touched.
    hidden.mkdir()
    (hidden / "mine.txt").write_text("mine")
    RunDirectory(out, "toy", overwrite=True).check_out()
    assert (hidden / "mine.txt").read_text() == "mine"
    # Nor one whose number no process can have (os.kill raised OverflowError there).
    huge = tmp_path / f".run.replaced-{10 ** 30}"
    shutil.copytree(out, huge)
    RunDirectory(out, "toy", overwrite=True).check_out()
    assert huge.is_dir()


def test_fit_done_goes_only_once_the_run_is_in_place(tmp_path, monkeypatch):
    run = RunDirectory(tmp_path / "run", "toy")
    run.start({"a": 1})
    run.write_json(common.FIT_DONE_NAME, {"best_epoch": 1})

    def killed(new, path):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(common, "replace_directory", killed)
        with pytest.raises(KeyboardInterrupt):
            run.finish()
    # A kill before the rename: the same command continues after fit, not from epoch 1.
    assert (run.work / common.FIT_DONE_NAME).is_file()
    out = run.finish()
    assert not (out / common.FIT_DONE_NAME).exists()
    assert common.FIT_DONE_NAME not in json.loads((out / RUN_MARKER).read_text())["files"]
    # Left by a kill just after the rename, it is seqlab's: --overwrite does not refuse it.
    (out / common.FIT_DONE_NAME).write_text("{}")
    RunDirectory(out, "toy", overwrite=True).check_out()


def test_overwrite_refuses_a_users_file_inside_the_runs_folders(tmp_path):
    run = RunDirectory(tmp_path / "run", "toy")
    run.start({"a": 1})
    (run.work / "plots").mkdir()
    (run.work / "plots" / "loss.png").write_text("train's plot")
    (run.work / "saved_model" / "assets").mkdir(parents=True)  # an empty folder of train's
    out = run.finish()
    (out / "export" / "1").mkdir(parents=True)  # an export of seqlab's, and one being written
    write_marker(out / "export" / "1", EXPORT_MARKER, "export")
    (out / "export" / ".2.claim").write_text("{}")
    (out / "export" / ".2.tmp-123").mkdir()
    RunDirectory(out, "toy", overwrite=True).check_out()  # all of it seqlab's
    (out / "plots" / "notes.txt").write_text("mine")
    (out / "saved_model" / "assets" / "mine").mkdir()
    (out / "saved_model" / "assets" / "mine" / "a.txt").write_text("mine")
    (out / "export" / "README").write_text("mine")
    before = _tree(out)
    with pytest.raises(UsageError, match=r"holds what its train did not write \(export/README, "
                                         r"plots/notes\.txt, saved_model/assets/mine\)"):
        RunDirectory(out, "toy", overwrite=True).check_out()
    assert _tree(out) == before
    # A run whose marker lists only its top-level names (finished before the marker kept the
    # tree): its folders are its train's, as they were; the export folder holds exports only.
    marker = json.loads((out / RUN_MARKER).read_text())
    del marker["tree"]
    write_json_atomic(out / RUN_MARKER, marker)
    with pytest.raises(UsageError, match=r"did not write \(export/README\)"):
        RunDirectory(out, "toy", overwrite=True).check_out()
    (out / "export" / "README").unlink()
    RunDirectory(out, "toy", overwrite=True).check_out()


def test_evaluate_refuses_a_data_folder_changed_since_training(tmp_path):
    folder = tmp_path / "series"
    folder.mkdir()
    for name in ("a.csv", "b.csv"):
        (folder / name).write_text("t,y\n1,1\n2,2\n")
    run = tmp_path / "run"
    run.mkdir()
    write_json_atomic(run / DATA_FILES, data_fingerprints({"data": str(folder)}, ["data"]))
    check_data_unchanged(run)  # as it was
    (folder / "b.csv").write_text("t,y\n1,1\n2,3\n")  # the same size, another value
    with pytest.raises(UsageError, match=f"{folder} has changed since the run"):
        check_data_unchanged(run)
    (folder / "b.csv").write_text("t,y\n1,1\n2,2\n")
    check_data_unchanged(run)
    (folder / "b.csv").rename(folder / "c.csv")  # a file renamed is another series
    with pytest.raises(UsageError, match="has changed since the run"):
        check_data_unchanged(run)


def test_evaluate_says_what_to_do_when_the_data_of_the_run_was_moved(tmp_path):
    # It said "file not found" (the reader's), without a word about --data.
    data = tmp_path / "series.csv"
    data.write_text("t,y\n1,1\n2,2\n")
    run = tmp_path / "run"
    run.mkdir()
    write_json_atomic(run / DATA_FILES, data_fingerprints({"data": str(data)}, ["data"]))
    data.rename(tmp_path / "moved.csv")
    with pytest.raises(UsageError, match=rf"^{re.escape(str(data))}: not found; the run "
                                         rf"{re.escape(str(run))} trained on it .*put it back "
                                         r"there .*or give the data at its new place with "
                                         r"--data \(scored as given, not split"):
        check_data_unchanged(run)


def test_files_of_a_data_folder_its_reader_skips_do_not_stop_evaluate(tmp_path):
    # A folder of series trained with "read the 2 .csv files only, not notes.txt": an edit to
    # notes.txt (or to a file in a subfolder, or a hidden one) made evaluate refuse the run.
    folder = tmp_path / "series"
    (folder / "old").mkdir(parents=True)
    for name in ("a.csv", "B.CSV", "notes.txt", ".hidden.csv", "old/c.csv"):
        (folder / name).write_text("t,y\n1,1\n2,2\n")
    run = tmp_path / "run"
    run.mkdir()
    record = data_fingerprints({"data": str(folder)}, ["data"], {"data": "*.csv"})
    assert record["data"]["files"] == "*.csv"
    write_json_atomic(run / DATA_FILES, record)
    for name in ("notes.txt", ".hidden.csv", "old/c.csv"):
        (folder / name).write_text("changed\n")
    check_data_unchanged(run)
    for change in (lambda: (folder / "B.CSV").write_text("t,y\n1,1\n2,3\n"),
                   lambda: (folder / "d.csv").write_text("t,y\n1,1\n")):  # a series more
        change()
        with pytest.raises(UsageError, match=f"{folder} has changed since the run"):
            check_data_unchanged(run)
        write_json_atomic(run / DATA_FILES,
                          data_fingerprints({"data": str(folder)}, ["data"], {"data": "*.csv"}))
    # A record without a pattern (every run before it) still covers every file.
    write_json_atomic(run / DATA_FILES, data_fingerprints({"data": str(folder)}, ["data"]))
    (folder / "notes.txt").write_text("changed again\n")
    with pytest.raises(UsageError, match="has changed since the run"):
        check_data_unchanged(run)


def test_a_damaged_data_record_is_refused_and_odd_file_names_are_fingerprinted(tmp_path):
    # A data_files.json that could not be read (damaged, or unreadable to its user) was
    # skipped without a word, and changed data scored; a file name whose bytes are not UTF-8
    # in a data folder was a UnicodeEncodeError traceback.
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "a.csv").write_text("t,y\n1,1\n")
    odd = os.path.join(os.fsencode(folder), b".\xffnote")
    with open(odd, "w") as file:
        file.write("a note\n")
    run = tmp_path / "run"
    run.mkdir()
    write_json_atomic(run / DATA_FILES, data_fingerprints({"data": str(folder)}, ["data"]))
    check_data_unchanged(run)
    with open(odd, "w") as file:
        file.write("changed\n")
    with pytest.raises(UsageError, match="has changed since the run"):
        check_data_unchanged(run)
    (run / DATA_FILES).write_text('{"data": ')
    with pytest.raises(UsageError, match=r"data_files\.json"):
        check_data_unchanged(run)
    (run / DATA_FILES).unlink()
    check_data_unchanged(run)  # a run from before the record


def test_a_partial_folder_of_the_users_own_is_never_deleted(tmp_path):
    mine = tmp_path / "a.partial"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    (mine / "config.json").write_text("{}")
    before = _tree(mine)
    for overwrite in (False, True):
        with pytest.raises(UsageError, match=r"a\.partial exists and was not written by seqlab "
                                             r"\(no seqlab-run\.json\)"):
            RunDirectory(tmp_path / "a", "toy", overwrite=overwrite).start({"a": 1})
    assert _tree(mine) == before and not (tmp_path / "a").exists()


def test_overwrite_never_replaces_a_folder_with_a_config_json_of_the_users(tmp_path):
    mine = tmp_path / "data"
    mine.mkdir()
    (mine / "config.json").write_text('{"task": "toy", "settings": {}}')
    (mine / "measurements.csv").write_text("1,2\n")
    before = _tree(mine)
    with pytest.raises(UsageError, match=r"exists and is not a seqlab run \(no seqlab-run"):
        RunDirectory(mine, "toy", overwrite=True).start({})
    assert _tree(mine) == before and not (tmp_path / "data.partial").exists()


def test_a_run_of_an_earlier_version_is_read_but_not_replaced(tmp_path):
    out = finished_run(tmp_path / "old", {"a": 1})
    (out / RUN_MARKER).unlink()  # as seqlab wrote runs before the marker
    assert open_run(out, "toy").settings == {"a": 1}
    before = _tree(out)
    with pytest.raises(UsageError, match=r"holds a run written by an earlier seqlab version "
                                         r"\(no seqlab-run\.json\), which seqlab does not "
                                         r"replace: evaluate, predict and export still read it"):
        RunDirectory(out, "toy", overwrite=True).start({"a": 2})
    assert _tree(out) == before


def test_an_unfinished_run_of_an_earlier_version_is_resumed_but_never_deleted(tmp_path):
    RunDirectory(tmp_path / "run", "toy").start({"a": 1})
    partial = tmp_path / "run.partial"
    (partial / RUN_MARKER).unlink()
    (partial / ".lock").unlink()
    with pytest.raises(UsageError, match=r"unfinished run of an earlier seqlab version"):
        RunDirectory(tmp_path / "run", "toy", overwrite=True).start({"a": 2})
    assert (partial / "config.json").is_file()
    assert RunDirectory(tmp_path / "run", "toy").start({"a": 1}) is True
    assert (partial / RUN_MARKER).is_file()


@pytest.mark.parametrize("name", ["x.partial", "x.partial/"])
def test_a_partial_name_is_refused_as_out(tmp_path, name):
    with pytest.raises(UsageError, match=r"a name ending in \.partial is where seqlab keeps an "
                                         r"unfinished run; give the final name \(--out .*x\)"):
        RunDirectory(f"{tmp_path}/{name}", "toy").start({})
    assert list(tmp_path.iterdir()) == []


def test_a_trailing_separator_names_the_same_run(tmp_path):
    run = RunDirectory(f"{tmp_path / 'run'}/", "toy")
    run.start({})
    assert run.work == tmp_path / "run.partial"
    assert run.finish() == tmp_path / "run"


@pytest.mark.parametrize("linked", ["run", "run.partial"])
def test_symlinked_run_folders_are_refused_and_not_followed(tmp_path, linked):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    (tmp_path / linked).symlink_to(target)
    with pytest.raises(UsageError, match=r"is a symbolic link; seqlab does not write through"):
        RunDirectory(tmp_path / "run", "toy", overwrite=True).start({})
    assert [p.name for p in target.iterdir()] == ["keep.txt"]


def test_export_paths_seqlab_did_not_write_are_refused(tmp_path):
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "saved_model.pb").write_bytes(b"")
    (fake / "thesis.txt").write_text("draft")
    with pytest.raises(UsageError, match=r"is not a SavedModel written by seqlab"):
        check_export_path(fake, overwrite=True)
    # A device or a named pipe: refused in one line (a NotADirectoryError traceback before).
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    for path in (pipe, Path("/dev/null")):
        with pytest.raises(UsageError, match=f"{path} exists and is not a folder"):
            check_export_path(path)
    old = tmp_path / "old"  # an export written before the marker: SavedModel files only
    (old / "variables").mkdir(parents=True)
    (old / "saved_model.pb").write_bytes(b"graph")
    (old / "variables" / "variables.index").write_bytes(b"index")
    assert is_saved_model(old)
    check_export_path(old, overwrite=True)
    (old / "variables" / "mine.txt").write_text("mine")
    assert not is_saved_model(old)
    link = tmp_path / "link"
    link.symlink_to(old)
    with pytest.raises(UsageError, match=r"is a symbolic link"):
        check_export_path(link, overwrite=True)
    with pytest.raises(UsageError, match=r"/ exists and is not a SavedModel"):
        check_export_path(Path("/"))  # no name to look for an unfinished run's '/.partial' by
    under_a_file = tmp_path / "thesis.txt" / "export"
    (tmp_path / "thesis.txt").write_text("draft")
    with pytest.raises(UsageError, match=r"thesis\.txt is a file, not a folder"):
        check_export_path(under_a_file)


def test_an_export_inside_a_data_folder_the_run_trained_on_is_refused(tmp_path):
    # It was written there: evaluate then refused the run ("has changed since the run trained
    # on it") and the next train on the folder read the SavedModel as data.
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text("some text\n")
    run = tmp_path / "run"
    run.mkdir()
    write_json_atomic(run / DATA_FILES, data_fingerprints({"data": str(folder)}, ["data"]))
    for out in (folder / "export", folder / "deeper" / "1"):
        with pytest.raises(UsageError, match=rf"--out {out} is inside the --data folder "
                                             rf"{folder} that the run {run} trained on"):
            export_path(run, out)
    assert export_path(run, tmp_path / "elsewhere") == tmp_path / "elsewhere"
    assert sorted(p.name for p in folder.iterdir()) == ["a.txt"]


# --- no NaN figure ------------------------------------------------------------------------------


def test_json_files_never_hold_nan_or_infinity(tmp_path):
    import numpy as np

    write_json_atomic(tmp_path / "m.json", {"a": float("nan"), "b": [np.float32("inf"), 1.5],
                                            "c": {"d": -math.inf, "e": np.float64(2.0)}})
    text = (tmp_path / "m.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"a": None, "b": [None, 1.5], "c": {"d": None, "e": 2.0}}


def test_a_diverged_epoch_stops_training_in_one_line():
    stop = StopOnNonFiniteLoss(learning_rate=5.0)
    stop.on_epoch_end(0, {"loss": 0.5, "val_loss": 0.7})
    with pytest.raises(TrainingDiverged, match=r"^training diverged: val_loss became nan in epoch "
                                                r"3; no figures were written\. Lower "
                                                r"--learning-rate \(now 5\)"):
        stop.on_epoch_end(2, {"loss": 0.5, "val_loss": float("nan")})
    assert issubclass(TrainingDiverged, UsageError)


def test_a_file_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"out\.json: cannot write there \(.*notes\.txt is a file, "
                                         r"not a folder\)"):
        write_text_atomic(tmp_path / "notes.txt" / "out.json", "x")

    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pathlib.Path.write_bytes", full)
    with pytest.raises(UsageError, match=r"a\.txt: cannot write there \(No space left on device\)"):
        write_text_atomic(tmp_path / "a.txt", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_an_unfinished_run_with_a_damaged_config_is_named_and_overwrite_starts_over(tmp_path):
    RunDirectory(tmp_path / "run", "toy").start({"a": 1})
    (tmp_path / "run.partial" / "config.json").write_text('{"settings": ')
    with pytest.raises(UsageError, match=r"config\.json: not complete JSON .*; pass --overwrite "
                                         r"to start the run over"):
        RunDirectory(tmp_path / "run", "toy").start({"a": 1})
    assert RunDirectory(tmp_path / "run", "toy", overwrite=True).start({"a": 1}) is False


def test_a_full_disk_in_a_librarys_own_error_is_one_line_naming_the_file(tmp_path):
    # Found on a nearly full tmpfs: h5py (the epoch backup) raised a RuntimeError quoting
    # errno 28, and PIL (a plot) an AttributeError while handling the OSError: tracebacks.
    def h5py_like():
        raise RuntimeError("Can't synchronously write data (file write failed: time = Sat, "
                           "errno = 28, error message = 'No space left on device', ...)")

    def pil_like():
        try:
            raise OSError(28, "No space left on device")
        except OSError:
            raise AttributeError("'_idat' object has no attribute 'fileno'") from None

    for write in (h5py_like, pil_like):
        with pytest.raises(UsageError, match=r"loss\.png: cannot write there \(No space left on "
                                             r"device\)$"):
            with written_or_refused(tmp_path / "loss.png"):
                write()
    # Anything else is not a write failure, and stays what it is.
    with pytest.raises(AttributeError, match="no attribute 'plot'"):
        with written_or_refused(tmp_path / "loss.png"):
            raise AttributeError("'Axes' object has no attribute 'plot'")
    (tmp_path / "a-file").write_text("x")
    plt = pyplot()
    figure, _ = plt.subplots()
    with pytest.raises(UsageError, match=r"a-file/loss\.png: cannot write there"):
        save_figure(figure, tmp_path / "a-file" / "loss.png")
    assert not plt.get_fignums()  # closed all the same


def test_a_plot_that_cannot_be_written_whole_leaves_the_previous_one(tmp_path, monkeypatch):
    # A full disk while matplotlib wrote plots/forecast.png left a truncated PNG in the run.
    import errno

    plot = tmp_path / "forecast.png"
    plt = pyplot()
    figure, axis = plt.subplots()
    axis.plot([1, 2, 3])
    save_figure(figure, plot)
    first = plot.read_bytes()
    assert first.startswith(b"\x89PNG")
    real_write = Path.write_bytes

    def filling_the_disk(self, data):
        real_write(self, data[:100])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", filling_the_disk)
    figure, axis = plt.subplots()
    axis.plot([3, 2, 1])
    with pytest.raises(UsageError, match=r"forecast\.png: cannot write there \(No space left"):
        save_figure(figure, plot)
    assert plot.read_bytes() == first and [p.name for p in tmp_path.iterdir()] == [plot.name]
    assert not plt.get_fignums()


def test_an_export_removes_what_a_killed_export_of_the_same_path_left(tmp_path):
    # `export --out ex` killed while it wrote left `.ex.tmp-<pid>` beside ex, for good.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left, recent, alive = (tmp_path / f".ex.tmp-{pid}" for pid in (dead.pid, 999999, os.getpid()))
    for folder in (left, recent, alive):
        folder.mkdir()
        (folder / "saved_model.pb").write_bytes(b"half")
    old = time.time() - 2 * common.STALE_EXPORT_SECONDS
    for folder in (left, alive):
        os.utime(folder, (old, old))
    common._remove_killed_exports(tmp_path / "ex")
    # Gone: the old one of a process that ended. Kept: a recent one, and a running process's.
    assert not left.exists() and recent.exists() and alive.exists()
    # An overwriting export writes into `.ex.new-PID` through `..ex.new-PID.tmp-PID`: a kill
    # left either for good (the cleanup looked for `.ex.tmp-*` only).
    killed = [tmp_path / f".ex.new-{dead.pid}", tmp_path / f"..ex.new-{dead.pid}.tmp-{dead.pid}"]
    for folder in killed:
        folder.mkdir()
        os.utime(folder, (old, old))
    common.recover_interrupted_export(tmp_path / "ex")
    assert not any(folder.exists() for folder in killed)


def test_an_export_an_overwrite_was_killed_in_the_middle_of_replacing_is_put_back(tmp_path,
                                                                                 capsys):
    """Killed between replace_directory's two renames, `--out` was gone and the previous
    export hidden for good (train put a run back; export did not)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "ex"
    hidden = tmp_path / f".ex.replaced-{dead.pid}"
    hidden.mkdir()
    (hidden / "saved_model.pb").write_bytes(b"the previous export")
    common.write_marker(hidden, common.EXPORT_MARKER, "export")
    common.recover_interrupted_export(out)
    assert (out / "saved_model.pb").read_bytes() == b"the previous export"
    assert not hidden.exists()
    assert f"put back {out}: an interrupted --overwrite had moved it aside" in (
        capsys.readouterr().out)
    # A run's marker is not an export's: a hidden run beside an export path stays.
    run = finished_run(tmp_path / f".ex.replaced-{dead.pid}", {"a": 1})
    shutil.rmtree(out)
    common.recover_interrupted_export(out)
    assert run.is_dir() and not out.exists()


def test_the_overlap_note_names_a_test_set_by_its_name_once():
    # translate's test2016 files read "4 of the 6 test test2016 sources are also training
    # test2016 sources ... on test2016 sources it has not seen".
    assert overlap_line(4, 6, 20, 20, "sources", test_name="test2016") == (
        "note: 4 of the 6 test2016 sources (and 20 of the 20 validation sources) are also "
        "training sources, word for word: the test figures overstate how the model does on "
        "sources it has not seen")
    assert overlap_line(1, 9, 0, 5, "texts").startswith("note: 1 of the 9 test texts are also ")
