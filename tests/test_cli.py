"""Smoke tests of the command line: `cli.main([...])` on tiny CSVs."""

import json
import os
import platform
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seqlab import cli
from seqlab.data.errors import DataError
from seqlab.pipelines.configs.timeseries import TimeseriesConfig
from seqlab.pipelines.errors import UsageError
from seqlab.pipelines.settings import make_config



def write_cycle_csv(path, n_rows=200):
    """A monthly series with a 12-month cycle: easy to beat the naive forecasts on."""
    steps = np.arange(n_rows)
    pd.DataFrame(
        {
            "month": pd.date_range("2000-01", periods=n_rows, freq="MS").strftime("%Y-%m"),
            "sales": 100 + 20 * np.sin(2 * np.pi * steps / 12) + 5 * np.sin(2 * np.pi * steps / 5),
        }
    ).to_csv(path, index=False)
    return path


def test_help_at_every_level_shows_examples(capsys):
    assert cli.main([]) == 0
    assert "seqlab timeseries train" in capsys.readouterr().out
    for argv in (["--help"], ["timeseries", "--help"], ["timeseries", "train", "--help"],
                 ["timeseries", "predict", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        assert exit_info.value.code == 0
        text = capsys.readouterr().out
        assert "examples:" in text, argv
    with pytest.raises(SystemExit) as exit_info:  # a task without an action shows its help
        cli.main(["timeseries"])
    assert exit_info.value.code == 0 and "<action>" in capsys.readouterr().out


def test_python_m_seqlab_runs_from_any_folder_without_loading_models(tmp_path):
    # A folder with packages named like seqlab's own folders: they must not shadow seqlab's.
    for name in ("data", "layers", "pipelines"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise ImportError('the user package')\n")
    (tmp_path / "cli.py").write_text("raise ImportError('the user module')\n")
    result = subprocess.run(
        [sys.executable, "-m", "seqlab", "--help"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0 and "timeseries" in result.stdout
    assert "tensorflow" not in result.stderr.lower()


def test_output_into_a_closed_pipe_ends_quietly_with_the_broken_pipe_status(tmp_path):
    # `seqlab ... | head -1`: the reader is gone before seqlab writes.
    command = [sys.executable, "-m", "seqlab", "datasets", "list"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=tmp_path) as process:
        process.stdout.close()
        error = process.stderr.read().decode()
        assert process.wait(timeout=60) == cli.EXIT_BROKEN_PIPE == 141
    assert error == ""  # no traceback


def test_the_embedded_data_loads_outside_the_repository(tmp_path):
    # From an empty folder, the repository's `data/` is not on sys.path: the samples must be
    # found inside the installed package.
    probe = (
        "from seqlab.data import classification, conll, text, timeseries, translation\n"
        "print(len(classification.load_sample().texts) > 0,\n"
        "      conll.SAMPLE_PATH.is_file(), len(text.load_default_text()[0]) > 0,\n"
        "      len(timeseries.load_sunspots()) > 0, len(translation.load_sample()) > 0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True"] * 5


def test_only_the_seqlab_name_is_installed(tmp_path):
    # Run from an empty folder so that the repository's own folders are not on sys.path.
    probe = (
        "import importlib.util, seqlab\n"
        "print(seqlab.__version__)\n"
        "print([n for n in ('data', 'layers', 'pipelines', 'models', 'cli') "
        "if importlib.util.find_spec(n) is not None])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    version, leaked = result.stdout.split("\n")[:2]
    assert version.count(".") >= 2
    assert leaked == "[]"


def test_train_predict_and_evaluate_from_the_command_line(tmp_path, capsys):
    data = write_cycle_csv(tmp_path / "sales.csv")
    out = tmp_path / "run"
    settings = tmp_path / "settings.toml"
    settings.write_text('lookback = 12\nunits = 16\nepochs = 99\nlearning-rate = 0.01\n')
    status = cli.main(["timeseries", "train", "--data", str(data), "--out", str(out),
                       "--config", str(settings), "--epochs", "8", "--seed", "3"])
    assert status == 0
    text = capsys.readouterr().out
    assert "RMSE / best baseline" in text and f"run directory: {out}" in text
    assert "\ntraining: ran all 8 epochs; restored the best epoch " in text
    assert "\n  plots: plots/forecast.png, plots/loss.png\n" in text
    config = json.loads((out / "config.json").read_text())["settings"]
    assert (config["epochs"], config["lookback"], config["seed"]) == (8, 12, 3)
    metrics = json.loads((out / "metrics.json").read_text())
    # Eight epochs of a 16-unit LSTM beat the naive and seasonal-naive forecasts clearly (the
    # ETS baseline fits a clean cycle almost exactly: it is reported, not asserted against).
    assert metrics["model"]["rmse"] < 0.8 * min(metrics["naive"]["rmse"],
                                                metrics["seasonal_naive"]["rmse"])
    assert metrics["best_baseline"] in ("naive", "seasonal_naive", "ets", "arima", "theta")

    assert cli.main(["timeseries", "predict", "--run", str(out)]) == 0
    assert "2016-09-01" in capsys.readouterr().out  # the month after 200 months from 2000-01
    assert (out / "forecast.csv").is_file()
    assert cli.main(["timeseries", "evaluate", "--run", str(out)]) == 0
    assert "seasonal naive" in capsys.readouterr().out


def test_data_errors_exit_with_status_2_and_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("t,y\n1,1\n2,oops\n3,3\n")
    argv = ["timeseries", "train", "--data", str(bad), "--time-column", "t",
            "--out", str(tmp_path / "run")]
    assert cli.main(argv) == 2
    error = capsys.readouterr().err
    assert error.strip().splitlines() == [
        f"seqlab timeseries train: error: {bad}: column 'y' has non-numeric values at lines 3 "
        "('oops'); expected numbers (a run trained with --fill ffill|interpolate treats them "
        "as missing and repairs them)"
    ]
    assert "Traceback" not in error
    with pytest.raises(DataError):
        cli.main(argv + ["--debug"])


def test_usage_errors_exit_with_status_2(tmp_path, capsys):
    assert cli.main(["timeseries", "evaluate", "--run", str(tmp_path)]) == 2
    assert "is not a finished seqlab run" in capsys.readouterr().err
    config = tmp_path / "c.json"
    config.write_text('{"lookbak": 3}')
    assert cli.main(["timeseries", "train", "--config", str(config)]) == 2
    assert "unknown setting 'lookbak'" in capsys.readouterr().err
    # The data settings (a long table's columns) read the file's values: typed first, they
    # were a TypeError, AttributeError or KeyError traceback.
    data = tmp_path / "y.csv"
    data.write_text("y\n" + "1\n" * 30)
    for wrong, expected in [("5", "a list of str"), ("[5]", "a list of str"),
                            ("true", "a list of str"), ('{"a": 1}', "a list of str"),
                            ("3.5", "a list of str")]:
        config.write_text(f'{{"time_column": {wrong}, "data": "{data}"}}')
        assert cli.main(["timeseries", "train", "--config", str(config),
                         "--out", str(tmp_path / "run")]) == 2
        error = capsys.readouterr().err
        assert f"c.json: time_column must be {expected}. Received: " in error, error
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("argv, flag", [
    (["charrnn", "train", "--data", ""], "--data"),  # read the working folder's every file
    (["sentiment", "train", "--data", " "], "--data"),
    (["timeseries", "train", "--config", ""], "--config"),  # a default run of 200 epochs
    (["timeseries", "evaluate", "--run", ""], "--run"),
    (["timeseries", "evaluate", "--run", "runs/x", "--output", ""], "--output"),  # wrote nothing
    (["timeseries", "export", "--run", "runs/x", "--out", ""], "--out"),
])
def test_an_empty_path_is_refused_not_read_as_the_working_folder(tmp_path, monkeypatch, capsys,
                                                                  argv, flag):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    assert f"error: {flag} is empty (" in capsys.readouterr().err
    (tmp_path / "c.toml").write_text('data = ""\n')
    assert cli.main(["timeseries", "train", "--config", "c.toml"]) == 2
    assert "error: c.toml: data is empty ('')" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]  # nothing started


def test_limits_are_checked_before_the_data_is_read_and_a_config_file_is_named(
        tmp_path, monkeypatch, capsys):
    # A long table's id column was found (and said so) before "epochs must be at most 100000";
    # a config file's value beyond its limit was refused without naming the file.
    monkeypatch.chdir(tmp_path)
    steps = np.arange(30)
    pd.DataFrame({"store": np.repeat(["a", "b"], 30), "day": np.tile(steps, 2),
                  "y": np.tile(np.sin(steps), 2)}).to_csv("long.csv", index=False)
    assert cli.main(["timeseries", "train", "--data", "long.csv", "--epochs", "100001"]) == 2
    assert capsys.readouterr().err == ("seqlab timeseries train: error: --epochs must be at most "
                                       "100000. Received: --epochs 100001\n")
    Path("c.toml").write_text("epochs = 1000000\n")
    assert cli.main(["timeseries", "train", "--data", "long.csv", "--config", "c.toml"]) == 2
    assert capsys.readouterr().err == ("seqlab timeseries train: error: c.toml: epochs must be "
                                       "at most 100000. Received: epochs=1000000\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml", "long.csv"]


@pytest.mark.parametrize("argv, expected", [
    (["sentiment", "train", "--data", "imbd"],
     "imbd: not found; expected a file or folder, or a registered data set's name (seqlab "
     "datasets list); did you mean the data set imdb?"),
    (["ner", "train", "--embeddings", "vectors.vec"],
     "vectors.vec: not found; expected a vector file, or a registered name such as "
     "glove.6B.100d (seqlab datasets list)"),
    (["translate", "train", "--src", "a.en", "--tgt", "a.de"],
     "a.en: not found; expected a file or folder, or a registered data set's name (seqlab "
     "datasets list)"),
    (["sentiment", "predict", "--run", "run", "--input", "reviews.txt"],
     "reviews.txt: not found; expected a file"),
    # A registered name is no --input (it was downloaded), and gets no hint there.
    (["sentiment", "predict", "--run", "run", "--input", "imbd"],
     "imbd: not found; expected a file"),
    (["sentiment", "predict", "--run", "run", "--input", "imdb"],
     "imdb: not found; expected a file"),
    (["sentiment", "train", "--data", "IMDB"],  # another case: a hint too
     "IMDB: not found; expected a file or folder, or a registered data set's name (seqlab "
     "datasets list); did you mean the data set imdb?"),
    (["sentiment", "train", "--data", "link.csv"],  # a link to nothing: the link is named
     "link.csv: a link to nowhere.csv, which does not exist"),
    # A file's name ending in / ("not found": the / makes it a folder's), a folder as --input.
    (["timeseries", "train", "--data", "run/config.json/"],
     "run/config.json/: is a file, but the / at its end names a folder; expected the file's "
     "path without it"),
    (["sentiment", "predict", "--run", "run", "--input", "run"],
     "run: is a folder, not a file; expected a file"),
    # Another task's data set, or vectors as data: refused, not downloaded (862 MB here).
    (["sentiment", "train", "--data", "glove.6B.300d"],
     "--data glove.6B.300d: glove.6B.300d is word vectors (for --embeddings), not data for "
     "seqlab sentiment"),
    (["timeseries", "train", "--data", "imdb"],
     "--data imdb: imdb is a data set of seqlab sentiment (seqlab sentiment train --data imdb "
     "--classes neg pos --sequence-length 256), not of seqlab timeseries (seqlab datasets "
     "list)"),
    (["ner", "train", "--embeddings", "wnut17"],
     "--embeddings wnut17: wnut17 is a data set of seqlab ner, not word vectors; expected a "
     "vector file or a name such as glove.6B.100d"),
])
def test_data_that_is_neither_a_path_nor_a_name_is_refused_before_tensorflow_loads(
        tmp_path, monkeypatch, capsys, argv, expected):
    # It was refused by the task's reader, once TensorFlow had loaded (10-20 s on a busy
    # machine), naming the absolute path of a typo'd data set's name.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run").mkdir()  # passes the checks made before TensorFlow loads
    (tmp_path / "link.csv").symlink_to("nowhere.csv")
    (tmp_path / "run" / "config.json").write_text('{"task": "sentiment", "settings": {}}')
    monkeypatch.setattr(cli, "quiet_tensorflow", lambda debug=False: pytest.fail("loaded"))
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == f"seqlab {argv[0]} {argv[1]}: error: {expected}\n"


def train_failing_in_prepare(monkeypatch, error, out, *flags):
    """The status of `seqlab timeseries train --model linear --out OUT FLAGS` whose data
    preparation raises `error` (before the run directory is started)."""
    from seqlab.pipelines.timeseries import TimeseriesPipeline

    def failing(self, config, distribution):
        raise error

    monkeypatch.setattr(TimeseriesPipeline, "prepare", failing)
    return cli.main(["timeseries", "train", "--model", "linear", "--out", str(out), *flags])


def test_an_interrupt_before_the_run_started_does_not_promise_a_resume(tmp_path, monkeypatch,
                                                                       capsys):
    # Ctrl-C during the data's reading or the classical fits said "the finished epochs are
    # kept in <out>.partial", which prepare's failure had just removed.
    out = tmp_path / "run"
    assert train_failing_in_prepare(monkeypatch, KeyboardInterrupt(), out) == 130
    printed = capsys.readouterr().err
    assert "interrupted before the run directory was started; nothing was kept" in printed
    assert "resume" not in printed and not list(tmp_path.iterdir())


def test_a_ctrl_c_that_tensorflow_re_raised_as_another_error_is_an_interrupt(tmp_path,
                                                                           monkeypatch, capsys):
    # Ctrl-C while TensorFlow traced a graph came back as pybind11's RuntimeError, or as an
    # error raised while handling it: an 80-line traceback and status 1, not "interrupted".
    out = tmp_path / "run"
    disguised = RuntimeError("pybind11::error_already_set: MISMATCH of original and normalized "
                             "active exception types: ORIGINAL InvalidArgumentError REPLACED "
                             "BY KeyboardInterrupt: <EMPTY MESSAGE>")
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise TypeError("No common supertype of TensorSpec(shape=(13, 13))")
    except TypeError as error:
        while_handling = error
    for error in (disguised, while_handling):
        assert train_failing_in_prepare(monkeypatch, error, out) == 130
        assert "interrupted before the run directory was started" in capsys.readouterr().err
    assert not cli.interrupted_in(TypeError("No common supertype"))
    with pytest.raises(TypeError):  # a TypeError of its own stays one
        train_failing_in_prepare(monkeypatch, TypeError("No common supertype"), out)


def test_a_ctrl_c_that_python_dropped_still_stops_train_resumably(tmp_path, monkeypatch,
                                                                  capsys):
    # Python drops a KeyboardInterrupt raised inside a weakref callback or a __del__ ("Exception
    # ignored in ..."), where Keras and TensorFlow free their objects: a train went on to its
    # last epoch and ended with status 0 (once in 22 Ctrl-C's in a trial). The interrupt is
    # remembered and raised again at the next batch or epoch end.
    import signal

    from seqlab.pipelines.common import EpochHistory

    data, out = write_cycle_csv(tmp_path / "sales.csv", n_rows=60), tmp_path / "run"
    argv = ["timeseries", "train", "--data", str(data), "--model", "gru", "--lookback", "6",
            "--units", "2", "--epochs", "5", "--patience", "5", "--out", str(out)]
    logged = EpochHistory.on_epoch_end

    def dropping_a_ctrl_c(self, epoch, logs=None):
        logged(self, epoch, logs)
        if epoch == 1:
            try:
                signal.raise_signal(signal.SIGINT)
                sum(range(1000))  # Python runs the handler at the next instructions
            except KeyboardInterrupt:
                pass  # what Python does with it in a weakref callback

    monkeypatch.setattr(EpochHistory, "on_epoch_end", dropping_a_ctrl_c)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    try:
        assert cli.main(argv) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    partial = out.with_name("run.partial")
    assert "interrupted; the finished epochs are kept in" in capsys.readouterr().err
    assert not out.exists() and partial.is_dir()
    assert (partial / "history.csv").read_text().count("\n") == 1 + 2  # epochs 1 and 2 kept
    monkeypatch.undo()
    assert cli.main(argv) == 0  # the same command resumes and finishes
    assert (out / "history.csv").read_text().count("\n") == 1 + 5 and not partial.exists()


@pytest.fixture
def default_signal_handlers():
    """SIGINT and SIGTERM as a terminal's process has them (a test runner may have its own)."""
    import signal

    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def test_a_signal_during_fit_is_raised_at_the_next_check_and_a_second_one_at_once(
        default_signal_handlers):
    # Raised wherever the main thread was, a SIGTERM during fit could land in a Keras callback
    # half done or in Python code that TensorFlow's C++ had called. In fit (`deferred`) the
    # first is only remembered; the callbacks' `check` raises it at the next batch.
    import signal

    from seqlab import _interrupt

    reached = []
    with _interrupt.watching():
        with pytest.raises(_interrupt.Terminated):
            with _interrupt.deferred():
                signal.raise_signal(signal.SIGTERM)
                reached.append(sum(range(1000)))  # Python has run the handler by now
                assert _interrupt.terminated()
                _interrupt.check()
    with _interrupt.watching():  # one not checked for is raised when the block ends
        with pytest.raises(KeyboardInterrupt):
            with _interrupt.deferred():
                signal.raise_signal(signal.SIGINT)
                reached.append(sum(range(1000)))
        assert not _interrupt.terminated()
    assert len(reached) == 2
    with _interrupt.watching():  # a second signal does not wait (a first batch may be long)
        with pytest.raises(KeyboardInterrupt):
            with _interrupt.deferred():
                signal.raise_signal(signal.SIGINT)
                reached.append(sum(range(1000)))
                signal.raise_signal(signal.SIGINT)
                reached.append(sum(range(1000)))
    assert len(reached) == 3
    with _interrupt.watching():  # outside fit, as Python does: at once
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
            reached.append(sum(range(1000)))
    assert len(reached) == 3


@pytest.mark.parametrize("epoch", [0, 1])
def test_a_sigterm_in_an_epoch_end_callback_lets_it_finish_and_stops_train_after(
        tmp_path, monkeypatch, capsys, default_signal_handlers, epoch):
    # From the second epoch on, the epoch's row of history.csv, written after the signal
    # came, is kept: the command stopped at the next batch, with SIGTERM's status and the
    # --out that resumes it. The first epoch (tracing: it can take minutes) stops at once.
    import signal

    from seqlab.pipelines.common import EpochHistory

    data, out = write_cycle_csv(tmp_path / "sales.csv", n_rows=60), tmp_path / "run"
    argv = ["timeseries", "train", "--data", str(data), "--model", "gru", "--lookback", "6",
            "--units", "2", "--epochs", "5", "--patience", "5", "--out", str(out)]
    logged = EpochHistory.on_epoch_end

    def terminated_while_logging(self, this_epoch, logs=None):
        if this_epoch == epoch:
            signal.raise_signal(signal.SIGTERM)
            sum(range(1000))
        logged(self, this_epoch, logs)

    monkeypatch.setattr(EpochHistory, "on_epoch_end", terminated_while_logging)
    assert cli.main(argv) == 143
    partial = out.with_name("run.partial")
    assert "interrupted; the finished epochs are kept in" in capsys.readouterr().err
    history = partial / "history.csv"
    rows = history.read_text().count("\n") - 1 if history.exists() else 0
    assert rows == {0: 0, 1: 2}[epoch]  # the first epoch's row was cut short, as before


@pytest.mark.parametrize("error", [
    MemoryError("Unable to allocate 1.41 GiB for an array with shape (18889, 10000, 1)"),
    "tensorflow",
])
def test_running_out_of_memory_is_one_line_with_its_own_status(tmp_path, monkeypatch, capsys,
                                                               error):
    # A 3-million-row series' backtest ran out of memory with a NumPy or TensorFlow traceback.
    import tensorflow as tf

    if error == "tensorflow":
        error = tf.errors.ResourceExhaustedError(
            None, None, "OOM when allocating tensor with shape[1983332,1,314] and type double")
    out = tmp_path / "run"
    assert train_failing_in_prepare(monkeypatch, error, out) == 3
    printed = capsys.readouterr().err
    assert printed.startswith("seqlab timeseries train: error: out of memory (") and (
        printed.count("\n") == 1)
    assert "shape" in printed and "--debug shows where" in printed
    with pytest.raises(type(error)):  # --debug: the traceback
        train_failing_in_prepare(monkeypatch, error, out, "--debug")
    # Anything else is not turned into one line.
    with pytest.raises(ZeroDivisionError):
        train_failing_in_prepare(monkeypatch, ZeroDivisionError("division by zero"), out)


def test_a_name_too_long_for_the_file_system_is_one_line_naming_it(tmp_path, capsys):
    # A traceback ended OSError [Errno 36] wherever a path met the file system's limit; a
    # name of 250 characters is legal, its ".partial" twin (258) is not.
    for length, shown in ((300, "... (300 characters) in "), (250, "... (258 characters) in ")):
        out = tmp_path / ("a" * length)
        assert cli.main(["timeseries", "train", "--model", "linear", "--out", str(out)]) == 2
        printed = capsys.readouterr().err
        assert printed.startswith("seqlab timeseries train: error: File name too long: ")
        assert shown in printed and printed.count("\n") == 1, printed
    assert "is written as NAME.partial first, then renamed" in printed
    assert cli.main(["timeseries", "evaluate", "--run", str(tmp_path / ("f" * 300))]) == 2
    assert "error: File name too long: " in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_error_names_the_action_as_it_was_typed(tmp_path, capsys):
    # `generate` is charrnn's name for predict: its errors say `generate`, not `predict`.
    for typed in ("generate", "predict"):
        assert cli.main(["charrnn", typed, "--run", str(tmp_path)]) == 2
        assert capsys.readouterr().err.startswith(f"seqlab charrnn {typed}: error: ")
    # argparse's own errors too: the alias shares predict's parser, whose name they gave.
    for typed in ("generate", "predict", "generate"):
        with pytest.raises(SystemExit):
            cli.main(["charrnn", typed, "--run", str(tmp_path), "--seed", "1.5"])
        assert f"seqlab charrnn {typed}: error: argument --seed: invalid int value: '1.5'" in (
            capsys.readouterr().err)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("task", ["timeseries", "charrnn", "sentiment", "ner", "translate"])
def test_a_named_pipe_as_data_is_refused_not_waited_on(tmp_path, capsys, task):
    # Reading a pipe waits for a writer forever. Should a reader open it again, this thread
    # opens and closes the writing end each second: the reader then sees an empty file and
    # the test fails on the message instead of hanging.
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    stop = threading.Event()

    def release_readers():
        while not stop.wait(1.0):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader waiting
                pass

    releaser = threading.Thread(target=release_readers, daemon=True)
    releaser.start()
    try:
        status = cli.main([task, "train", "--data", str(fifo), "--out", str(tmp_path / "run")])
    finally:
        stop.set()
        releaser.join()
    assert status == 2
    assert capsys.readouterr().err.strip() == (
        f"seqlab {task} train: error: {fifo}: is not a regular file (a pipe, device or "
        "socket); expected a file on disk")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_an_error_quoting_a_line_break_from_the_data_stays_one_line(tmp_path, capsys):
    # Found by tests/test_fuzz.py: a label quoted across two lines made a two-line error.
    from seqlab.pipelines.errors import UsageError

    assert cli.one_line(UsageError("labels: 'neg\n,'")) == "labels: 'neg\\n,'"
    # Every character str.splitlines breaks at (a record separator in a label, found by the
    # long fuzz budget), escaped as Python writes it; a tab is no line break.
    quoted = cli.one_line(UsageError("a\rb\x1ec\x85d\u2028e\tf"))
    assert quoted == "a\\rb\\x1ec\\x85d\\u2028e\tf" and len(quoted.splitlines()) == 1
    data = tmp_path / "reviews.csv"
    data.write_text('text,label\n"dull and long",neg\n"a fine film","pos\n,"\n')
    assert cli.main(["sentiment", "train", "--data", str(data), "--out",
                     str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("seqlab sentiment train: error: ")


def test_train_config_is_the_command_lines_and_the_benchmarks_build_their_runs_with_it(
        tmp_path):
    import dataclasses
    import importlib.util
    from pathlib import Path

    data = tmp_path / "sales.csv"
    data.write_text("y\n1\n")  # a missing file is refused before anything else
    config = cli.train_config("timeseries", ["--data", str(data), "--epochs", "3",
                                             "--out", str(tmp_path / "run")])
    assert (config.data, config.epochs, config.out) == (str(data), 3, str(tmp_path / "run"))
    assert config.model == "auto" and config.horizon == 1  # the command line's defaults
    with pytest.raises(SystemExit):
        cli.train_config("timeseries", ["--epochs", "three"])
    # benchmarks/forecasting.py runs the default command through it (a copy of its parsing
    # broke once when the parser gained a field).
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "forecasting.py"
    spec = importlib.util.spec_from_file_location("benchmark_forecasting", path)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    assert benchmark.default_config(data, ["--epochs", "3"], tmp_path / "b") == \
        dataclasses.replace(config, out=str(tmp_path / "b"))


@pytest.mark.parametrize("text, flags, expected", [
    # Each was refused without naming the file (or named a flag never typed).
    ('model = "foo"', [], "c.toml: model must be one of auto, lstm, gru, rnn, transformer, "
                         "linear, nbeats. Received: 'foo'"),
    ("dropout = 1.5", [], "c.toml: dropout must lie in [0, 1). Received: dropout=1.5"),
    ('units = 8\nmodel = "linear"', [],
     'units = 8 in c.toml is read only with --model auto, lstm, gru, rnn or transformer, not '
     'with model = "linear" in c.toml: leave it out, or choose one of those'),
    ("units = 8", ["--model", "linear"],
     "units = 8 in c.toml is read only with --model auto, lstm, gru, rnn or transformer, not "
     "with --model linear"),
    # An OverflowError traceback; the flag's 1e400 is refused as infinite.
    ("learning_rate = 1" + "0" * 400, [],
     "c.toml: learning_rate must be a finite number. Received: a whole number of 401 digits"),
    # No flag gives an empty list: an IndexError traceback, or blamed on the data.
    ("target = []", [], "c.toml: target is an empty list; expected at least one str (leave "
                        "the setting out for its default)"),
    ("features = []", [], "c.toml: features is an empty list"),
    ("no-crf = true", [], "c.toml: unknown setting 'no_crf'"),  # no such flag in timeseries
    ("overwrite = true", [], "c.toml: overwrite is no setting of the run; give --overwrite on "
                             "the command line"),
    ('data = "sales.csv"', [],
     "sales.csv: not found; expected a file or folder, or a registered data set's name "
     "(seqlab datasets list) (given as data in c.toml; a config file's relative paths are read "
     "from the current folder, "),
])
def test_a_config_files_refused_value_is_named_as_the_file_gave_it(tmp_path, monkeypatch,
                                                                  capsys, text, flags, expected):
    monkeypatch.chdir(tmp_path)
    Path("c.toml").write_text(text + "\n")
    assert cli.main(["timeseries", "train", "--config", "c.toml", *flags]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"seqlab timeseries train: error: {expected}"), error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]


@pytest.mark.parametrize("flags, expected", [
    # Each named the setting ("lookback must be at least 1. Received: lookback=0").
    (["--lookback", "0"], "--lookback must be at least 1. Received: --lookback 0"),
    (["--season", "0"], "--season must be at least 1. Received: --season 0"),
    (["--backtest", "-1"], "--backtest must be at least 0. Received: --backtest -1"),
    (["--horizon", "10001"], "--horizon must be at most 10000. Received: --horizon 10001"),
    (["--val-fraction", "1"], "--val-fraction must lie in [0, 1), --test-fraction in (0, 1), "
                              "their sum below 1. Received: --val-fraction 1.0, "
                              "--test-fraction 0.15"),
    (["--model", "transformer", "--units", "9", "--num-heads", "2"],
     "--units (the transformer's width) must be a multiple of --num-heads. Received: --units 9, "
     "--num-heads 2"),
])
def test_a_refused_timeseries_flag_is_named_as_typed(tmp_path, monkeypatch, capsys, flags,
                                                     expected):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["timeseries", "train", *flags]) == 2
    assert capsys.readouterr().err == f"seqlab timeseries train: error: {expected}\n"
    assert list(tmp_path.iterdir()) == []
    # From Python the settings are arguments, named as such.
    with pytest.raises(UsageError, match=r"^lookback must be at least 1\. Received: lookback=0$"):
        make_config(TimeseriesConfig, flag_values={"lookback": 0})


def test_a_flag_over_a_config_files_value_is_named_as_a_flag(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("c.toml").write_text("dropout = 0.5\n")
    assert cli.main(["timeseries", "train", "--config", "c.toml", "--dropout", "1.5"]) == 2
    assert capsys.readouterr().err == ("seqlab timeseries train: error: --dropout must lie in "
                                       "[0, 1). Received: --dropout 1.5\n")
    Path("c.toml").write_text('no-crf = true\n')
    assert cli.main(["ner", "train", "--config", "c.toml"]) == 2
    assert "c.toml: unknown setting 'no_crf' (write crf = false); the settings are: " in \
        capsys.readouterr().err
    Path("c.toml").write_text('no-crf = false\n')  # the negation's negation
    assert cli.main(["ner", "train", "--config", "c.toml"]) == 2
    assert "c.toml: unknown setting 'no_crf' (write crf = true)" in capsys.readouterr().err
    # The setting a refusal is about, given by the file, names the file.
    Path("c.json").write_text('{"model": "ngrams", "freeze_embeddings": true}')
    assert cli.main(["sentiment", "train", "--config", "c.json"]) == 2
    assert "error: c.json: freeze_embeddings keeps pretrained vectors fixed" in \
        capsys.readouterr().err


def test_a_second_config_file_is_refused_not_silently_taken_instead(tmp_path, monkeypatch,
                                                                     capsys):
    # The second file's settings replaced the first's without a word.
    monkeypatch.chdir(tmp_path)
    Path("a.toml").write_text("epochs = 1\nunits = 4\n")
    Path("b.toml").write_text("epochs = 3\n")
    with pytest.raises(SystemExit) as stopped:
        cli.main(["timeseries", "train", "--config", "a.toml", "--config", "b.toml"])
    assert stopped.value.code == 2
    assert "error: --config is given twice (a.toml and b.toml); give one file" in \
        capsys.readouterr().err


def test_paths_starting_with_a_tilde_are_in_the_home_folder(tmp_path, monkeypatch):
    # `out = "~/runs/a"` made a folder named "~" in the current one.
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    (home / "sales.csv").write_text("y\n" + "1\n" * 30)
    Path("c.toml").write_text('data = "~/sales.csv"\nout = "~/runs/a"\n')
    config = cli.train_config("timeseries", ["--config", "c.toml"])
    assert (config.data, config.out) == (str(home / "sales.csv"), str(home / "runs" / "a"))
    # A flag's too: the shell leaves the `~` of `--out=~/runs/b` as it is.
    config = cli.train_config("timeseries", ["--data=~/sales.csv", "--out=~/runs/b"])
    assert (config.data, config.out) == (str(home / "sales.csv"), str(home / "runs" / "b"))
    assert sorted(p.name for p in work.iterdir()) == ["c.toml"]


@pytest.mark.parametrize("argv, expected", [
    (["timeseries", "train", "--data", "data.csv", "--out", "loop/run"],
     "--out 'loop/run': loop is a loop of symbolic links; expected a folder or a path to create"),
    (["sentiment", "predict", "--run", "run", "--input", "data.csv", "--output", "loop"],
     "--output 'loop': loop is a loop of symbolic links; expected a folder or a path to create"),
    (["sentiment", "export", "--run", "run", "--out", "gone/x"],
     "--out 'gone/x': gone is a link to nowhere, which does not exist; expected a folder"),
    (["timeseries", "train", "--data", "data.csv", "--out", os.fsdecode(b"r\xff")],
     "--out r\\xff: the name holds bytes that are not UTF-8 text; TensorFlow writes a model only "
     "under a UTF-8 name: rename it"),
    (["timeseries", "train", "--data", "loop"],
     "loop: a loop of symbolic links; expected a file or folder"),
])
def test_paths_to_write_that_would_fail_after_the_work_are_refused_before_it(
        tmp_path, monkeypatch, capsys, argv, expected):
    # Each ended in a traceback, some after training: SavedModel's UnicodeEncodeError,
    # pathlib's "Symlink loop" RuntimeError, a FileExistsError; a loop as --data was called a
    # link to a file that does not exist.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text("t,y\n1,1\n2,2\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text('{"task": "sentiment", "settings": {}}')
    (tmp_path / "loop").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop")
    (tmp_path / "gone").symlink_to("nowhere")
    monkeypatch.setattr(cli, "quiet_tensorflow", lambda debug=False: pytest.fail("loaded"))
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == f"seqlab {argv[0]} {argv[1]}: error: {expected}\n"


def test_a_config_files_out_that_would_fail_after_the_work_is_refused_before_it(
        tmp_path, monkeypatch, capsys):
    # The check read the flags alone: a config file's `out` through a loop of links trained,
    # then ended in pathlib's "Symlink loop" traceback.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text("t,y\n1,1\n2,2\n")
    (tmp_path / "loop").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop")
    (tmp_path / "c.json").write_text('{"data": "data.csv", "out": "loop/run"}')
    monkeypatch.setattr(cli, "quiet_tensorflow", lambda debug=False: pytest.fail("loaded"))
    assert cli.main(["timeseries", "train", "--config", "c.json"]) == 2
    assert capsys.readouterr().err == (
        "seqlab timeseries train: error: c.json: out 'loop/run': loop is a loop of symbolic "
        "links; expected a folder or a path to create\n")
    # An --out given wins over the file's, which is then not read.
    (tmp_path / "c.json").write_text('{"data": "data.csv", "out": "loop/run", "epochs": 0}')
    assert cli.main(["timeseries", "train", "--config", "c.json", "--out", "r"]) == 2
    assert "loop" not in capsys.readouterr().err


def test_a_csv_to_write_may_have_a_name_that_is_not_utf8(tmp_path, monkeypatch):
    # Only a SavedModel needs a UTF-8 name: predict's --output writes any name.
    monkeypatch.chdir(tmp_path)
    cli._refuse_unwritable_paths({"output": os.fsdecode(b"p\xff.csv")}, "predict")
    with pytest.raises(cli.UsageError, match="not UTF-8 text"):
        cli._refuse_unwritable_paths({"out": os.fsdecode(b"p\xff")}, "export")


def test_a_train_into_an_out_another_train_writes_is_refused_before_tensorflow_loads(
        tmp_path, monkeypatch, capsys):
    # It was refused when the run started, once TensorFlow had loaded (10-40 s on a busy
    # machine).
    from seqlab.pipelines.paths import refuse_busy_out

    monkeypatch.chdir(tmp_path)
    lock = tmp_path / "run.partial" / ".lock"
    lock.parent.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = platform.node()
        lock.write_text(json.dumps({"pid": sleeper.pid, "host": host, "since_utc": "x"}))
        monkeypatch.setattr(cli, "quiet_tensorflow", lambda debug=False: pytest.fail("loaded"))
        for out in ("run", "run/", "./run"):
            assert cli.main(["timeseries", "train", "--out", out]) == 2
            assert capsys.readouterr().err == (
                f"seqlab timeseries train: error: run.partial is in use by process "
                f"{sleeper.pid} on {host} (since x); wait for it to finish, or choose another "
                f"--out. If that process is gone, delete run.partial/.lock\n")
    finally:
        sleeper.kill()
        sleeper.wait()
    # A dead owner's lock, this process's own, or none: left to the run's start (take_lock).
    refuse_busy_out("run")
    lock.write_text(json.dumps({"pid": os.getpid(), "host": host}))
    refuse_busy_out("run")
    lock.unlink()
    refuse_busy_out("run")
    refuse_busy_out("elsewhere/run")
