"""The `seqlab` command line: argument parsing and dispatch to `pipelines/`.

Usage: seqlab <task> <action> [options]   (or: python cli.py ...)

Each task is a module of `pipelines/` listed in `pipelines.TASKS`; its `Task` object supplies the
config dataclass (one flag per field), the action functions and the help examples. This module
holds no modelling logic. Bad data (`DataError`) and bad settings (`UsageError`) are printed as
one line with exit status 2; `--debug` shows the traceback instead.
"""

import argparse
import dataclasses
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

from seqlab.data.errors import DataError
from seqlab.pipelines import TASKS, load_task
from seqlab.pipelines.errors import UsageError

PROG = "seqlab"
ACTIONS = {
    "train": "train a model and write a run directory",
    "evaluate": "score a trained run on its test split or on another file",
    "predict": "predict with a trained run",
    "export": "write a trained run's SavedModel for serving",
}
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def package_version():
    try:
        return _dist_version("seqlab")
    except PackageNotFoundError:
        return "0+unknown (not installed)"


def _examples(lines):
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _add_action_parsers(task_parser, task):
    """The `train|evaluate|predict|export` sub-commands of one task."""
    from seqlab.pipelines.common import add_config_arguments

    formatter = argparse.RawDescriptionHelpFormatter
    actions = task_parser.add_subparsers(dest="action", metavar="<action>")
    parsers = {}
    for action, summary in ACTIONS.items():
        parsers[action] = actions.add_parser(
            action,
            help=summary,
            description=f"{task.name} {action}: {summary}.",
            epilog=_examples(task.examples.get(action, [])),
            formatter_class=formatter,
            # Only the flags actually given override the config file and the defaults.
            argument_default=argparse.SUPPRESS,
            aliases=task.aliases.get(action, []),
        )
        # An alias dispatches to the action it names.
        parsers[action].set_defaults(action=action)
    train = parsers["train"]
    add_config_arguments(train, task.config_class)
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
            "--data", metavar="FILE", help="data file (default: the run's training data)"
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
    for action, options_class in task.options.items():
        add_config_arguments(parsers[action], options_class)
    for parser in parsers.values():
        parser.add_argument(
            "--debug", action="store_true", help="show the traceback of data and usage errors"
        )


def build_parser(task_name=None):
    """The argument parser; only the task `task_name` gets its actions (its module is imported)."""
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
            task = load_task(name)
            task_parser.description = task.description
            task_parser.epilog = _examples(
                [line for action in ACTIONS for line in task.examples.get(action, [])[:1]]
                + [f"{PROG} {name} <action> --help"]
            )
            _add_action_parsers(task_parser, task)
    return parser


def _run_action(task, action, values):
    """Calls the task's action with the parsed flags; returns its `ActionResult`."""
    from seqlab.pipelines.common import default_out, make_config, read_config_file

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
    values = vars(args)
    task_name, action = values.pop("task"), values.pop("action", None)
    if action is None:
        parser.parse_args([task_name, "--help"])
    debug = values.pop("debug", False)
    task = load_task(task_name)
    try:
        result = _run_action(task, action, values)
    except (DataError, UsageError) as error:
        if debug:
            raise
        print(f"{PROG} {task_name} {action}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    print(result.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
