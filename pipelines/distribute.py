"""Training on several devices or machines with TensorFlow's `tf.distribute`.

`--distribute` on every task's `train` chooses the strategy:

- `none`: the default strategy (one device).
- `mirrored`: `tf.distribute.MirroredStrategy` over the local devices.
- `multiworker`: `tf.distribute.MultiWorkerMirroredStrategy`, configured by the
  standard `TF_CONFIG` environment variable; run the same command on every
  worker.

A task's `train` uses one `Distribution`: it builds and compiles the model
inside `scope()`, batches with `global_batch_size(per_replica)`, shards each
dataset with an explicit `AutoShardPolicy` via `shard()`, and writes through
`run_directory()`, which on a non-chief worker is a scratch directory that is
removed when the run finishes (the pattern of TensorFlow's multi-worker Keras
guide): only the chief writes the run directory.

Keras 3.15 does not run `model.fit` under `MultiWorkerMirroredStrategy` as it
is (keras-team/keras#20585): its trainer calls `strategy.reduce(..., axis=0)`
on scalar logs, and `strategy.reduce` on a nested example batch, which that
strategy refuses. The strategy is therefore subclassed to accept exactly those
two calls (a scalar with `axis=0` reduces with `axis=None`; the nested example
batch is taken from the local replica); the training itself is TensorFlow's
collective all-reduce, unchanged.
"""

import dataclasses
import json
import os
import shutil
import socket
from pathlib import Path

import keras
import tensorflow as tf

from seqlab.data import datasets
from seqlab.layers.registry import load_model
from seqlab.pipelines.common import (
    PARTIAL_SUFFIX,
    RunDirectory,
    default_out,
    save_model_atomic,
    set_seed,
)
from seqlab.pipelines.errors import UsageError

KINDS = ("none", "mirrored", "multiworker")

# What each kind of training data is sharded by, named by the tasks. In-memory
# datasets (every seqlab task builds its batches from tensors) cannot be split
# by file, so workers take every n-th element.
SHARD_BY_DATA = tf.data.experimental.AutoShardPolicy.DATA


class _KerasMultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """`MultiWorkerMirroredStrategy` accepting the reductions Keras 3's trainer asks for."""

    def reduce(self, reduce_op, value, axis):
        if tf.nest.is_nested(value):
            # Keras passes a nested value only to get one example batch from which it builds
            # the model's variables; the local batch serves (the workers' batches may differ in
            # size, so a collective reduction of them could fail).
            return tf.nest.map_structure(lambda v: self.experimental_local_results(v)[0], value)
        if axis is not None and value.shape.rank == 0:
            axis = None
        return super().reduce(reduce_op, value, axis)


def _cluster():
    """TF_CONFIG's cluster, as `_cluster_role` checked it."""
    return json.loads(os.environ["TF_CONFIG"])["cluster"]


def _cluster_role():
    """`(task_type, task_id, has_chief)` from `TF_CONFIG`, checked."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise UsageError(
            "--distribute multiworker needs the TF_CONFIG environment variable (the cluster and "
            "this worker's task); see docs/cli.md, 'Training on several devices or machines'"
        )
    expected = ('expected {"cluster": {"worker": ["host:port", ...]}, "task": {"type": '
                '"worker", "index": 0}}')
    try:
        config = json.loads(raw)
        cluster, task = config["cluster"], config["task"]
        task_type, task_id = task["type"], task["index"]
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise UsageError(f"TF_CONFIG is not a valid cluster description ({error!r}); "
                         f"{expected}") from None
    # TensorFlow's own errors for these were tracebacks: a list for the cluster, a string for
    # a job's tasks (its length passed for their number), a negative index, a parameter
    # server (which Keras's fit does not train with).
    if not isinstance(cluster, dict) or not all(
            isinstance(tasks, list) and tasks and all(isinstance(t, str) for t in tasks)
            for tasks in cluster.values()):
        raise UsageError(f"TF_CONFIG's cluster must map each job to a list of \"host:port\" "
                         f"addresses; found {json.dumps(cluster)[:200]}; {expected}")
    unknown = sorted(set(cluster) - {"chief", "worker"})
    if unknown:
        raise UsageError(f"TF_CONFIG's cluster has the job {unknown[0]!r}: --distribute "
                         "multiworker trains with \"worker\" tasks (and a \"chief\") only")
    if type(task_id) is not int or task_id < 0:
        raise UsageError(f"TF_CONFIG's task index must be a whole number of at least 0; "
                         f"found {json.dumps(task_id)[:40]}")
    if task_type not in cluster or task_id >= len(cluster[task_type]):
        raise UsageError(
            f"TF_CONFIG names task {task_type}:{task_id}, which is not in its cluster {cluster}"
        )
    for address in (address for tasks in cluster.values() for address in tasks):
        _checked_port(address)
    _check_resolves(cluster[task_type][task_id])  # its port checked above
    return task_type, task_id, "chief" in cluster


def _checked_port(address):
    """The port of a cluster's `"host:port"` (`"[::1]:port"` too), refused unless it is one:
    TensorFlow's "Could not parse port for local server" was a traceback, and a port out of
    range was accepted."""
    if address.startswith("[") and address.endswith("]"):
        raise UsageError(f"TF_CONFIG's cluster address {address!r} has no port: write it as "
                         f"\"{address}:2222\"")
    host, _, port = address.rpartition(":")
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        # "::1" read as the host ":" and port 1, and "fe80::1:2222" as port 2222 of "fe80::1".
        raise UsageError(f"TF_CONFIG's cluster address {address!r} is not \"host:port\": an "
                         "IPv6 host goes in brackets, as \"[::1]:2222\"")
    # ASCII digits only: "²" is a digit to str.isdigit, and int() refuses it (a traceback).
    if not host or not (port.isascii() and port.isdigit()) or not 1 <= int(port) <= 65535:
        raise UsageError(f"TF_CONFIG's cluster address {address!r} is not \"host:port\" with a "
                         "port of 1 to 65535")
    return int(port)


def _check_resolves(address):
    """Refuses this worker's own address where its host does not resolve: TensorFlow then
    waited for ever, deaf to every signal but SIGKILL."""
    host, _, port = address.rpartition(":")
    try:
        socket.getaddrinfo(host.strip("[]"), int(port))
    except (OSError, UnicodeError) as error:
        raise UsageError(f"TF_CONFIG names this worker at {address!r}, whose host does not "
                         f"resolve ({getattr(error, 'strerror', None) or error}); give a name "
                         "or address of this machine") from None


class Distribution:
    """The strategy of one `train` call, and what follows from it.

    Args:
        kind: "none", "mirrored" or "multiworker".

    Attributes:
        kind: the kind.
        strategy: the `tf.distribute.Strategy`.
        is_chief: whether this process writes the run directory.
        worker: this worker's name ("chief", "worker-1", ...), or None outside a cluster.
    """

    def __init__(self, kind="none"):
        if kind not in KINDS:
            raise UsageError(f"distribute must be one of {', '.join(KINDS)}. Received: {kind!r}")
        self.kind = kind
        self.worker = None
        self.is_chief = True
        if kind == "multiworker":
            task_type, task_id, has_chief = _cluster_role()
            self.is_chief = task_type == "chief" or (
                task_type == "worker" and task_id == 0 and not has_chief
            )
            self.worker = f"{task_type}-{task_id}"
            # TensorFlow waits, without a word and whatever the signals, until every worker
            # has started: said first, so that a worker left waiting shows why.
            others = sum(len(tasks) for tasks in _cluster().values()) - 1
            print(f"{self.worker}: joining the cluster of TF_CONFIG; training starts once "
                  f"its {others} other worker{'s' if others != 1 else ''} started too "
                  "(TensorFlow waits for them; only SIGKILL stops a worker while it waits)",
                  flush=True)
            self.strategy = _KerasMultiWorkerMirroredStrategy()
        elif kind == "mirrored":
            self.strategy = tf.distribute.MirroredStrategy()
        else:
            self.strategy = tf.distribute.get_strategy()

    def __repr__(self):
        return (
            f"Distribution(kind={self.kind!r}, replicas={self.replicas}, "
            f"worker={self.worker!r}, chief={self.is_chief})"
        )

    @property
    def replicas(self):
        return self.strategy.num_replicas_in_sync

    def scope(self):
        """Create the model, its optimizer and metrics inside this."""
        return self.strategy.scope()

    def global_batch_size(self, per_replica):
        """The batch size a dataset is built with: per-replica size times replicas."""
        return per_replica * self.replicas

    def shard(self, dataset, policy=SHARD_BY_DATA):
        """`dataset` with an explicit auto-shard policy (a no-op without distribution)."""
        if dataset is None or self.kind == "none":
            return dataset
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = policy
        return dataset.with_options(options)

    def run_directory(self, out, task, overwrite=False):
        """Where this process writes: the run directory, or a worker's scratch copy."""
        if self.is_chief:
            return RunDirectory(out, task, overwrite=overwrite)
        return _WorkerScratchDirectory(f"{out}.{self.worker}", task, overwrite=True)

    def local_model(self, model, path):
        """Saves `model` as `.keras` at `path`; returns the model to score and export with.

        Without distribution that is `model`. Under a strategy it is the saved model loaded
        outside it: Keras's `predict` under `MultiWorkerMirroredStrategy` shards the inputs
        across workers and gathers the outputs, while scoring wants every worker to compute the
        same full predictions locally.
        """
        save_model_atomic(model, path)
        if self.kind == "none":
            return model
        return load_model(path)

    def report(self, per_replica_batch_size):
        """The figures a run records about its distribution (for config / metrics)."""
        return {
            "kind": self.kind,
            "replicas": self.replicas,
            "per_replica_batch_size": per_replica_batch_size,
            "global_batch_size": self.global_batch_size(per_replica_batch_size),
            "worker": self.worker,
            "chief": self.is_chief,
        }


def begin_run(config, task, overwrite=False, data_paths=()):
    """The opening every task's `train` shares.

    Seeds everything with `config.seed`, fills in a default `out`, makes the named data paths
    absolute (so that `evaluate` and `predict` find the data from any working directory), and
    opens the run directory through the distribution (only the chief writes it), refusing an
    `out` that holds a finished run unless `overwrite`.

    Returns:
        `(config, distribution, run)`: the completed config, the `Distribution` of
        `config.distribute` and the `RunDirectory`, not yet started (`start_run`).
    """
    set_seed(config.seed)
    # A data-set name stays a name, so that evaluate and predict resolve it again.
    paths = {name: str(Path(getattr(config, name)).resolve())
             for name in data_paths
             if getattr(config, name) and not datasets.is_name(getattr(config, name))}
    config = dataclasses.replace(config, out=config.out or default_out(task), **paths)
    if not Path(config.out).resolve().name:  # "/": no name to build `<out>.partial` from
        raise UsageError(f"--out {config.out} is the file system's root; give a folder to "
                         "create, such as runs/NAME")
    _refuse_data_inside(config.out, paths)
    distribution = Distribution(config.distribute)
    run = distribution.run_directory(config.out, task, overwrite=overwrite)
    run.check_out()
    return config, distribution, run


def _refuse_data_inside(out, paths):
    """Refuses data (`paths`: setting -> absolute path) inside the run directory `out` or its
    `<out>.partial`: train renames the one into the other and --overwrite replaces the run, so
    the data would move or be deleted; and a run directory inside a data folder."""
    final = Path(out).resolve()
    for name, path in paths.items():
        for folder in (final, final.with_name(final.name + PARTIAL_SUFFIX)):
            if folder == Path(path) or folder in Path(path).parents:
                raise UsageError(
                    f"--{name.replace('_', '-')} {path} is inside {folder}, the run directory "
                    f"that train writes (--out {out}): move the data out of it, or choose "
                    "another --out")
        # The other way round: the run's files would change the data's fingerprint (the run
        # could never be evaluated) and be read as data by the next train on the folder.
        if Path(path).is_dir() and Path(path) in final.parents:
            raise UsageError(
                f"--out {out} is inside the --{name.replace('_', '-')} folder {path}: the run's "
                "files would become part of the data; choose an --out outside it")


def start_run(run, config):
    """Starts `run` with `config`'s settings, or resumes its unfinished work (and says so)."""
    if run.start(dataclasses.asdict(config)):
        print(f"resuming the unfinished run in {run.work}")


class _WorkerScratchDirectory(RunDirectory):
    """A non-chief worker's copy of the run: it takes part in every step (saving included,
    which may run collective operations) and is removed when the run finishes. Its
    `checkpoints/` survive a killed run, so a restarted worker resumes with the chief.
    """

    def finish(self, digested=()):
        shutil.rmtree(self.work, ignore_errors=True)
        return Path(self.final)
