"""The run lifecycle's promises: nothing it did not write is deleted, one process per run
directory, a train that dies after `fit` resumes after `fit`, and the summary and metrics.json
say how training ended and where everything went (TensorBoard's logs too).

The time-series task stands in for all five: they share this code (pipelines/lifecycle.py).
"""

import csv
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from seqlab import cli
from seqlab.models import AutoForecaster
from seqlab.pipelines import common
from seqlab.pipelines import paths as paths_module
from seqlab.pipelines import timeseries
from seqlab.pipelines.common import (
    EpochProgress, RunDirectory, StopAfterMinutes, UsageError, claim_export_version,
    format_duration, replace_export, take_lock, write_export_archive,
)
from seqlab.pipelines.lifecycle import StopWatch, training_record
from seqlab.pipelines.paths import RUN_MARKER
from tests.pipelines.plot_checks import record_saved_figures, restored_epoch_lines
from seqlab.pipelines.timeseries import TimeseriesConfig


def write_series(path, n_rows=120):
    steps = np.arange(n_rows)
    pd.DataFrame({"t": steps, "y": np.sin(2 * np.pi * steps / 12) + 0.01 * steps}).to_csv(
        path, index=False
    )
    return path


def tiny_config(folder, **overrides):
    """The default model (--model auto) unless `overrides` say otherwise: tests of the
    lifecycle alone ask for a GRU, as auto's classical fits and backtest network would add
    about ten seconds a run and nothing they check."""
    settings = dict(data=str(write_series(folder / "series.csv")), out=str(folder / "run"),
                    time_column="t", target=["y"], lookback=6, units=4, epochs=2)
    settings.update(overrides)
    return TimeseriesConfig(**settings)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One finished `--model auto` run (and its series.csv), shared by the tests that take
    `finished`: they only read it or write outside it; a test that exports into it, edits or
    damages it works on a copy (`shutil.copytree`), never on the run itself."""
    folder = tmp_path_factory.mktemp("lifecycle")
    return folder, timeseries.train(tiny_config(folder)).path


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_evaluate_refuses_its_own_test_split_from_a_data_file_changed_since_training(
        tmp_path, capsys):
    config = tiny_config(tmp_path, model="gru", epochs=1)
    run = timeseries.train(config).path
    recorded = json.loads((run / "data_files.json").read_text())
    assert recorded["data"]["path"] == config.data and recorded["data"]["bytes"] > 0
    assert cli.main(["timeseries", "evaluate", "--run", str(run)]) == 0
    capsys.readouterr()
    frame = pd.read_csv(config.data)
    frame.assign(y=frame["y"] + 1.0).to_csv(config.data, index=False)  # edited since
    assert cli.main(["timeseries", "evaluate", "--run", str(run)]) == 2
    assert (f"{config.data} has changed since the run {run} trained on it"
            in capsys.readouterr().err)
    # Data of the user's choice is scored, and predict (new rows appended, say) still works.
    assert cli.main(["timeseries", "evaluate", "--run", str(run), "--data", config.data]) == 0
    assert cli.main(["timeseries", "predict", "--run", str(run)]) == 0
    # A run trained before the record was kept is not checked (its marker does not list it;
    # a run whose marker lists it refuses to go on without it).
    (run / "data_files.json").unlink()
    assert cli.main(["timeseries", "evaluate", "--run", str(run)]) == 2
    assert "data_files.json missing; its train wrote it" in capsys.readouterr().err
    marker = json.loads((run / RUN_MARKER).read_text())
    for key in ("files", "tree"):
        marker[key].remove("data_files.json")
    (run / RUN_MARKER).write_text(json.dumps(marker))
    assert cli.main(["timeseries", "evaluate", "--run", str(run)]) == 0


# --- exports never delete what they did not write -----------------------------------------------


def test_export_refuses_a_folder_of_the_users_files_and_the_run_itself(finished, tmp_path):
    _, run = finished
    mine = tmp_path / "mydocs"
    mine.mkdir()
    (mine / "thesis.txt").write_text("draft")
    before = _files(run)
    for out in (mine, run, tmp_path, mine / "thesis.txt"):
        assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(out),
                         "--overwrite"]) == 2
    assert (mine / "thesis.txt").read_text() == "draft" and _files(mine) == ["thesis.txt"]
    assert _files(run) == before


def test_export_refuses_a_place_inside_a_run_but_its_export_folder(finished, tmp_path, capsys):
    # `export --out <another run>/saved_model --overwrite` replaced that run's own SavedModel
    # (with another task's model, even), leaving it to serve what its model.keras is not.
    _, run = finished
    other = tmp_path / "other"
    shutil.copytree(run, other)
    before = {path: path.read_bytes() for path in other.rglob("*") if path.is_file()}
    # Nor into its export/: TensorFlow Serving would serve this run's model as that run's
    # latest version.
    for out in (other / "saved_model", other / "plots" / "model", other / "new",
                other / "export" / "7", other / "export"):
        assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(out),
                         "--overwrite"]) == 2
        assert f"is inside the run {other}" in capsys.readouterr().err
    assert {path: path.read_bytes() for path in other.rglob("*") if path.is_file()} == before
    mine = tmp_path / "mine"  # the exported run's own export/ takes it, as a version
    shutil.copytree(run, mine)
    for out in (mine / "export", mine / "export" / "7" / "variables"):
        assert cli.main(["timeseries", "export", "--run", str(mine), "--out", str(out)]) == 2
        assert f"export into a version folder {mine / 'export'}/<n>" in capsys.readouterr().err
    assert cli.main(["timeseries", "export", "--run", str(mine), "--out",
                     str(mine / "export" / "7")]) == 0
    # Only whole numbers from 1 are versions: TensorFlow Serving reads "01" as a second
    # version 1 and ignores "abc" and "-1".
    # Nor does it serve a version beyond its 64-bit numbers (every later default export went
    # on above one), or a digit int() cannot read.
    for name in ("01", "abc", "-1", "0", str(2**63), "99999999999999999999", "\u00b2"):
        assert cli.main(["timeseries", "export", "--run", str(mine), "--out",
                         str(mine / "export" / name)]) == 2
        assert (f"(n = 1, 2, ... up to {2**63 - 1}, TensorFlow Serving's 64-bit version "
                "numbers; the default is the next)") in capsys.readouterr().err
    (mine / "export" / "\u00b2").mkdir()  # made by hand: no version, and no crash
    assert cli.main(["timeseries", "export", "--run", str(mine)]) == 0
    assert (mine / "export" / "8" / "saved_model.pb").is_file()


def test_export_refuses_a_place_inside_an_export_or_an_unfinished_runs_out(finished, tmp_path,
                                                                          capsys):
    _, run = finished
    served = tmp_path / "served"
    assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(served)]) == 0
    before = _files(served)
    # A SavedModel inside another's variables/ or assets/ was written, then served with it and
    # blocking its --overwrite ("holds what its export did not write").
    for out in (served / "variables" / "x", served / "assets" / "y"):
        assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(out)]) == 2
        assert f"is inside the SavedModel {served}" in capsys.readouterr().err
    assert _files(served) == before
    # The --out of a run still training (or interrupted): its train would find a SavedModel
    # there when it finishes, and end in an error.
    unfinished = tmp_path / "live.partial"
    shutil.copytree(run, unfinished)
    assert cli.main(["timeseries", "export", "--run", str(run), "--out",
                     str(tmp_path / "live")]) == 2
    assert f"is where the unfinished run {unfinished} goes" in capsys.readouterr().err
    assert not (tmp_path / "live").exists()
    # Nor may it create a folder named as an unfinished run: train took it for one, and
    # refused to finish the run beside it.
    for out in (tmp_path / "next.partial" / "saved_model", tmp_path / "new.partial"):
        assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(out)]) == 2
        assert "whose name ending .partial seqlab gives a run while it trains" in (
            capsys.readouterr().err)
    assert not (tmp_path / "next.partial").exists() and not (tmp_path / "new.partial").exists()


def test_export_overwrite_refuses_a_folder_with_an_empty_saved_model_pb(finished, tmp_path,
                                                                         capsys):
    _, run = finished
    mine = tmp_path / "models"
    mine.mkdir()
    (mine / "saved_model.pb").write_bytes(b"")
    (mine / "results.csv").write_text("1,2\n")
    assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(mine),
                     "--overwrite"]) == 2
    error = capsys.readouterr().err
    assert "is not a SavedModel written by seqlab (no seqlab-export.json)" in error
    assert error.count("\n") == 1
    assert _files(mine) == ["results.csv", "saved_model.pb"]


def test_export_replaces_a_previous_export_only_with_overwrite(finished, tmp_path, capsys):
    folder, shared = finished
    run = tmp_path / "run"  # --overwrite replaces its saved_model/: a copy of the shared run
    shutil.copytree(shared, run)
    saved_model = run / "saved_model"
    first = (saved_model / "saved_model.pb").stat().st_mtime_ns
    assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(saved_model)]) == 2
    assert "already holds a SavedModel; pass --overwrite" in capsys.readouterr().err
    assert (saved_model / "saved_model.pb").stat().st_mtime_ns == first
    assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(saved_model),
                     "--overwrite"]) == 0
    assert (saved_model / "saved_model.pb").stat().st_mtime_ns != first
    serve = tf.saved_model.load(str(saved_model)).signatures["serving_default"]
    # The window of the network or linear member, or the whole history when --model auto kept
    # a classical member (the series has 120 rows).
    name = next(iter(serve.structured_input_signature[1]))
    series = pd.read_csv(folder / "series.csv")["y"].to_numpy("float32")
    rows = series[-6:] if name == "window" else series
    rows = rows.reshape(1, -1, 1)
    assert serve(**{name: tf.constant(rows)})["forecast"].shape == (1, 1, 1)
    assert not [p for p in run.iterdir() if p.name.startswith(".")]  # no temporary left
    # A new, empty folder is a fine target.
    empty = tmp_path / "serving"
    empty.mkdir()
    assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(empty)]) == 0
    assert (empty / "saved_model.pb").is_file() and (empty / "seqlab-export.json").is_file()


def test_export_overwrite_refuses_an_export_holding_files_of_the_users(finished, tmp_path,
                                                                       capsys):
    _, run = finished
    serving = tmp_path / "serving"
    assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(serving)]) == 0
    (serving / "README.txt").write_text("mine")
    (serving / "variables" / "notes.txt").write_text("mine")
    (serving / "assets" / "sub").mkdir(parents=True)
    (serving / "assets" / "sub" / "mine.txt").write_text("mine")
    before = _files(serving)
    assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(serving),
                     "--overwrite"]) == 2
    assert ("holds what its export did not write (README.txt, assets/sub, variables/notes.txt)"
            in capsys.readouterr().err)
    assert _files(serving) == before
    # An export whose marker lists no tree (written before it kept one): SavedModel entries
    # only, the assets being the model's own.
    marker = json.loads((serving / "seqlab-export.json").read_text())
    del marker["tree"]
    (serving / "seqlab-export.json").write_text(json.dumps(marker))
    (serving / "README.txt").unlink()
    assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(serving),
                     "--overwrite"]) == 2
    assert "did not write (variables/notes.txt)" in capsys.readouterr().err
    (serving / "variables" / "notes.txt").unlink()
    assert cli.main(["timeseries", "export", "--run", str(run), "--out", str(serving),
                     "--overwrite"]) == 0


def test_export_without_out_writes_the_next_version_of_the_run(finished, tmp_path, capsys,
                                                               monkeypatch):
    """`export --run RUN` as README shows it succeeds after train: it writes `RUN/export/1`,
    then `RUN/export/2` (TensorFlow Serving's layout), and never touches `RUN/saved_model`."""
    run = tmp_path / "run"  # its export/ is written: a copy of the shared finished run
    shutil.copytree(finished[1], run)
    capsys.readouterr()
    trained = (run / "saved_model" / "saved_model.pb").stat().st_mtime_ns
    (run / "export").mkdir()
    (run / "export" / "notes").mkdir()  # not a version number: ignored, kept
    for version in (1, 2):
        assert cli.main(["timeseries", "export", "--run", str(run)]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"SavedModel written to {run / 'export' / str(version)}\n")
        assert f"--model_base_path={(run / 'export').resolve()}" in out
    assert sorted(p.name for p in (run / "export").iterdir()) == ["1", "2", "notes"]
    assert (run / "export" / "2" / "saved_model.pb").is_file()
    assert (run / "saved_model" / "saved_model.pb").stat().st_mtime_ns == trained
    # Without --out there is nothing to replace: --overwrite alone is refused, not ignored.
    assert cli.main(["timeseries", "export", "--run", str(run), "--overwrite"]) == 2
    assert "without --out each export is a new version" in capsys.readouterr().err
    assert sorted(p.name for p in (run / "export").iterdir()) == ["1", "2", "notes"]

    # An export that fails leaves no empty version folder behind.
    monkeypatch.setattr(timeseries.TimeseriesPipeline, "export_model", failing_export)
    assert cli.main(["timeseries", "export", "--run", str(run)]) == 2
    assert "No space left" in capsys.readouterr().err
    assert sorted(p.name for p in (run / "export").iterdir()) == ["1", "2", "notes"]
    # ... nor an empty export/ where it made the folder.
    shutil.rmtree(run / "export")
    assert cli.main(["timeseries", "export", "--run", str(run)]) == 2
    assert "No space left" in capsys.readouterr().err
    assert not (run / "export").exists()


def failing_export(self, model, config, artifacts, path):
    raise UsageError(f"{path}: cannot write the SavedModel there (No space left on device)")


def test_two_exports_at_once_write_two_versions(tmp_path):
    (tmp_path / "export" / "1").mkdir(parents=True)
    other = tmp_path / "export" / ".2.claim"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        # Another export, still writing, holds version 2: this one takes 3.
        other.write_text(json.dumps({"pid": sleeper.pid, "host": os.uname().nodename}))
        path, claim = claim_export_version(tmp_path)
        assert path == tmp_path / "export" / "3" and claim.name == ".3.claim"
        assert json.loads(claim.read_text())["pid"] == os.getpid()
        # The version folder appears only when complete (TensorFlow Serving polls the folder).
        assert not path.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    # A killed export's claim names a dead process: its number is taken over.
    claim.unlink()
    assert claim_export_version(tmp_path)[0] == tmp_path / "export" / "2"


def test_certain_export_refusals_come_before_tensorflow_loads(finished, tmp_path):
    _, run = finished
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.txt").write_text("draft")
    code = (
        "import sys\n"
        "from seqlab.cli import main\n"
        f"codes = [main(['timeseries', 'export', '--run', {str(run)!r}, '--out', {str(mine)!r}]),\n"
        f"         main(['timeseries', 'export', '--run', {str(run)!r}, '--out',\n"
        f"               {str(run / 'saved_model')!r}]),\n"
        f"         main(['timeseries', 'export', '--run', {str(run)!r}, '--overwrite']),\n"
        f"         main(['timeseries', 'export', '--run', {str(tmp_path / 'nothing')!r}]),\n"
        f"         main(['timeseries', 'predict', '--run', {str(tmp_path / 'nothing')!r}]),\n"
        f"         main(['charrnn', 'evaluate', '--run', {str(run)!r}])]\n"
        "assert codes == [2] * 6, codes\n"
        "heavy = sorted(m for m in ('tensorflow', 'keras') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    finished_ = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=120, cwd=tmp_path)
    assert finished_.returncode == 0, finished_.stderr
    errors = finished_.stderr.splitlines()
    assert len(errors) == 6
    assert "exists and is not a SavedModel" in errors[0]
    assert "already holds a SavedModel; pass --overwrite" in errors[1]
    assert "nothing does not exist; expected a run directory" in errors[3]
    assert "is a run of task" in errors[5]
    assert (mine / "thesis.txt").read_text() == "draft"


def test_export_refuses_a_run_whose_export_folder_cannot_be_written(finished, tmp_path,
                                                                  capsys, monkeypatch):
    # Both ended in a traceback (FileExistsError, PermissionError) after the model loaded.
    _, run = finished
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    (copy / "export").write_text("mine")
    assert cli.main(["timeseries", "export", "--run", str(copy)]) == 2
    assert (f"{copy / 'export'} is not seqlab's export folder (it is a file or a link): move it "
            "away, or write the SavedModel elsewhere with --out") in capsys.readouterr().err
    assert (copy / "export").read_text() == "mine"
    (copy / "export").unlink()
    # A read-only run (as a user without root's override sees it).
    monkeypatch.setattr(paths_module.os, "access", lambda path, mode: Path(path) != copy)
    assert cli.main(["timeseries", "export", "--run", str(copy)]) == 2
    assert (f"{copy}: cannot write the SavedModel there (permission denied); write it "
            "elsewhere with --out") in capsys.readouterr().err
    assert not (copy / "export").exists()


def test_a_failed_export_leaves_no_temporary_directory(tmp_path):
    class FailingArchive:
        def write_out(self, path, verbose=False):
            os.makedirs(path)
            (tmp_path / "half.txt").write_text("")
            raise OSError(28, "No space left on device")

    with pytest.raises(UsageError, match=r"model: cannot write the SavedModel there \(No space "
                                         r"left on device\)"):
        write_export_archive(FailingArchive(), tmp_path / "model")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["half.txt"]
    # TensorFlow's own error names its temporary file first: the reason alone is said. Over a
    # previous export (--overwrite), the message named the hidden folder the new one is
    # written in first, not the --out.
    class TensorFlowFailing:
        def write_out(self, path, verbose=False):
            os.makedirs(path)
            raise tf.errors.OpError(None, None, f"{path}/saved_model.pb.tmp1f; File too large",
                                    None)

    class EmptyArchive:
        def write_out(self, path, verbose=False):
            os.makedirs(path)
            (Path(path) / "saved_model.pb").write_bytes(b"graph")

    (tmp_path / "half.txt").unlink()
    previous = tmp_path / "served"
    write_export_archive(EmptyArchive(), previous)
    before = _files(previous)
    with pytest.raises(UsageError, match=rf"^{re.escape(str(previous))}: cannot write the "
                                         r"SavedModel there \(File too large\) \(the previous "
                                         r"export there is kept\)$"):
        replace_export(previous, lambda new: write_export_archive(TensorFlowFailing(), new))
    assert _files(previous) == before and [p.name for p in tmp_path.iterdir()] == ["served"]


@pytest.mark.parametrize("first", ["serving_default", "forecast"])
def test_an_export_traces_each_endpoint_once_and_serves_what_keras_writes_out(tmp_path, first):
    """`write_export_archive` writes Keras's `ExportArchive` with each endpoint traced once
    (Keras's `write_out` traced each twice: outside TensorFlow's save context and inside it),
    and the SavedModel has the signatures and outputs that `write_out` gives (serving_default
    the first endpoint unless one is named so)."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    traces = []

    def archive():
        built = keras.export.ExportArchive()
        built.track(model)

        def forecast(x):
            traces.append("forecast")  # Python runs once per trace
            return {"forecast": model(x)}

        def doubled(x):
            traces.append("doubled")
            return {"doubled": 2.0 * model(x)}

        built.add_endpoint(first, forecast, input_signature=[tf.TensorSpec([None, 3], name="x")])
        built.add_endpoint("doubled", doubled, input_signature=[tf.TensorSpec([None, 3], name="x")])
        return built

    write_export_archive(archive(), tmp_path / "ours")
    assert sorted(traces) == ["doubled", "forecast"]
    traces.clear()
    archive().write_out(str(tmp_path / "keras"), verbose=False)
    assert len(traces) == 4  # Keras's own: twice each (if this fails, Keras changed: see above)
    x = tf.constant(np.random.default_rng(0).normal(size=(4, 3)), tf.float32)
    ours, theirs = (tf.saved_model.load(str(tmp_path / name)) for name in ("ours", "keras"))
    assert sorted(ours.signatures) == sorted(theirs.signatures) == sorted(
        {first, "doubled", "serving_default"})
    # The same graph either way; the tolerances only allow for a kernel chosen differently
    # (atol for outputs near 0).
    for name in ours.signatures:
        got, expected = ours.signatures[name](x=x), theirs.signatures[name](x=x)
        assert sorted(got) == sorted(expected)
        for key in got:
            np.testing.assert_allclose(got[key].numpy(), expected[key].numpy(),
                                       rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours.doubled(x)["doubled"].numpy(), 2.0 * model(x).numpy(),
                               rtol=1e-6, atol=1e-6)


def test_an_export_that_another_export_beat_to_the_same_path_says_so(tmp_path):
    # The same export command twice at once: the later rename meets the earlier's SavedModel
    # (ENOTEMPTY); the message was the bare "cannot write the SavedModel there (Directory not
    # empty)".
    class RacedArchive:
        def write_out(self, path, verbose=False):
            os.makedirs(path)
            (tmp_path / "model").mkdir()
            (tmp_path / "model" / "saved_model.pb").write_bytes(b"the other export's")

    with pytest.raises(UsageError, match=r"model was written by another export while this one "
                                         r"ran, and is kept; give the command again, with "
                                         r"--overwrite, to replace it"):
        write_export_archive(RacedArchive(), tmp_path / "model")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert (tmp_path / "model" / "saved_model.pb").read_bytes() == b"the other export's"


# --- one process per run directory ---------------------------------------------------------------


def test_a_run_directory_in_use_by_a_live_process_is_refused_and_a_dead_ones_is_taken_over(
        tmp_path):
    lock = tmp_path / "run.partial" / ".lock"
    lock.parent.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = os.uname().nodename
        lock.write_text(json.dumps({"pid": sleeper.pid, "host": host, "since_utc": "x"}))
        with pytest.raises(UsageError, match=rf"in use by process {sleeper.pid} on {host}"):
            take_lock(lock)
        # The same refusal from train, before it touches the unfinished run.
        config = tiny_config(tmp_path)
        with pytest.raises(UsageError, match="in use by process"):
            timeseries.train(config)
        assert _files(lock.parent) == [".lock"]
    finally:
        sleeper.kill()
        sleeper.wait()
    # Now the owner is dead: its lock is stale and the run goes ahead.
    result = timeseries.train(tiny_config(tmp_path, model="gru"))
    assert (result.path / "metrics.json").is_file() and not (result.path / ".lock").exists()


def test_a_dead_owners_lock_is_taken_over_under_a_lock_of_its_folder(tmp_path, monkeypatch):
    # Two processes that found the same dead owner each removed the lock and made their own,
    # the second removing the first's: both owned the run directory (6 of 200 tries of two
    # processes at once). The owner is now read, and the lock replaced, under a flock of the
    # folder, so the second reads the first's lock and is refused.
    fcntl = pytest.importorskip("fcntl")
    lock = tmp_path / "run.partial" / ".lock"
    lock.parent.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    lock.write_text(json.dumps({"pid": gone.pid, "host": os.uname().nodename}))
    seen = []

    def alive(pid):  # asked while deciding: is the folder guarded then?
        descriptor = os.open(lock.parent, os.O_RDONLY)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append("unguarded")
        except BlockingIOError:
            seen.append("guarded")
        finally:
            os.close(descriptor)
        return False

    monkeypatch.setattr(paths_module, "process_alive", alive)
    take_lock(lock)
    assert seen == ["guarded"]
    assert json.loads(lock.read_text())["pid"] == os.getpid()
    assert _files(lock.parent) == [".lock"]  # the lock's temporary is gone


@pytest.mark.parametrize("pid", [10**20, 2**31, 0, -1])
def test_a_lock_naming_a_pid_no_process_has_is_taken_over(tmp_path, pid):
    # 10**20 was an OverflowError traceback (os.kill), at the early check of a busy --out and
    # in take_lock; 0 and -1 asked os.kill about process groups: refused for ever.
    lock = tmp_path / "run.partial" / ".lock"
    lock.parent.mkdir()
    lock.write_text(json.dumps({"pid": pid, "host": os.uname().nodename}))
    paths_module.refuse_busy_out(str(tmp_path / "run"))
    take_lock(lock)
    assert json.loads(lock.read_text())["pid"] == os.getpid()


def test_the_lock_is_held_until_the_finished_run_is_in_place(tmp_path, monkeypatch):
    # It was removed before the rename: a second train could take `<out>.partial` in between,
    # and the rename then carried its lock into the finished run.
    held = []
    replace = common.replace_directory

    def replace_watched(new, path):
        if Path(path) == tmp_path / "run":
            held.append((Path(new) / ".lock").is_file())
        return replace(new, path)

    monkeypatch.setattr(common, "replace_directory", replace_watched)
    result = timeseries.train(tiny_config(tmp_path, model="gru"))
    assert held == [True] and not (result.path / ".lock").exists()
    marker = json.loads((result.path / "seqlab-run.json").read_text())
    assert ".lock" not in marker["files"] and ".lock" not in marker["tree"]


def test_train_owns_the_run_directory_while_it_reads_its_data_and_leaves_nothing_when_it_fails(
        tmp_path, monkeypatch):
    # The lock is taken before the data is read: a second train into the same --out is refused
    # at once, not after its own preparation (a long series' classical fits take minutes).
    config = tiny_config(tmp_path, out=str(tmp_path / "new" / "deeper" / "run"))
    work = tmp_path / "new" / "deeper" / "run.partial"
    seen = []

    def prepare(self, config, distribution):
        seen.append(json.loads((work / ".lock").read_text())["pid"])
        raise timeseries.DataError("series.csv: unusable")

    monkeypatch.setattr(timeseries.TimeseriesPipeline, "prepare", prepare)
    with pytest.raises(timeseries.DataError, match="unusable"):
        timeseries.train(config)
    assert seen == [os.getpid()]
    # Bad data: nothing written, not even the folders --out named.
    assert not (tmp_path / "new").exists()

    # A folder that was there before stays, without the lock.
    work.mkdir(parents=True)
    with pytest.raises(timeseries.DataError, match="unusable"):
        timeseries.train(config)
    assert work.is_dir() and _files(work) == [] and seen == [os.getpid()] * 2


def test_a_second_train_is_refused_before_it_reads_its_data(tmp_path, monkeypatch):
    lock = tmp_path / "run.partial" / ".lock"
    lock.parent.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.write_text(json.dumps({"pid": sleeper.pid, "host": os.uname().nodename}))
        monkeypatch.setattr(timeseries.TimeseriesPipeline, "prepare",
                            lambda *args: pytest.fail("the data was read"))
        with pytest.raises(UsageError, match=rf"in use by process {sleeper.pid}"):
            timeseries.train(tiny_config(tmp_path))
        assert lock.is_file() and _files(lock.parent) == [".lock"]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_an_unfinished_run_is_not_resumed_on_changed_data(tmp_path, monkeypatch):
    # Resumed on an edited file, the run went on training (epochs of the old data, then the
    # new) and kept the old file's record, so evaluate then called the data changed.
    config = tiny_config(tmp_path, model="gru")
    monkeypatch.setattr(timeseries.TimeseriesPipeline, "after_fit",
                        lambda *args: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(OSError):
        timeseries.train(config)
    monkeypatch.undo()
    data = tmp_path / "series.csv"
    original = data.read_text()
    write_series(data, n_rows=121)  # one more row
    with pytest.raises(UsageError, match=rf"{re.escape(str(data))} has changed since the "
                                         r"unfinished run .*run\.partial started on it"):
        timeseries.train(config)
    data.write_text(original)
    assert timeseries.train(config).path == tmp_path / "run"


def test_data_rewritten_while_train_reads_it_is_refused_not_recorded(tmp_path, monkeypatch):
    # The record (data_files.json) was taken after the reading: a file rewritten meanwhile had
    # its new bytes recorded, and evaluate scored them as the run's own data without a word.
    config = tiny_config(tmp_path, model="gru")
    data = tmp_path / "series.csv"
    prepare = timeseries.TimeseriesPipeline.prepare

    def prepare_then_rewrite(self, config, distribution):
        prepared = prepare(self, config, distribution)
        write_series(data, n_rows=121)  # another program writes the file meanwhile
        return prepared

    monkeypatch.setattr(timeseries.TimeseriesPipeline, "prepare", prepare_then_rewrite)
    with pytest.raises(UsageError, match=rf"{re.escape(str(data))} changed while train read it "
                                         r"\(\d+ bytes then, \d+ now; another SHA-256\); "
                                         r"nothing was trained"):
        timeseries.train(config)
    # Nothing written: the same command on the file as it is now trains.
    assert not (tmp_path / "run.partial").exists() and not (tmp_path / "run").exists()
    monkeypatch.undo()
    assert timeseries.train(config).path == tmp_path / "run"


# --- a crash after fit resumes after fit ---------------------------------------------------------


@pytest.mark.parametrize("dies_in", ["export", "finish after the export",
                                     "the first step after fit returned"])
def test_a_train_that_dies_after_fit_resumes_after_fit(tmp_path, monkeypatch, capsys, dies_in):
    config = tiny_config(tmp_path, epochs=3, patience=50)

    def die(*args, **kwargs):
        raise OSError(28, "No space left on device")

    if dies_in == "export":
        monkeypatch.setattr(timeseries.TimeseriesPipeline, "export_model", die)
    elif dies_in == "finish after the export":
        monkeypatch.setattr(RunDirectory, "finish", die)
    else:  # Keras has removed its epoch backup by then
        monkeypatch.setattr(timeseries.TimeseriesPipeline, "after_fit", die)
    with pytest.raises(OSError):
        timeseries.train(config)
    partial = tmp_path / "run.partial"
    assert (partial / "model.keras").is_file() and (partial / "fit_done.json").is_file()
    assert (partial / "saved_model").exists() == (dies_in == "finish after the export")
    assert not (partial / "checkpoints").exists() or dies_in != "the first step after fit returned"
    with open(partial / "history.csv", newline="") as file:
        epochs = [row["epoch"] for row in csv.DictReader(file)]
    assert epochs == ["1", "2", "3"]
    monkeypatch.undo()
    capsys.readouterr()

    fits = []
    monkeypatch.setattr("keras.Model.fit", lambda model, *a, **k: fits.append(model))
    result = timeseries.train(config)
    # No epoch of the run's model trained again; --model auto's backtest network (a plain
    # Forecaster trained on the rows before the backtest) is part of the work after fit.
    assert not [model for model in fits if isinstance(model, AutoForecaster)]
    assert "training finished earlier: continuing after fit" in capsys.readouterr().out
    metrics = json.loads((result.path / "metrics.json").read_text())
    assert metrics["epochs_run"] == 3 and metrics["train_seconds_this_session"] == 0.0
    assert metrics["best_epoch"] in (1, 2, 3)
    # --model auto chose its member again from the trained weights, and saved the choice.
    model = keras.saving.load_model(result.path / "model.keras")
    assert metrics["auto"]["chosen"] == json.loads(
        (result.path / "members.json").read_text())["selection"]["name"]
    backtest = {name: figures["backtest_rmse"]
                for name, figures in metrics["auto"]["members"].items()}
    if "gru" in backtest and "linear" in backtest:
        assert model.choice == ("linear" if backtest["linear"] <= backtest["gru"] else "neural")
    assert (result.path / "saved_model" / "saved_model.pb").is_file()
    assert not (result.path / "fit_done.json").exists()


def test_a_crash_while_the_model_is_saved_again_after_fit_keeps_the_trained_one(
        tmp_path, monkeypatch, capsys):
    # The model is saved when fit ends (with fit_done.json), then again after `after_fit`; a
    # kill during that second save left a half-written model.keras beside fit_done.json, and
    # the rerun failed on it (BadZipFile, found by tests/test_faults.py).
    config = tiny_config(tmp_path, epochs=2, model="gru")
    saves = []
    real_save = keras.Model.save

    def die_in_the_second_save(model, filepath, *args, **kwargs):
        saves.append(filepath)
        if len(saves) < 2:
            return real_save(model, filepath, *args, **kwargs)
        with open(filepath, "wb") as file:  # what a kill in the middle leaves
            file.write(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(keras.Model, "save", die_in_the_second_save)
    with pytest.raises(UsageError, match=r"model\.keras: cannot write there \(No space left"):
        timeseries.train(config)
    monkeypatch.undo()
    partial = tmp_path / "run.partial"
    assert len(saves) == 2 and (partial / "fit_done.json").is_file()
    assert zipfile.is_zipfile(partial / "model.keras")
    assert not list(partial.glob(".model.keras.tmp-*"))
    capsys.readouterr()
    result = timeseries.train(config)
    assert "training finished earlier: continuing after fit" in capsys.readouterr().out
    assert (result.path / "saved_model" / "saved_model.pb").is_file()


def test_a_damaged_model_after_fit_is_one_clear_error(tmp_path, monkeypatch):
    config = tiny_config(tmp_path, epochs=1, model="gru")
    monkeypatch.setattr(timeseries.TimeseriesPipeline, "export_model",
                        lambda *args, **kwargs: (_ for _ in ()).throw(OSError(5, "I/O error")))
    with pytest.raises(OSError):
        timeseries.train(config)
    monkeypatch.undo()
    model = tmp_path / "run.partial" / "model.keras"
    model.write_bytes(b"not an archive")
    with pytest.raises(UsageError, match=re.escape(
            f"{model}: damaged (not a complete .keras archive), though fit_done.json says "
            f"training finished; remove the unfinished run {model.parent} to train from the "
            "start")):
        timeseries.train(config)
    assert model.read_bytes() == b"not an archive"


# --- a damaged run or a wrong path is one clear line, not a traceback ----------------------------


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def drop_setting(path, name):
    record = json.loads(path.read_text())
    del record["settings"][name]
    path.write_text(json.dumps(record))


def edit_json(path, **changes):
    """Changes top-level fields of a JSON file (None removes one; a dict updates one)."""
    record = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            record.pop(key)
        elif isinstance(value, dict):
            record[key].update(value)
        else:
            record[key] = value
    path.write_text(json.dumps(record))


def unsafe_keras_file(path):
    """A `.keras` file with a Lambda layer: Keras's safe mode refuses to load its code."""
    import keras

    model = keras.Sequential([keras.Input((6, 1)), keras.layers.Lambda(lambda x: x * 2)])
    path.unlink()
    model.save(path)


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "config.json").write_text("{not json"),
     r"config\.json: not complete JSON \(Expecting property name enclosed in double quotes at "
     r"line 1 column 2\); the file was edited or damaged"),
    (lambda run: (run / "model.keras").write_bytes(b"garbage"),
     r"model\.keras: damaged \(not a complete \.keras archive"),
    (lambda run: truncate(run / "model.keras"), r"model\.keras: damaged \(not a complete"),
    (lambda run: (run / "model.keras").unlink(), r"copy: model\.keras missing; its train wrote "
                                                  r"it \(seqlab-run\.json lists what it wrote\)"),
    (lambda run: (run / "scaler.json").unlink(), r"copy: scaler\.json missing; its train wrote"),
    # Read as an earlier version's run without them, the run had forecast with another model
    # (no members.json: the network alone) or scored changed data (no data_files.json).
    (lambda run: [(run / name).unlink() for name in ("members.json", "data_files.json")],
     r"copy: data_files\.json, members\.json missing; its train wrote them"),
    (lambda run: (run / "scaler.json").write_text("[1, 2"), r"scaler\.json: not complete JSON"),
    # Python's own limits were a traceback: a number of 5,000 digits, lists 100,000 deep.
    (lambda run: (run / "config.json").write_text('{"settings": ' + "9" * 5000 + "}"),
     r"config\.json: not JSON that can be read \(a number of thousands of digits"),
    (lambda run: (run / "scaler.json").write_text("[" * 100_000 + "]" * 100_000),
     r"scaler\.json: not JSON that can be read \(nested too deeply to read\); the file was "
     r"edited or damaged"),
    (lambda run: edit_json(run / "scaler.json", scale=[float("nan")]),
     r"scaler\.json: holds NaN, which is not a number"),
    (lambda run: edit_json(run / "scaler.json", scale=["1"]),
     r"scaler\.json: the field 'scale' must hold one finite number per column \(1\)"),
    (lambda run: edit_json(run / "scaler.json", offset=None),
     r"scaler\.json: the field 'offset' is missing"),
    # Found by hand-editing: a traceback (ValueError: 'y' is not in list), and a forecast of
    # 1.9e298 or of the wrong sign.
    (lambda run: edit_json(run / "scaler.json", columns=["Other"]),
     r"scaler\.json: the field 'columns' must name every column of schema\.json \(y\)"),
    (lambda run: edit_json(run / "scaler.json", scale=[-5.0]),
     r"scaler\.json: the field 'scale' must hold numbers above 0 and at most 2e\+15"),
    (lambda run: edit_json(run / "scaler.json", scale=[1e300]), r"scaler\.json: the field 'scale'"),
    (lambda run: edit_json(run / "scaler.json", offset=[1e300]),
     r"scaler\.json: the field 'offset' must hold numbers of at most 1e\+15"),
    (lambda run: edit_json(run / "schema.json", targets="y"),
     r"schema\.json: the field 'targets' must be a list of column names"),
    (lambda run: edit_json(run / "config.json", settings={"horizon": 3}),
     r"config\.json: the settings of the run do not match its model\.keras \(horizon 1, they "
     r"give 3\)"),
    # A size no weight shows (a GRU's lookback) was a ValueError traceback at the first window.
    (lambda run: edit_json(run / "config.json", settings={"lookback": 12}),
     r"config\.json: the settings of the run do not match its model\.keras \(lookback \d+, "
     r"they give 12\)"),
    (lambda run: edit_json(run / "config.json", settings={"units": 7}),
     r"copy: config\.json or schema\.json does not match its model\.keras \(weight"),
    (lambda run: edit_json(run / "config.json", settings={"lookback": "six"}),
     r"config\.json: settings this version cannot use \(lookback must be int"),
    (lambda run: edit_json(run / "config.json", settings=None),
     r"config\.json: not a seqlab run's config\.json"),
    # A setting removed by hand took its default: another lookback, other figures, status 0.
    (lambda run: drop_setting(run / "config.json", "stride"),
     r"config\.json: the setting 'stride' is missing; its train wrote every setting there"),
    (lambda run: edit_json(run / "config.json", settings_format="1"),
     r"config\.json: \"settings_format\" must be a whole number of at least 0"),
    (lambda run: unsafe_keras_file(run / "model.keras"), r"model\.keras: cannot be loaded.*safe"),
])
def test_a_damaged_run_is_named_in_one_line(finished, tmp_path, capsys, damage, message):
    _, run = finished
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    damage(copy)
    assert cli.main(["timeseries", "evaluate", "--run", str(copy)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("seqlab timeseries evaluate: error: ") and error.count("\n") == 1
    assert re.search(message, error), error


def test_an_output_ending_in_a_separator_is_refused_as_a_folder(finished, tmp_path, capsys):
    # `--output newdir/` wrote a file named newdir, and said so.
    _, run = finished
    for action, end, said in [("predict", "/", "a separator"), ("evaluate", "/", "a separator"),
                              ("predict", "/.", "'.'"), ("evaluate", "/..", "'..'")]:
        output = f"{tmp_path / 'newdir'}{end}"
        assert cli.main(["timeseries", action, "--run", str(run), "--output", output]) == 2
        assert (f"--output {output} ends in {said}, so names a folder; give the name of a "
                "file to write to") in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_command_started_with_its_output_closed_runs(finished, tmp_path):
    # `seqlab ... >&-`: Python starts with sys.stdout None, and the first print or isatty()
    # was an AttributeError traceback (train left `<out>.partial` behind).
    _, run = finished
    output = tmp_path / "forecast.csv"
    done = subprocess.run(
        [sys.executable, "-m", "seqlab", "timeseries", "predict", "--run", str(run),
         "--output", str(output)],
        preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and output.is_file()
    assert done.stderr.count("seqlab: standard output is closed; its text is dropped") == 1
    # Standard output on a full device (`> /dev/full`): an OSError traceback at the first
    # print. The command finishes, and says once that its output was dropped.
    if Path("/dev/full").exists():
        output.unlink()
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "seqlab", "timeseries", "predict", "--run", str(run),
                 "--output", str(output)],
                stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
        assert done.returncode == 0 and output.is_file(), done.stderr
        assert "Traceback" not in done.stderr
        assert done.stderr.count("standard output cannot be written (No space left") == 1


def test_settings_that_cannot_train_are_refused(tmp_path, capsys):
    for flag, value, message in (("--learning-rate", "-1", "must be positive"),
                                 ("--learning-rate", "0", "must be positive"),
                                 ("--learning-rate", "nan", "must be a finite number"),
                                 ("--learning-rate", "inf", "must be a finite number"),
                                 ("--clipnorm", "0", "must be positive")):
        assert cli.main(["timeseries", "train", flag, value, "--out", str(tmp_path / "r")]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "r").exists() and not (tmp_path / "r.partial").exists()


def test_wrong_paths_are_named_before_any_work(finished, tmp_path, capsys):
    folder, run = finished
    # A run's unfinished form that is not there is named so (it was called an unfinished
    # run); one that is there is.
    assert cli.main(["timeseries", "evaluate", "--run", f"{run}.partial"]) == 2
    assert (f"{run}.partial does not exist; expected a run directory that train wrote ({run} "
            "is the finished run)") in capsys.readouterr().err
    RunDirectory(tmp_path / "other", "timeseries").start({})  # other.partial, its marker
    assert cli.main(["timeseries", "evaluate", "--run", str(tmp_path / "other.partial")]) == 2
    assert "other.partial is an unfinished run: rerun train" in capsys.readouterr().err
    assert cli.main(["timeseries", "evaluate", "--run", str(tmp_path / "other")]) == 2
    assert (f"other does not exist; expected a run directory that train wrote ({tmp_path}"
            "/other.partial holds an unfinished run: rerun train to finish it)"
            ) in capsys.readouterr().err
    shutil.rmtree(tmp_path / "other.partial")
    # --output naming a folder: refused, nothing left behind.
    assert cli.main(["timeseries", "evaluate", "--run", str(run), "--output", str(tmp_path)]) == 2
    assert "is a folder; give a file name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    # --out naming a file: refused before the data is read.
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    assert cli.main(["timeseries", "train", "--data", str(folder / "series.csv"),
                     "--time-column", "t", "--out", str(target)]) == 2
    assert "is a file; give a folder" in capsys.readouterr().err
    assert target.read_text() == "mine"
    # --out / (a traceback: the root has no name for `<out>.partial`), with data inside it.
    for flags in ([], ["--overwrite"]):
        assert cli.main(["timeseries", "train", "--data", str(folder / "series.csv"),
                         "--time-column", "t", "--out", "/", *flags]) == 2
        assert "--out / is the file system's root" in capsys.readouterr().err


def test_an_unwritable_out_is_refused_before_the_data_is_read(tmp_path, monkeypatch, capsys):
    # Permission bits do not stop root (as CI runs): the check is asked to see a read-only
    # folder, and the data cannot be read, so a refusal proves it came first.
    locked = tmp_path / "locked"
    locked.mkdir()
    unreadable = tmp_path / "data.csv"
    unreadable.write_bytes(b"\xff\xfe\x00")
    real_access = os.access
    monkeypatch.setattr("seqlab.pipelines.common.os.access",
                        lambda path, mode: False if str(path) == str(locked)
                        else real_access(path, mode))
    assert cli.main(["timeseries", "train", "--data", str(unreadable),
                     "--out", str(locked / "run")]) == 2
    assert f"--out {locked / 'run'}: {locked} is not writable" in capsys.readouterr().err
    assert list(locked.iterdir()) == []


# --- the summary and metrics.json say how training ended and where everything went -----------


def test_a_run_stopped_early_says_so_and_marks_the_restored_epoch(tmp_path, monkeypatch):
    figures = record_saved_figures(monkeypatch)
    # A high learning rate and a patience of 1 stop this series within a few epochs.
    result = timeseries.train(tiny_config(tmp_path, epochs=40, patience=1, learning_rate=0.05,
                                                 model="gru"))
    with open(result.path / "history.csv", newline="") as file:
        val_losses = [float(row["val_loss"]) for row in csv.DictReader(file)]
    run, best = len(val_losses), int(np.argmin(val_losses)) + 1
    assert run < 40 and best == run - 1  # patience 1: the epoch before the last was best
    training = json.loads((result.path / "metrics.json").read_text())["training"]
    assert training == result.metrics["training"]
    assert {k: training[k] for k in ("epochs_requested", "epochs_run", "stopped_early", "reason",
                                     "resumed_at_epoch", "best_epoch", "best_epoch_restored")} == {
        "epochs_requested": 40, "epochs_run": run, "stopped_early": True,
        "reason": "early_stopping", "resumed_at_epoch": None, "best_epoch": best,
        "best_epoch_restored": True}
    lines = result.summary.splitlines()
    start = lines.index(f"training: stopped early at epoch {run} of 40 (no better val_loss for "
                        f"1 epoch); restored the best epoch {best}")
    assert lines[start + 1:start + 5] == [
        f"run directory: {result.path}",
        "  model: model.keras, saved_model/",
        "  figures: metrics.json, history.csv",
        "  plots: plots/forecast.png, plots/loss.png",
    ]
    assert lines[start + 5].startswith("  settings and files: config.json")
    (loss,) = [figure for figure, path in figures if path.endswith("loss.png")]
    (axis,) = loss.axes
    (marker,) = restored_epoch_lines(axis)
    assert list(marker.get_xdata()) == [best, best]
    assert f"restored: epoch {best}" in [t.get_text() for t in axis.get_legend().get_texts()]
    (forecast,) = [figure for figure, path in figures if path.endswith("forecast.png")]
    # The time column names the time axis, the target the other.
    assert (forecast.axes[0].get_xlabel(), forecast.axes[0].get_ylabel()) == ("t", "y")


def test_a_run_of_all_its_epochs_says_so(finished):
    _, run = finished
    with open(run / "history.csv", newline="") as file:
        val_losses = [float(row["val_loss"]) for row in csv.DictReader(file)]
    best = int(np.argmin(val_losses)) + 1
    training = json.loads((run / "metrics.json").read_text())["training"]
    assert (training["epochs_run"], training["stopped_early"], training["reason"]) == (
        2, False, "completed")
    assert (training["best_epoch"], training["best_epoch_restored"]) == (best, True)
    assert training["description"] == f"ran all 2 epochs; restored the best epoch {best}"


def fit_watched(callbacks, epochs=5):
    """Fits a one-weight model on zeros (its loss never improves after epoch 1) with a
    `StopWatch` on `callbacks`; returns the watch and `history.csv`-like rows."""
    import keras

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    stop_watch = StopWatch()
    fitted = model.fit(np.zeros((4, 1)), np.zeros((4, 1)), epochs=epochs, verbose=0,
                       callbacks=stop_watch.watch(callbacks))
    rows = [{"epoch": e + 1, "loss": loss} for e, loss in enumerate(fitted.history["loss"])]
    return stop_watch, rows


def test_the_callback_that_stopped_training_is_named():
    import keras

    class StopInFirstBatch(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.model.stop_training = True

    def early_stopping():
        return keras.callbacks.EarlyStopping(monitor="loss", patience=1,
                                             restore_best_weights=True)

    # The time box stops after epoch 1, although early stopping comes first.
    callbacks = [early_stopping(), StopAfterMinutes(0)]
    stop_watch, rows = fit_watched(callbacks)
    assert (stop_watch.stopped_by, stop_watch.stopped_at) == (callbacks[1], 1)
    record = training_record(5, rows, 1, stop_watch, callbacks)
    assert record["reason"] == "max_minutes"
    assert record["description"] == ("stopped on time at epoch 1 of 5 (--max-minutes 0); "
                                      "restored the best epoch 1 (by its training loss: no "
                                      "validation split)")
    # Early stopping after epoch 2, although the (unexpired) time box comes first.
    callbacks = [StopAfterMinutes(60), early_stopping()]
    stop_watch, rows = fit_watched(callbacks)
    assert (stop_watch.stopped_by, stop_watch.stopped_at) == (callbacks[1], 2)
    assert training_record(5, rows, 1, stop_watch, callbacks)["description"] == (
        "stopped early at epoch 2 of 5 (no better loss for 1 epoch); restored the best epoch 1 "
        "(by its training loss: no validation split)")
    # Stopped inside the epoch: no epoch-end callback is blamed; no weights restored.
    callbacks = [StopAfterMinutes(60), StopInFirstBatch()]
    stop_watch, rows = fit_watched(callbacks)
    assert (stop_watch.stopped_by, stop_watch.stopped_at) == (None, 1)
    record = training_record(5, rows, 1, stop_watch, callbacks)
    assert (record["reason"], record["best_epoch_restored"]) == ("stopped_during_epoch", False)
    assert record["description"] == ("stopped during epoch 1 of 5; the model holds the last "
                                     "epoch's weights")


# --- TensorBoard ------------------------------------------------------------------------------


def logged_epochs(folder, tag="epoch_loss"):
    """The steps at which the event files in `folder` logged `tag`."""
    steps = []
    for events in sorted(folder.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(events)):
            steps += [event.step for value in event.summary.value if value.tag == tag]
    return steps


def test_tensorboard_logs_move_with_the_run_and_a_resumed_run_adds_to_them(tmp_path,
                                                                           monkeypatch):
    import keras

    from seqlab.pipelines.common import AtomicBackupAndRestore

    # A backup after every epoch (not only when it is worth its time), so that the run
    # resumes after the second epoch.
    monkeypatch.setattr(AtomicBackupAndRestore, "COST_RATIO", 0)
    config = tiny_config(tmp_path, epochs=3, patience=50, tensorboard=True, model="gru")

    class CrashAfterSecondEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        timeseries.train(config, callbacks=[CrashAfterSecondEpoch()])
    assert logged_epochs(tmp_path / "run.partial" / "tensorboard" / "train") == [0, 1]
    result = timeseries.train(config)
    logs = result.path / "tensorboard"
    assert not (tmp_path / "run.partial").exists()
    assert logged_epochs(logs / "train") == [0, 1, 2]
    assert logged_epochs(logs / "validation") == [0, 1, 2]
    assert len(list((logs / "train").glob("events.out.tfevents.*"))) == 2  # one per session
    assert result.metrics["training"]["resumed_at_epoch"] == 3
    assert "training: ran all 3 epochs, resumed at epoch 3; restored the best epoch" in (
        result.summary)
    assert f"  TensorBoard: tensorboard --logdir {logs}" in result.summary.splitlines()


def test_tensorboard_without_its_package_is_refused_before_anything_is_written(
        tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None
                        if name == "tensorboard" else real_find_spec(name, *args))
    with pytest.raises(UsageError, match="--tensorboard needs the tensorboard package"):
        timeseries.train(tiny_config(tmp_path, tensorboard=True))
    assert not (tmp_path / "run.partial").exists()


# --- --max-minutes and the epoch lines, every task ------------------------------------------------


@pytest.mark.parametrize("task", ["timeseries", "charrnn", "sentiment", "ner", "translate"])
def test_every_task_takes_max_minutes(task):
    from seqlab.pipelines import load_card
    from seqlab.pipelines.settings import make_config

    card = load_card(task)
    assert make_config(card.config_class, {}, {"max_minutes": 2.5}).max_minutes == 2.5
    assert make_config(card.config_class).max_minutes is None
    with pytest.raises(UsageError, match="max_minutes must be positive"):
        make_config(card.config_class, {}, {"max_minutes": 0.0})


def test_max_minutes_stops_on_time_and_keeps_the_best_epoch(tmp_path, capsys):
    # A limit every epoch ends past: training stops after epoch 1 of 5.
    config = tiny_config(tmp_path, epochs=5, max_minutes=1e-9, model="gru")
    result = timeseries.train(config)
    out = capsys.readouterr().out
    training = result.metrics["training"]
    assert training["reason"] == "max_minutes" and training["epochs_run"] == 1
    assert training["best_epoch"] == 1 and training["best_epoch_restored"] is True
    assert ("training: stopped on time at epoch 1 of 5 (--max-minutes 1e-09); restored the "
            "best epoch 1") in result.summary
    # stdout is not a terminal here: one line for the epoch, with its time and the projection.
    lines = [line for line in out.splitlines() if line.startswith("epoch ")]
    assert len(lines) == 1, out
    assert re.fullmatch(r"epoch 1/5: \S+ (s|min \d+ s) \(loss [^)]*val_loss [^)]*\); .* so far "
                        r"\(the first epoch also builds the model: the projection starts next "
                        r"epoch\)", lines[0]), lines[0]


class _Clock:
    """A `time.perf_counter` that moves on by `step` seconds at each reading."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


def test_epoch_lines_give_the_epoch_time_and_the_projected_total():
    import io
    import keras

    stream = io.StringIO()
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(np.zeros((8, 1)), np.zeros((8, 1)), batch_size=2, epochs=3, verbose=0,
              callbacks=[EpochProgress(3, stream=stream, notice_seconds=15,
                                         clock=_Clock(10.0))])
    lines = stream.getvalue().splitlines()
    # Clock readings: train begins at 10, epoch 1 at 20; its batches end at 30 and 40 (20 s
    # spent, 2 of 4 batches: the notice; later batches read no clock); it ends at 50: 30 s,
    # 40 s so far, no projection yet. Epoch 2: 60 to 70, 60 s so far, and the pace is that of
    # the epochs after the first: 20 s, so 80 s in all. Epoch 3: 80 to 90.
    assert lines[0] == "epoch 1/3: 2 of 4 batches after 20.0 s; about 40.0 s per epoch"
    assert re.fullmatch(r"epoch 1/3: 30\.0 s \(loss [0-9.e+-]+\); 40\.0 s so far \(the first "
                        r"epoch also builds the model: the projection starts next epoch\)",
                        lines[1]), lines[1]
    assert re.fullmatch(r"epoch 2/3: 10\.0 s \(loss [0-9.e+-]+\); 1 min 0 s so far, about "
                        r"1 min 20 s for all 3 epochs at this pace", lines[2]), lines[2]
    assert re.fullmatch(r"epoch 3/3: 10\.0 s \(loss [0-9.e+-]+\); 1 min 20 s so far",
                        lines[3]), lines[3]
    # With --max-minutes below the projection, the line says that the limit comes first.
    stream = io.StringIO()
    model.fit(np.zeros((8, 1)), np.zeros((8, 1)), batch_size=2, epochs=3, verbose=0,
              callbacks=[EpochProgress(3, max_minutes=0.5, stream=stream, clock=_Clock(10.0))])
    (second,) = [line for line in stream.getvalue().splitlines()
                 if line.startswith("epoch 2/3: ")]
    assert second.endswith(
        "for all 3 epochs at this pace (--max-minutes 0.5 stops sooner)"), second
    assert len(lines) == 4


def test_a_first_batch_slower_than_the_notice_is_announced_while_it_runs():
    # A window of 100,000 characters made one batch the whole first epoch: the notice at a
    # batch's end came after minutes of silence. A timer says it at notice_seconds.
    import io
    import time as clock_module
    import keras

    class SlowFirstBatch(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == 0:
                clock_module.sleep(0.6)

    stream = io.StringIO()
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    progress = EpochProgress(2, stream=stream, notice_seconds=0.1)
    model.fit(np.zeros((4, 1)), np.zeros((4, 1)), batch_size=2, epochs=2, verbose=0,
              callbacks=[progress, SlowFirstBatch()])
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("epoch 1/2: the first batch is still running after ")
    assert sum("still running" in line for line in lines) == 1  # once, in the first epoch
    assert progress.timer is None


def test_durations_read_as_people_write_them():
    assert [format_duration(s) for s in (8.34, 59.9, 247, 7500)] == [
        "8.3 s", "59.9 s", "4 min 7 s", "2 h 5 min"]
