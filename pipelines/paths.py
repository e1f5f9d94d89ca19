"""Run directories and export paths, without TensorFlow.

The command line checks what it can refuse for certain (`--run` is not a finished run of the
task, `export --out` holds something else or a SavedModel without `--overwrite`) with these
functions BEFORE TensorFlow loads, so that a refusal takes a moment, not the time TensorFlow
takes to load; the lifecycle (`pipelines/lifecycle.py`) checks again with the same functions.

- `read_json`: a run's JSON files, read strictly (one line naming the file and the field).
- `open_run`: reads a finished run's `config.json` and checks its task.
- The markers (`seqlab-run.json`, `seqlab-export.json`) by which seqlab knows the folders it
  wrote, `has_marker`; `is_saved_model`, `check_export_path`: what an export may replace (only
  a previous export of seqlab's, and only with `--overwrite`).
- `check_output`: what evaluate's and predict's `--output` may not overwrite (the run's own
  files, the data the run and the command read).
- `export_path`: where `export` writes: `--out`, else the run's next version folder
  `<run>/export/<n>/`, the layout TensorFlow Serving reads (`--model_base_path=<run>/export`
  serves the highest version).
"""

import dataclasses
import fnmatch
import hashlib
import json
import os
import platform
import re
from pathlib import Path

from seqlab.data.datasets import data_home
from seqlab.pipelines.errors import UsageError, parse_failure

# `export` without --out: `<run>/export/1/`, `<run>/export/2/`, ...
EXPORT_DIR = "export"


PARTIAL_SUFFIX = ".partial"
# A run directory's owner: `{"pid", "host", "since_utc"}` of the `train` writing it.
LOCK_NAME = ".lock"

# seqlab recognises the folders it writes by a marker file inside them, never by a common
# file name (a `config.json` or a `saved_model.pb` of the user's own), and deletes or replaces
# no folder without it. The marker moves with the folder (`<out>.partial` renamed to `<out>`).
RUN_MARKER = "seqlab-run.json"
EXPORT_MARKER = "seqlab-export.json"
# The temporaries of seqlab's atomic writers (`.NAME.tmp-PID`, `.NAME.new-PID`, ...).
TEMPORARY_NAME = re.compile(r"\..+\.(tmp|new|replaced)-\d+")
# The hidden lock file that reserves an export's version number
# (`common.claim_export_version`).
EXPORT_CLAIM = re.compile(r"\.\d+\.claim")
MARKER_FORMAT = 1
# The files `predict` writes in the run when no --output is given (one per task's kind of
# output): rewritten freely, unlike the files `train` wrote.
PREDICTION_FILES = ("forecast.csv", "predictions.csv", "predictions.conll")
# What a SavedModel directory holds. An export written before the markers (seqlab 0.1.0 and
# until this version) is recognised by holding these and nothing else, `saved_model.pb` not empty.
_SAVED_MODEL_ENTRIES = {"saved_model.pb", "fingerprint.pb", "variables", "assets",
                        "keras_metadata.pb"}


class JsonRecord(dict):
    """A JSON object read by `read_json`: it knows its file (`source`), and a missing key is a
    one-line `UsageError` naming the file and the field, not a bare KeyError."""

    source = None
    absent = False  # `absent_json`: the file does not exist

    def __missing__(self, key):
        if self.absent:
            raise UsageError(f"{self.source}: not found (its field {key!r} is needed); the run "
                             "is incomplete")
        raise UsageError(f"{self.source}: the field {key!r} is missing; the file was edited or "
                         "damaged")


def absent_json(path):
    """An empty `JsonRecord` standing for the missing JSON file `path`: reading a field of it
    is a one-line `UsageError` that says the file is not there."""
    record = JsonRecord()
    record.source, record.absent = Path(path), True
    return record


def read_json(path):
    """The JSON file `path`, strictly: its objects are `JsonRecord`s.

    Raises:
        UsageError: the file cannot be read, is not UTF-8 or not complete JSON, or holds NaN
            or Infinity (which are not JSON numbers); the message names the file and where.
    """
    path = Path(path)

    def record(pairs):
        value = JsonRecord(pairs)
        value.source = path
        return value

    def refuse_constant(name):
        raise UsageError(f"{path}: holds {name}, which is not a number; the file was edited or "
                         "damaged")

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text; the file is damaged") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        return json.loads(text, object_pairs_hook=record, parse_constant=refuse_constant)
    except UsageError:  # refuse_constant's
        raise
    except json.JSONDecodeError as error:
        raise UsageError(f"{path}: not complete JSON ({error.msg} at line {error.lineno} column "
                         f"{error.colno}); the file was edited or damaged") from None
    except (ValueError, RecursionError) as error:  # a 5,000-digit number, [[[[... 100,000 deep
        raise UsageError(f"{path}: not JSON that can be read ({parse_failure(error)}); the file "
                         "was edited or damaged") from None


@dataclasses.dataclass
class RunRecord:
    """A finished run read back from disk (for evaluate / predict / export).

    Attributes:
        path: the run directory.
        task: the task name recorded in config.json.
        settings: the settings dict recorded in config.json.
        settings_format: config.json's `settings_format` (`common.SETTINGS_FORMAT`: which
            settings it holds all of), 0 for a run written before it.
    """

    path: Path
    task: str
    settings: dict
    settings_format: int = 0

    def file(self, *parts):
        return self.path.joinpath(*parts)


def open_run(path, task):
    """Reads the `config.json` of the finished run at `path` and checks it belongs to `task`.

    Raises:
        UsageError: `path` is not a finished run, or a run of another task.
    """
    path = Path(path)
    config_path = path / "config.json"
    if not path.exists():
        if path.name.endswith(PARTIAL_SUFFIX) and path.name != PARTIAL_SUFFIX:
            final = path.with_name(path.name[:-len(PARTIAL_SUFFIX)])
            hint = f" ({final} is the finished run)" if (final / "config.json").is_file() else ""
        else:
            hint = _unfinished_beside(path)
        raise UsageError(f"{path} does not exist; expected a run directory that train "
                         f"wrote{hint}")
    if (path.name.endswith(PARTIAL_SUFFIX) and path.name != PARTIAL_SUFFIX
            and (path / RUN_MARKER).is_file()):  # a folder of the user's is none
        raise UsageError(
            f"{path} is an unfinished run: rerun train with the same settings and "
            f"--out {path.with_name(path.name[:-len(PARTIAL_SUFFIX)])} to finish it"
        )
    if not config_path.is_file():
        raise UsageError(f"{path} is not a finished seqlab run: it has no config.json"
                         f"{_unfinished_beside(path)}")
    record = read_json(config_path)
    if not isinstance(record, dict) or not isinstance(record.get("settings"), dict):
        raise UsageError(f"{config_path}: not a seqlab run's config.json (expected an object "
                         "with the run's \"settings\")")
    settings = record["settings"]
    if record.get("task") != task:
        raise UsageError(f"{path} is a run of task {record.get('task')!r}, not {task!r}")
    form = record.get("settings_format", 0)
    if type(form) is not int or form < 0:
        raise UsageError(f"{config_path}: \"settings_format\" must be a whole number of at "
                         f"least 0, as train wrote it; found {json.dumps(form)[:40]}. The file "
                         "was edited or damaged")
    return RunRecord(path=path, task=task, settings=settings, settings_format=form)


def _unfinished_beside(path):
    """A message's hint where `path.partial` holds an unfinished run (its marker), else ""."""
    if path.name and (path.with_name(path.name + PARTIAL_SUFFIX) / RUN_MARKER).is_file():
        return f" ({path}.partial holds an unfinished run: rerun train to finish it)"
    return ""


def has_marker(folder, name, kind):
    """Whether `folder` (not a symlink) holds seqlab's marker `name` of `kind`."""
    marker = Path(folder) / name
    if Path(folder).is_symlink() or marker.is_symlink() or not marker.is_file():
        return False
    try:
        record = read_json(marker)
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("seqlab") == kind \
        and isinstance(record.get("format"), int)


def _is_unmarked_saved_model(path):
    """An export written before the markers: SavedModel entries only (variables/ holding
    only variable files), and a `saved_model.pb` that is not empty."""
    entries = {entry.name for entry in path.iterdir()}
    if not entries <= _SAVED_MODEL_ENTRIES or "saved_model.pb" not in entries:
        return False
    if any(entry.is_symlink() for entry in path.iterdir()):
        return False
    graph, variables = path / "saved_model.pb", path / "variables"
    if not graph.is_file() or graph.stat().st_size == 0:
        return False
    if variables.exists() and not (variables.is_dir() and all(
            entry.is_file() and entry.name.startswith("variables.")
            for entry in variables.iterdir())):
        return False
    return True


def _marker_list(folder, marker, key):
    """The list of names `key` of the marker `marker` in `folder`; None where the marker has
    none (written before it kept that list) or was damaged by hand."""
    try:
        record = read_json(Path(folder) / marker)
    except (OSError, ValueError, UsageError):
        return None
    names = record.get(key) if isinstance(record, dict) else None
    if isinstance(names, list) and all(isinstance(name, str) for name in names):
        return names
    return None


def changed_files(run):
    """The files of the finished run `run` whose SHA-256 differs from the one its marker
    recorded when it finished (`digests`), a missing one included; [] for a run finished
    before the marker kept them, or a marker damaged by hand."""
    try:
        record = read_json(Path(run) / RUN_MARKER)
    except (OSError, ValueError, UsageError):
        return []
    digests = record.get("digests") if isinstance(record, dict) else None
    if not isinstance(digests, dict):
        return []
    changed = []
    for name, digest in digests.items():
        path = Path(run) / str(name)
        if not path.is_file() or data_fingerprint(path)["sha256"] != digest:
            changed.append(str(name))
    return changed


def listed_train_files(run):
    """The names of the entries `train` wrote at the top of the finished run `run`, as its
    marker lists them (`files`, written when the run finished); None for a run finished before
    the marker kept the list, or a marker damaged by hand."""
    return _marker_list(run, RUN_MARKER, "files")


# Files `train` writes that no later command needs: their figures, not what a model is read
# from.
FIGURE_FILES = ("history.csv", "metrics.json")


def missing_train_files(run):
    """The files at the top of the finished run `run` that its `train` wrote (as its marker
    lists them) and that are gone, but the figures (`FIGURE_FILES`) and folders: a run whose
    marker lists none has none missing."""
    files = listed_train_files(run)
    if files is None:
        return []
    folders = {entry.split("/")[0] for entry in listed_train_tree(run) or () if "/" in entry}
    return [name for name in files
            if name not in folders and Path(name).suffix and name not in FIGURE_FILES
            and name != RUN_MARKER and not (Path(run) / name).exists()]


def written_tree(folder, marker):
    """Every file and folder under `folder` but its `marker`, as paths relative to it: what
    the marker lists as `tree` (`listed_train_tree`, `foreign_export_entries`)."""
    folder = Path(folder)
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*")
                  if path != folder / marker)


def unlisted_paths(root, folder, written):
    """The paths under `folder` (relative to `root`) that are not in `written` (seqlab's
    temporaries aside): a folder not listed is named once, not its contents."""
    found = []
    for entry in sorted(Path(folder).iterdir()):
        name = entry.relative_to(root).as_posix()
        if TEMPORARY_NAME.fullmatch(entry.name):
            continue
        if name not in written:
            found.append(name)
        elif entry.is_dir() and not entry.is_symlink():
            found += unlisted_paths(root, entry, written)
    return found


def foreign_export_entries(path):
    """What the export folder `path` holds that its `export` did not write, by the list its
    marker keeps (`tree`); for an export written before the marker kept one, anything but
    SavedModel entries (`variables/` holding only variable files; `assets/` is the model's)."""
    path = Path(path)
    tree = _marker_list(path, EXPORT_MARKER, "tree")
    if tree is not None:
        return unlisted_paths(path, path, {*tree, EXPORT_MARKER})
    found = [entry.name for entry in sorted(path.iterdir())
             if entry.name not in _SAVED_MODEL_ENTRIES | {EXPORT_MARKER}]
    variables = path / "variables"
    if variables.is_dir():
        found += [f"variables/{entry.name}" for entry in sorted(variables.iterdir())
                  if not (entry.is_file() and entry.name.startswith("variables."))]
    return found


def listed_train_tree(run):
    """The files and folders `train` wrote in the finished run `run`, at any depth, as paths
    relative to it (`plots/loss.png`), as its marker lists them (`tree`); None for a run
    finished before the marker kept that list (only its top-level `files`)."""
    return _marker_list(run, RUN_MARKER, "tree")


def run_entries(run):
    """The names of the entries `train` wrote at the top of the finished run `run`: its
    marker's list (`listed_train_files`); for a run without one, every entry there but
    predict's default files (`PREDICTION_FILES`). The marker and the export folder are always
    ones."""
    files = listed_train_files(run)
    if files is None:
        files = [entry.name for entry in Path(run).iterdir()
                 if entry.name not in PREDICTION_FILES]
    return {*files, RUN_MARKER, EXPORT_DIR}


# The options of evaluate and predict that name files they read, besides --data.
READ_OPTIONS = ("data", "input", "src", "tgt")

# The run's record of the data files and folders it trained on:
# `{setting: {"path", "bytes", "sha256"}}`.
DATA_FILES = "data_files.json"


def data_fingerprint(path, files=None):
    """`{"path", "bytes", "sha256"}` of the file `path`; of a folder, its files' bytes in all
    and one SHA-256 of their paths (relative to it) and contents, in name order.

    Args:
        path: the file or folder.
        files: for a folder whose reader reads only some of its files, their pattern (`"*.csv"`:
            the files directly inside it, not hidden, whose lowercased name matches), recorded
            as the fingerprint's `files`; None: every file, in subfolders too.
    """
    path = Path(path)
    if path.is_file():
        files, paths = None, [path]
    elif files is None:
        paths = sorted(p for p in path.rglob("*") if p.is_file())
    else:
        paths = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                       and fnmatch.fnmatchcase(p.name.lower(), files))
    digest, size = hashlib.sha256(), 0
    for file_path in paths:
        if file_path != path:
            # The name's own bytes: one that is not UTF-8 (os.fsencode keeps its bytes) was a
            # UnicodeEncodeError traceback, whatever the reader made of the file.
            digest.update(os.fsencode(file_path.relative_to(path).as_posix()) + b"\0")
        with open(file_path, "rb") as file:
            for block in iter(lambda: file.read(2**20), b""):
                digest.update(block)
                size += len(block)
    return {"path": str(path), "bytes": size, "sha256": digest.hexdigest(),
            **({"files": files} if files is not None else {})}


def data_fingerprints(settings, fields, folder_files=None):
    """The fingerprints (`data_fingerprint`) of the `fields` of `settings` that name files or
    folders (not data-set names, which are checked when they are downloaded); `folder_files`
    maps a field to the pattern of the files its reader reads in a folder."""
    return {field: data_fingerprint(settings[field], (folder_files or {}).get(field))
            for field in fields
            if isinstance(settings.get(field), str) and os.path.isabs(settings[field])
            and os.path.exists(settings[field])}


def _recorded_data(run):
    """`[(setting, record)]` of the run's record of its data (`DATA_FILES`), each record with
    its `path`; none for a run from before the record. Unreadable or damaged, it is refused,
    naming the file (it was skipped without a word, and changed data scored)."""
    record_path = Path(run) / DATA_FILES
    recorded = read_json(record_path) if record_path.exists() else {}
    if not isinstance(recorded, dict):
        return []
    return [(field, record) for field, record in recorded.items()
            if isinstance(record, dict) and isinstance(record.get("path"), str)]


def check_data_unchanged(run):
    """Refuses to score a run's own test split again when data it trained on (a file or a
    folder) has changed since or is no longer there (`DATA_FILES`; a run without that record
    is not checked): the rows it would hold out are no longer the ones training held out, and
    training rows could be scored.

    Raises:
        UsageError: naming the file and saying how it changed, or where it was.
    """
    for _, record in _recorded_data(run):
        path = record["path"]
        if not os.path.exists(path):
            # The reader's "file not found" did not say what the user can do about it.
            raise UsageError(
                f"{path}: not found; the run {run} trained on it (moved or deleted since?): "
                "put it back there to score the run's test split again, or give the data at "
                "its new place with --data (scored as given, not split: the rows training saw "
                "count too)"
            )
        files = record.get("files")
        change = _change(record, data_fingerprint(path, files if isinstance(files, str) else None))
        if change:
            raise UsageError(
                f"{path} has changed since the run {run} trained on it ({change}): the test "
                "split evaluate would read from it is not the one training held out; give the "
                "data to score with --data (or train again)"
            )


def refuse_changed_data(work, fingerprints):
    """Refuses to resume the unfinished run `work` whose data files changed since it started
    (`fingerprints`: `data_fingerprints` now): its epochs so far trained on the old data, and
    its record (`DATA_FILES`) names that data.

    Raises:
        UsageError: naming the file, with both sizes.
    """
    recorded = read_json(Path(work) / DATA_FILES)
    for field, now in fingerprints.items():
        then = recorded.get(field) if isinstance(recorded, dict) else None
        if not isinstance(then, dict) or then.get("path") != now["path"]:
            continue  # not recorded then
        change = _change(then, now)
        if change:
            raise UsageError(
                f"{now['path']} has changed since the unfinished run {work} started on it "
                f"({change}): its epochs so far trained on the old data; restore the file to "
                f"resume, or move {work} away to start over on the new data"
            )


def refuse_data_changed_while_read(before, after):
    """Refuses a train whose data changed while it was read (`before`, `after`: the
    `data_fingerprints` taken before and after the reading): the run could not say which bytes
    it trained on.

    Raises:
        UsageError: naming the file, with both sizes.
    """
    for field, now in after.items():
        then = before.get(field)
        change = _change(then, now) if then and then["path"] == now["path"] else None
        if change:
            raise UsageError(
                f"{now['path']} changed while train read it ({change}); nothing was trained: "
                "give the command again once nothing writes the file")


def _change(record, now):
    """How the fingerprint `now` differs from the `record` kept, or None."""
    if (now["bytes"], now["sha256"]) == (record.get("bytes"), record.get("sha256")):
        return None
    return f"{record.get('bytes')} bytes then, {now['bytes']} now; another SHA-256"


def check_output(output, run, settings, reads=()):
    """Refuses an `--output` of evaluate or predict that would overwrite what the command or
    the run reads: the run directory or an entry `train` wrote in it (a new file beside them
    is fine); the data the run was trained on (the settings' absolute paths but `out`: the
    lifecycle records the data files so) or `reads`, the files this command reads (its
    `READ_OPTIONS`); a file inside a data folder (it would be read as data next time), or
    anywhere in the data-set cache (`data_home()`: a set named by `--data` is read there).

    Raises:
        UsageError: naming `output` and what it would overwrite.
    """
    last = str(output).replace(os.sep, "/").rsplit("/", 1)[-1]
    if last in ("", ".", ".."):  # Path() drops them: "out/" and "out/." became a file "out"
        end = repr(last) if last else "a separator"
        raise UsageError(f"--output {output} ends in {end}, so names a folder; give the name "
                         "of a file to write to")
    if Path(output).expanduser().is_symlink():  # replaced by a file, as --out is refused
        raise UsageError(f"--output {output} is a symbolic link; seqlab neither writes through "
                         "links nor replaces them: give the real file, or another name")
    target = Path(output).expanduser().resolve()
    folder = Path(run).resolve()
    runs = [path for path in (target, *target.parents) if has_marker(path, RUN_MARKER, "run")]
    # An unfinished run's folder is deleted by the train that finishes it over again.
    unfinished = next((path for path in runs if path.name.endswith(PARTIAL_SUFFIX)), None)
    if unfinished is not None:
        raise UsageError(f"--output {output} is inside {unfinished}, an unfinished run that "
                         "train replaces or deletes; write it elsewhere")
    # This run, or any other run or export the path is in (another run's model.keras, a
    # served SavedModel's saved_model.pb were overwritten before).
    holders = [(folder, run)] if target == folder or folder in target.parents else []
    holders += [(path, path) for path in runs if path != folder][:1]
    for holder, name in holders:
        inside = target.relative_to(holder).parts
        if not inside or inside[0] in run_entries(holder):
            if not inside:
                what = f"overwrite the run directory {name}"
            elif len(inside) == 1:
                what = f"overwrite {inside[0]}, a file of the run {name}"
            else:
                what = f"write into {inside[0]}/, a folder of the run {name}"
            raise UsageError(f"--output {output} would {what}; write it elsewhere, or under a "
                             "new name beside the run's files")
    export = next((path for path in (target, *target.parents) if _holds_export(path)), None)
    if export is not None:
        raise UsageError(f"--output {output} would write into the SavedModel {export} (an "
                         "export of seqlab's); write it elsewhere")
    cache = data_home().expanduser().resolve()
    if target == cache or cache in target.parents:  # the downloaded data sets, named or not
        raise UsageError(f"--output {output} would write into seqlab's data-set cache "
                         f"{cache}, which tasks read as downloaded data; write it elsewhere")
    trained_on = [value for key, value in settings.items()
                  if key != "out" and isinstance(value, str) and os.path.isabs(value)]
    for read in [*trained_on, *(str(path) for path in reads if path is not None)]:
        source = Path(read).expanduser().resolve()
        if target == source or (source.is_dir() and source in target.parents):
            raise UsageError(f"--output {output} would overwrite the data {read}; write it "
                             "elsewhere" + (" (outside the data's folder: a file there is read "
                                            "as data)" if target != source else ""))


def _holds_export(path):
    """`is_saved_model`, False for a folder this process may not list."""
    try:
        return is_saved_model(path)
    except OSError:
        return False


def is_saved_model(path):
    """Whether `path` is an export seqlab wrote (its marker, or an older version's complete
    SavedModel): the only folders `export --overwrite` replaces."""
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        return False
    return has_marker(path, EXPORT_MARKER, "export") or _is_unmarked_saved_model(path)


def check_export_path(path, overwrite=False, run=None):
    """Refuses an export path that holds anything but a previous export to replace.

    Raises:
        UsageError: `path` is a symlink, a file, a non-empty folder that is not an export of
            seqlab's, or one while `overwrite` is False, or inside a run directory other than
            the exported `run`'s `saved_model/` and `export/<n>` (another run's `saved_model/`
            and `export/` versions serve that run's model), or inside an export, or the `--out`
            of an unfinished run (`<path>.partial`).
    """
    path = Path(path)
    if path.is_symlink():
        raise UsageError(f"{path} is a symbolic link; seqlab does not write through links: "
                         "give the real folder, or another --out")
    resolved = path.resolve()
    holder = next((p for p in resolved.parents if (p / RUN_MARKER).is_file()), None)
    own_run = run is not None and holder == Path(run).resolve()
    # A version of its export/ (TensorFlow Serving serves export/<n>, n a whole number above
    # 0: it reads "01" as a second version 1 and ignores "abc"), or its saved_model/.
    own = own_run and (resolved == holder / "saved_model"
                       or (resolved.parent == holder / EXPORT_DIR
                           and is_export_version(resolved.name)))
    if holder is not None and not own:
        where = (f"export into a version folder {holder / EXPORT_DIR}/<n> (n = 1, 2, ... up to "
                 f"{MAX_EXPORT_VERSION}, TensorFlow Serving's 64-bit version numbers; the "
                 "default is the next) or outside the run" if own_run
                 else "export outside it, or into a version folder of the exported run's export/")
        raise UsageError(f"{path} is inside the run {holder}, whose files its train wrote (its "
                         f"saved_model/ and export/ versions serve that run's model); {where}")
    export = next((p for p in resolved.parents if _holds_export(p)), None)
    if export is not None:
        raise UsageError(f"{path} is inside the SavedModel {export}, which its export wrote "
                         "(a folder added there is served with it, and blocks its --overwrite); "
                         "export outside it")
    # A folder it would create named NAME.partial: train takes one for an unfinished run (and
    # refuses to finish the run NAME beside it, as that folder is not its own).
    created = next((p for p in (resolved, *resolved.parents)
                    if p.name.endswith(PARTIAL_SUFFIX) and not p.exists()), None)
    if created is not None:
        raise UsageError(f"{path}: export would create {created}, whose name ending "
                         f"{PARTIAL_SUFFIX} seqlab gives a run while it trains (train would take "
                         "it for an unfinished run); choose another --out")
    unfinished = resolved.with_name(resolved.name + PARTIAL_SUFFIX) if resolved.name else None
    if unfinished is not None and (unfinished / RUN_MARKER).is_file():
        raise UsageError(f"{path} is where the unfinished run {unfinished} goes when its train "
                         "finishes (or is resumed and finishes); export elsewhere")
    if not path.exists():
        blocking = next((p for p in path.parents if p.exists() or p.is_symlink()), None)
        if blocking is not None and not blocking.is_dir():
            raise UsageError(f"{path}: cannot write there ({blocking} is a file, not a folder)")
        return
    if is_saved_model(path):
        if not overwrite:
            raise UsageError(
                f"{path} already holds a SavedModel; pass --overwrite to replace it, or choose "
                "another --out"
            )
        foreign = foreign_export_entries(path)
        if foreign:
            raise UsageError(
                f"{path} holds what its export did not write ({', '.join(foreign[:5])}"
                f"{', ...' if len(foreign) > 5 else ''}); --overwrite replaces the whole "
                "SavedModel, and seqlab never deletes what it did not write: move them out "
                "first, or choose another --out"
            )
    elif not path.is_dir():  # a file, a device (/dev/null) or a named pipe
        raise UsageError(f"{path} exists and is not a folder; choose another --out")
    elif any(path.iterdir()):
        raise UsageError(
            f"{path} exists and is not a SavedModel written by seqlab (no {EXPORT_MARKER}); "
            "seqlab never deletes what it did not write: choose another --out"
        )


# TensorFlow Serving reads a version folder's name as a signed 64-bit number.
MAX_EXPORT_VERSION = 2**63 - 1


def is_export_version(name):
    """Whether `name` is a version folder TensorFlow Serving serves: a whole number from 1 to
    `MAX_EXPORT_VERSION` written without leading zeros (it reads "01" as a second version 1,
    and ignores "abc")."""
    return re.fullmatch(r"[1-9][0-9]*", name) is not None and int(name) <= MAX_EXPORT_VERSION


def next_export_version(run):
    """`<run>/export/<n>`: n is one more than the highest version folder there (1 when there
    is none), as TensorFlow Serving numbers a model's versions."""
    folder = Path(run) / EXPORT_DIR
    # ASCII digits only: str.isdigit() takes "²", which int() refuses.
    versions = [int(p.name) for p in folder.iterdir() if is_export_version(p.name)] \
        if folder.is_dir() else []
    return folder / str(max(versions, default=0) + 1)


def check_export_folder(run):
    """Refuses, before any work, a run whose versions cannot be written: `<run>/export` a file
    or a link, or it (or the run, where it is not there yet) not writable. Both ended in a
    traceback after the model had loaded.

    Raises:
        UsageError: naming the path and `--out` as the way out.
    """
    folder = Path(run) / EXPORT_DIR
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise UsageError(f"{folder} is not seqlab's export folder (it is a file or a link): "
                         "move it away, or write the SavedModel elsewhere with --out")
    target = folder if folder.exists() else Path(run)
    if not os.access(target, os.W_OK | os.X_OK):
        raise UsageError(f"{target}: cannot write the SavedModel there (permission denied); "
                         "write it elsewhere with --out")


def export_path(run, out=None, overwrite=False):
    """Where `export` writes, checked: `out` (a new path, an empty folder, or a previous
    export replaced with `overwrite`), else the run's next version folder `<run>/export/<n>`.

    Raises:
        UsageError: `out` is refused (`check_export_path`), or `overwrite` without `out`
            (each export without --out is a new version: there is nothing to replace).
    """
    if out is None:
        if overwrite:
            raise UsageError(
                "--overwrite replaces the export at --out; without --out each export is a new "
                f"version under {Path(run) / EXPORT_DIR} and nothing is replaced: drop "
                "--overwrite, or give --out"
            )
        check_export_folder(run)
        return next_export_version(run)
    check_export_path(out, overwrite, run)
    _refuse_export_inside_data(run, out)
    return Path(out)


def _refuse_export_inside_data(run, out):
    """Refuses an export `out` inside a data folder the run trained on, as train refuses its
    `--out` there: the export's files would join the data's fingerprint (evaluate then refused
    the run: "has changed since the run trained on it") and be read as data by the next train
    on the folder (a charrnn train failed on the SavedModel's bytes)."""
    target = Path(out).resolve()
    for field, record in _recorded_data(run):
        path = record["path"]
        if Path(path).is_dir() and (
                target == Path(path).resolve() or Path(path).resolve() in target.parents):
            raise UsageError(
                f"--out {out} is inside the --{field.replace('_', '-')} folder {path} that the "
                f"run {run} trained on: the export's files would become part of the data; "
                "choose an --out outside it")


def final_path(out):
    """The run directory `out` as a path with a name: "." or ".." name their folder (the
    root has none)."""
    final = Path(out)
    return Path(os.path.abspath(out)) if final.name in ("", "..") else final


def partial_path(out):
    """`<out>.partial`, where `train` builds the run `out` (from the name, not the text:
    `--out runs/a/` is `runs/a.partial`, not `runs/a/.partial`; "." or ".." name their
    folder)."""
    final = final_path(out)
    return final.with_name(final.name + PARTIAL_SUFFIX)


def process_alive(pid):
    """Whether process `pid` runs on this host (another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def lock_holder(path):
    """`(pid, host, owner)` of the lock file `path`, or None where it is missing or unreadable.
    Raises FileNotFoundError where there is none."""
    try:
        owner = json.loads(Path(path).read_text(encoding="utf-8"))
        pid, host = int(owner["pid"]), str(owner["host"])
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    # A pid no process has (an edited lock): os.kill(0 or -1, 0) asks about process groups
    # (a lock refused for ever), one beyond a C int was an OverflowError traceback.
    return (pid, host, owner) if 0 < pid < 2**31 else None


def held_elsewhere(pid, host):
    """Whether a lock of process `pid` on `host` belongs to another process that may still
    run: a live one here, or any on another host (which cannot be checked from here)."""
    if host != platform.node():
        return True
    return pid != os.getpid() and process_alive(pid)


def in_use(path, pid, host, owner):
    """The refusal of a run directory whose lock `path` another process holds."""
    return UsageError(
        f"{Path(path).parent} is in use by process {pid} on {host} (since "
        f"{owner.get('since_utc', '?')}); wait for it to finish, or choose another --out. If "
        f"that process is gone, delete {path}"
    )


def refuse_busy_out(out):
    """Refuses at once an `--out` whose unfinished run another live `train` writes, before
    TensorFlow loads (`take_lock` refuses it for certain when the run starts: a second command
    into a busy --out waited 10-40 s for TensorFlow, then was refused)."""
    if not final_path(out).name:  # the root: refused where the run starts
        return
    lock = partial_path(out) / LOCK_NAME
    try:
        holder = lock_holder(lock)
    except (FileNotFoundError, NotADirectoryError):
        return
    if holder is not None and held_elsewhere(*holder[:2]):
        raise in_use(lock, *holder)
