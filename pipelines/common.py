"""What every task pipeline shares: the run directory, training callbacks, reports.

The run lifecycle built from these pieces is `pipelines/lifecycle.py`; a task module
(`pipelines/<task>.py`) subclasses its `Pipeline` and exposes one `Task` object, which `cli.py`
turns into `seqlab <task> train|evaluate|predict|export`.

- Configs: a task's settings and their flags are `pipelines/settings.py` (it imports no
  TensorFlow, so that `--help` answers without it).
- `RunDirectory`: the `--out` directory of one `train` call. It is built under `<out>.partial` and
  renamed to `<out>` when everything is written, so `<out>` only ever holds a finished run. An
  interrupted run leaves `<out>.partial` (with `checkpoints/`); the same command resumes it.
- `training_callbacks`: `history.csv` kept across resumes, `AtomicBackupAndRestore` under
  `checkpoints/` (a kill while it writes leaves the previous backup).
- `set_seed`, `library_versions`, `format_table`, `save_history_plot`, `pyplot`.

Errors the user can fix by changing the command (a bad flag value, a refused `--out`) are
`UsageError`s; bad input data is `data.DataError`. The CLI prints either as one line and exits
with status 2.
"""

import contextlib
import csv
import dataclasses
import errno
import io
import json
import math
import os
import platform
import re
import shutil
import sys
import threading
import time
import typing
from pathlib import Path

import keras
import tensorflow as tf

from seqlab import _interrupt
from seqlab.data.errors import listed
from seqlab.models._training import build_training_state  # noqa: F401 (the pipelines' import)
from seqlab.pipelines.errors import UsageError
from seqlab.pipelines.paths import (  # noqa: F401 (part of this module's interface)
    EXPORT_CLAIM,
    EXPORT_DIR,
    EXPORT_MARKER,
    LOCK_NAME,
    MARKER_FORMAT,
    PARTIAL_SUFFIX,
    PREDICTION_FILES,
    RUN_MARKER,
    TEMPORARY_NAME,
    JsonRecord,
    RunRecord,
    absent_json,
    check_export_path,
    check_output,
    data_fingerprint,
    final_path,
    has_marker,
    held_elsewhere,
    in_use,
    is_saved_model,
    listed_train_files,
    listed_train_tree,
    lock_holder,
    next_export_version,
    open_run,
    partial_path,
    read_json,
    unlisted_paths,
    written_tree,
)
from seqlab.pipelines.settings import default_out, utc_timestamp  # noqa: F401


# ---------------------------------------------------------------------------------------------
# Files


def write_text_atomic(path, text):
    """Writes `text` (UTF-8) to `path` as `write_bytes_atomic` writes bytes."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path, data):
    """Writes `data` to a temporary file beside `path`, then renames it over `path`.

    A failure leaves neither a temporary file nor a changed `path`. A `path` that is a special
    file (a device such as `/dev/null`, a named pipe) is written into, as the shell's `>`
    does, not replaced: a rename over it would delete the device or the pipe.

    Raises:
        UsageError: `path` is a folder, or its folder cannot be created or written.
    """
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{path} is a folder; give a file name to write to")
    if path.exists() and not path.is_file():
        with written_or_refused(path), _opened_special(path) as special:
            special.write(data)
        return
    blocking = next((p for p in path.parents if p.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise UsageError(f"{path}: cannot write there ({blocking} is a file, not a folder)")
    temporary = _temporary_file(path, blocking)
    try:
        with written_or_refused(path):  # read-only, under a file, disk full, ...
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(data)
            os.replace(temporary, path)
    finally:
        try:
            temporary.unlink(missing_ok=True)
        except OSError:  # its folder could not be made: there is no temporary
            pass


def _temporary_file(path, folder):
    """`.NAME.tmp-PID` beside `path`, NAME cut to keep it within the longest name the file
    system takes in `folder` (`path`'s or the nearest that exists; 255 bytes where it does not
    say): a name of 241 to 255 bytes, fine itself, was refused as too long for its temporary's."""
    suffix = f".tmp-{os.getpid()}"
    try:
        longest = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, TypeError, ValueError, AttributeError):  # none that tells (Windows: none)
        longest = 255
    keep = max(1, longest - len(suffix) - 1)
    if os.name == "nt":  # names are UTF-16 there: cut in characters, not in bytes
        return path.with_name(f".{path.name[:keep]}{suffix}")
    # In bytes, as the limit counts them: a UTF-8 character cut in two (or a name that is not
    # UTF-8) is kept as its bytes, which fsdecode and fsencode carry unchanged.
    name = os.fsencode(path.name)[:keep]
    return path.with_name(f".{os.fsdecode(name)}{suffix}")


def _opened_special(path):
    """`path`, a device or named pipe, opened for writing bytes. A pipe that no process reads
    yet waits for its reader, as the shell's `>` does, after saying so on stderr."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno != errno.ENXIO:  # ENXIO: a named pipe without a reader
            raise
        print(f"seqlab: waiting for a process to read the named pipe {path}", file=sys.stderr,
              flush=True)
        return open(path, "wb")
    os.set_blocking(descriptor, True)
    return open(descriptor, "wb")


def finite_or_none(value):
    """`value` with every float that is NaN or infinite (in dicts, lists, NumPy scalars)
    replaced by None: JSON has no such numbers, and a figure that is not a number is "none"."""
    if isinstance(value, dict):
        return {key: finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(item) for item in value]
    if hasattr(value, "item") and getattr(value, "shape", None) == ():  # a NumPy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def save_model_atomic(model, path):
    """Saves `model` as a `.keras` archive at `path`, atomically.

    Keras writes the archive in place, so a kill while it writes leaves a file that is not a
    zip; a rerun that trusts it (a train continuing after `fit`) fails. The archive is written
    into a temporary folder beside `path` (Keras wants the `.keras` name), then renamed over
    `path`: `path` holds the old model or the new one, never part of one. The temporary is
    removed on failure, and by `RunDirectory.finish` after a kill.

    Raises:
        UsageError: the file cannot be written (a full disk, a read-only folder), naming it.
    """
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with written_or_refused(path):
            temporary.mkdir(exist_ok=True)
            model.save(temporary / path.name)
            os.replace(temporary / path.name, path)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def write_json_atomic(path, value):
    """Writes `value` as JSON (strict: a NaN or infinite figure is written as null)."""
    text = json.dumps(finite_or_none(value), indent=2, sort_keys=False, default=str,
                      allow_nan=False)
    write_text_atomic(path, text + "\n")


def write_marker(folder, name, kind, **fields):
    """Writes the marker `name` (`RUN_MARKER` or `EXPORT_MARKER`) into `folder`, atomically."""
    write_json_atomic(Path(folder) / name, {"seqlab": kind, "format": MARKER_FORMAT,
                                            "created_utc": utc_timestamp(), **fields})


# A temporary export folder this old, whose process is gone, was left by a killed export.
STALE_EXPORT_SECONDS = 3600


def _left_by_dead_processes(path, kind):
    """The folders `.NAME.KIND-PID` beside `path` (not links) whose process no longer runs: a
    live one, another user's or a number no process can have is left alone. Kind "new.tmp":
    `..NAME.new-N.tmp-PID`, the temporary folder of an overwriting export's new one."""
    name = re.escape(path.name)
    pattern = re.compile(rf"\.\.{name}\.new-\d+\.tmp-(\d+)" if kind == "new.tmp" else
                         rf"\.{name}\.{kind}-(\d+)")
    found = []
    for entry in path.parent.iterdir() if path.parent.is_dir() else ():
        match = pattern.fullmatch(entry.name)
        if not (match and entry.is_dir() and not entry.is_symlink()):
            continue
        try:
            os.kill(int(match[1]), 0)  # its process still runs
        except ProcessLookupError:
            found.append(entry)
        except (PermissionError, OverflowError):
            pass
    return found


def _remove_killed_exports(path):
    """Removes the temporary folders that exports of `path` killed while they wrote left
    beside it (`.NAME.tmp-PID`; an overwriting one's `.NAME.new-PID` and its
    `..NAME.new-PID.tmp-PID`): their process is gone and they are over an hour old."""
    for kind in ("tmp", "new", "new.tmp"):
        for entry in _left_by_dead_processes(path, kind):
            if time.time() - entry.stat().st_mtime > STALE_EXPORT_SECONDS:
                shutil.rmtree(entry, ignore_errors=True)


def recover_interrupted_export(path):
    """Before an export to `path`: puts back the previous export an `--overwrite` killed
    between its two renames had moved aside (`_put_back_replaced`), and removes what killed
    exports left beside `path` (`_remove_killed_exports`)."""
    path = Path(path)
    _put_back_replaced(path, EXPORT_MARKER, "export")
    _remove_killed_exports(path)


def _write_out(archive, path):
    """`archive.write_out(path)`, each endpoint traced once instead of twice.

    `write_out` traces the endpoints outside TensorFlow's save context (to find the variables
    they read), and `tf.saved_model.save` asks the same `tf.function`s for their traces inside
    it, where the trace cache's key holds the save options' variable policy (None outside): so
    every endpoint was traced twice, a second or more for a char-RNN's generate or a
    translator's beam search. Tracing them inside a save context of the same options lets the
    save find them in the cache. The same steps as Keras 3.15's `write_out` otherwise; where
    an `ExportArchive` lacks the attributes they read (another Keras), `write_out` itself runs.
    """
    from tensorflow.python.saved_model import save_context  # no public way to enter it

    needed = ("_filter_and_track_resources", "_get_concrete_fn", "_endpoint_names",
              "_tf_trackable")
    if not all(hasattr(archive, name) for name in needed):
        archive.write_out(str(path), verbose=False)
        return
    if not archive._endpoint_names:
        raise ValueError("No endpoints have been set yet. Call add_endpoint().")
    options = tf.saved_model.SaveOptions()
    with save_context.save_context(options):
        archive._filter_and_track_resources()  # traces the endpoints for their variables
        signatures = {name: archive._get_concrete_fn(name) for name in archive._endpoint_names}
        # TensorFlow Serving's default: the first endpoint, unless one is called so already.
        signatures.setdefault("serving_default",
                              archive._get_concrete_fn(archive._endpoint_names[0]))
    tf.saved_model.save(archive._tf_trackable, str(path), options=options, signatures=signatures)


def write_export_archive(archive, path):
    """Writes a `keras.export.ExportArchive` as a new SavedModel at `path`, atomically.

    It is written to a temporary directory beside `path`, then renamed, so `path` never holds a
    half-written SavedModel, and a failure leaves no temporary directory. `path` must not exist
    yet (or be an empty folder): replacing a previous export is `replace_export`'s. Returns
    `path`.
    """
    path = Path(path)
    if path.exists() and not (path.is_dir() and not any(path.iterdir())):
        raise UsageError(f"{path} exists; an export is written to a new path")
    _remove_killed_exports(path)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        _write_out(archive, temporary)
        write_marker(temporary, EXPORT_MARKER, "export",
                     tree=written_tree(temporary, EXPORT_MARKER))
        os.replace(temporary, path)
    except (OSError, tf.errors.OpError) as error:  # TensorFlow's file errors are OpErrors
        if path.is_dir() and any(path.iterdir()):
            # Another export (the same command twice at once) got there first. Not "pass
            # --overwrite": two `export --overwrite` into a new folder at once meet here too.
            raise UsageError(f"{path} was written by another export while this one ran, and is "
                             "kept; give the command again, with --overwrite, to replace it, or "
                             "choose another --out") from None
        reason = (error.strerror if isinstance(error, OSError) else error.message) or error
        # TensorFlow's "<its temporary file>; File too large": the reason, not the file.
        reason = str(reason).splitlines()[0].rsplit("; ", 1)[-1]
        raise UsageError(f"{path}: cannot write the SavedModel there ({reason})") from None
    finally:
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
    return path


def replace_directory(new, path):
    """Puts the complete directory `new` at `path`. A directory already at `path` is moved
    aside and removed only once `new` is in place; if that fails, it is put back."""
    path = Path(path)
    if not path.exists():
        os.replace(new, path)
        return path
    replaced = path.with_name(f".{path.name}.replaced-{os.getpid()}")
    os.replace(path, replaced)
    try:
        os.replace(new, path)
    except BaseException:
        os.replace(replaced, path)
        raise
    shutil.rmtree(replaced)
    return path


def _put_back_replaced(path, marker=RUN_MARKER, kind="run"):
    """Undoes a `replace_directory` of `path` killed between its two renames (`path` gone, the
    old run or export, by its `marker` of `kind`, hidden as `.NAME.replaced-PID` of a dead
    process): it goes back to `path`, said on stdout, so that it is neither lost from sight
    nor left on the disk for ever. One killed after both renames left the replaced one beside
    the new one: removed."""
    stale = [entry for entry in _left_by_dead_processes(path, "replaced")
             if has_marker(entry, marker, kind)]
    for entry in sorted(stale, key=lambda entry: entry.stat().st_mtime, reverse=True):
        if not path.exists() and not path.is_symlink():
            os.replace(entry, path)
            print(f"put back {path}: an interrupted --overwrite had moved it aside to "
                  f"{entry.name}")
        else:
            shutil.rmtree(entry)


def replace_export(path, write):
    """Writes an export with `write(new_path)` and puts it at `path`, replacing a previous
    export there (checked by the caller with `check_export_path`) only once the new one is
    complete."""
    path = Path(path)
    if not is_saved_model(path):
        return write(path)
    new = path.with_name(f".{path.name}.new-{os.getpid()}")
    try:
        try:
            write(new)
        except UsageError as error:
            # Named as the user's --out, not the hidden folder the new export is written in
            # first; the previous export stays as it was.
            raise UsageError(str(error).replace(str(new), str(path)) + " (the previous export "
                             "there is kept)") from None
        replace_directory(new, path)
    finally:
        if new.exists():
            shutil.rmtree(new, ignore_errors=True)
    return path


def free_column_name(name, taken):
    """`name`, or `name` with underscores appended until no name in `taken` has it: a column
    seqlab adds to a CSV it writes (`step`, `forecast`) never collides with one of the data's
    (a time column called `step`)."""
    taken = set(taken)
    while name in taken:
        name += "_"
    return name


def rows_to_csv(rows, columns=None):
    """CSV text of a list of dicts (columns: the first row's keys unless given)."""
    buffer = io.StringIO()
    columns = columns or (list(rows[0]) if rows else [])
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def library_versions():
    """Versions of Python and the libraries a run's numbers depend on."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {"python": platform.python_version()}
    for name in ("seqlab", "tensorflow", "keras", "numpy", "pandas", "scikit-learn"):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "not installed"
    return versions


# ---------------------------------------------------------------------------------------------
# The run directory


# config.json's "settings_format" N says that `train` wrote every setting of the task's config
# that format N has, so such a setting missing on reading was removed by hand
# (`Pipeline.load_run` refuses it); a run without it (written before) takes a missing setting's
# default, as older versions' runs lack the settings added since. A setting added later raises
# SETTINGS_FORMAT and enters SETTINGS_ADDED with the new format, so that runs of the formats
# before it may lack it.
SETTINGS_FORMAT = 1
SETTINGS_ADDED = {}  # setting name -> the settings format that added it (after format 1)


def _legacy_run_settings(path):
    """`(task, settings)` of the config.json of a run written before the markers, or None."""
    try:
        record = read_json(Path(path) / "config.json")
    except (OSError, ValueError):
        return None
    if not (isinstance(record, dict) and isinstance(record.get("task"), str)
            and isinstance(record.get("settings"), dict) and "versions" in record):
        return None
    return record["task"], record["settings"]
# Written after `fit` (with the trained model.keras beside it): a rerun of an interrupted
# train skips `fit` and continues with scoring, plots and export.
FIT_DONE_NAME = "fit_done.json"


def take_lock(path):
    """Creates the lock file `path` naming this process (pid, host), atomically.

    A lock left by a process that no longer runs on this host is taken over; one held by a
    live process, or by a process on another host (which cannot be checked from here), is
    refused. The lock appears with its contents (linked into place whole), and a takeover is
    made under an exclusive lock of the folder (`_takeover_guard`), so that of two processes
    finding the same dead owner one takes the lock and the other sees it taken: each read the
    dead owner, removed the lock and made its own, and the second removed the first's (both
    then owned the run directory).

    Raises:
        UsageError: another process owns the lock; the message names it.
    """
    path = Path(path)
    me = {"pid": os.getpid(), "host": platform.node(), "since_utc": utc_timestamp()}
    for _ in range(3):
        if _create_lock(path, me):
            return
        with _takeover_guard(path.parent):
            try:
                holder = lock_holder(path)
            except FileNotFoundError:  # released meanwhile: create it again
                continue
            if holder is not None and holder[:2] == (os.getpid(), me["host"]):
                return
            if holder is not None and held_elsewhere(*holder[:2]):
                raise in_use(path, *holder) from None
            # A dead owner's (or an unreadable) lock: taken over inside the guard.
            path.unlink(missing_ok=True)
            if _create_lock(path, me):
                return
    raise UsageError(f"{path.parent}: could not take the lock {path}")


def _create_lock(path, me):
    """Creates the lock file `path` holding `me` (JSON) where there is none: True, or False
    where one is there. Written beside it and linked into place, so that no reader finds it
    empty (an empty lock read as unreadable was taken over); where the file system makes no
    hard links, created exclusively and written."""
    temporary = path.with_name(f"{path.name}.new-{os.getpid()}")
    try:
        temporary.write_text(json.dumps(me), encoding="utf-8")
        try:
            os.link(temporary, path)
            return True
        except FileExistsError:
            return False
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
        try:
            with open(path, "x", encoding="utf-8") as file:
                json.dump(me, file)
            return True
        except FileExistsError:
            return False
    finally:
        temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def _takeover_guard(folder):
    """An exclusive `flock` of `folder` while a stale lock in it is taken over (held for
    microseconds; released by the system if this process dies). Without `fcntl` (Windows), or
    on a file system that refuses it, no guard."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(descriptor)  # releases the flock


def claim_export_version(run):
    """Takes the run's next version number for this process: `(path, claim)`, `path` being
    `<run>/export/<n>` (not created) and `claim` the hidden lock file `<run>/export/.<n>.claim`
    (`take_lock`) that reserves n while the SavedModel is written; remove it when done.

    Two exports of one run at once write two versions instead of racing for one, and the
    version folder still appears only complete (renamed into place), so TensorFlow Serving,
    which polls the folder, never sees an empty or half-written version. The claim of a killed
    export names a dead process: the next export takes its number over.
    """
    path = next_export_version(run)
    try:
        path.parent.mkdir(exist_ok=True)
        while True:
            claim = path.with_name(f".{path.name}.claim")
            if not path.exists():
                try:
                    take_lock(claim)
                except UsageError:  # another export, still running, holds this number
                    pass
                else:
                    if not path.exists():  # written and released between check and claim
                        return path, claim
                    claim.unlink(missing_ok=True)
            path = path.with_name(str(int(path.name) + 1))
    except OSError as error:  # made a file or unwritable since `check_export_folder`
        raise UsageError(f"{path.parent}: cannot write the SavedModel there "
                         f"({error.strerror}); write it elsewhere with --out") from None


def _not_written_by_train(run):
    """The entries of the finished run `run` that its `train` did not write, by the list its
    marker keeps (none for a run finished before the marker kept one): the user's files, and
    what evaluate or predict wrote there under a name of the user's. Predict's default files,
    the exports and seqlab's own temporaries are seqlab's."""
    files = listed_train_files(run)
    if files is None:
        return []
    ours = {*files, RUN_MARKER, LOCK_NAME, FIT_DONE_NAME, EXPORT_DIR, *PREDICTION_FILES}
    foreign = [entry.name for entry in run.iterdir()
               if entry.name not in ours and not TEMPORARY_NAME.fullmatch(entry.name)]
    tree = listed_train_tree(run)
    if tree is not None:  # inside train's folders (plots/, saved_model/, ...): its files only
        written = set(tree)
        for name in files:
            if (run / name).is_dir() and not (run / name).is_symlink():
                foreign += unlisted_paths(run, run / name, written)
    export = run / EXPORT_DIR
    if export.is_dir() and not export.is_symlink():  # exports, and exports being written
        foreign += [f"{EXPORT_DIR}/{entry.name}" for entry in export.iterdir()
                    if not (is_saved_model(entry) or EXPORT_CLAIM.fullmatch(entry.name)
                            or TEMPORARY_NAME.fullmatch(entry.name))]
    return sorted(foreign)


class RunDirectory:
    """The directory one `train` call writes, built under `<out>.partial` and renamed when done.

    `start()` refuses an `--out` that holds a finished run unless `overwrite`; it resumes an
    unfinished `<out>.partial` written with the same settings (its `checkpoints/` hold the last
    finished epoch). `finish()` renames `<out>.partial` to `<out>` (replacing an old run when
    overwriting), so a reader never sees a half-written run.

    Args:
        out: the final run directory.
        task: the task name, recorded in config.json.
        overwrite: replace a finished run at `out`, and discard an unfinished one whose settings
            differ.
    """

    def __init__(self, out, task, overwrite=False):
        self.final = final_path(out)
        self.work = partial_path(out)
        self.task = task
        self.overwrite = overwrite
        self.resumed = False
        self._created = []  # the folders `claim()` created, innermost first

    def path(self, *parts):
        """A path inside the run being written (parent folders are created)."""
        path = self.work.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def checkpoint_dir(self):
        return self.work / "checkpoints"

    def check_out(self):
        """Refuses an `--out` that holds a finished run (unless `overwrite`) or something else.

        `start()` calls this too; calling it before loading data fails fast.

        Raises:
            UsageError: as in `start()`.
        """
        if self.final.name.endswith(PARTIAL_SUFFIX):
            raise UsageError(
                f"--out {self.final}: a name ending in {PARTIAL_SUFFIX} is where seqlab keeps an "
                f"unfinished run; give the final name (--out "
                f"{self.final.with_name(self.final.name[:-len(PARTIAL_SUFFIX)])})"
            )
        for path in (self.final, self.work):
            if path.is_symlink():
                raise UsageError(f"--out {self.final}: {path} is a symbolic link; seqlab does "
                                 "not write through links: give the real folder")
        _put_back_replaced(self.final)
        if self.final.is_file():
            raise UsageError(f"--out {self.final} is a file; give a folder for the run")
        try:
            here = Path.cwd().resolve()
        except FileNotFoundError:  # the shell's folder was removed: it holds no --out
            here = None
        if here is not None and self.final.exists() and (
                self.final.resolve() == here or self.final.resolve() in here.parents):
            raise UsageError(
                f"--out {self.final} is the folder this command runs in (or holds it): the run "
                "is written beside it and renamed into its place, so the shell would stay in a "
                "removed folder; give a new folder's name (--out runs/my-run)")
        blocking = next((p for p in self.final.parents if p.exists()), None)
        if blocking is not None and not blocking.is_dir():
            raise UsageError(f"--out {self.final}: {blocking} is a file, not a folder")
        existing = next((p for p in (self.final, *self.final.parents) if p.exists()), None)
        if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
            raise UsageError(f"--out {self.final}: {existing} is not writable")
        if self.final.exists():
            is_run = has_marker(self.final, RUN_MARKER, "run")
            if not is_run and any(self.final.iterdir()):
                if _legacy_run_settings(self.final) is not None:
                    raise UsageError(
                        f"--out {self.final} holds a run written by an earlier seqlab version "
                        f"(no {RUN_MARKER}), which seqlab does not replace: evaluate, predict and "
                        "export still read it; to train again choose another --out, or move it "
                        "away yourself"
                    )
                raise UsageError(
                    f"--out {self.final} exists and is not a seqlab run (no {RUN_MARKER}); "
                    "seqlab never deletes what it did not write: choose another --out"
                )
            if is_run and not self.overwrite:
                raise UsageError(
                    f"--out {self.final} already holds a finished run; pass --overwrite to "
                    "replace it, or choose another --out"
                )
            foreign = _not_written_by_train(self.final) if is_run else []
            if foreign:
                raise UsageError(
                    f"--out {self.final} holds what its train did not write ({listed(foreign, 5)}"
                    "); --overwrite replaces the whole run, and seqlab never deletes what it did "
                    "not write: move them out of the run first, or choose another --out"
                )
        if self.work.exists():
            if not self.work.is_dir():
                raise UsageError(f"--out {self.final}: {self.work} is a file; seqlab keeps an "
                                 "unfinished run there: move it away or choose another --out")
            if not has_marker(self.work, RUN_MARKER, "run") and not self._unmarked_work_is_ours():
                raise UsageError(
                    f"--out {self.final}: {self.work} exists and was not written by seqlab (no "
                    f"{RUN_MARKER}); seqlab never deletes what it did not write: move it away "
                    "or choose another --out"
                )

    def _unmarked_work_is_ours(self):
        """An unmarked `<out>.partial` that seqlab may use: empty (or only a lock), or an
        earlier version's unfinished run of this task (which is resumed, never deleted)."""
        entries = {entry.name for entry in self.work.iterdir()}
        if entries <= {LOCK_NAME}:
            return True
        settings = _legacy_run_settings(self.work)
        return settings is not None and settings[0] == self.task

    def claim(self):
        """Makes this process the owner of `<out>.partial` before the data is read.

        A second train into the same `--out` is then refused at once, not after its own data
        preparation (a long series' classical fits take minutes). Nothing else is written:
        `release()` removes the lock, and the folders this call created, when the run does not
        start.

        Raises:
            UsageError: as in `check_out()`, or another process owns the run directory.
        """
        self.check_out()
        missing = [p for p in (self.work, *self.work.parents) if not p.exists()]
        self.work.mkdir(parents=True, exist_ok=True)
        self._created = missing
        self._lock()

    def release(self):
        """Undoes `claim()`: the lock goes, and each folder it created that is now empty."""
        self.lock_path.unlink(missing_ok=True)
        for folder in self._created:
            try:
                folder.rmdir()
            except OSError:  # not empty, or already gone: kept
                break
        self._created = []

    def start(self, settings):
        """Creates (or resumes) `<out>.partial` and writes config.json.

        Args:
            settings: every setting of the run (a JSON-able dict).

        Returns:
            True when an unfinished run with the same settings is resumed.

        Raises:
            UsageError: `out` holds a finished run (without `overwrite`), holds something that is
                not a seqlab run, or `<out>.partial` holds a run with other settings, or is not
                seqlab's.
        """
        self.check_out()
        marked = self.work.is_dir() and has_marker(self.work, RUN_MARKER, "run")
        self.work.mkdir(parents=True, exist_ok=True)
        # Owned before anything in it is read or removed: a second train into the same --out
        # is refused while the first runs.
        self._lock()
        entries = {entry.name for entry in self.work.iterdir()} - {LOCK_NAME, RUN_MARKER}
        if entries:
            previous = self.work / "config.json"
            try:
                previous_config = read_json(previous) if previous.is_file() else None
                previous_settings = (previous_config["settings"] if previous_config is not None
                                     else None)
            except UsageError as error:  # a damaged config.json of the unfinished run
                if not (marked and self.overwrite):
                    raise UsageError(f"{error}; pass --overwrite to start the run over"
                                     if marked else str(error)) from None
                previous_config = previous_settings = None
            previous_task = (previous_config.get("task")
                             if previous_settings is not None else None)
            if not isinstance(previous_task, str):  # a hand-edited task is no other task
                previous_task = None
            if previous_settings == settings:
                self.resumed = True
            elif not marked:
                # An earlier version's unfinished run (check_out let only that through): resumed
                # with the same settings, otherwise left as it is.
                raise UsageError(
                    f"{self.work} holds an unfinished run of an earlier seqlab version (no "
                    f"{RUN_MARKER}) with other settings; seqlab does not delete it: rerun with "
                    "its settings to finish it, or move it away yourself"
                )
            elif self.overwrite or previous_settings is None:
                shutil.rmtree(self.work)
                self.work.mkdir(parents=True)
                self._lock()
            elif previous_task not in (None, self.task):
                raise UsageError(
                    f"{self.work} holds an unfinished {previous_task} run, not a {self.task} "
                    f"one; rerun its seqlab {previous_task} train to finish it, or choose "
                    "another --out (--overwrite would delete it)"
                )
            else:
                changed = sorted(
                    k for k in set(settings) | set(previous_settings)
                    if settings.get(k) != previous_settings.get(k)
                )
                details = ", ".join(
                    f"{k}: {previous_settings.get(k)!r} -> {settings.get(k)!r}" for k in changed
                )
                raise UsageError(
                    f"{self.work} holds an unfinished run with other settings ({details}); rerun "
                    "with the same settings to resume it, or pass --overwrite to start over"
                )
        if not has_marker(self.work, RUN_MARKER, "run"):
            write_marker(self.work, RUN_MARKER, "run", task=self.task)
        if not self.resumed:
            write_json_atomic(
                self.work / "config.json",
                {
                    "task": self.task,
                    "settings": settings,
                    "settings_format": SETTINGS_FORMAT,
                    "versions": library_versions(),
                    "created_utc": utc_timestamp(),
                    "command": sys.argv,
                },
            )
        return self.resumed

    def write_json(self, name, value):
        write_json_atomic(self.path(name), value)

    def write_text(self, name, text):
        write_text_atomic(self.path(name), text)

    @property
    def lock_path(self):
        return self.work / LOCK_NAME

    def _lock(self):
        """Makes this process the owner of `<out>.partial`, or refuses (see `take_lock`)."""
        take_lock(self.lock_path)

    def finish(self, digested=()):
        """Renames the finished `<out>.partial` to `<out>` and returns `<out>`. The marker
        keeps the SHA-256 of each file of the run named in `digested` (`paths.changed_files`).

        `fit_done.json` goes only once the run is in place: a kill before that leaves a
        `<out>.partial` that the same command continues after `fit`, not from epoch 1.
        """
        # Temporaries of seqlab's atomic writers that a killed earlier call left in the run
        # (`.NAME.tmp-PID`, `.NAME.new-PID`): this process owns the run, so they are garbage.
        for leftover in self.work.rglob(".*"):
            if TEMPORARY_NAME.fullmatch(leftover.name) and leftover.exists():
                if leftover.is_dir():
                    shutil.rmtree(leftover)
                else:
                    leftover.unlink()
        if self.checkpoint_dir.exists() and not any(self.checkpoint_dir.iterdir()):
            self.checkpoint_dir.rmdir()
        if self.final.exists() and (self.final.is_symlink() or (
                not has_marker(self.final, RUN_MARKER, "run") and any(self.final.iterdir()))):
            # Something not seqlab's appeared at --out while this run trained: never replaced.
            raise UsageError(f"--out {self.final} now holds something that is not a seqlab run; "
                             f"the finished run stays in {self.work}: move it there yourself")
        foreign = (_not_written_by_train(self.final)
                   if has_marker(self.final, RUN_MARKER, "run") else [])
        if foreign:  # the run being replaced (--overwrite) gained files while this one trained
            raise UsageError(
                f"--out {self.final} now holds what its train did not write ({listed(foreign, 5)})"
                ", added while this run trained; seqlab never deletes what it did not write: move "
                "them out of it and give the same command again, which finishes this run (kept "
                f"in {self.work}) without training it again")
        # The marker, written again, keeps what train wrote: evaluate's and predict's --output
        # may not overwrite it (paths.check_output). The lock is held until the run is in
        # place (removed before, it let a second train take `<out>.partial` in between, and
        # the rename carried that train's lock into the finished run).
        unlisted = (RUN_MARKER, FIT_DONE_NAME, LOCK_NAME)
        write_marker(self.work, RUN_MARKER, "run", task=self.task, files=sorted(
            entry.name for entry in self.work.iterdir() if entry.name not in unlisted),
            tree=[path for path in written_tree(self.work, RUN_MARKER) if path not in unlisted],
            digests={name: data_fingerprint(self.work / name)["sha256"] for name in digested
                     if (self.work / name).is_file()})
        final = replace_directory(self.work, self.final)
        (final / LOCK_NAME).unlink(missing_ok=True)
        (final / FIT_DONE_NAME).unlink(missing_ok=True)
        return final


# ---------------------------------------------------------------------------------------------
# Training


def set_seed(seed):
    """Seeds Python, NumPy and TensorFlow, so that the same seed gives the same run."""
    keras.utils.set_random_seed(seed)


class EpochHistory(keras.callbacks.Callback):
    """Keeps `history.csv` up to date after every epoch, across interrupted and resumed runs.

    Rows are keyed by epoch number, so an epoch that is run again after a resume replaces its
    row instead of adding one. It must come before `BackupAndRestore` in the callback list: then
    an epoch is logged before it is backed up, and a crash between the two only repeats it.

    Args:
        path: the CSV file (`history.csv` in the run directory).
    """

    def __init__(self, path):
        super().__init__()
        self.path = Path(path)
        self.rows = {}
        if self.path.is_file():
            with open(self.path, newline="", encoding="utf-8") as file:
                for row in csv.DictReader(file):
                    self.rows[int(row["epoch"])] = {
                        k: float(v) if k != "epoch" else int(v) for k, v in row.items()
                    }

    def on_epoch_end(self, epoch, logs=None):
        row = {"epoch": epoch + 1}
        row.update({k: float(v) for k, v in (logs or {}).items() if k != "learning_rate"})
        self.rows[epoch + 1] = row
        rows = [self.rows[k] for k in sorted(self.rows)]
        columns = list(dict.fromkeys(k for r in rows for k in r))
        write_text_atomic(self.path, rows_to_csv(rows, columns))

    @property
    def history(self):
        """All logged epochs in order, as dicts."""
        return [self.rows[k] for k in sorted(self.rows)]


class StopAfterMinutes(keras.callbacks.Callback):
    """Stops training at the end of the first epoch that ends past `minutes` of training.

    A time box for CPU runs: the last epoch is always finished, so the run keeps whole epochs.
    """

    def __init__(self, minutes):
        super().__init__()
        self.seconds = minutes * 60
        self.stopped_epoch = None

    def on_train_begin(self, logs=None):
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        last = epoch + 1 >= self.params["epochs"]
        if not last and time.perf_counter() - self.started >= self.seconds:
            self.model.stop_training = True
            self.stopped_epoch = epoch + 1


class AtomicBackupAndRestore(keras.callbacks.BackupAndRestore):
    """Keras's `BackupAndRestore`, with each backup file replaced atomically, and no more often
    than it is worth.

    Keras writes `latest.weights.h5` in place, so a process killed while it writes leaves a
    file that cannot be read, and the rerun stops with an HDF5 error. Here the weights go to a
    temporary file that is renamed over the backup, then the epoch count the same way: a kill
    leaves the previous complete backup (at worst the new weights with the previous count, and
    that epoch is trained again).

    Keras backs up after every epoch. A backup takes about 60 ms even for a small model, as
    long as an epoch of the forecaster: 200 backups were 12 s of a 60 s command. Here the first
    epoch is backed up, and each later one when at least `COST_RATIO` times the last backup's
    duration has passed since it ended: backups cost at most about 1 / COST_RATIO of the
    training time, and a kill loses at most that much time (under a second for a small model)
    besides the epoch it interrupted. A model whose epochs outlast that is backed up after
    every epoch, as before. So is every epoch of a run on several workers: timed on each
    worker's own clock, the workers' backups held different epochs, and a restarted cluster
    resumed one epoch apart.
    """

    COST_RATIO = 10

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self._backup_ended = None
        self._backup_seconds = 0.0
        self._every_epoch = isinstance(getattr(self.model, "distribute_strategy", None),
                                       tf.distribute.MultiWorkerMirroredStrategy)

    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch = epoch + 1
        self._last_batch_seen = 0
        if self.save_freq != "epoch":
            return
        started = time.perf_counter()
        if (not self._every_epoch and self._backup_ended is not None
                and started - self._backup_ended < self.COST_RATIO * self._backup_seconds):
            return
        self._save_model()
        self._backup_ended = time.perf_counter()
        self._backup_seconds = self._backup_ended - started

    def _save_model(self):
        os.makedirs(self.backup_dir, exist_ok=True)
        temporary = os.path.join(self.backup_dir, f".latest-{os.getpid()}.weights.h5")
        # Checked before h5py writes: on a full disk it failed inside HDF5, whose objects then
        # crashed the process as they were freed (a segmentation fault, no message).
        check_room(self.backup_dir, weights_file_bytes(self.model), self._weights_path)
        try:
            with written_or_refused(self._weights_path):
                self.model.save_weights(temporary, overwrite=True)
                os.replace(temporary, self._weights_path)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
        write_text_atomic(
            self._training_metadata_path,
            json.dumps({"epoch": self._current_epoch, "batch": self._last_batch_seen}),
        )


class TrainingDiverged(UsageError):
    """The loss became NaN or infinite during `fit`."""


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops `fit` at the end of the first epoch whose loss (or any figure of its logs) is NaN
    or infinite, with a one-line `TrainingDiverged` (Keras's `TerminateOnNaN` would end it
    quietly, and the run's figures would be NaN). It must come first among the callbacks, so
    that the diverged epoch reaches neither history.csv nor the backup: the epochs finished
    before stay in the unfinished run.

    Args:
        learning_rate: the run's learning rate, named in the message.
    """

    def __init__(self, learning_rate=None):
        super().__init__()
        self.learning_rate = learning_rate

    def on_epoch_end(self, epoch, logs=None):
        bad = {name: float(value) for name, value in (logs or {}).items()
               if isinstance(value, (int, float)) or hasattr(value, "__float__")}
        bad = {name: value for name, value in bad.items() if not math.isfinite(value)}
        if bad:
            name, value = next(iter(bad.items()))
            rate = f" (now {self.learning_rate:g})" if self.learning_rate else ""
            raise TrainingDiverged(
                f"training diverged: {name} became {value} in epoch {epoch + 1}; no figures "
                f"were written. Lower --learning-rate{rate} or check the data for extreme "
                "values, then rerun with --overwrite"
            )


class StopOnInterrupt(keras.callbacks.Callback):
    """Raises, at the next batch's start or epoch's end, a Ctrl-C or SIGTERM that Python dropped
    or that `seqlab._interrupt` deferred: it goes last in `fit`'s callbacks, so that an epoch
    that ended is logged and backed up first.

    Args:
        deferral: the `_interrupt.deferred` block's `Deferral` that `fit` runs in, started at
            the first epoch's end (the first epoch traces; see `seqlab._interrupt`), or None.
    """

    async_safe = True  # it only reads a flag

    def __init__(self, deferral=None):
        super().__init__()
        self.deferral = deferral

    def on_train_batch_begin(self, batch, logs=None):
        _interrupt.check()

    def on_test_batch_begin(self, batch, logs=None):
        _interrupt.check()

    def on_epoch_end(self, epoch, logs=None):
        _interrupt.check()
        if self.deferral is not None:
            self.deferral.start()


def training_callbacks(run):
    """`[EpochHistory, AtomicBackupAndRestore]` for fitting inside `run` (a `RunDirectory`).

    Task callbacks that add figures to the logs go before these (the lifecycle puts every task
    callback first), so that `history.csv` records them. The backup restores the
    weights, the optimizer's state (Keras 3 saves it with the weights) and the epoch count, not
    other callbacks' state (an `EarlyStopping` counts patience again from the resumed epoch),
    the data order or the random draws.
    """
    history_path = run.path("history.csv")
    if history_path.exists() and not run.checkpoint_dir.exists():
        # Rows without a backup to resume from (training finished, then writing the run failed)
        # describe epochs that will be run again from scratch.
        history_path.unlink()
    return [
        EpochHistory(history_path),
        AtomicBackupAndRestore(str(run.checkpoint_dir)),
    ]


def progress_verbosity():
    """Keras's progress bar on a terminal; in logs and pipes, none: `EpochProgress` writes one
    line per epoch instead."""
    return 1 if sys.stdout.isatty() else 0


def format_duration(seconds):
    """`"8.3 s"`, `"4 min 7 s"`, `"2 h 5 min"`."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


class EpochProgress(keras.callbacks.Callback):
    """One line per epoch for logs and pipes (where Keras's progress bar is off): the epoch's
    time and figures, the time so far and the projected time of all epochs at this pace (the
    mean time of the epochs after the session's first, which also builds and traces).

    In the first epoch of a session, a line comes once `notice_seconds` have passed, with the
    batches done and the projected time per epoch, so that a long epoch shows it is running;
    where the first batch itself takes longer, a timer says so at `notice_seconds` (a window
    of 100,000 characters is one slow batch, and the line at a batch's end would come late).

    Args:
        epochs: the run's `--epochs`.
        max_minutes: the run's `--max-minutes` (None: no limit), said beside the projection.
        stream: where the lines go (default: `sys.stdout`, flushed after each line).
        notice_seconds: when the first epoch's early line comes.
        clock: the seconds counter (default: `time.perf_counter`).
    """

    def __init__(self, epochs, max_minutes=None, stream=None, notice_seconds=30.0,
                 clock=time.perf_counter):
        super().__init__()
        self.clock = clock
        self.epochs, self.max_minutes = epochs, max_minutes
        self.stream, self.notice_seconds = stream, notice_seconds
        self.started = self.epoch_started = None
        self.first_epoch = self.current_epoch = self.first_seconds = None
        self.noticed = False
        self.timer = None

    def _print(self, line):
        stream = self.stream or sys.stdout
        print(line, file=stream, flush=True)

    def on_train_begin(self, logs=None):
        self.started = self.clock()

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_started = self.clock()
        self.current_epoch = epoch
        if self.first_epoch is None:
            self.first_epoch = epoch
            self.timer = threading.Timer(self.notice_seconds, self._first_batch_notice)
            self.timer.daemon = True
            self.timer.start()

    def _first_batch_notice(self):
        self._print(f"epoch {self.current_epoch + 1}/{self.epochs}: the first batch is still "
                    f"running after {format_duration(self.notice_seconds)} (one batch is "
                    "slow: --batch-size and the window's length set its size)")

    def close(self):
        """Stops the first batch's timer (fit calls no callback when it fails)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def on_train_batch_end(self, batch, logs=None):
        self.close()
        if self.noticed or self.current_epoch != self.first_epoch:
            return
        spent = self.clock() - self.epoch_started
        if spent < self.notice_seconds:
            return
        self.noticed = True
        steps = self.params.get("steps")
        done = batch + 1
        line = f"epoch {self.current_epoch + 1}/{self.epochs}: {done}"
        if steps:
            line += (f" of {steps} batches after {format_duration(spent)}; about "
                     f"{format_duration(spent / done * steps)} per epoch")
        else:
            line += f" batches after {format_duration(spent)}"
        self._print(line)

    def on_epoch_end(self, epoch, logs=None):
        self.close()
        now = self.clock()
        figures = ", ".join(f"{name} {value:.4g}" for name, value in (logs or {}).items()
                            if name != "learning_rate" and isinstance(value, (int, float)))
        elapsed = now - self.started
        done = epoch + 1 - self.first_epoch
        if done == 1:
            self.first_seconds = elapsed
            per_epoch = elapsed
        else:  # the first epoch's time includes building and tracing: left out of the pace
            per_epoch = (elapsed - self.first_seconds) / (done - 1)
        total = elapsed + per_epoch * (self.epochs - epoch - 1)
        line = (f"epoch {epoch + 1}/{self.epochs}: {format_duration(now - self.epoch_started)}"
                + (f" ({figures})" if figures else "")
                + f"; {format_duration(elapsed)} so far")
        if done == 1 and epoch + 1 < self.epochs:
            # Building and tracing the model make it slower than the epochs after it.
            line += " (the first epoch also builds the model: the projection starts next epoch)"
        elif epoch + 1 < self.epochs:
            line += f", about {format_duration(total)} for all {self.epochs} epochs at this pace"
            if self.max_minutes:
                line += f" (--max-minutes {self.max_minutes:g} stops sooner)" \
                    if total > self.max_minutes * 60 else ""
        self._print(line)
        self.noticed = True


# ---------------------------------------------------------------------------------------------
# Reports


def format_figure(value, decimals=4):
    """A figure in a table: `decimals` decimals, or as many significant digits where that
    many decimals would hide it (below 1e-3 but not 0) or run long (1e5 and above); NaN (a
    figure that is not defined, such as 0 / 0) as "n/a"."""
    if math.isnan(value):
        return "n/a"
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.{decimals}f}"
    return f"{value:.{decimals}g}"


def plural(count, noun):
    """`count` and `noun`, with an "s" unless the count is 1: `1 epoch`, `3 epochs`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"  # a NumPy count too


def overlap_line(test, test_count, val, val_count, what, test_name="test"):
    """The summary's note that `test` of the `test_count` test examples (and `val` of the
    `val_count` validation ones) are training examples too; `what` names them ("texts"),
    `test_name` the test set ("test2016" of a folder's `test2016.*` files)."""
    return (f"note: {test:,} of the {test_count:,} {test_name} {what}"
            + (f" (and {val:,} of the {val_count:,} validation {what})" if val else "")
            + f" are also training {what}, word for word: the test figures overstate how the "
            f"model does on {what} it has not seen")


def format_table(headers, rows):
    """A plain-text table: columns padded, numbers (and "-", an undefined one, among them)
    right-aligned; floats as `format_figure` writes them."""

    def cell(value):
        if isinstance(value, float):
            return format_figure(value)
        return "" if value is None else str(value)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] == "-" for row in rows)
               for i in range(len(headers))]

    def line(values):
        return "  ".join(
            v.rjust(w) if is_number else v.ljust(w)
            for v, w, is_number in zip(values, widths, numeric)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line([str(h) for h in headers]), rule] + [line(r) for r in cells])


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def disk_error(error):
    """The `OSError` behind `error` (itself, or one in its chain), or None. Libraries that
    write files report a full disk in their own kinds: h5py a RuntimeError ("errno = 28"),
    PIL an AttributeError raised while handling the OSError."""
    seen = set()
    while error is not None and id(error) not in seen:
        # h5py's OSError carries HDF5's whole report (a time stamp, line breaks) and no errno:
        # the errno and message inside it are what the disk said.
        match = re.search(r"errno = (\d+), error message = '([^']*)'", str(error))
        if match:
            return OSError(int(match[1]), match[2])
        if isinstance(error, OSError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def weights_file_bytes(model):
    """About the most bytes `model.save_weights` writes: every variable of the model and of its
    optimizer (Keras 3 saves both), plus HDF5's overhead (measured: about 22 KB and 1.3 KB a
    variable; allowed: 64 KiB and 4 KiB a variable)."""
    variables = list(model.weights)
    if getattr(model, "optimizer", None) is not None:
        variables += list(model.optimizer.variables)
    data = sum(math.prod(v.shape) * tf.as_dtype(v.dtype).size for v in variables)
    return int(data) + 4096 * len(variables) + 65536


def check_room(folder, size, path):
    """Refuses, naming `path`, a file of about `size` bytes that `folder`'s disk (its free
    space) or this process (`ulimit -f`) cannot hold."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # not measurable: the write itself will say
    limit = file_size_limit()
    if limit is not None and size > limit:
        raise UsageError(f"{path}: cannot write there (about {_bytes_text(size)}, over this "
                         f"process's file size limit of {_bytes_text(limit)}: ulimit -f)")
    if size > free:
        raise UsageError(f"{path}: cannot write there ({os.strerror(errno.ENOSPC)}: about "
                         f"{_bytes_text(size)} needed, {_bytes_text(free)} free)")


def file_size_limit():
    """This process's largest file size in bytes (`ulimit -f`), or None: no limit, or a
    platform without `resource`."""
    try:
        import resource
    except ImportError:
        return None
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if limit == resource.RLIM_INFINITY else limit


def _bytes_text(size):
    """Bytes as a person reads them: 512 B, 20.0 KiB, 3.1 MiB, 1.2 GiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


@contextlib.contextmanager
def written_or_refused(path):
    """Turns a failed write of `path` (a full disk, a read-only folder: an `OSError`, in
    whatever kind of exception the writing library raised) into one line naming the file."""
    try:
        yield
    except UsageError:
        raise
    except Exception as error:  # noqa: BLE001 - only a write failure is turned, see below
        failure = disk_error(error)
        if failure is None:
            raise
        raise UsageError(f"{path}: cannot write there ({failure.strerror or failure})") from None


def save_figure(figure, path, dpi=100):
    """`figure.savefig(path)` written atomically (a full disk left a truncated PNG), a failed
    write one line naming the file; the figure is closed."""
    try:
        image = io.BytesIO()
        figure.savefig(image, dpi=dpi, format=Path(path).suffix[1:] or None)
        write_bytes_atomic(path, image.getvalue())
    finally:
        pyplot().close(figure)


def save_history_plot(history, path, title="training", best_epoch=None):
    """Plots every loss column of `history` (rows from `EpochHistory`) against the epoch.

    Args:
        history: the rows of `history.csv`.
        path: the PNG file to write.
        title: the plot's title.
        best_epoch: the epoch whose weights the model holds (restored by early stopping),
            marked with a vertical line; None marks none.
    """
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(7, 4))
    epochs = [row["epoch"] for row in history]
    for name in history[0] if history else []:
        if name.endswith("loss"):
            axis.plot(epochs, [row[name] for row in history], label=name, marker=".")
    if best_epoch is not None:
        axis.axvline(best_epoch, color="grey", linestyle="--", linewidth=1,
                     label=f"restored: epoch {best_epoch}")
    axis.set_xlabel("epoch")
    axis.set_ylabel("loss")
    axis.set_title(title)
    axis.legend()
    figure.tight_layout()
    save_figure(figure, path)


# ---------------------------------------------------------------------------------------------
# Tasks


@dataclasses.dataclass
class ActionResult:
    """What an action hands back: a summary for the terminal, and what it wrote.

    Attributes:
        summary: the text the command line prints at the end (tables, paths).
        path: the main file or directory written, if any.
        metrics: the figures, if the action computed any.
    """

    summary: str
    path: Path | None = None
    metrics: dict | None = None


@dataclasses.dataclass(frozen=True)
class Task:
    """One task as the command line runs it. Each `pipelines/<task>.py` defines `TASK = Task(...)`
    (through `Pipeline.task()`); all but the actions are its card's (`settings.TaskCard`), from
    which the command line builds the help without importing the task's module.

    The action functions take keyword arguments named as their flags:
    - `train(config, overwrite=False) -> ActionResult`
    - `evaluate(run, data=None, output=None) -> ActionResult`
    - `predict(run, data=None, output=None, **options) -> ActionResult`
    - `export(run, out=None) -> ActionResult`

    Attributes:
        name: the task's name on the command line.
        description: a paragraph for `seqlab <task> --help`.
        examples: example command lines for `seqlab <task> <action> --help`, by action.
        config_class: the `TrainConfig` subclass of `train`.
        train, evaluate, predict, export: the actions.
        options: per action ("evaluate", "predict"), a dataclass of its settings beyond
            `--run`, `--data` and `--output`, declared with `settings.option()` as `train`'s
            config is (for example charrnn's `predict --temperature`). The command line turns its
            fields into flags and passes the ones given to the action as keyword arguments; the
            action completes and checks them with `make_config(options_class, flag_values=...)`.
        aliases: per action, other names it answers to on the command line (for example
            charrnn `generate` for `predict`).
        data_settings: the settings of `train` that the data decides where the flags leave
            them open (`settings.TaskCard.data_settings`), or None.
    """

    name: str
    description: str
    examples: dict
    config_class: type
    train: typing.Callable
    evaluate: typing.Callable
    predict: typing.Callable
    export: typing.Callable
    options: dict = dataclasses.field(default_factory=dict)
    aliases: dict = dataclasses.field(default_factory=dict)
    data_settings: typing.Callable | None = None


__all__ = [
    "ActionResult",
    "EpochHistory",
    "RunDirectory",
    "RunRecord",
    "EpochProgress",
    "StopAfterMinutes",
    "StopOnNonFiniteLoss",
    "Task",
    "TrainingDiverged",
    "UsageError",
    "default_out",
    "format_table",
    "library_versions",
    "open_run",
    "format_duration",
    "progress_verbosity",
    "read_json",
    "save_history_plot",
    "set_seed",
    "training_callbacks",
    "check_export_path",
    "replace_export",
    "recover_interrupted_export",
    "take_lock",
    "claim_export_version",
    "write_export_archive",
    "write_json_atomic",
    "write_marker",
    "write_text_atomic",
    "has_marker",
    "RUN_MARKER",
    "EXPORT_MARKER",
]
