"""A task's settings, without TensorFlow: config dataclasses, their flags and their checks.

The command line builds every `--help` from this module and the task's `configs/<task>.py`
alone, so help answers without loading TensorFlow (`pipelines/common.py` and the task modules
import keras).

- A task's settings are a dataclass derived from `TrainConfig`. Each field is a command line flag
  (`batch_size` -> `--batch-size`) and a key of `--config FILE` (JSON or TOML); flags win over the
  file, the file over the dataclass defaults. `option()` declares a field with its help.
- Shared config checks: `check_at_least`, `check_positive`, `check_rate`,
  `check_split_fractions`, `check_embedding_settings`; `fill_in_setting` for a setting the
  data decides.
- `add_config_arguments`, `read_config_file` and `make_config` turn flags and files into a config.
- `TaskCard`: what the command line shows of a task (name, help, examples, flags, aliases).

A bad setting is a `UsageError`: the CLI prints it as one line and exits with status 2.
"""

import argparse
import dataclasses
import datetime
import json
import math
import os
import re
import tomllib
import types
import typing
from pathlib import Path

from seqlab.pipelines.errors import UsageError, parse_failure


def utc_timestamp():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def default_out(task):
    """`runs/<task>-<UTC timestamp>`, the `--out` of a train that is given none."""
    return str(Path("runs") / f"{task}-{utc_timestamp()}")


def data_set_names(task):
    """The registered data-set names whose usage line is `seqlab <task> ...` (no TensorFlow:
    `data/datasets.py` imports none)."""
    from seqlab.data import datasets

    return [name for name in datasets.names()
            if datasets.REGISTRY[name].usage.startswith(f"seqlab {task} ")]


def data_help(task, what, default):
    """The help of a task's `--data`: what a path holds, that a data-set name is taken too
    (downloaded on first use), and the default."""
    names = data_set_names(task)
    listed = f" ({', '.join(names)}; seqlab datasets list)" if names else " (seqlab datasets list)"
    return (f"{what}; or a data-set name{listed}, downloaded on first use "
            f"(default: {default})")


def option(default, help, choices=None, positional=False, metavar=None):
    """A config field with its command-line help (and allowed values).

    Args:
        default: the value when neither a flag nor the config file sets it. Mutable defaults
            (lists) are copied per instance.
        help: the flag's help line.
        choices: the allowed values, if only some are.
        positional: a positional argument (`seqlab sentiment predict TEXT ...`) instead of a
            `--flag`; a list field takes any number of values.
        metavar: the value's name in the help (default: the field name in capitals).
    """
    metadata = {"help": help, "choices": choices, "positional": positional, "metavar": metavar}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass
class TrainConfig:
    """The settings every task's `train` has. Task configs derive from this.

    A task that wants other defaults redeclares the field with `option(...)`.
    """

    data: str | None = option(None, "training data file or folder, or a registered data-set "
                              "name (seqlab datasets list), downloaded on first use "
                              "(default: the task's embedded data)")
    out: str | None = option(
        None, "run directory to write (default: runs/<task>-<UTC timestamp>)"
    )
    epochs: int = option(10, "maximum number of training epochs")
    batch_size: int = option(32, "examples per batch")
    seed: int = option(42, "random seed (same seed, same machine: same metrics)")
    distribute: str = option(
        "none",
        "tf.distribute strategy: local devices (mirrored) or the TF_CONFIG cluster (multiworker)",
        ["none", "mirrored", "multiworker"],
    )
    tensorboard: bool = option(
        False,
        "write TensorBoard logs (losses and metrics per epoch, the graph) to <out>/tensorboard; "
        "view them with: tensorboard --logdir <out>/tensorboard",
    )
    max_minutes: float | None = option(
        None, "stop after the first epoch that ends past this many minutes of training in this "
        "session; the best epoch so far is kept, and the summary says training stopped on time "
        "(default: no limit)", metavar="MINUTES"
    )

    def read_only_with(self):
        """The settings that other settings may leave unread (`refuse_unread_settings`): the
        task config's `READ_ONLY_WITH`, or none."""
        return getattr(self, "READ_ONLY_WITH", {})

    def refuse_unread(self, given):
        """Refuses a setting left unread by a rule that is no other setting's value (translate's
        `tsv_columns`, read only from a TSV file), as `refuse_unread_settings` does the rest;
        `given(name, value)` names the setting as the user gave it. None here."""

    def __post_init__(self):
        check_settings(self)
        check_at_least(self, 1, "epochs", "batch_size")
        check_positive(self, "max_minutes")
        if hasattr(self, "learning_rate"):
            check_positive(self, "learning_rate")
        if hasattr(self, "clipnorm"):
            check_positive(self, "clipnorm")


# The largest value of every size a user sets, by setting name (any task's config or action
# options that has the setting), checked before any work; docs/cli.md lists them. They keep a
# typo (`--lookback 1000000000`) from running for hours or running out of memory.
# `num_chars` is also the SavedModel's limit (models/char_lm.py MAX_NUM_CHARS; a test checks).
MAXIMUMS = {
    "epochs": 100_000, "batch_size": 65_536, "patience": 100_000,
    "units": 8_192, "ff_dim": 65_536, "embedding_dim": 8_192, "word_dim": 8_192,
    "char_dim": 1_024, "char_units": 4_096, "char_kernel": 64, "layers": 64, "num_heads": 256,
    "lookback": 100_000, "horizon": 10_000, "holdout": 10_000, "stride": 100_000,
    "season": 100_000, "backtest": 100, "auto_folds": 100,
    "window": 100_000, "sample_chars": 100_000, "num_chars": 100_000, "top_k": 100_000,
    "max_train_chars": 10**12,
    "vocabulary_size": 10_000_000, "max_vocabulary": 10_000_000, "sequence_length": 100_000,
    "ngrams": 10, "ensemble": 100, "min_count": 10**9, "max_word_chars": 1_000,
    "max_length": 10_000, "beam_width": 64, "n_best": 64, "warmup_steps": 10**9,
    "attention_plots": 100, "token_column": 999, "tag_column": 999,
    "learning_rate": 10.0, "clipnorm": 1e6, "length_penalty": 10.0, "max_minutes": 10**7,
}
# The smallest values that `check_at_least` and the like do not already give.
MINIMUMS = {"token_column": -999, "tag_column": -999}
SEED_RANGE = (0, 2**31 - 1)


def check_settings(config):
    """Every field of a config or options dataclass: the type its annotation names (numbers
    finite), within `MAXIMUMS` / `MINIMUMS`, and a `seed` within `SEED_RANGE`.

    Raises:
        ValueError: "<name> must ... Received: <name>=<value>".
    """
    for field in dataclasses.fields(config):
        _check_setting(field, getattr(config, field.name))


def check_given_settings(config_class, values, origin=None, as_flags=False):
    """The settings in `values` (flags and a config file's, before the config is built) checked
    as `check_settings` checks a config's, so that a value beyond its limit is refused before
    any data is read (the id column found in a long table was reported first); unset (None)
    and unknown names are left to the config. `origin`: the config file they came from, named
    in front of the message. `as_flags`: `values` are flags, named as such (`named_as_flags`).

    Raises:
        UsageError: "<name> must ... Received: <name>=<value>".
    """
    fields = {field.name: field for field in dataclasses.fields(config_class)}
    try:
        for name, value in values.items():
            if name in fields and value is not None:
                _check_setting(fields[name], value)
    except ValueError as error:
        given = {name for name, value in values.items() if value is not None}
        message = named_as_flags(str(error), given) if as_flags else str(error)
        raise UsageError(f"{origin}: {message}" if origin else message) from None


def _check_setting(field, value):
    name = field.name
    base, is_list, optional = _field_type(field)
    if value is None and optional:
        return
    values = value if is_list and isinstance(value, (list, tuple)) else [value]
    # A list of names may be given as one name (as in a config file: `target = "y"`).
    if is_list and not isinstance(value, (list, tuple)) and base is not str:
        raise ValueError(f"{name} must be a list of {base.__name__}. Received: "
                         f"{name}={value!r}")
    for item in values:
        _check_value(name, base, item)
        if base in (int, float):
            high, low = MAXIMUMS.get(name), MINIMUMS.get(name)
            if name == "seed":
                low, high = SEED_RANGE
            if high is not None and item > high:
                raise ValueError(f"{name} must be at most {high}. Received: {name}={item}")
            if low is not None and item < low:
                raise ValueError(f"{name} must be at least {low}. Received: {name}={item}")


def _check_value(name, base, value):
    if base is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif base is float:
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value))
    elif base is str:
        ok = isinstance(value, (str, os.PathLike))
    else:
        ok = isinstance(value, base)
    if not ok:
        what = "a finite number" if base is float else base.__name__
        raise ValueError(f"{name} must be {what}. Received: {name}={value!r}")


# The checks task configs share in `__post_init__`. Each raises `ValueError("<name> must ...
# Received: <name>=<value>")`, which `make_config` turns into a one-line `UsageError`.


def check_at_least(config, minimum, *names):
    """Each named setting is at least `minimum` (None counts as unset and passes)."""
    for name in names:
        value = getattr(config, name)
        if value is not None and value < minimum:
            raise ValueError(f"{name} must be at least {minimum}. Received: {name}={value}")


def check_distinct(config, *names):
    """No named list setting (None passes) names one value twice: `--target a a` forecast the
    column twice, under one name."""
    for name in names:
        values = getattr(config, name) or []
        if isinstance(values, str):  # one name, not a list of them: nothing repeats
            continue
        seen = set()
        for value in values:
            if value in seen:
                raise ValueError(f"{name} must name each column once; {value!r} is named more "
                                 f"than once. Received: {name}={values}")
            seen.add(value)


def check_positive(config, *names):
    """Each named number is above 0 (None passes). NaN is refused."""
    for name in names:
        value = getattr(config, name)
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be positive. Received: {name}={value}")


def check_rate(config, *names, zero_allowed=True):
    """Each named rate lies in [0, 1), or in (0, 1) without `zero_allowed`. NaN is refused."""
    for name in names:
        value = getattr(config, name)
        if not (0 <= value < 1 if zero_allowed else 0 < value < 1):
            interval = "[0, 1)" if zero_allowed else "(0, 1)"
            raise ValueError(f"{name} must lie in {interval}. Received: {name}={value}")


def check_embedding_settings(config, size_name, default_size):
    """Pretrained-vector settings: the embedding size `size_name` defaults to `default_size`
    unless `--embeddings` is given (then `prepare` takes the vectors' dimension), and
    `--freeze-embeddings` needs `--embeddings`."""
    if getattr(config, size_name) is None and config.embeddings is None:
        setattr(config, size_name, default_size)
    if config.freeze_embeddings and config.embeddings is None:
        raise ValueError("freeze_embeddings keeps pretrained vectors fixed: give them with "
                         "--embeddings. Received: embeddings=None")


def check_split_fractions(config, validation_may_be_zero=True):
    """`val_fraction` in [0, 1) (or (0, 1)), `test_fraction` in (0, 1), their sum below 1."""
    val, test = config.val_fraction, config.test_fraction
    val_ok = 0 <= val < 1 if validation_may_be_zero else 0 < val < 1
    if not (val_ok and 0 < test < 1 and val + test < 1):
        interval = "[0, 1)" if validation_may_be_zero else "(0, 1)"
        raise ValueError(
            f"val_fraction must lie in {interval}, test_fraction in (0, 1), their sum below 1. "
            f"Received: val_fraction={val}, test_fraction={test}"
        )


def fill_in_setting(config, name, value, reason):
    """Sets the setting `name`, left unset (None) for the data to decide, to `value` and checks
    the config again (a task's `prepare` does this before the run's config.json is written).

    Raises:
        UsageError: the config refuses the value; the message says where it came from (`reason`).
    """
    setattr(config, name, value)
    try:
        config.__post_init__()
    except ValueError as error:
        raise UsageError(f"{error} ({name}={value}: {reason})") from None


def _field_type(field):
    """`(base type, is list, may be None)` of a config field's annotation."""
    annotation, optional = field.type, False
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(arguments) < len(typing.get_args(annotation))
        (annotation,) = arguments
    if typing.get_origin(annotation) is list:
        return typing.get_args(annotation)[0], True, optional
    return annotation, False, optional


def flag_name(name):
    return "--" + name.replace("_", "-")


def named_as_flags(message, names):
    """A refused setting's `message` ("<name> must ... Received: <name>=<value>, ...", as the
    config checks word it for Python) as the command line says it: each of `names`, the
    settings that are flags there, written as its flag ("--lookback must be at least 1.
    Received: --lookback 0"; a switch as typed, `--crf` or `--no-crf`; "no --embeddings" for
    one left unset). Before "Received:" only the subject and names with an underscore are
    rewritten: a plain name elsewhere may be a word of the sentence ("a target is a column")."""
    head, mark, received = message.rpartition(" Received: ")
    if not mark:
        head, received = message, ""
    for name in names:
        flag = flag_name(name)
        if "_" in name:
            head = re.sub(rf"(?<![\w-]){name}(?!\w)", flag, head)
        else:
            head = re.sub(rf"^{name}(?![\w-])", flag, head)
        # Only at an item's start: a value's own text ("features=['units=kg']") is kept.
        item = r"(?:^|(?<=, ))"
        for value, typed in ((True, typed_flag(name, True)), (False, typed_flag(name, False)),
                             (None, f"no {flag}")):
            received = re.sub(rf"{item}{name}={value}\b", typed, received)
        received = re.sub(rf"{item}{name}=", f"{flag} ", received)
    return head + (mark + received if mark else "")


def typed_flag(name, value):
    """How `name=value` is typed on the command line: `--units 8`, `--crf`, `--no-crf`."""
    if isinstance(value, bool):
        return flag_name(name) if value else f"--no-{name.replace('_', '-')}"
    if isinstance(value, (list, tuple)):
        return " ".join([flag_name(name), *map(str, value)])
    return f"{flag_name(name)} {value}"


def refuse_unread_settings(config, from_file=(), origin=None):
    """Refuses a setting given another value than its default where the config's other
    settings say it is not read: `config.READ_ONLY_WITH` (or its `read_only_with()`, where
    the rules depend on the settings) maps such a setting to `(the other setting, the values
    of it under which the setting is read)`. A setting silently ignored
    (`--ngrams 5` for a gru) gives a result the user did not ask for. The settings named in
    `from_file` came from the config file `origin` and are named as its keys, not as flags.

    Raises:
        UsageError: naming the first such setting and the one that rules it out.
    """
    def given(key, value):
        if key in from_file:
            return f"{key} = {json.dumps(value, default=str)} in {origin}"
        return typed_flag(key, value)

    for name, (other, values) in config.read_only_with().items():
        value, ruling = getattr(config, name), getattr(config, other)
        if ruling in values:
            continue
        # The default as the config fills it in beside the ruling choice (timeseries: one
        # series' --units 32 for a linear model too), else the field's.
        try:
            default = getattr(type(config)(**{other: ruling}), name)
        except (TypeError, ValueError):
            default = next(f.default for f in dataclasses.fields(config) if f.name == name)
        if value != default:
            needs = " or ".join(typed_flag(other, v) for v in values)
            choose = needs
            if len(values) > 2:  # "--model auto, gru, lstm or cnn" rather than four flags
                needs = (f"{flag_name(other)} {', '.join(map(str, values[:-1]))} or "
                         f"{values[-1]}")
                choose = "one of those"
            raise UsageError(f"{given(name, value)} is read only with {needs}, not with "
                             f"{given(other, ruling)}: leave it out, or choose {choose}")
    config.refuse_unread(given)


# Training holds each float32 parameter four times: the weight, its gradient and Adam's two
# moments (activations come on top).
TRAINING_BYTES_PER_PARAMETER = 16
# From here `train` says that it is building the model before it does: Keras's orthogonal
# initialiser factors each recurrent kernel, about 40 s for 4,096 GRU units on a 2-core CPU.
LARGE_MODEL_PARAMETERS = 50_000_000
_GATES = {"simple_rnn": 1, "gru": 3, "lstm": 4}


def recurrent_parameters(kind, input_dim, units, layers, bidirectional=False):
    """The weights of `layers` stacked recurrent layers of `kind` (simple_rnn, gru, lstm)
    over `input_dim` features, as Keras lays them out (GRU: two biases, `reset_after`)."""
    gates, count = _GATES[kind], 0
    directions = 2 if bidirectional else 1
    for _ in range(layers):
        biases = (2 if kind == "gru" else 1) * gates * units
        count += directions * (gates * units * (input_dim + units) + biases)
        input_dim = directions * units
    return count


def physical_memory():
    """Bytes of memory this machine (or its container's limit) has; None where unknown."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = None
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit.isdigit():
            total = min(int(limit), total or int(limit))
    except OSError:
        pass
    return total


def refuse_oversized_model(parameters, flags):
    """Refuses settings whose model cannot be trained in this machine's memory: `parameters`
    (a lower bound) times `TRAINING_BYTES_PER_PARAMETER` above `physical_memory()`. Such a
    run was silent for hours while Keras initialised its kernels, then ran out of memory.

    Raises:
        UsageError: naming `flags`, the parameters and the memory both need.
    """
    memory = physical_memory()
    needed = parameters * TRAINING_BYTES_PER_PARAMETER
    if memory is not None and needed > memory:
        raise UsageError(
            f"{flags}: the model has at least {parameters:,} parameters, whose training needs "
            f"at least {needed / 2**30:,.1f} GiB (weights, gradients and Adam's two moments, "
            f"{TRAINING_BYTES_PER_PARAMETER} bytes each), and this machine has "
            f"{memory / 2**30:,.1f} GiB: choose smaller sizes")


def add_config_arguments(parser, config_class):
    """Adds one flag per field of `config_class` to `parser`.

    The flags have no argparse defaults (the parser should use `argparse.SUPPRESS`), so that only
    the flags actually given override the config file and the dataclass defaults.
    """
    for field in dataclasses.fields(config_class):
        base, is_list, _ = _field_type(field)
        default = _default(field)
        shown = "none" if default in (None, []) else default
        if is_list and default:
            shown = " ".join(map(str, default))
        help = field.metadata.get("help", "")
        if "(default" not in help and "default:" not in help:
            help = f"{help} (default: {shown})"
        kwargs = {"help": help}
        metavar = field.metadata.get("metavar") or field.name.upper()
        if field.metadata.get("positional"):
            parser.add_argument(field.name, nargs="*" if is_list else "?", type=base,
                                metavar=metavar, **kwargs)
            continue
        if base is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = base
            if field.metadata.get("choices"):
                kwargs["choices"] = field.metadata["choices"]
            else:
                kwargs["metavar"] = metavar
            if is_list:
                kwargs["nargs"] = "+"
        parser.add_argument(flag_name(field.name), dest=field.name, **kwargs)


class _JSONObject(dict):
    """A JSON object with the first key it holds twice, if any (`repeated`): json keeps the
    last one silently, TOML refuses it. Only the file's top level holds settings; an object
    nested in a setting's value is refused later as a value of the wrong type."""

    repeated = None


def _keep_repeated_keys(pairs):
    keys = [key for key, _ in pairs]
    result = _JSONObject(pairs)
    result.repeated = next((key for k, key in enumerate(keys) if key in keys[:k]), None)
    return result


def read_config_file(path):
    """The settings in a JSON or TOML file (chosen by the suffix), keys as `batch_size`.

    Keys may also be spelled as the flags are (`batch-size`).
    """
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{path}: a folder; expected a config file (JSON, or TOML by its "
                         "suffix .toml)")
    if path.exists() and not path.is_file():  # reading a pipe or a terminal could wait forever
        raise UsageError(f"{path}: not a regular file (a pipe or device); expected a config "
                         "file on disk")
    if not path.is_file():
        raise UsageError(f"{path}: config file not found")
    kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
    try:
        # utf-8-sig: a byte order mark (Windows Notepad writes one) is not part of the settings.
        text = path.read_text(encoding="utf-8-sig")
        if kind == "TOML":
            values = tomllib.loads(text)
        else:
            values = json.loads(text, object_pairs_hook=_keep_repeated_keys)
    # Decoding and parse errors are ValueErrors; so is a number of thousands of digits, and a
    # structure nested 100,000 deep is a RecursionError.
    except (ValueError, RecursionError) as error:
        other = "" if path.suffix.lower() in (".json", ".toml") else (
            "; a config file is JSON, or TOML with the suffix .toml")
        raise UsageError(f"{path}: not a valid {kind} file ({parse_failure(error)}){other}") \
            from None
    if not isinstance(values, dict):
        raise UsageError(f"{path}: expected a table of settings, got {type(values).__name__}")
    if getattr(values, "repeated", None) is not None:
        raise UsageError(f"{path}: the setting {values.repeated!r} is given twice; expected it "
                         "once")
    settings, spelt = {}, {}
    for key, value in values.items():  # one setting twice would be the last one, silently
        name = key.replace("-", "_")
        if name in settings:
            raise UsageError(f"{path}: the setting {name!r} is given twice, as {spelt[name]!r} "
                             f"and {key!r}; expected it once")
        settings[name], spelt[name] = value, key
    return settings



def _coerce(field, value, origin):
    """Checks a config-file value against the field's type; ints are accepted as floats."""
    base, is_list, optional = _field_type(field)
    if value is None and optional:
        return None
    if is_list:
        values = [value] if isinstance(value, str) else value
        if values == [] and _default(field) != []:  # no flag can give an empty list
            raise UsageError(f"{origin}: {field.name} is an empty list; expected at least one "
                             f"{base.__name__} (leave the setting out for its default)")
        if isinstance(values, list) and all(isinstance(v, base) for v in values):
            return list(values)
    elif base is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # a whole number beyond float's range: what the flag calls inf
            raise UsageError(f"{origin}: {field.name} must be a finite number. Received: a "
                             f"whole number of {len(str(abs(value)))} digits") from None
    elif isinstance(value, base) and not (base is int and isinstance(value, bool)):
        return value
    expected = f"a list of {base.__name__}" if is_list else base.__name__
    raise UsageError(f"{origin}: {field.name} must be {expected}. Received: {value!r}")


def _default(field):
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


# Flags that are no setting of the run: `train`'s own, never recorded in config.json.
COMMAND_LINE_ONLY = ("overwrite", "debug", "config")


def checked_file_values(config_class, file_values, origin="config"):
    """The settings of a config file (`read_config_file`) as the config's fields type them.

    Raises:
        UsageError: an unknown key or a value of the wrong type, naming `origin`.
    """
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    values = {}
    for key, value in (file_values or {}).items():
        if key in COMMAND_LINE_ONLY:
            raise UsageError(f"{origin}: {key} is no setting of the run; give {flag_name(key)} "
                             "on the command line")
        if key not in fields:
            negated = key.removeprefix("no_")
            hint = (f" (write {negated} = {json.dumps(not value)})"
                    if negated != key and negated in fields and isinstance(value, bool)
                    and _field_type(fields[negated])[0] is bool else "")
            raise UsageError(
                f"{origin}: unknown setting {key!r}{hint}; the settings are: {', '.join(fields)}"
            )
        values[key] = _coerce(fields[key], value, origin)
    return values


def make_config(config_class, file_values=None, flag_values=None, origin="config",
                as_flags=False):
    """Builds a config: dataclass defaults, then the config file's values, then the flags.

    Args:
        config_class: the task's config dataclass.
        file_values: settings from `read_config_file` (checked: unknown keys and wrong types are
            refused).
        flag_values: settings given on the command line (already typed by argparse).
        origin: the config file's name, for messages.
        as_flags: name in messages every setting but those of the config file as its flag
            (`named_as_flags`), as the command line does; from Python they are keyword
            arguments, named as such.

    Raises:
        UsageError: an unknown key, a value of the wrong type or one the config refuses.
    """
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    values = checked_file_values(config_class, file_values, origin)
    for key, value in (flag_values or {}).items():
        values[key] = value
    from_file = file_settings(file_values, flag_values)
    for key, value in values.items():
        choices = fields[key].metadata.get("choices")
        if choices and value is not None and value not in choices:
            where = f"{origin}: " if key in from_file else ""
            raise UsageError(f"{where}{key} must be one of {', '.join(choices)}. Received: "
                             f"{value!r}")
    try:
        config = config_class(**values)
        check_settings(config)  # action options have no base class that checks them
        return config
    except ValueError as error:
        # "<name> must ... Received: <name>=<value>, ...": the file is named when it gave one
        # (the setting the message is about, or one it received).
        received = str(error).rpartition("Received:")[2]
        named = set(re.findall(r"(\w+)=", received)) | set(re.findall(r"^(\w+) ", str(error)))
        where = f"{origin}: " if named & from_file else ""
        message = named_as_flags(str(error), fields.keys() - from_file) if as_flags else str(error)
        raise UsageError(f"{where}{message}") from None


def file_settings(file_values, flag_values):
    """The names of the settings a config file gave and no flag overrode."""
    flags = {key for key, value in (flag_values or {}).items() if value is not None}
    return {key.replace("-", "_") for key in (file_values or {})} - flags


@dataclasses.dataclass(frozen=True)
class TaskCard:
    """What the command line shows of a task: `seqlab <task> [<action>] --help` and its flags.

    Each task's `pipelines/configs/<task>.py` defines `CARD`, which imports no TensorFlow; the
    task's `Pipeline` takes its name, config class, help, options and aliases from it.

    Attributes:
        name: the task's name on the command line.
        description: a paragraph for `seqlab <task> --help`.
        examples: example command lines for `seqlab <task> <action> --help`, by action.
        config_class: the `TrainConfig` subclass of `train`.
        options: per action ("evaluate", "predict"), the dataclass of its settings beyond
            `--run`, `--data` and `--output` (see `common.Task`).
        aliases: per action, other names it answers to on the command line.
        data_settings: for `train`, a function of the given settings (config file and flags,
            by name) that returns `(settings, notes)`: settings the flags left open that the
            data decides before the config is built (the forecaster's id column of a long
            table), and a line for each saying why; None for none. It must not load
            TensorFlow.
    """

    name: str
    description: str
    examples: dict
    config_class: type
    options: dict = dataclasses.field(default_factory=dict)
    aliases: dict = dataclasses.field(default_factory=dict)
    data_settings: typing.Callable | None = None
