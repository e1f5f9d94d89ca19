"""The one run lifecycle every task shares: train, evaluate, predict and export.

A task is a `Pipeline` subclass in `pipelines/<task>.py` that supplies what differs between
tasks, and nothing else:

- reading and splitting its data (`prepare`), the model (`build_model`, from `seqlab.models`),
  the datasets and callbacks of `fit` (`datasets`, `callbacks`),
- scoring (`score`), the files beside the model (`artifacts`, `write_artifacts`,
  `read_artifacts`), plots (`save_plots`), the serving signature (`export_model`) and the
  summary lines (`summary_lines`),
- `evaluate` and `predict`, which get a `LoadedRun` (settings, artifacts, model) to work from.

`Pipeline.train` is the lifecycle: open the run directory (seed, default `--out`, one writer:
its lock is taken first) -> prepare the data (bad data fails with nothing written, the lock
released) -> start or resume the run ->
build the model under the distribution strategy -> `fit` with `history.csv`, `BackupAndRestore`
and the task's callbacks -> the local model -> score -> artifacts, metrics.json, plots ->
SavedModel -> rename `<out>.partial` to `<out>` -> the terminal summary.

`load_run` reads a finished run back, also one written by seqlab 0.1.0, whose `model.keras` is a
functional model: its weights are copied by layer name into the task's model class (the classes
name their sublayers as 0.1.0 did), and renamed settings are mapped (`renamed_settings`).
"""

import contextlib
import dataclasses
import functools
import importlib.util
import time
import zipfile
from pathlib import Path

import keras
import numpy as np

from seqlab import _interrupt
from seqlab.data.errors import DataError
from seqlab.layers import portable_loops
from seqlab.layers.registry import load_model
from seqlab.pipelines.common import (
    ActionResult,
    FIT_DONE_NAME,
    RUN_MARKER,
    SETTINGS_ADDED,
    EpochHistory,
    EpochProgress,
    StopAfterMinutes,
    StopOnInterrupt,
    StopOnNonFiniteLoss,
    Task,
    UsageError,
    absent_json,
    build_training_state,
    claim_export_version,
    open_run,
    plural,
    progress_verbosity,
    read_json,
    recover_interrupted_export,
    replace_export,
    save_history_plot,
    save_model_atomic,
    training_callbacks,
    write_json_atomic,
)
from seqlab.pipelines.distribute import begin_run, start_run
from seqlab.pipelines.paths import (
    DATA_FILES,
    READ_OPTIONS,
    changed_files,
    check_data_unchanged,
    check_output,
    data_fingerprints,
    export_path,
    missing_train_files,
    refuse_changed_data,
    refuse_data_changed_while_read,
)
from seqlab.pipelines.settings import (
    LARGE_MODEL_PARAMETERS,
    refuse_oversized_model,
    refuse_unread_settings,
)


@dataclasses.dataclass
class LoadedRun:
    """A finished run read back for evaluate / predict / export.

    Attributes:
        path: the run directory.
        config: the task's config dataclass, rebuilt from config.json.
        artifacts: what `Pipeline.read_artifacts` read (vocabularies, scalers, label names).
        model: the trained model, an instance of the task's `model_class`.
        metrics: the run's metrics.json.
    """

    path: Path
    config: object
    artifacts: dict
    model: keras.Model
    metrics: dict

    def file(self, *parts):
        return self.path.joinpath(*parts)

    def figure(self, *keys, kind=None, check=None, expected=""):
        """The metrics.json value at `keys` (nested), of type `kind` and passing `check`.

        Raises:
            UsageError: the field is missing or of another type or value (a hand-edited or
                damaged metrics.json), naming the file, the field and what was expected.
        """
        value, where = self.metrics, []
        for key in keys:
            where.append(str(key))
            if not isinstance(value, dict) or key not in value:
                if getattr(value, "absent", False):
                    value[key]  # a metrics.json that is not there says so (`absent_json`)
                raise UsageError(f"{self.file('metrics.json')}: the field {'.'.join(where)!r} "
                                 "is missing; the file was edited or damaged")
            value = value[key]
        if (kind is not None and (not isinstance(value, kind) or isinstance(value, bool))) \
                or (check is not None and not check(value)):
            raise UsageError(f"{self.file('metrics.json')}: the field {'.'.join(where)!r} holds "
                             f"{value!r}, expected {expected or getattr(kind, '__name__', kind)}"
                             "; the file was edited or damaged")
        return value


def copy_weights_by_layer_name(source, target, origin):
    """Copies the weights of every weight-carrying layer of `source` into `target`'s layer
    of the same name.

    Raises:
        UsageError: a layer of `source` has no namesake in `target`, or other weight shapes.
    """
    target_layers = {layer.name: layer for layer in target._flatten_layers(include_self=False)}
    for layer in source.layers:
        if not layer.weights:
            continue
        namesake = target_layers.get(layer.name)
        if namesake is None and isinstance(layer, keras.Model):
            # 0.1.0 nested parts in functional sub-models (the CRF tagger's encoder, the
            # sentiment classifier): their layers are looked for in the target.
            copy_weights_by_layer_name(layer, target, origin)
            continue
        shapes = [tuple(w.shape) for w in layer.weights]
        if namesake is None:
            raise UsageError(
                f"{origin}: cannot read this run's model (layer {layer.name!r} has no "
                f"counterpart in {type(target).__name__}); it was written by another seqlab "
                "version: retrain it with this one"
            )
        expected = [tuple(w.shape) for w in namesake.weights]
        if expected != shapes:
            raise UsageError(
                f"{origin}: the model's layer {layer.name!r} holds weights of shapes {shapes}, "
                f"but the run's settings and files give {expected}: a vocabulary or settings "
                "file does not match the model (edited or damaged?)"
            )
        namesake.set_weights(layer.get_weights())


class RecordFitEnd(keras.callbacks.Callback):
    """At the end of `fit`, before the epoch backup is removed (it must come before
    `BackupAndRestore` in the callbacks, after those that restore best weights): saves the
    trained model to `model_path`, then calls `record()` (which writes fit_done.json)."""

    def __init__(self, model_path, record):
        super().__init__()
        self.model_path, self.record = model_path, record

    def on_train_end(self, logs=None):
        save_model_atomic(self.model, self.model_path)
        self.record()


def unreadable_run_file(path):
    """The refusal of a run's file that is there but that this user may not read: it was
    reported as damaged (a model.keras read as no archive) or missing, and a retraining was
    advised."""
    return UsageError(f"{path}: cannot be read (Permission denied): this user may not read it; "
                      "give them read permission, or run as the file's owner")


# A model's sizes that its config.json gives and that a weight's shape need not show.
SHAPE_SETTINGS = ("lookback", "n_features", "horizon", "n_targets")


def check_model_matches_settings(model, expected, record, files=()):
    """Refuses a run whose model.keras does not hold the weights its config.json and files
    describe (`expected`: the model they build), as after a hand-edited horizon or vocabulary.
    `files`: the run's files besides config.json whose contents size the model (its
    vocabulary), named with it where a weight's shape differs.

    Raises:
        UsageError: naming the first weight whose shape differs.
    """
    for name in SHAPE_SETTINGS:  # sizes no weight's shape shows (a GRU's lookback)
        saved, wanted = getattr(model, name, None), getattr(expected, name, None)
        if saved is not None and wanted is not None and saved != wanted:
            raise UsageError(
                f"{record.file('config.json')}: the settings of the run do not match its "
                f"model.keras ({name} {saved}, they give {wanted}); a file was edited or "
                "damaged: put it back, or retrain the run")
    for saved, wanted in zip(model.weights, expected.weights):
        if tuple(saved.shape) != tuple(wanted.shape):
            # A shortened vocabulary was blamed on config.json alone.
            named = " or ".join(["config.json", *[f for f in files if record.file(f).exists()]])
            raise UsageError(
                f"{record.path}: {named} does not match its model.keras (weight {saved.path} has "
                f"shape {tuple(saved.shape)}, they give {tuple(wanted.shape)}); a file was "
                "edited or damaged: retrain the run"
            )
    if len(model.weights) != len(expected.weights):
        raise UsageError(
            f"{record.file('config.json')}: the settings of the run do not match its "
            f"model.keras ({len(model.weights)} weights, they give {len(expected.weights)}); a "
            "file was edited or damaged: retrain the run"
        )


def best_epoch(history, monitor, mode="min"):
    """The 1-based epoch whose `monitor` was best, or None without history."""
    values = [row[monitor] for row in history if monitor in row]
    if not values:
        return None
    return int(np.argmin(values) if mode == "min" else np.argmax(values)) + 1


TENSORBOARD_DIR = "tensorboard"


class StopWatch:
    """Which of `fit`'s callbacks stopped training, and after which epoch.

    `watch(callbacks)` returns the list with a probe in front and one after each callback; the
    first probe that finds `model.stop_training` set names the callback just before it. The
    probe in front finds it set when something stopped training during the epoch (a batch
    callback): then no callback is named.

    Attributes:
        stopped_by: the callback that stopped training, or None.
        stopped_at: the 1-based epoch at whose end training stopped, or None.
        first_epoch: the 1-based first epoch this `fit` ran (above 1 when it resumed a run),
            or None when it ran none.
    """

    def __init__(self):
        self.stopped_by = self.stopped_at = self.first_epoch = None

    def watch(self, callbacks):
        probes = [_StopProbe(self, None)]
        for callback in callbacks:
            probes += [callback, _StopProbe(self, callback)]
        return probes


class _StopProbe(keras.callbacks.Callback):
    def __init__(self, stop_watch, callback):
        super().__init__()
        self.stop_watch, self.callback = stop_watch, callback

    def on_epoch_begin(self, epoch, logs=None):
        if self.stop_watch.first_epoch is None:
            self.stop_watch.first_epoch = epoch + 1

    def on_epoch_end(self, epoch, logs=None):
        if self.model.stop_training and self.stop_watch.stopped_at is None:
            self.stop_watch.stopped_by, self.stop_watch.stopped_at = self.callback, epoch + 1


def restoring_callback(callbacks):
    """The callback that put back the weights of its best epoch at the end of `fit`, or None.

    Keras's `EarlyStopping` does with `restore_best_weights` (its `best_epoch` counts from 0);
    seqlab's own early stoppings (ner's F1, sentiment's ensemble members) keep `best_weights`
    and a 1-based `best_epoch`.
    """
    for callback in callbacks:
        if isinstance(callback, keras.callbacks.EarlyStopping):
            if callback.restore_best_weights and callback.best_weights is not None:
                return callback
        elif (getattr(callback, "best_weights", None) is not None
              and getattr(callback, "best_epoch", None) is not None):
            return callback
    return None


def _restored_epoch(callback):
    if isinstance(callback, keras.callbacks.EarlyStopping):
        return callback.best_epoch + 1
    return callback.best_epoch


def training_record(epochs_requested, history, best_by_history, stop_watch=None, callbacks=()):
    """How `fit` ended, from its callbacks and `history.csv`: the `training` entry of
    metrics.json.

    Args:
        epochs_requested: the run's `--epochs`.
        history: the rows of `history.csv` (every epoch, also those before a resume).
        best_by_history: the best epoch by the monitored figure in `history`, the answer when
            no callback restored a best epoch.
        stop_watch: the `StopWatch` of the `fit` call (None: not known).
        callbacks: the task's and the caller's callbacks of `fit`.

    Returns:
        A dict: `epochs_requested`, `epochs_run`, `stopped_early`, `reason` ("completed",
        "early_stopping", "max_minutes", "stopped_during_epoch", the class name of another
        callback that stopped it, or "unknown"), `resumed_at_epoch` (None when this `fit` began
        at epoch 1), `best_epoch`, `best_epoch_restored` (whether the model holds that epoch's
        weights; if False, the last epoch's; None: not known) and `description`, one line for
        people.
    """
    epochs_run = len(history)
    stopped_by = stop_watch.stopped_by if stop_watch else None
    stopped_early = epochs_run < epochs_requested
    if not stopped_early:
        reason = "completed"
    elif stop_watch is None or stop_watch.stopped_at is None:
        reason = "unknown"
    elif stopped_by is None:
        reason = "stopped_during_epoch"
    elif isinstance(stopped_by, StopAfterMinutes):
        reason = "max_minutes"
    elif hasattr(stopped_by, "patience"):
        reason = "early_stopping"
    else:
        reason = type(stopped_by).__name__
    restorer = restoring_callback(callbacks)
    best = _restored_epoch(restorer) if restorer is not None else best_by_history
    first_epoch = stop_watch.first_epoch if stop_watch else None
    record = {
        "epochs_requested": epochs_requested,
        "epochs_run": epochs_run,
        "stopped_early": stopped_early,
        "reason": reason,
        "resumed_at_epoch": first_epoch if first_epoch and first_epoch > 1 else None,
        "best_epoch": best,
        "best_epoch_restored": restorer is not None if stop_watch else None,
    }
    record["description"] = _describe_training(record, stopped_by, restorer)
    return record


def _describe_training(record, stopped_by, restorer):
    """One line on how training ended, e.g. "stopped early at epoch 83 of 200 (no better
    val_loss for 20 epochs); restored the best epoch 63"."""
    run, requested, reason = record["epochs_run"], record["epochs_requested"], record["reason"]
    if reason == "completed":
        text = f"ran all {requested} epochs" if requested > 1 else "ran its one epoch"
    elif reason == "early_stopping":
        text = f"stopped early at epoch {run} of {requested}"
        patience, monitor = (getattr(stopped_by, "patience", None),
                             getattr(stopped_by, "monitor", None))
        if patience is not None and monitor:
            text += f" (no better {monitor} for {plural(patience, 'epoch')})"
    elif reason == "max_minutes":
        text = (f"stopped on time at epoch {run} of {requested} (--max-minutes "
                f"{stopped_by.seconds / 60:g})")
    elif reason == "stopped_during_epoch":
        text = f"stopped during epoch {run} of {requested}"
    elif reason == "unknown":
        text = f"ended after epoch {run} of {requested}"
    else:
        text = f"stopped by {reason} at epoch {run} of {requested}"
    if record["resumed_at_epoch"]:
        text += f", resumed at epoch {record['resumed_at_epoch']}"
    if getattr(restorer, "best_epochs", None):
        text += ("; restored each member's best epoch ("
                 + ", ".join(str(epoch) for epoch in restorer.best_epochs) + ")")
    elif record["best_epoch_restored"]:
        text += f"; restored the best epoch {record['best_epoch']}"
        monitor = getattr(restorer, "monitor", None)
        if monitor and not monitor.startswith("val_"):  # --val-fraction 0: said, not implied
            text += f" (by its training {monitor}: no validation split)"
    elif record["best_epoch_restored"] is False and run:
        text += "; the model holds the last epoch's weights"
    return text


def describe_run_directory(path):
    """Lines that say where a finished run's files are (those that exist)."""
    path = Path(path)
    if not path.is_dir():  # a worker's view of a run that its chief writes on another machine
        return [f"run directory: {path}"]

    def existing(*names):
        return [name for name in names if (path / name.rstrip("/")).exists()]

    listed = {"model.keras", "saved_model", "metrics.json", "history.csv", "plots",
              TENSORBOARD_DIR}
    lines = [f"run directory: {path}"]
    for label, names in (
        ("model", existing("model.keras", "saved_model/")),
        ("figures", existing("metrics.json", "history.csv")),
        ("plots", sorted(str(p.relative_to(path)) for p in path.glob("plots/*.png"))),
        ("settings and files", sorted(p.name for p in path.iterdir()
                                      if p.is_file() and p.name not in listed
                                      and not p.name.startswith(".")
                                      and p.name != RUN_MARKER)),
    ):
        if names:
            lines.append(f"  {label}: {', '.join(names)}")
    if (path / TENSORBOARD_DIR).is_dir():
        lines.append(f"  TensorBoard: tensorboard --logdir {path / TENSORBOARD_DIR}")
    return lines


def evaluation_result(lines, metrics, output=None):
    """The `ActionResult` of an `evaluate`: the summary `lines` and the figures, which are also
    written as JSON to `output` when given (and the summary says so)."""
    if output:
        write_json_atomic(Path(output), metrics)
        lines = [*lines, f"figures written to {output}"]
    return ActionResult(summary="\n".join(lines), path=Path(output) if output else None,
                        metrics=metrics)


def checks_output(action):
    """A task's `evaluate` or `predict`, wrapped so that an `output` that would overwrite the
    run's own files or the data is refused before the action runs (`paths.check_output`):
    from Python as on the command line. `Pipeline` wraps every task's two actions so."""

    @functools.wraps(action)
    def checked(self, run, data=None, output=None, **options):
        if output is not None:
            check_output(output, run, open_run(run, self.name).settings,
                         [data, *(options.get(name) for name in READ_OPTIONS)])
        if action.__name__ == "evaluate" and data is None and not any(
                options.get(name) for name in READ_OPTIONS):
            check_data_unchanged(run)  # the run's own test split, read again
        return action(self, run, data=data, output=output, **options)

    return checked


class Pipeline:
    """One task's hooks; the lifecycle around them is written once, here.

    Class attributes:
        name: the task's name on the command line.
        config_class: its `TrainConfig` subclass.
        model_class: the `seqlab.models` class its runs hold (or a tuple of classes).
        description, examples, aliases: the command line's help and action aliases (see
            `common.Task`).
        evaluate_options, predict_options: dataclasses of the settings `evaluate` and
            `predict` take beyond `run`, `data` and `output`, declared with `settings.option`
            (or None).
        A task on the command line takes its name, config class, help, aliases and options
        from the `settings.TaskCard` of its `pipelines/configs/<task>.py`, which `--help` reads
        without importing the task's module (nor TensorFlow).
        data_paths: config fields naming files, made absolute so that evaluate and predict find
            them from any working directory.
        model_files: the run's files besides config.json whose contents size the model (a
            vocabulary), named when model.keras does not match them.
        vocabulary_files: those of them that map the model's ids to tokens: their SHA-256 is
            kept in the run's marker, so that an edit of the same length (a character
            replaced), which no shape shows, is refused rather than read.
        data_folder_files: for a data path that may be a folder whose reader reads only some
            of its files, their pattern (`paths.data_fingerprint`), so that a change to another
            file there (notes beside the series) does not stop `evaluate`.
        renamed_settings: settings of older versions' config.json under their new names.
        legacy_settings: the values that reproduce an older version's behaviour for settings
            its config.json lacks (a new setting's default may differ from that behaviour).
        monitor_metric, monitor_mode: what early stopping and `best_epoch` watch (with `val_`
            in front when there is a validation split), unless `monitored` says otherwise.
    """

    name = None
    config_class = None
    model_class = None
    description = ""
    examples = {}
    aliases = {}
    data_settings = None
    evaluate_options = None
    predict_options = None
    data_paths = ("data",)
    data_folder_files = {}
    model_files = ()
    vocabulary_files = ()
    renamed_settings = {}
    legacy_settings = {}
    monitor_metric = "loss"
    monitor_mode = "min"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for action in ("evaluate", "predict"):
            if action in cls.__dict__:
                setattr(cls, action, checks_output(cls.__dict__[action]))

    # --- hooks of train ---------------------------------------------------------------------

    def prepare(self, config, distribution):
        """Reads and splits the data; returns whatever the other hooks need (`prepared`).

        Runs before the run directory is started, so bad data leaves nothing behind.
        """
        raise NotImplementedError

    def least_parameters(self, config):
        """`(count, flags)`: a lower bound on the model's parameters from the settings alone
        (before any data is read: the recurrent layers, without vocabulary-sized tables) and
        the flags that set it, such as "--units 512 --layers 2"; None where the task's
        settings cannot make a model too large to build (`refuse_oversized_model`)."""
        return None

    def build_model(self, config, prepared):
        """The compiled and built model (called inside the distribution strategy's scope).

        Built means with its weights: `BackupAndRestore` restores into them before the first
        batch. A model whose sizes are all constructor arguments builds with
        `model.build(input_shape)`.
        """
        raise NotImplementedError

    def datasets(self, config, prepared, batch_size):
        """`(train, validation or None)` datasets of `fit`, batched with `batch_size`."""
        raise NotImplementedError

    def fit_options(self, config, prepared):
        """Extra keyword arguments of `fit` (e.g. `steps_per_epoch` for an endless dataset)."""
        return {}

    def monitored(self, config):
        """`(metric, "min" or "max")` that early stopping and `best_epoch` watch for a run;
        by default the class's `monitor_metric` and `monitor_mode`."""
        return self.monitor_metric, self.monitor_mode

    def callbacks(self, config, prepared, monitor):
        """The task's `fit` callbacks; by default early stopping on `monitor`, best weights
        restored.

        The run's summary and metrics.json say which callback stopped training and which
        epoch's weights the model holds (`training_record`): a callback of the task's own
        that restores its best epoch's weights keeps them as `best_weights` with a 1-based
        `best_epoch`, and one that stops early has a `patience`.
        """
        return [keras.callbacks.EarlyStopping(
            monitor=monitor, mode=self.monitored(config)[1], patience=config.patience,
            restore_best_weights=True,
        )]

    def after_fit(self, config, prepared, model):
        """Called once the model holds its trained weights, before it is saved as
        `model.keras` (also when a rerun continues after an earlier call's `fit`): for what
        depends on the trained model and belongs in its file (the forecaster's member choice).
        """

    def score(self, config, model, prepared):
        """The test-split figures of metrics.json (without the common keys added after)."""
        raise NotImplementedError

    def artifacts(self, config, prepared):
        """The files a run keeps beside the model, as objects (the same dict `read_artifacts`
        returns)."""
        return {}

    def write_artifacts(self, run, artifacts):
        """Writes `artifacts` into the run directory (plain text or JSON, never pickle)."""

    def save_plots(self, run, config, prepared, model, metrics, history):
        """Task plots besides `plots/loss.png` (written by the lifecycle)."""

    def summary_lines(self, config, prepared, metrics):
        """The terminal summary of a finished `train`, without the run directory line."""
        raise NotImplementedError

    # --- hooks of a finished run ------------------------------------------------------------

    def read_artifacts(self, path, config):
        """Reads back what `write_artifacts` wrote into the run directory `path`."""
        return {}

    def model_for_run(self, config, artifacts):
        """A built (not trained) `model_class` for a run's settings: the target of an older
        version's weights."""
        raise NotImplementedError

    def export_model(self, model, config, artifacts, path):
        """Writes the serving SavedModel at `path`; returns a one-line signature description."""
        raise NotImplementedError

    def _export_model(self, model, config, artifacts, path):
        """`export_model`, traced with `portable_loops`: the SavedModel serves on a machine
        without a GPU even where the run was trained and exported on one."""
        with portable_loops():
            return self.export_model(model, config, artifacts, path)

    def evaluate(self, run, data=None, output=None, **options):
        raise NotImplementedError

    def predict(self, run, data=None, output=None, **options):
        raise NotImplementedError

    # --- the lifecycle ----------------------------------------------------------------------

    def train(self, config, overwrite=False, callbacks=()):
        """Trains the task's model and writes its run directory.

        Args:
            config: the task's config.
            overwrite: replace a finished run at `config.out`.
            callbacks: extra Keras callbacks for `fit` (after the run directory's own).

        Returns:
            An `ActionResult` with the run directory and the test metrics.

        Raises:
            DataError: unreadable or unsuitable data.
            UsageError: a refused `--out` or setting.
        """
        if config.tensorboard and importlib.util.find_spec("tensorboard") is None:
            raise UsageError("--tensorboard needs the tensorboard package: pip install "
                             "tensorboard (or pip install 'seqlab[tensorboard]')")
        refuse_unread_settings(config)
        if config.max_minutes and config.distribute == "multiworker":
            # Each worker timed itself: one stopped an epoch before the others, whose next
            # collective step then failed ("Collective ops is aborted"). Refused here, not by
            # the config: a run trained so before still loads.
            raise UsageError("--max-minutes is not offered with --distribute multiworker: each "
                             "worker would time itself and stop at another epoch; bound the "
                             "run with --epochs instead")
        size = self.least_parameters(config)
        if size is not None:
            refuse_oversized_model(*size)
        config, distribution, run = begin_run(config, self.name, overwrite, self.data_paths)
        run.claim()
        try:
            # Taken before the reading and after it: the record must name the bytes training
            # read (a file rewritten while it was read had its new bytes recorded, and evaluate
            # then scored them as the run's own data).
            read_from = data_fingerprints(dataclasses.asdict(config), self.data_paths,
                                          self.data_folder_files)
            prepared = self.prepare(config, distribution)
            fingerprints = data_fingerprints(dataclasses.asdict(config), self.data_paths,
                                             self.data_folder_files)
            refuse_data_changed_while_read(read_from, fingerprints)
            start_run(run, config)
            if run.path(DATA_FILES).is_file():  # a resumed run keeps its first record
                refuse_changed_data(run.work, fingerprints)
            elif fingerprints:
                run.write_json(DATA_FILES, fingerprints)
        except BaseException:  # bad data, a refused --out, a kill: nothing written, unlocked
            run.release()
            raise

        if size is not None and size[0] >= LARGE_MODEL_PARAMETERS:
            print(f"building the model: at least {size[0] / 1e6:,.0f} million parameters "
                  f"({size[1]}); initialising its recurrent kernels (orthogonal: a QR "
                  "factorisation each) may take minutes on a CPU")
        with distribution.scope():
            model = self.build_model(config, prepared)
        train_data, val_data = self.datasets(
            config, prepared, distribution.global_batch_size(config.batch_size)
        )
        metric, mode = self.monitored(config)
        monitor = ("val_" if val_data is not None else "") + metric
        model_path, fit_done_path = run.path("model.keras"), run.path(FIT_DONE_NAME)
        task_callbacks = self.callbacks(config, prepared, monitor)
        if run.resumed and fit_done_path.is_file() and model_path.is_file():
            # An earlier call finished `fit` and died later (scoring, plots, export): its
            # trained model is kept; only the steps after `fit` run again.
            print(f"training finished earlier: continuing after fit with {model_path}")
            if not zipfile.is_zipfile(model_path):  # damaged by hand (saves are atomic)
                raise UsageError(
                    f"{model_path}: damaged (not a complete .keras archive), though "
                    f"{fit_done_path.name} says training finished; remove the unfinished run "
                    f"{model_path.parent} to train from the start")
            if model.optimizer is not None:  # so that the saved optimizer state loads too
                with distribution.scope():  # its variables are the strategy's, as the model's
                    model.optimizer.build(model.trainable_variables)
            model.load_weights(model_path)
            self.after_fit(config, prepared, model)
            model = distribution.local_model(model, model_path)
            history = EpochHistory(run.path("history.csv"))
            fit_record = {**read_json(fit_done_path), "train_seconds": 0.0}
            if "training" not in fit_record:  # fit_done.json of an older version
                fit_record["training"] = training_record(
                    config.epochs, history.history, fit_record["best_epoch"])
        else:
            # The task's callbacks come first, so that figures they add to the logs (ner's
            # val_f1) reach history.csv; EpochHistory stays before BackupAndRestore (common.py
            # says why).
            run_callbacks = training_callbacks(run)
            history = next(c for c in run_callbacks if isinstance(c, EpochHistory))
            if config.tensorboard:
                # Inside the run directory, so it moves with the run; a resumed run adds
                # event files beside the earlier ones.
                run_callbacks.insert(1, keras.callbacks.TensorBoard(
                    str(run.path(TENSORBOARD_DIR))))
            # --max-minutes, every task: the task's early stopping (after it) still puts back
            # its best epoch's weights at the end of fit.
            time_box = [StopAfterMinutes(config.max_minutes)] if config.max_minutes else []
            verbosity = progress_verbosity()
            progress = [] if verbosity else [EpochProgress(config.epochs, config.max_minutes)]
            stop_watch = StopWatch()
            started = time.perf_counter()

            def fit_record_now():
                training = training_record(
                    config.epochs, history.history, best_epoch(history.history, monitor, mode),
                    stop_watch, [*task_callbacks, *callbacks])
                return {
                    "train_seconds": round(time.perf_counter() - started, 2),
                    "best_epoch": training["best_epoch"],
                    "training": training,
                }

            # Keras removes its epoch backup when fit returns: the end of fit is recorded
            # first (the trained model and fit_done.json), so that a kill in between
            # continues after fit instead of training again from epoch 1.
            run_callbacks.insert(
                next(i for i, c in enumerate(run_callbacks)
                     if isinstance(c, keras.callbacks.BackupAndRestore)),
                RecordFitEnd(model_path, lambda: run.write_json(FIT_DONE_NAME,
                                                                fit_record_now())))
            build_training_state(model, train_data)
            try:
                with _interrupt.deferred(started=False) as deferral:  # see StopOnInterrupt
                    model.fit(
                        distribution.shard(train_data),
                        validation_data=distribution.shard(val_data),
                        epochs=config.epochs,
                        callbacks=stop_watch.watch([
                            StopOnNonFiniteLoss(getattr(config, "learning_rate", None)),
                            *task_callbacks, *time_box, *run_callbacks, *progress, *callbacks,
                            StopOnInterrupt(deferral)]),
                        shuffle=False,  # the training datasets shuffle themselves (run seed)
                        verbose=verbosity,
                        **self.fit_options(config, prepared),
                    )
            finally:  # a fit that failed or was interrupted leaves no progress timer behind
                for callback in progress:
                    callback.close()
            self.after_fit(config, prepared, model)
            model = distribution.local_model(model, model_path)
            fit_record = fit_record_now()
            run.write_json(FIT_DONE_NAME, fit_record)

        metrics = self.score(config, model, prepared)
        if metrics.get("best_epoch") is None:
            metrics["best_epoch"] = fit_record["best_epoch"]
        metrics.update(
            epochs_run=len(history.history),
            train_seconds_this_session=fit_record["train_seconds"],
            distribution=distribution.report(config.batch_size),
            training=fit_record["training"],
        )
        artifacts = self.artifacts(config, prepared)
        self.write_artifacts(run, artifacts)
        run.write_json("metrics.json", metrics)
        training = fit_record["training"]
        save_history_plot(history.history, run.path("plots", "loss.png"),
                          title=f"{getattr(config, 'model', self.name)}: loss",
                          best_epoch=training["best_epoch"] if training["best_epoch_restored"]
                          else None)
        self.save_plots(run, config, prepared, model, metrics, history.history)
        # An earlier call killed between its export and finish() left a complete export:
        # replaced, as this call owns the run.
        replace_export(run.path("saved_model"),
                       lambda target: self._export_model(model, config, artifacts, target))
        _interrupt.check()  # a Ctrl-C Python dropped: the run stays unfinished, resumable
        final = run.finish(digested=self.vocabulary_files)

        notes = []
        if distribution.kind != "none":
            notes.append(
                f"{distribution.kind}: {distribution.replicas} replicas, global batch "
                f"{distribution.global_batch_size(config.batch_size)} = {config.batch_size} "
                "per replica"
            )
        summary = "\n".join([
            *self.summary_lines(config, prepared, metrics), *notes,
            f"training: {training['description']}", *describe_run_directory(final),
        ])
        return ActionResult(summary=summary, path=final, metrics=metrics)

    def load_run(self, path):
        """Reads the finished run at `path` (this version's or seqlab 0.1.0's).

        Raises:
            UsageError: not a finished run of this task, or a model this version cannot read.
        """
        record = open_run(path, self.name)
        missing = missing_train_files(record.path)
        if missing:  # read as a run of an earlier version's, it would give other numbers
            them = "them" if len(missing) > 1 else "it"
            raise UsageError(f"{record.path}: {', '.join(missing)} missing; its train wrote "
                             f"{them} ({RUN_MARKER} lists what it wrote): put {them} back, or "
                             "retrain the run")
        settings = {self.renamed_settings.get(k, k): v for k, v in record.settings.items()}
        absent = [f.name for f in dataclasses.fields(self.config_class)
                  if f.name not in settings and record.settings_format >= 1
                  and SETTINGS_ADDED.get(f.name, 1) <= record.settings_format]
        if absent:  # a setting its train wrote (not an older version's run): removed by hand
            raise UsageError(f"{record.file('config.json')}: the setting {absent[0]!r} is "
                             "missing; its train wrote every setting there (the file was "
                             "edited or damaged): put it back, or retrain the run")
        settings = {**self.legacy_settings, **settings}
        try:
            config = self.config_class(**settings)
        except (TypeError, ValueError) as error:
            raise UsageError(f"{record.file('config.json')}: settings this version cannot use "
                             f"({error})") from None
        try:
            artifacts = self.read_artifacts(record.path, config)
        except (DataError, UsageError):
            raise
        except PermissionError as error:
            raise unreadable_run_file(error.filename) from None
        except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
            what = (f"{error.filename}: {error.strerror}"
                    if isinstance(error, OSError) and error.filename else
                    str(error) if type(error) is ValueError else repr(error))
            raise UsageError(f"{record.path}: a file of the run is missing or damaged "
                             f"({what}); retrain it") from None
        model_path = record.file("model.keras")
        if not model_path.is_file():
            raise UsageError(f"{model_path}: not found; the run is incomplete")
        try:
            with open(model_path, "rb"):  # is_zipfile reads a file it may not open as no archive
                pass
        except PermissionError:
            raise unreadable_run_file(model_path) from None
        if not zipfile.is_zipfile(model_path):
            raise UsageError(f"{model_path}: damaged (not a complete .keras archive; "
                             f"{model_path.stat().st_size} bytes); retrain the run or put back "
                             "the file")
        try:
            model = load_model(model_path, compile=False)
        except Exception as error:  # Keras raises many kinds for a damaged or unsafe file
            raise UsageError(f"{model_path}: cannot be loaded ({type(error).__name__}: "
                             f"{str(error).splitlines()[0] if str(error) else ''})") from None
        try:
            expected = self.model_for_run(config, artifacts)
        except (ValueError, TypeError, KeyError, IndexError) as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise UsageError(f"{record.path}: its settings and files do not make a model "
                             f"({reason}); a file was edited or damaged: retrain the run") from None
        if not isinstance(model, self.model_class):
            # seqlab 0.1.0 saved functional models: move their weights into the task's class.
            copy_weights_by_layer_name(model, expected, origin=str(record.path))
            model = expected
        else:
            check_model_matches_settings(model, expected, record, self.model_files)
        changed = changed_files(record.path)
        if changed:  # what every other check passes: an edit of the same length
            raise UsageError(f"{record.file(changed[0])}: changed since train wrote it (its "
                             f"SHA-256 is not the one {RUN_MARKER} recorded); the model's ids "
                             "are read through it: put the original back, or retrain the run")
        metrics_path = record.file("metrics.json")
        metrics = read_json(metrics_path) if metrics_path.is_file() else absent_json(metrics_path)
        if not isinstance(metrics, dict):
            raise UsageError(f"{metrics_path}: expected a JSON object of figures; the file was "
                             "edited or damaged")
        return LoadedRun(record.path, config, artifacts, model, metrics)

    def export(self, run, out=None, overwrite=False):
        """Writes the run's SavedModel again: to `out`, or without `out` to the run's next
        version folder `<run>/export/<n>/` (TensorFlow Serving's layout: serve `<run>/export`).

        Raises:
            UsageError: `out` holds something other than a SavedModel (never deleted), or a
                SavedModel while `overwrite` is False; `overwrite` without `out`.
        """
        open_run(run, self.name)  # before the model loads: a path that is no run is refused
        if out is not None:  # an --overwrite killed mid-way: the previous export back first
            recover_interrupted_export(out)
        path = export_path(run, out, overwrite)
        loaded = self.load_run(run)
        signature = None

        def write(target):
            nonlocal signature
            signature = self._export_model(loaded.model, loaded.config, loaded.artifacts,
                                           target)

        claim = None
        if out is None:  # the version taken only now, when the model is ready to write
            created = not path.parent.exists()  # <run>/export
            path, claim = claim_export_version(run)
        try:
            replace_export(path, write)
        except BaseException:
            if claim is not None:
                claim.unlink(missing_ok=True)
                if created:  # a failed first export leaves no empty export/ behind
                    with contextlib.suppress(OSError):  # not empty: another export's
                        path.parent.rmdir()
            raise
        if claim is not None:
            claim.unlink(missing_ok=True)
        lines = [f"SavedModel written to {path}", signature]
        if out is None:
            lines.append(f"TensorFlow Serving serves the run's latest version with "
                         f"--model_base_path={path.parent.resolve()}")
        return ActionResult(summary="\n".join(lines), path=path)

    def task(self):
        """The `common.Task` the command line dispatches to."""
        return Task(
            name=self.name,
            description=self.description,
            examples=self.examples,
            config_class=self.config_class,
            train=self.train,
            evaluate=self.evaluate,
            predict=self.predict,
            export=self.export,
            options={action: options for action, options in
                     (("evaluate", self.evaluate_options), ("predict", self.predict_options))
                     if options is not None},
            aliases=self.aliases,
            data_settings=self.data_settings,
        )
