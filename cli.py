"""The `seqlab` command line: argument parsing and dispatch to `pipelines/`.

Usage: seqlab <task> <action> [options]   (or: python cli.py ...)

Each task is a module of `pipelines/` listed in `pipelines.TASKS`. Its card
(`pipelines/configs/<task>.py`, no TensorFlow) supplies the config dataclass (one flag per field),
the help and the examples, so `--help` answers without loading TensorFlow; its `Task` object (the
task's module) supplies the action functions. This module holds no modelling logic. Bad data
(`DataError`) and bad settings (`UsageError`) are printed as one line with exit status 2;
`--debug` shows the traceback instead. TensorFlow's own C++ log is kept off the terminal
(`quiet_tensorflow`, called once the arguments are parsed), unless `--debug` is given or
`TF_CPP_MIN_LOG_LEVEL` is set.
"""

import argparse
import contextlib
import dataclasses
import os
import sys
import tempfile
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

from seqlab.data.errors import DataError
from seqlab.pipelines import TASKS, load_card, load_task
from seqlab.pipelines.errors import UsageError
from seqlab.pipelines.settings import add_config_arguments, make_config, read_config_file

PROG = "seqlab"
ACTIONS = {
    "train": "train a model and write a run directory",
    "evaluate": "score a trained run on its test split or on another file",
    "predict": "predict with a trained run",
    "export": "write a trained run's SavedModel for serving",
}
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
# `seqlab datasets <action>`: the registry of data/datasets.py (imports no TensorFlow).
DATASETS = "datasets"
DATASET_ACTIONS = {
    "list": "the registered names, their download size, and which are downloaded",
    "info": "where a data set comes from: URLs, size, SHA-256, license, citation",
    "download": "download a data set into the cache, checked (SHA-256) and extracted",
    "path": "the local path a task reads for a name (without downloading)",
}
TF_LOG_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
# INFO, WARNING and ERROR lines hidden: TensorFlow logs notices as errors too (cuInit's "failed
# call" without a GPU, oneDNN's "supports DT_BOOL only on platforms with AVX-512"), and a real
# error reaches the user as a Python exception.
QUIET_TF_LOG_LEVEL = "3"


def package_version():
    try:
        return _dist_version("seqlab")
    except PackageNotFoundError:
        return "0+unknown (not installed)"


@contextlib.contextmanager
def _stderr_descriptor_to(file):
    """Sends whatever is written to file descriptor 2 (C++ code included) to `file` inside the
    block."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(file.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def quiet_tensorflow(debug=False):
    """Keeps TensorFlow's C++ log off the terminal: sets `TF_CPP_MIN_LOG_LEVEL=3` and loads
    TensorFlow quietly, unless `debug` or the user set `TF_CPP_MIN_LOG_LEVEL` (kept).

    The level alone is not enough: the lines TensorFlow's libraries log while they load (the
    oneDNN and CUDA-driver notices, "All log messages before absl::InitializeLog() ...")
    ignore it. So the import runs with file descriptor 2 sent to a temporary file, which is
    shown only if the import fails. Keras's progress bars and Python's warnings are untouched.

    Args:
        debug: leave TensorFlow's logging as it is.

    Returns:
        True when the log was quieted.
    """
    if debug or TF_LOG_LEVEL_VARIABLE in os.environ:
        return False
    os.environ[TF_LOG_LEVEL_VARIABLE] = QUIET_TF_LOG_LEVEL
    if "tensorflow" in sys.modules:  # loaded earlier in this process: its load lines are out
        return True
    with tempfile.TemporaryFile() as captured:
        try:
            with _stderr_descriptor_to(captured):
                import tensorflow  # noqa: F401
        except BaseException:
            captured.seek(0)
            sys.stderr.write(captured.read().decode("utf-8", "replace"))
            raise
    return True


def _examples(lines):
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _add_action_parsers(task_parser, card):
    """The `train|evaluate|predict|export` sub-commands of one task (`card`: its `TaskCard`)."""
    formatter = argparse.RawDescriptionHelpFormatter
    actions = task_parser.add_subparsers(dest="action", metavar="<action>")
    parsers = {}
    for action, summary in ACTIONS.items():
        parsers[action] = actions.add_parser(
            action,
            help=summary,
            description=f"{card.name} {action}: {summary}.",
            epilog=_examples(card.examples.get(action, [])),
            formatter_class=formatter,
            # Only the flags actually given override the config file and the defaults.
            argument_default=argparse.SUPPRESS,
            aliases=card.aliases.get(action, []),
        )
        # An alias dispatches to the action it names.
        parsers[action].set_defaults(action=action)
    train = parsers["train"]
    add_config_arguments(train, card.config_class)
    train.add_argument(
        "--config", metavar="FILE",
        help="JSON or TOML file of settings, keys as the flags (flags given here win)",
    )
    train.add_argument(
        "--overwrite", action="store_true",
        help="replace a finished run at --out (and an unfinished one with other settings)",
    )
    for action in ("evaluate", "predict", "export"):
        parsers[action].add_argument(
            "--run", required=True, metavar="DIR", help="the run directory written by train"
        )
    for action in ("evaluate", "predict"):
        parsers[action].add_argument(
            "--data", metavar="FILE",
            help="data file, or a data-set name (seqlab datasets list) (default: the run's "
            "training data)",
        )
    parsers["evaluate"].add_argument("--output", metavar="FILE", help="write the figures as JSON")
    parsers["predict"].add_argument(
        "--output", metavar="FILE", help="where to write the predictions (default: in the run)"
    )
    parsers["export"].add_argument(
        "--out", metavar="DIR", help="SavedModel directory (default: <run>/saved_model)"
    )
    parsers["export"].add_argument(
        "--overwrite", action="store_true",
        help="replace a previous export at --out (anything else there is never deleted)",
    )
    for action, options_class in card.options.items():
        add_config_arguments(parsers[action], options_class)
    for parser in parsers.values():
        parser.add_argument(
            "--debug", action="store_true",
            help="show the traceback of data and usage errors, and TensorFlow's own log",
        )


def build_parser(task_name=None):
    """The argument parser; only the task `task_name` gets its actions (from its card: the
    task's module, and TensorFlow, are not imported)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Sequence modelling on Keras 3: recurrent and Transformer layers "
            "and five task pipelines."
        ),
        epilog=_examples(
            [
                "seqlab timeseries train                  # forecast the embedded sunspots",
                "seqlab timeseries train --help           # the task's settings",
                "seqlab timeseries predict --run runs/timeseries-20260101T000000Z",
            ]
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"{PROG} {package_version()}"
    )
    subparsers = parser.add_subparsers(dest="task", metavar="<task>")
    for name, (_, summary) in TASKS.items():
        task_parser = subparsers.add_parser(
            name, help=summary, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        if name == task_name:
            card = load_card(name)
            task_parser.description = card.description
            task_parser.epilog = _examples(
                [line for action in ACTIONS for line in card.examples.get(action, [])[:1]]
                + [f"{PROG} {name} <action> --help"]
            )
            _add_action_parsers(task_parser, card)
    _add_datasets_parser(subparsers)
    return parser


def _add_datasets_parser(subparsers):
    """`seqlab datasets list|info|download|path`."""
    parser = subparsers.add_parser(
        DATASETS,
        help="list, describe and download the public data sets that --data takes by name",
        description=(
            "The public data sets and word vectors that every task's --data takes by name "
            "(downloaded on first use). The cache is ~/.keras/datasets/seqlab/ or "
            "$SEQLAB_DATA_HOME; SEQLAB_DATA_MIRROR=URL fetches URL/<name>/<file> instead of "
            "the origin."
        ),
        epilog=_examples([f"{PROG} datasets list", f"{PROG} datasets info wnut17",
                          f"{PROG} datasets download tinyshakespeare",
                          f"{PROG} charrnn train --data tinyshakespeare"]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="<action>")
    for action, summary in DATASET_ACTIONS.items():
        action_parser = actions.add_parser(action, help=summary,
                                           description=f"datasets {action}: {summary}.")
        if action != "list":
            action_parser.add_argument("name", metavar="NAME",
                                       help=f"a registered name ({PROG} datasets list)")
        action_parser.add_argument(
            "--debug", action="store_true", help="show the traceback of an error"
        )


def _datasets_command(parser, values):
    """Runs `seqlab datasets <action>`; returns the exit status."""
    from seqlab.data import datasets

    action = values.get("action")
    if action is None:
        parser.parse_args([DATASETS, "--help"])
    try:
        if action == "list":
            text = datasets.format_list()
        elif action == "info":
            text = datasets.format_info(values["name"])
        elif action == "download":
            text = str(datasets.download(values["name"]))
        else:
            text = str(datasets.path(values["name"]))
    except DataError as error:
        if values.get("debug"):
            raise
        print(f"{PROG} {DATASETS} {action}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    print(text)
    return 0


def one_line(error):
    """The message of `error` on one line: line breaks inside it (a value quoted from the data)
    are written as \\n."""
    return str(error).replace("\r", "\\r").replace("\n", "\\n")


def _run_action(task, action, values):
    """Calls the task's action with the parsed flags; returns its `ActionResult`."""
    from seqlab.pipelines.common import default_out

    if action != "train":
        # Only the flags given are passed: the action fills in and checks the rest through its
        # options dataclass, so a call from Python is checked the same way.
        return getattr(task, action)(**values)
    config_file = values.pop("config", None)
    overwrite = values.pop("overwrite", False)
    file_values = read_config_file(config_file) if config_file else {}
    config = make_config(task.config_class, file_values, values, origin=config_file or "config")
    if config.out is None:
        # Chosen here, so that an interrupted run can be told where to resume.
        config = dataclasses.replace(config, out=default_out(task.name))
    try:
        return task.train(config, overwrite=overwrite)
    except KeyboardInterrupt:
        print(
            f"\n{PROG}: interrupted; the finished epochs are kept in {config.out}.partial. "
            f"Rerun with the same settings and --out {config.out} to resume.",
            file=sys.stderr,
        )
        raise


def main(argv=None):
    """Runs the command line `argv` (default: `sys.argv[1:]`); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    task_name = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(task_name if task_name in TASKS else None)
    args = parser.parse_args(argv)
    if args.task is None:
        parser.print_help()
        return 0
    if args.task == DATASETS:
        return _datasets_command(parser, vars(args))
    values = vars(args)
    task_name, action = values.pop("task"), values.pop("action", None)
    if action is None:
        parser.parse_args([task_name, "--help"])
    debug = values.pop("debug", False)
    # Only now, past the parsing (and any --help), does TensorFlow load: with the task's module.
    quiet_tensorflow(debug=debug)
    task = load_task(task_name)
    try:
        result = _run_action(task, action, values)
    except (DataError, UsageError) as error:
        if debug:
            raise
        print(f"{PROG} {task_name} {action}: error: {one_line(error)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    print(result.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
