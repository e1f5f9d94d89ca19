"""`train` killed with SIGKILL at several points (or stopped by SIGTERM), then run again with the
same command.

Each case starts `python -m seqlab timeseries train` as a real process, watches its
`<out>.partial` directory, kills it at one point (mid-training, after the last epoch, while the
SavedModel is being written) and runs the same command again. The rerun must finish, keep every
epoch that was finished, and write a complete run with the usual figures and no temporaries.
The model is a GRU: what --model auto adds after fit (its members' scores) is killed and
resumed in-process in tests/pipelines/test_lifecycle.py.
"""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

EPOCHS = 40


def write_series(path, n_rows=160):
    steps = np.arange(n_rows)
    pd.DataFrame({"t": steps, "y": np.sin(2 * np.pi * steps / 12) + 0.01 * steps}).to_csv(
        path, index=False
    )
    return path


def command(data, out):
    return [sys.executable, "-m", "seqlab", "timeseries", "train", "--data", str(data),
            "--time-column", "t", "--lookback", "6", "--units", "4", "--epochs", str(EPOCHS),
            "--patience", str(EPOCHS), "--model", "gru", "--out", str(out)]


def history_epochs(path):
    if not path.is_file():
        return []
    with open(path, newline="") as file:
        return [int(row["epoch"]) for row in csv.DictReader(file)]


def kill_when(process, condition, timeout=240):
    """SIGKILLs `process` as soon as `condition()` holds; fails if it ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            process.send_signal(signal.SIGKILL)
            process.wait()
            return
        if process.poll() is not None:
            pytest.fail(f"train ended (status {process.returncode}) before the kill point")
        time.sleep(0.02)
    process.kill()
    pytest.fail("the kill point was not reached in time")


@pytest.fixture
def series(tmp_path):
    return write_series(tmp_path / "series.csv")


def run_again_and_check(data, out, capsys=None):
    result = subprocess.run(command(data, out), capture_output=True, text=True, timeout=600,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert (out / "metrics.json").is_file() and not out.with_name(out.name + ".partial").exists()
    metrics = json.loads((out / "metrics.json").read_text())
    assert {"model", "naive", "seasonal_naive", "best_epoch", "epochs_run"} <= set(metrics)
    assert history_epochs(out / "history.csv") == list(range(1, EPOCHS + 1))
    assert (out / "saved_model" / "saved_model.pb").is_file()
    leftovers = [p.name for p in out.rglob(".*")]
    assert leftovers == [], leftovers
    return result.stdout


# The command line with the SavedModel's writing held for a minute once its files are out (in
# the temporary folder, before the rename): a kill "while exporting" then always lands there,
# where a poll every 20 ms had missed the export's second on a busy machine.
SLOW_EXPORT = (
    "import sys, time, keras\n"
    "write_out = keras.export.ExportArchive.write_out\n"
    "def held(self, *args, **kwargs):\n"
    "    write_out(self, *args, **kwargs)\n"
    "    time.sleep(60)\n"
    "keras.export.ExportArchive.write_out = held\n"
    "from seqlab.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def start(data, out, slow_export=False):
    argv = command(data, out)
    if slow_export:  # the same command, through the script above
        argv = [sys.executable, "-c", SLOW_EXPORT, *argv[3:]]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def test_killed_mid_training_resumes_with_the_finished_epochs(series, tmp_path):
    out = tmp_path / "run"
    partial = tmp_path / "run.partial"
    kill_when(start(series, out), lambda: len(history_epochs(partial / "history.csv")) >= 3)
    kept = history_epochs(partial / "history.csv")
    with open(partial / "history.csv", newline="") as file:
        before = {row["epoch"]: row["loss"] for row in csv.DictReader(file)}
    # Not every epoch is backed up (only when it is worth its time): the backup's epoch count
    # says how far the rerun can continue from.
    metadata = partial / "checkpoints" / "training_metadata.json"
    backed_up = json.loads(metadata.read_text())["epoch"]
    assert 1 <= backed_up <= kept[-1]
    stdout = run_again_and_check(series, out)
    assert "resuming the unfinished run" in stdout
    with open(out / "history.csv", newline="") as file:
        after = {row["epoch"]: row["loss"] for row in csv.DictReader(file)}
    # Every epoch up to the backup is kept as it was; the later ones were run again.
    assert kept[0] == 1
    for epoch in map(str, range(1, backed_up + 1)):
        assert after[epoch] == before[epoch]
    assert sorted(map(int, after)) == list(range(1, len(after) + 1))


@pytest.mark.parametrize("point", ["after the last epoch", "while exporting"])
def test_killed_after_fit_continues_after_fit(series, tmp_path, point):
    out = tmp_path / "run"
    partial = tmp_path / "run.partial"
    if point == "after the last epoch":
        condition = (partial / "fit_done.json").is_file
    else:
        def condition():
            return any(p.name.startswith(".saved_model.tmp-") for p in partial.glob(".*"))
    kill_when(start(series, out, slow_export=point == "while exporting"), condition)
    assert (partial / "fit_done.json").is_file() and (partial / "model.keras").is_file()
    stdout = run_again_and_check(series, out)
    assert "training finished earlier: continuing after fit" in stdout


def test_a_sigterm_mid_training_says_how_to_resume_as_a_ctrl_c_does(series, tmp_path):
    # `kill`, `timeout` and job schedulers stop with SIGTERM: it ended the process at once,
    # without a word, and a default --out named after the time was not found by the same
    # command again. Now: status 143, the finished epochs kept and the --out to resume said.
    out = tmp_path / "run"
    partial = tmp_path / "run.partial"
    with open(tmp_path / "stderr.txt", "w") as stderr:
        # PYTHONFAULTHANDLER: a crash (CI saw SIGABRT twice under load) prints every thread's
        # Python stack into stderr.txt, shown below if the status is wrong.
        process = subprocess.Popen(command(series, out), stdout=subprocess.DEVNULL,
                                   stderr=stderr, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                                                       "PYTHONFAULTHANDLER": "1"})
        deadline = time.monotonic() + 240
        while len(history_epochs(partial / "history.csv")) < 2:
            assert process.poll() is None, "train ended before the signal"
            assert time.monotonic() < deadline, "no epoch in time"
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        status = process.wait(timeout=120)
    said = (tmp_path / "stderr.txt").read_text()
    assert status == 143, said[-3000:]  # what it printed (an abort's message) when it is not
    assert (f"interrupted; the finished epochs are kept in {partial}. Rerun with the same "
            f"settings and --out {out} to resume.") in said
    assert "Traceback" not in said
    assert len(history_epochs(partial / "history.csv")) >= 2 and not out.exists()
    assert "resuming the unfinished run" in run_again_and_check(series, out)
