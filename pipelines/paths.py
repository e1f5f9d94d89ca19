"""Run directories and export paths, without TensorFlow.

The command line checks what it can refuse for certain (`--run` is not a finished run of the
task, `export --out` holds something else or a SavedModel without `--overwrite`) with these
functions BEFORE TensorFlow loads, so that a refusal takes a moment, not the time TensorFlow
takes to load; the lifecycle (`pipelines/lifecycle.py`) checks again with the same functions.

- `open_run`: reads a finished run's `config.json` and checks its task.
- `is_saved_model`, `check_export_path`: what an export may replace (only a previous export,
  and only with `--overwrite`).
- `export_path`: where `export` writes: `--out`, else the run's next version folder
  `<run>/export/<n>/`, the layout TensorFlow Serving reads (`--model_base_path=<run>/export`
  serves the highest version).
"""

import dataclasses
import json
from pathlib import Path

from seqlab.pipelines.errors import UsageError

# `export` without --out: `<run>/export/1/`, `<run>/export/2/`, ...
EXPORT_DIR = "export"


def read_json(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


@dataclasses.dataclass
class RunRecord:
    """A finished run read back from disk (for evaluate / predict / export).

    Attributes:
        path: the run directory.
        task: the task name recorded in config.json.
        settings: the settings dict recorded in config.json.
    """

    path: Path
    task: str
    settings: dict

    def file(self, *parts):
        return self.path.joinpath(*parts)


def open_run(path, task):
    """Reads the `config.json` of the finished run at `path` and checks it belongs to `task`.

    Raises:
        UsageError: `path` is not a finished run, or a run of another task.
    """
    path = Path(path)
    config_path = path / "config.json"
    if path.name.endswith(".partial"):
        raise UsageError(
            f"{path} is an unfinished run: rerun train with the same settings and "
            f"--out {path.with_name(path.name[:-len('.partial')])} to finish it"
        )
    if not config_path.is_file():
        hint = ""
        if Path(f"{path}.partial").is_dir():
            hint = f" ({path}.partial holds an unfinished run: rerun train to finish it)"
        raise UsageError(f"{path} is not a finished seqlab run: it has no config.json{hint}")
    try:
        record = read_json(config_path)
        settings = record["settings"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        raise UsageError(f"{config_path}: not a seqlab run's config.json ({error!r})") from None
    if record.get("task") != task:
        raise UsageError(f"{path} is a run of task {record.get('task')!r}, not {task!r}")
    return RunRecord(path=path, task=task, settings=settings)


def is_saved_model(path):
    """Whether `path` is a SavedModel directory (what an export writes)."""
    path = Path(path)
    return path.is_dir() and (path / "saved_model.pb").is_file()


def check_export_path(path, overwrite=False):
    """Refuses an export path that holds anything but a previous export to replace.

    Raises:
        UsageError: `path` is a file, a non-empty folder that is not a SavedModel, or a
            SavedModel while `overwrite` is False.
    """
    path = Path(path)
    if not path.exists():
        return
    if is_saved_model(path):
        if not overwrite:
            raise UsageError(
                f"{path} already holds a SavedModel; pass --overwrite to replace it, or choose "
                "another --out"
            )
    elif path.is_file() or any(path.iterdir()):
        raise UsageError(
            f"{path} exists and is not a SavedModel; seqlab never deletes what it did not "
            "write: choose another --out"
        )


def next_export_version(run):
    """`<run>/export/<n>`: n is one more than the highest whole-number folder there (1 when
    there is none), as TensorFlow Serving numbers a model's versions."""
    folder = Path(run) / EXPORT_DIR
    versions = [int(p.name) for p in folder.iterdir() if p.name.isdigit()] if folder.is_dir() \
        else []
    return folder / str(max(versions, default=0) + 1)


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
        return next_export_version(run)
    check_export_path(out, overwrite)
    return Path(out)
