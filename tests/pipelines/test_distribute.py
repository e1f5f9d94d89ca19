"""`--distribute`: the strategies, the chief-only run directory, and a two-worker run.

The two-worker test starts two processes on 127.0.0.1 (nothing else is reached).
"""

import json
import os
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab import cli
from seqlab.pipelines import timeseries
from seqlab.pipelines.configs.timeseries import TimeseriesConfig
from seqlab.pipelines.distribute import Distribution
from seqlab.pipelines.errors import UsageError



def _write_series(path, rows=120):
    t = np.arange(rows)
    values = 10 + np.sin(2 * np.pi * t / 12) + 0.01 * t
    path.write_text("t,value\n" + "".join(f"{i},{v:.5f}\n" for i, v in zip(t, values)))
    return path


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_none_is_the_default_strategy():
    distribution = Distribution("none")
    assert distribution.replicas == 1 and distribution.is_chief
    assert distribution.global_batch_size(16) == 16
    dataset = tf.data.Dataset.range(4)
    assert distribution.shard(dataset) is dataset


def test_mirrored_shards_by_data_and_batches_globally():
    distribution = Distribution("mirrored")
    assert distribution.global_batch_size(8) == 8 * distribution.replicas
    options = distribution.shard(tf.data.Dataset.range(4)).options()
    assert (
        options.experimental_distribute.auto_shard_policy
        == tf.data.experimental.AutoShardPolicy.DATA
    )


@pytest.mark.parametrize(
    "tf_config, message",
    [
        (None, "needs the TF_CONFIG environment variable"),
        ("not json", "TF_CONFIG is not a valid cluster description"),
        ('{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 3}}',
         "names task worker:3, which is not in its cluster"),
        # TensorFlow's tracebacks before (a string's length passed for its number of tasks).
        ('{"cluster": ["w"], "task": {"type": "w", "index": 0}}',
         "cluster must map each job to a list of \"host:port\" addresses"),
        ('{"cluster": {"worker": "localhost:1"}, "task": {"type": "worker", "index": 5}}',
         "cluster must map each job to a list"),
        ('{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": -1}}',
         "task index must be a whole number of at least 0; found -1"),
        ('{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": "0"}}',
         "task index must be a whole number of at least 0"),
        ('{"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}, '
         '"task": {"type": "ps", "index": 0}}', "has the job 'ps'"),
        # TensorFlow's "Could not parse port for local server" traceback; a port out of range
        # was accepted.
        ('{"cluster": {"worker": ["localhost"]}, "task": {"type": "worker", "index": 0}}',
         "cluster address 'localhost' is not \"host:port\" with a port of 1 to 65535"),
        ('{"cluster": {"worker": ["127.0.0.1:1", "h:99999"]}, "task": {"type": "worker", '
         '"index": 0}}', "cluster address 'h:99999' is not \"host:port\""),
        # A bare IPv6 address was read as the host ":" and port 1.
        ('{"cluster": {"worker": ["::1"]}, "task": {"type": "worker", "index": 0}}',
         "address '::1' is not \"host:port\": an IPv6 host goes in brackets"),
        # In brackets without a port it was told the same; a port of a digit that is not
        # ASCII ("²", which str.isdigit accepts) was int()'s ValueError traceback.
        ('{"cluster": {"worker": ["[::1]"]}, "task": {"type": "worker", "index": 0}}',
         "address '\\[::1\\]' has no port: write it as \"\\[::1\\]:2222\""),
        ('{"cluster": {"worker": ["localhost:2²"]}, "task": {"type": "worker", "index": 0}}',
         "address 'localhost:2²' is not \"host:port\" with a port of 1 to 65535"),
        # TensorFlow waited for ever, deaf to every signal but SIGKILL (.invalid never
        # resolves: RFC 2606).
        ('{"cluster": {"worker": ["nohost.invalid:23459"]}, "task": {"type": "worker", '
         '"index": 0}}', "names this worker at 'nohost.invalid:23459', whose host does not "
                         "resolve"),
    ],
)
def test_multiworker_needs_a_valid_tf_config(monkeypatch, tf_config, message):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    if tf_config is not None:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(UsageError, match=message):
        Distribution("multiworker")


def test_a_time_box_is_refused_with_several_workers():
    # Each worker timed itself: one stopped an epoch before the chief, whose next collective
    # step failed in a traceback, and the run resumed on mismatched weights.
    # Refused by train, before any work; a config of a run trained so before still loads.
    config = TimeseriesConfig(distribute="multiworker", max_minutes=1.0)
    with pytest.raises(UsageError, match="--max-minutes is not offered with --distribute "
                                         "multiworker: each worker would time itself"):
        timeseries.TASK.train(config)


def test_unknown_kind_is_refused():
    with pytest.raises(UsageError, match="distribute must be one of none, mirrored, multiworker"):
        Distribution("horovod")


def test_mirrored_training_writes_a_complete_run(tmp_path):
    data = _write_series(tmp_path / "series.csv")
    out = tmp_path / "run"
    status = cli.main([
        "timeseries", "train", "--data", str(data), "--out", str(out), "--epochs", "1",
        "--time-column", "t", "--target", "value",
        "--lookback", "8", "--units", "4", "--distribute", "mirrored",
    ])
    assert status == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["distribution"]["kind"] == "mirrored"
    assert metrics["distribution"]["global_batch_size"] == 32 * metrics["distribution"]["replicas"]


def test_a_mirrored_run_killed_after_fit_continues_after_fit(tmp_path, monkeypatch, capsys):
    """The optimizer was built outside the strategy's scope when the run continued after fit:
    "Need to be inside with strategy.scope()" on every retry."""
    from seqlab.pipelines import timeseries

    data = _write_series(tmp_path / "series.csv")
    out = tmp_path / "run"
    command = ["timeseries", "train", "--data", str(data), "--out", str(out), "--epochs", "1",
               "--time-column", "t", "--target", "value", "--lookback", "8", "--units", "4",
               "--model", "gru", "--distribute", "mirrored"]

    def die(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(timeseries.TimeseriesPipeline, "export_model", die)
    assert cli.main(command) != 0
    assert (tmp_path / "run.partial" / "fit_done.json").is_file()
    monkeypatch.undo()
    capsys.readouterr()
    assert cli.main(command) == 0
    assert "training finished earlier: continuing after fit" in capsys.readouterr().out
    assert (out / "saved_model" / "saved_model.pb").is_file()


def test_two_workers_train_and_only_the_chief_writes(tmp_path):
    # The GRU alone: the strategy wraps the network's fit; --model auto's classical members
    # would add their fits to both workers' time and nothing to what is tested here.
    # 123 rows give 11 validation windows: the workers' validation batches differ in size (6
    # and 5), which Keras's model building under MultiWorkerMirroredStrategy must survive.
    data = _write_series(tmp_path / "series.csv", rows=123)
    out = tmp_path / "run"
    workers = [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]
    command = [
        sys.executable, "-m", "seqlab", "timeseries", "train", "--data", str(data),
        "--time-column", "t", "--target", "value",
        "--out", str(out), "--epochs", "1", "--lookback", "8", "--units", "4",
        "--batch-size", "8", "--distribute", "multiworker", "--model", "gru",
    ]
    processes = []
    for index in range(2):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_CONFIG=json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        ))
        processes.append(subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        ))
    outputs = []
    for process in processes:
        try:
            outputs.append(process.communicate(timeout=240)[0])
        except subprocess.TimeoutExpired:
            for p in processes:
                p.kill()
            raise
    for process, output in zip(processes, outputs):
        assert process.returncode == 0, output[-3000:]

    for name in ("config.json", "metrics.json", "history.csv", "model.keras", "saved_model",
                 "plots/forecast.png"):
        assert (out / name).exists(), name
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["distribution"] == {
        "kind": "multiworker", "replicas": 2, "per_replica_batch_size": 8,
        "global_batch_size": 16, "worker": "worker-0", "chief": True,
    }
    assert np.isfinite(metrics["model"]["rmse"])
    # The other worker's scratch copy is gone, and nothing else was written beside the run.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "series.csv"]
    model = keras.saving.load_model(out / "model.keras")
    assert model.predict(np.zeros((1, 8, 1), "float32"), verbose=0).shape == (1, 1, 1)
