"""The `seqlab` command line: argument parsing and dispatch to `pipelines/`.

Usage: seqlab <task> <action> [options]   (or: python cli.py ...)

Each task is a module of `pipelines/` listed in `pipelines.TASKS`. Its card
(`pipelines/configs/<task>.py`, no TensorFlow) supplies the config dataclass (one flag per field),
the help and the examples, so `--help` answers without loading TensorFlow; its `Task` object (the
task's module) supplies the action functions. This module holds no modelling logic. Bad data
(`DataError`) and bad settings (`UsageError`) are printed as one line with exit status 2;
`--debug` shows the traceback instead. Before TensorFlow loads, the arguments are parsed and
checked, a refusal that is certain is made (`--run` is not a finished run of the task, a
refused `export --out`), and the data-set names among the data flags are downloaded
(`_prepare_action`), so that these answer in seconds. TensorFlow's own C++ log is kept off the
terminal (`quiet_tensorflow`, and `import seqlab` itself: `seqlab._tf_log`), unless `--debug`
is given or `TF_CPP_MIN_LOG_LEVEL` is set.
"""

import argparse
import dataclasses
import errno
import os
import sys
import textwrap
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from pathlib import Path

from seqlab import _interrupt, _tf_log
from seqlab.data.errors import DataError, quoted
from seqlab.pipelines import TASKS, load_card, load_task
from seqlab.pipelines.errors import UsageError
from seqlab.pipelines.paths import PARTIAL_SUFFIX
from seqlab.pipelines.settings import (
    add_config_arguments,
    check_given_settings,
    checked_file_values,
    default_out,
    file_settings,
    make_config,
    read_config_file,
    refuse_unread_settings,
)

PROG = "seqlab"
ACTIONS = {
    "train": "train a model and write a run directory",
    "evaluate": "score a trained run on its test split or on another file",
    "predict": "predict with a trained run",
    "export": "write a trained run's SavedModel for serving",
}
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
# Stopped by a SIGTERM (`_interrupt.Terminated`): the shell's status of a process it ended.
EXIT_TERMINATED = 143
# Out of memory (MemoryError, TensorFlow's ResourceExhaustedError): one line, not a traceback.
EXIT_OUT_OF_MEMORY = 3
# The status of a command whose reader went away (`seqlab ... | head`): the shell's for a
# process ended by SIGPIPE.
EXIT_BROKEN_PIPE = 141
# The errors of the machine, not of seqlab, that end a command in one line (exit status 2).
ENVIRONMENT_ERRNOS = frozenset(getattr(errno, name) for name in (
    "ENAMETOOLONG", "ENOSPC", "EDQUOT", "EFBIG", "EROFS", "EACCES", "EPERM", "EIO", "ELOOP",
    "EMFILE", "ENFILE") if hasattr(errno, name))
# `seqlab datasets <action>`: the registry of data/datasets.py (imports no TensorFlow).
DATASETS = "datasets"
DATASET_ACTIONS = {
    "list": "the registered names, their download size, and which are downloaded",
    "info": "where a data set comes from: URLs, size, SHA-256, license, citation",
    "download": "download a data set into the cache, checked (SHA-256) and extracted",
    "path": "the local path a task reads for a name (without downloading)",
}
# TensorFlow's C++ log: seqlab/_tf_log.py (shared with `import seqlab`).
TF_LOG_LEVEL_VARIABLE = _tf_log.TF_LOG_LEVEL_VARIABLE
QUIET_TF_LOG_LEVEL = _tf_log.QUIET_TF_LOG_LEVEL


def package_version():
    try:
        return _dist_version("seqlab")
    except PackageNotFoundError:
        return "0+unknown (not installed)"


def quiet_tensorflow(debug=False):
    """Keeps TensorFlow's C++ log off the terminal: sets `TF_CPP_MIN_LOG_LEVEL=3` and loads
    TensorFlow quietly, unless `debug` or the user set `TF_CPP_MIN_LOG_LEVEL` (kept).

    The level alone is not enough: the lines TensorFlow's libraries log while they load (the
    oneDNN and CUDA-driver notices, "All log messages before absl::InitializeLog() ...")
    ignore it. So the import runs with file descriptor 2 sent to a temporary file, which is
    shown only if the import fails. TensorFlow's Python warning that functions were traced
    again is dropped (`--backtest` builds a model per fold, on purpose). Keras's progress bars
    and Python's other warnings are untouched.

    Args:
        debug: leave TensorFlow's logging as it is.

    Returns:
        True when the log was quieted.
    """
    if debug:
        _tf_log.leave_loud()
        return False
    _tf_log.hide_retracing_warnings()  # Python's side of TensorFlow's log
    if not _tf_log.quiet_on_import():  # the user's own TF_CPP_MIN_LOG_LEVEL: kept
        return False
    if "tensorflow" in sys.modules:  # loaded earlier in this process: its load lines are out
        return True
    _tf_log.remove_hook()  # imported here, under the same capture
    with _tf_log.quiet_descriptor_2():
        import tensorflow  # noqa: F401
    return True


class _OneConfigFile(argparse.Action):
    """`--config FILE`, given at most once: a second file replaced the first silently (its
    settings were lost without a word), though a reader might expect them merged."""

    def __call__(self, parser, namespace, value, option_string=None):
        given = getattr(namespace, self.dest, None)
        if given is not None:
            parser.error(f"--config is given twice ({given} and {value}); give one file (the "
                         "flags on the command line win over it)")
        setattr(namespace, self.dest, value)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Argparse's help, with flag help wrapped at spaces only: a data-set name such as
    `daily-min-temperatures` stays whole, so that it can be copied."""

    def _split_lines(self, text, width):
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def _examples(lines):
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _add_action_parsers(task_parser, card):
    """The `train|evaluate|predict|export` sub-commands of one task (`card`: its `TaskCard`)."""
    formatter = _HelpFormatter
    # The name typed (an alias too) goes to `typed_action`, for error messages; `action` is the
    # action it names.
    actions = task_parser.add_subparsers(dest="typed_action", metavar="<action>",
                                         action=_TypedSubCommands)
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
        "--config", metavar="FILE", action=_OneConfigFile,
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
        # Only a forecast continues the run's own data; the other tasks predict what they
        # are given.
        default = (" (default: the run's training data)"
                   if action == "evaluate" or card.name == "timeseries" else "")
        parsers[action].add_argument(
            "--data", metavar="FILE",
            help=f"data file, or a data-set name (seqlab datasets list){default}",
        )
    parsers["evaluate"].add_argument("--output", metavar="FILE", help="write the figures as JSON")
    parsers["predict"].add_argument(
        "--output", metavar="FILE", help="where to write the predictions (default: in the run)"
    )
    parsers["export"].add_argument(
        "--out", metavar="DIR",
        help="SavedModel directory (default: the run's next version <run>/export/<n>, as "
        "TensorFlow Serving numbers versions)",
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


class _TypedSubCommands(argparse._SubParsersAction):
    """Sub-commands whose usage and errors name the action as it was typed: an alias shares
    its action's parser, so `charrnn generate --seed 1.5` was "seqlab charrnn predict:
    error: ...", a command the user had not typed."""

    def __call__(self, parser, namespace, values, option_string=None):
        chosen = self._name_parser_map.get(values[0]) if values else None
        if chosen is not None:
            chosen.prog = f"{chosen.prog.rsplit(' ', 1)[0]} {values[0]}"
        super().__call__(parser, namespace, values, option_string)


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
        print(f"\n{PROG} {DATASETS} {action}: interrupted; nothing of the unfinished file was "
              "kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(text)
    return 0


# Every character `str.splitlines` breaks a line at (so do some terminals and log readers):
# the file separators \x1c-\x1e and NEL, LINE and PARAGRAPH SEPARATOR besides \n, \r, \v, \f.
_LINE_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in
                              "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


def one_line(error):
    """The message of `error` on one line: line breaks inside it (a value quoted from the data)
    are written as escapes (\\n, \\x1e)."""
    return str(error).translate(_LINE_BREAKS)


# Config fields and action flags that may name a registered data set (`seqlab datasets list`).
DATA_SET_FIELDS = ("data", "validation_data", "test_data", "src", "tgt", "embeddings")


LINK_LOOP = "a loop of symbolic links"


def _broken_link(path):
    """What the symbolic link `path` is when it leads nowhere, `LINK_LOOP` or "a link to
    TARGET, which does not exist", else None (no link, or one to something)."""
    if not os.path.islink(path):
        return None
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return LINK_LOOP
        return f"a link to {os.readlink(path)}, which does not exist"
    return None


def _fetch_named_data_sets(values, task, from_file=(), origin=None):
    """Downloads (or finds in the cache) each registered data-set name among `values`' data
    fields, before TensorFlow loads: a download that cannot succeed fails in seconds; a name
    of another task's data (or word vectors where data is expected) is refused, not fetched
    (`--data glove.6B.300d` would have downloaded 862 MB). A value that is neither a name nor
    an existing path is refused as early (it failed only once TensorFlow had loaded, 10-20 s on
    a busy machine), with the name it may be a typo of, and the config file `origin` when it
    gave the value (`from_file`: the names it gave). `--input` is a file, never a name nor a
    folder."""
    from seqlab.data import datasets

    for field in (*DATA_SET_FIELDS, "input"):
        value = values.get(field)
        if not isinstance(value, str):
            continue
        if field != "input" and datasets.is_name(value):
            _refuse_other_kind(field, value, task, datasets.REGISTRY[value].usage)
            datasets.download(value)
        elif not os.path.exists(value):
            broken = _broken_link(value)  # named, not its target
            if broken:
                raise DataError(broken + ("; expected a file or folder" if broken == LINK_LOOP
                                          else ""), path=value)
            if value.endswith(("/", os.sep)) and os.path.isfile(value.rstrip("/" + os.sep)):
                raise DataError("is a file, but the / at its end names a folder; expected the "
                                "file's path without it", path=value)
            raise _not_found(field, value, datasets.names(),
                             origin if field in from_file else None)
        elif field == "input" and os.path.isdir(value):
            raise DataError("is a folder, not a file; expected a file", path=value)


def _refuse_other_kind(field, name, task, usage):
    """Refuses a registered `name` given to `field` of `task` that is another task's data
    set, or word vectors given as data (or data as word vectors): its `usage` names the task
    that reads it ("seqlab sentiment train --data imdb ..."; vectors have none)."""
    import re

    owner = re.match(r"seqlab (\w+) train\b", usage)
    flag = f"--{field.replace('_', '-')}"
    if field == "embeddings":
        if owner:
            raise UsageError(f"{flag} {name}: {name} is a data set of seqlab {owner.group(1)}, "
                             "not word vectors; expected a vector file or a name such as "
                             "glove.6B.100d")
    elif owner is None:
        raise UsageError(f"{flag} {name}: {name} is word vectors (for --embeddings), not data "
                         f"for seqlab {task}")
    elif owner.group(1) != task:
        raise UsageError(f"{flag} {name}: {name} is a data set of seqlab {owner.group(1)} "
                         f"({usage}), not of seqlab {task} (seqlab datasets list)")


def _not_found(field, value, names, origin=None):
    """The `DataError` of a data setting whose `value` is no path and no registered name;
    `origin`: the config file that gave it."""
    import difflib

    expected = ("expected a vector file, or a registered name such as glove.6B.100d"
                if field == "embeddings" else
                "expected a file" if field == "input" else
                "expected a file or folder, or a registered data set's name")
    by_case = {name.lower(): name for name in names}
    close = difflib.get_close_matches(value.lower(), list(by_case), n=1, cutoff=0.75)
    hint = (f"; did you mean the data set {by_case[close[0]]}?"
            if close and field != "input" else "")
    listing = "" if field == "input" else " (seqlab datasets list)"
    if origin is not None:
        relative = "" if os.path.isabs(value) else (
            f"; a config file's relative paths are read from the current folder, {os.getcwd()}")
        hint += f" (given as {field} in {origin}{relative})"
    return DataError(f"not found; {expected}{listing}{hint}", path=value)


# Settings that name a file or folder: an empty one would be read as the working folder.
PATH_FIELDS = (*DATA_SET_FIELDS, "input", "out", "output", "run", "config")


def _expand_home(values):
    """Paths that start with `~` (a config file's `out = "~/runs/a"`, a flag's `--out=~/a`,
    which the shell leaves as it is), expanded as the shell expands `~/a`: kept as written,
    they made a folder named `~` in the current one."""
    for name in PATH_FIELDS:
        value = values.get(name)
        if isinstance(value, str) and value.startswith("~"):
            values[name] = os.path.expanduser(value)


def _refuse_empty_paths(values, origin=None):
    """Refuses a path setting among `values` that is empty or blank: `Path("")` is the working
    folder, which a reader would take as the data (every file under it) and an `if` as unset."""
    for name in PATH_FIELDS:
        value = values.get(name)
        if isinstance(value, str) and not value.strip():
            where = f"{origin}: {name}" if origin else f"--{name.replace('_', '-')}"
            raise UsageError(f"{where} is empty ({value!r}); expected a path to a file or "
                             "folder" + (" or a data set's name" if name in DATA_SET_FIELDS
                                         else ""))


def _refuse_unwritable_paths(values, action, origin=None):
    """Refuses, before any work, a path to write that the writing would fail on only after it:
    a run's or export's name whose bytes are not UTF-8 (TensorFlow writes a SavedModel only
    under a UTF-8 name: a train ended in a UnicodeEncodeError traceback after its last epoch,
    and so did every rerun), a loop of links, or a folder on the way that is a link to nothing
    (tracebacks of RuntimeError and FileExistsError). `origin`: the config file that gave
    `values` (None: flags)."""
    fields = ("out", "output", *(("run",) if action == "export" else ()))
    for name in fields:
        value = values.get(name)
        if not isinstance(value, str):
            continue
        label = f"{origin}: {name}" if origin else f"--{name}"
        where = f"{label} {quoted(value)}"
        try:
            if name != "output":  # a CSV or text file takes any name
                value.encode("utf-8")
        except UnicodeEncodeError:  # its bytes shown as typed (r\xff), not Python's r\udcff
            typed = os.fsencode(value).decode("utf-8", "backslashreplace")
            raise UsageError(f"{label} {typed}: the name holds bytes that are not UTF-8 text; "
                             "TensorFlow writes a model only under a UTF-8 name: rename it"
                             ) from None
        path = Path(value)
        for part in (*reversed(path.parents), path):  # the outermost named first
            broken = _broken_link(part)
            if broken and (broken == LINK_LOOP or part != path):
                raise UsageError(f"{where}: {part} is {broken}; expected a folder"
                                 + (" or a path to create" if broken == LINK_LOOP else ""))


def _prepare_action(card, action, values):
    """Everything an action needs that TensorFlow does not: the train config (flags, config
    file, default `--out`), the checks that refuse for certain (`--run` is no finished run of
    the task, a refused `export --out`, an `--output` over the run's files or the data), and
    the named data sets, downloaded. Returns the keyword arguments of the action."""
    from seqlab.pipelines.paths import (
        READ_OPTIONS, check_output, export_path, open_run, refuse_busy_out,
    )

    _refuse_empty_paths(values)
    _expand_home(values)  # `--out=~/runs/a`: the shell leaves a `~` after `=`
    _refuse_unwritable_paths(values, action)
    if action == "train":
        config_file = values.pop("config", None)
        overwrite = values.pop("overwrite", False)
        file_values = read_config_file(config_file) if config_file else {}
        _refuse_empty_paths(file_values, origin=config_file)
        _expand_home(file_values)
        if values.get("out") is None:  # the file's `out` is the run's
            _refuse_unwritable_paths({"out": file_values.get("out")}, action, config_file)
        # Typed before the data settings read them (`{"time_column": 5}` was a TypeError).
        file_values = checked_file_values(card.config_class, file_values,
                                          origin=config_file or "config")
        # Limits before the data settings read the data (docs/cli.md#limits).
        check_given_settings(card.config_class, {
            name: value for name, value in file_values.items() if values.get(name) is None
        }, origin=config_file)
        check_given_settings(card.config_class, values, as_flags=True)
        if card.data_settings is not None:
            found, notes = card.data_settings({**file_values, **values})
            values.update(found)
            for note in notes:
                print(f"{PROG} {card.name} train: {note}", file=sys.stderr)
        config = make_config(card.config_class, file_values, values,
                             origin=config_file or "config", as_flags=True)
        from_file = file_settings(file_values, values)
        refuse_unread_settings(config, from_file, config_file)  # named as the file gave them
        if config.out is None:
            # Chosen here, so that an interrupted run can be told where to resume.
            config = dataclasses.replace(config, out=default_out(card.name))
        elif config.distribute != "multiworker":  # a worker's --out is its chief's
            refuse_busy_out(config.out)
        _fetch_named_data_sets(dataclasses.asdict(config), card.name, from_file, config_file)
        return {"config": config, "overwrite": overwrite}
    record = open_run(values["run"], card.name)
    if values.get("output") is not None:
        check_output(values["output"], values["run"], record.settings,
                     [values.get(name) for name in READ_OPTIONS])
    if action == "export":
        export_path(values["run"], values.get("out"), values.get("overwrite", False))
    _fetch_named_data_sets(values, card.name)
    return values


def train_config(task_name, flags):
    """The config `seqlab TASK_NAME train FLAGS` trains with (defaults filled in, named data
    sets downloaded): for a script that runs the command line's training in its own process,
    as the benchmarks do.

    Example:

    >>> config = train_config("timeseries", ["--data", "sales.csv", "--out", "runs/sales"])
    """
    values = vars(build_parser(task_name).parse_args([task_name, "train", *flags]))
    for key in ("task", "action", "typed_action", "debug"):
        values.pop(key, None)
    return _prepare_action(load_card(task_name), "train", values)["config"]


def _run_action(task, action, arguments):
    """Calls the task's action with the prepared arguments; returns its `ActionResult`."""
    if action != "train":
        # Only the flags given are passed: the action fills in and checks the rest through its
        # options dataclass, so a call from Python is checked the same way.
        return getattr(task, action)(**arguments)
    config = arguments["config"]
    try:
        try:
            return task.train(config, overwrite=arguments["overwrite"])
        except Exception as error:  # noqa: BLE001 - only an interrupt in disguise is turned
            if not interrupted_in(error):
                raise
            raise KeyboardInterrupt from error
    except KeyboardInterrupt:
        partial = f"{config.out}{PARTIAL_SUFFIX}"
        if os.path.isdir(partial):
            print(f"\n{PROG}: interrupted; the finished epochs are kept in {partial}. Rerun "
                  f"with the same settings and --out {config.out} to resume.", file=sys.stderr)
        else:  # stopped while reading the data or fitting before the run directory started
            print(f"\n{PROG}: interrupted before the run directory was started; nothing was "
                  "kept. Rerun the command to start again.", file=sys.stderr)
        raise


def interrupted_in(error):
    """Whether `error` is a Ctrl-C in disguise: TensorFlow's C++ layer, interrupted while it
    traced a graph, re-raises it as another error (pybind11's "... REPLACED BY
    KeyboardInterrupt"), or raises one of its own while handling it."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt) or "REPLACED BY KeyboardInterrupt" in str(error):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def main(argv=None):
    """Runs the command line `argv` (default: `sys.argv[1:]`); returns the exit status.

    Output piped into a reader that stops early (`| head`) ends the command quietly, as it
    ends other command-line tools, with the status of a broken pipe (an interrupted `train`
    is resumed by the same command)."""
    closed = [name for name in ("stdout", "stderr") if getattr(sys, name) is None]
    for name in closed:  # started with it closed (`>&-`): its output goes nowhere
        setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    if "stdout" in closed:  # said once, as the output of a full device is
        print(f"{PROG}: standard output is closed; its text is dropped", file=sys.stderr)
    guard = sys.stdout = _OutputGuard(sys.stdout)
    try:
        try:
            with _interrupt.watching():
                status = _main(argv)
                if status == EXIT_INTERRUPTED and _interrupt.terminated():
                    return EXIT_TERMINATED
                return status
        finally:
            sys.stdout.flush()  # a pipe's buffered output: broken here, not at the exit
    except BrokenPipeError:
        # Later writes to the closed pipe (Python's own flush at exit) go nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    finally:
        if sys.stdout is guard:
            sys.stdout = guard.stream


class _OutputGuard:
    """Standard output that cannot be written (`> /dev/full`, a full disk) drops the rest of
    its text, said once on stderr, instead of killing the command midway (a train in the middle
    of an epoch, its run left unfinished). A broken pipe still ends the command (`main`)."""

    def __init__(self, stream):
        self.stream = stream
        self.failed = False

    def _guarded(self, call, *args):
        if self.failed:
            return None
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as error:
            self.failed = True
            print(f"{PROG}: standard output cannot be written ({error.strerror or error}); "
                  "the rest of it is dropped", file=sys.stderr)
            return None

    def write(self, text):
        written = self._guarded(self.stream.write, text)
        return len(text) if written is None else written

    def flush(self):
        self._guarded(self.stream.flush)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _main(argv):
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
    typed = values.pop("typed_action", action)
    if action is None:
        parser.parse_args([task_name, "--help"])
    debug = values.pop("debug", False)
    started = False
    try:
        # Settings, certain refusals and downloads first: they need no TensorFlow.
        arguments = _prepare_action(load_card(task_name), action, values)
        # Only now, past the parsing (and any --help), does TensorFlow load: with the task's
        # module.
        quiet_tensorflow(debug=debug)
        task = load_task(task_name)
        started = True
        result = _run_action(task, action, arguments)
    except (DataError, UsageError) as error:
        if debug:
            raise
        print(f"{PROG} {task_name} {typed}: error: {one_line(error)}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        # What the machine refuses, wherever a path meets it (a name longer than the file
        # system's limit, a full disk, a read-only or forbidden folder): one line naming the
        # path, not a traceback; the actions' own checks name most of these earlier.
        if debug or error.errno not in ENVIRONMENT_ERRNOS:
            raise
        named = isinstance(error.filename, (str, bytes, os.PathLike))
        path = os.fsdecode(error.filename) if named else ""
        where = f": {quoted(path)}" if named else ""
        if named and error.errno == errno.ENAMETOOLONG:
            longest = max(path.split(os.sep), key=len)
            where = f": the name {quoted(longest, 40)} in {quoted(path)}"
            if longest.endswith(PARTIAL_SUFFIX):
                where += (f" (a run or an export is written as NAME{PARTIAL_SUFFIX} first, "
                          f"then renamed: NAME must be {len(PARTIAL_SUFFIX)} characters "
                          "shorter than the file system's limit)")
        print(f"{PROG} {task_name} {typed}: error: {error.strerror}{where} (--debug shows "
              "where)", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        if not started:  # while it checked the settings or loaded TensorFlow
            print(f"\n{PROG}: interrupted before {task_name} {typed} started; nothing was "
                  "written.", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:  # noqa: BLE001 - only running out of memory is turned, below
        if not debug and interrupted_in(error):  # evaluate, predict or export interrupted
            return EXIT_INTERRUPTED
        if debug or not _out_of_memory(error):
            raise
        detail = (str(error).strip().splitlines() or [""])[0][:200]
        print(f"{PROG} {task_name} {typed}: error: out of memory"
              + (f" ({one_line(detail)})" if detail else "")
              + ": the data or settings need more memory than this machine has; use less data "
              "or smaller settings (--debug shows where)", file=sys.stderr)
        return EXIT_OUT_OF_MEMORY
    print(result.summary)
    return 0


def _out_of_memory(error):
    """Whether `error` is running out of memory: Python's (NumPy's too) or TensorFlow's, whose
    class is looked up only where TensorFlow is loaded (the CLI does not load it to parse)."""
    if isinstance(error, MemoryError):
        return True
    tensorflow = sys.modules.get("tensorflow")
    errors = getattr(tensorflow, "errors", None)
    return errors is not None and isinstance(error, errors.ResourceExhaustedError)


if __name__ == "__main__":
    sys.exit(main())
