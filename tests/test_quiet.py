"""The command line keeps TensorFlow's C++ log off the terminal, unless asked (`--debug`, or
`TF_CPP_MIN_LOG_LEVEL` set by the user)."""

import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from seqlab import cli
from seqlab.pipelines.errors import UsageError

# A line of TensorFlow's C++ log (absl's format: severity, date, time, thread, file:line]),
# and the notices it prints while its libraries load, before its log is set up.
TF_LOG_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\]", re.MULTILINE)
TF_NOTICES = ("absl::InitializeLog", "cuInit", "oneDNN", "cuda drivers", "cpu_feature_guard")


def tensorflow_log(stderr):
    """The lines of `stderr` that TensorFlow's C++ code wrote."""
    return [line for line in stderr.splitlines()
            if TF_LOG_LINE.match(line) or any(notice in line for notice in TF_NOTICES)]


def test_the_finding_of_tensorflow_log_lines():
    # The lines this machine printed before the command line quieted them.
    stderr = (
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "I0000 00:00:1796085835.258385   16582 port.cc:153] oneDNN custom operations are on.\n"
        "E0000 00:00:1796085838.487975   16582 cuda_platform.cc:52] failed call to cuInit: "
        "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
        "seqlab timeseries train: error: data.csv: not found\n"
    )
    assert len(tensorflow_log(stderr)) == 3


def environment_without_log_level():
    return {k: v for k, v in os.environ.items() if k != cli.TF_LOG_LEVEL_VARIABLE}


def test_the_level_is_set_unless_debug_or_the_users_own(monkeypatch):
    monkeypatch.delenv(cli.TF_LOG_LEVEL_VARIABLE, raising=False)
    assert cli.quiet_tensorflow(debug=True) is False
    assert cli.TF_LOG_LEVEL_VARIABLE not in os.environ
    assert cli.quiet_tensorflow() is True
    assert os.environ[cli.TF_LOG_LEVEL_VARIABLE] == "3"
    monkeypatch.setenv(cli.TF_LOG_LEVEL_VARIABLE, "0")  # the user wants everything
    assert cli.quiet_tensorflow() is False
    assert os.environ[cli.TF_LOG_LEVEL_VARIABLE] == "0"


def test_main_with_debug_leaves_the_level_alone(monkeypatch, tmp_path):
    monkeypatch.delenv(cli.TF_LOG_LEVEL_VARIABLE, raising=False)
    with pytest.raises(UsageError):
        cli.main(["timeseries", "evaluate", "--run", str(tmp_path), "--debug"])
    assert cli.TF_LOG_LEVEL_VARIABLE not in os.environ
    assert cli.main(["timeseries", "evaluate", "--run", str(tmp_path)]) == 2
    assert os.environ[cli.TF_LOG_LEVEL_VARIABLE] == "3"


def test_train_and_help_print_no_tensorflow_log(tmp_path):
    steps = np.arange(80)
    pd.DataFrame({"t": steps, "y": np.sin(2 * np.pi * steps / 12)}).to_csv(
        tmp_path / "series.csv", index=False)
    environment = environment_without_log_level()
    train = subprocess.run(
        [sys.executable, "-m", "seqlab", "timeseries", "train", "--data", "series.csv",
         "--time-column", "t", "--target", "y", "--lookback", "6", "--units", "2",
         "--epochs", "1", "--out", "run"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300, env=environment,
    )
    assert train.returncode == 0, train.stderr[-3000:]
    assert tensorflow_log(train.stderr) == [], train.stderr
    assert "training: ran its one epoch" in train.stdout  # Keras's own output stays
    help_ = subprocess.run(
        [sys.executable, "-m", "seqlab", "timeseries", "--help"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, env=environment,
    )
    assert help_.returncode == 0 and "train" in help_.stdout
    assert tensorflow_log(help_.stderr) == [], help_.stderr
