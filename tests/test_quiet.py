"""The command line, and `import seqlab`, keep TensorFlow's C++ log off the terminal, unless
asked (`--debug`, or `TF_CPP_MIN_LOG_LEVEL` set by the user); README's examples print nothing
but their own output."""

import os
import re
import subprocess
import sys
from pathlib import Path

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
    # A run whose config.json passes the checks made before TensorFlow loads, and whose other
    # files are missing: refused after TensorFlow has loaded.
    (tmp_path / "config.json").write_text('{"task": "timeseries", "settings": {}}')
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


# What a subprocess reports after it imported seqlab and ran TensorFlow ops.
LIBRARY_SCRIPT = """
import os, sys
{imports}
import numpy as np
layer = LSTM(2)
print(layer(np.zeros((1, 3, 1), "float32")).shape)  # TensorFlow runs an op: cuInit and all
print("level", os.environ.get("TF_CPP_MIN_LOG_LEVEL"))
"""


@pytest.mark.parametrize("imports", [
    "from seqlab.layers import LSTM",
    "import seqlab\nimport tensorflow\nfrom seqlab.layers import LSTM",
])
def test_importing_seqlab_keeps_tensorflows_log_quiet(imports):
    finished = subprocess.run(
        [sys.executable, "-c", LIBRARY_SCRIPT.format(imports=imports)],
        capture_output=True, text=True, timeout=300, env=environment_without_log_level(),
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert tensorflow_log(finished.stderr) == [], finished.stderr
    assert finished.stderr.strip() == ""
    assert "level 3" in finished.stdout


def test_importing_seqlab_keeps_the_users_own_level():
    environment = dict(environment_without_log_level(), TF_CPP_MIN_LOG_LEVEL="1")
    finished = subprocess.run(
        [sys.executable, "-c", LIBRARY_SCRIPT.format(imports="from seqlab.layers import LSTM")
         + "from seqlab import _tf_log\nprint('hooked', _tf_log._HOOK in sys.meta_path)\n"],
        capture_output=True, text=True, timeout=300, env=environment,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "level 1" in finished.stdout and "hooked False" in finished.stdout


def test_the_hook_and_the_level_are_undone_for_debug(monkeypatch):
    from seqlab import _tf_log

    monkeypatch.delenv(cli.TF_LOG_LEVEL_VARIABLE, raising=False)
    monkeypatch.setattr(_tf_log, "_LEVEL_SET_HERE", False)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)  # as before TensorFlow loads
    assert _tf_log.quiet_on_import() is True
    assert _tf_log._HOOK in sys.meta_path and os.environ[cli.TF_LOG_LEVEL_VARIABLE] == "3"
    _tf_log.leave_loud()
    assert _tf_log._HOOK not in sys.meta_path and cli.TF_LOG_LEVEL_VARIABLE not in os.environ


def test_the_readme_examples_print_only_their_own_output(tmp_path):
    """README's Python examples, run as a user runs them: no TensorFlow log, no warning."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", readme, flags=re.S | re.M)
    assert len(blocks) == 3
    script = tmp_path / "examples.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    finished = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              cwd=tmp_path, timeout=600, env=environment_without_log_level())
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert finished.stderr == "", finished.stderr
    assert "(44, 3, 1)" in finished.stdout


def _tensorflow_warnings(emit):
    """What `emit()` logs through TensorFlow's Python logger at WARNING and above."""
    import logging

    import tensorflow as tf

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            if not all(f.filter(record) for f in tf.get_logger().filters):
                return
            records.append(record.getMessage())

    handler = Keep(logging.WARNING)
    tf.get_logger().addHandler(handler)
    try:
        emit()
    finally:
        tf.get_logger().removeHandler(handler)
    return records


def test_retracing_warnings_are_kept_off_the_terminal(monkeypatch):
    # `--backtest 2` (a model per fold) and the recurrent layers' loop measurement (a function
    # per candidate) printed TensorFlow's "... triggered tf.function retracing" warnings.
    import tensorflow as tf

    from seqlab import _tf_log
    from seqlab.layers import GRU, _loop_choice

    message = "5 out of the last 9 calls to <function f> triggered tf.function retracing."
    tf.get_logger().removeFilter(_tf_log._RETRACING_FILTER)
    assert _tensorflow_warnings(lambda: tf.get_logger().warning(message)) == [message]
    # The measurement's own filter, outside the command line: every candidate traced anew.
    monkeypatch.setenv(_loop_choice.MEMORY_VAR, "off")
    monkeypatch.setattr(_loop_choice, "MIN_MEASURED_FLOPS", 0.0)
    monkeypatch.setattr(_loop_choice, "MIN_ROUNDS", 1)
    monkeypatch.setattr(_loop_choice, "MIN_SECONDS", 0.0)
    _loop_choice.clear()
    layer = GRU(4, return_sequences=True)
    shapes = [(1, 3, 2), (2, 5, 2), (3, 4, 2), (1, 6, 2)]
    logged = _tensorflow_warnings(
        lambda: [tf.function(layer)(tf.zeros(shape)) for shape in shapes])
    assert not [line for line in logged if "retracing" in line]
    cli.quiet_tensorflow()  # the command line drops them everywhere
    assert _tensorflow_warnings(lambda: tf.get_logger().warning(message)) == []


def test_an_interrupt_while_tensorflow_loads_shows_none_of_its_log(capfd, monkeypatch, tmp_path):
    # Ctrl-C in the first seconds of a command (TensorFlow's import, its descriptor 2
    # captured) printed TensorFlow's load notices, and no word of seqlab's.
    from seqlab import _tf_log

    with pytest.raises(KeyboardInterrupt):
        with _tf_log.quiet_descriptor_2():
            os.write(2, b"oneDNN custom operations are on\n")
            raise KeyboardInterrupt
    with pytest.raises(ValueError):  # a failed import still shows what it logged
        with _tf_log.quiet_descriptor_2():
            os.write(2, b"cannot load libtensorflow\n")
            raise ValueError
    assert capfd.readouterr().err == "cannot load libtensorflow\n"

    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "load_task", interrupted)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["timeseries", "train", "--model", "linear", "--out", "run"]) == 130
    assert capfd.readouterr().err == (
        "\nseqlab: interrupted before timeseries train started; nothing was written.\n")
    assert not list(tmp_path.iterdir())


def test_an_interrupted_data_set_command_ends_quietly_with_its_status(monkeypatch, capfd):
    # The interrupt line of the task commands, pasted into `seqlab datasets` too, named
    # variables that command does not have: a NameError traceback.
    from seqlab.data import datasets

    def interrupted(name, progress=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(datasets, "download", interrupted)
    assert cli.main(["datasets", "download", "airline-passengers"]) == 130
    assert "Traceback" not in capfd.readouterr().err
