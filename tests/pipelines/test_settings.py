"""Tests of pipelines/settings.py: configs from flags and files, and their checks."""

import dataclasses
import json
import math
import re

import pytest

from seqlab.pipelines import load_card
from seqlab.pipelines.configs.timeseries import TimeseriesConfig
from seqlab.pipelines.errors import UsageError
from seqlab.pipelines.settings import (
    MAXIMUMS,
    TrainConfig,
    make_config,
    named_as_flags,
    option,
    read_config_file,
    recurrent_parameters,
    refuse_oversized_model,
    refuse_unread_settings,
)


@dataclasses.dataclass
class ToyConfig(TrainConfig):
    epochs: int = option(5, "epochs")
    model: str = option("lstm", "model kind", ("lstm", "gru"))
    rate: float = option(0.5, "a rate")
    columns: list[str] | None = option(None, "columns")


# --- configs -----------------------------------------------------------------------------------


def test_flags_win_over_the_config_file_which_wins_over_defaults(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text('epochs = 7\nbatch-size = 4\nmodel = "gru"\nrate = 1\ncolumns = "a"\n')
    config = make_config(ToyConfig, read_config_file(path), {"epochs": 9}, origin=str(path))
    assert (config.epochs, config.batch_size, config.model) == (9, 4, "gru")
    assert config.rate == 1.0 and isinstance(config.rate, float)
    assert config.columns == ["a"]
    assert config.seed == 42  # untouched default


def test_json_config_files_are_read_too(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"batch_size": 8, "columns": ["a", "b"]}))
    config = make_config(ToyConfig, read_config_file(path))
    assert config.batch_size == 8 and config.columns == ["a", "b"]


@pytest.mark.parametrize(
    "file_values,flags,message",
    [
        ({"epoch": 3}, {}, r"unknown setting 'epoch'; the settings are: data, out, epochs"),
        ({"epochs": "3"}, {}, r"epochs must be int\. Received: '3'"),
        ({"epochs": True}, {}, r"epochs must be int"),
        ({}, {"model": "cnn"}, r"model must be one of lstm, gru\. Received: 'cnn'"),
        ({}, {"epochs": 0}, r"epochs must be at least 1\. Received: epochs=0"),
    ],
)
def test_bad_settings_raise_usage_errors(file_values, flags, message):
    with pytest.raises(UsageError, match=message):
        make_config(ToyConfig, file_values, flags)


@pytest.mark.parametrize(
    "file_values,flags,message",
    [
        ({}, {"target": ["a", "a"]}, r"target must name each column once; 'a' is named more "
                                     r"than once\. Received: target=\['a', 'a'\]"),
        ({"target": ["v", "v"]}, {}, r"target must name each column once; 'v'"),
        ({}, {"features": ["a", "b", "a"]}, r"features must name each column once; 'a'"),
        ({}, {"categorical": ["d", "d"]}, r"categorical must name each column once; 'd'"),
        ({}, {"target": ["a"], "categorical": ["a"]},
         r"categorical columns are one-hot inputs, never forecast: 'a' is a target too"),
        # Numeric stamps (Unix seconds) as the target: trained, then predict's traceback.
        ({}, {"target": ["t"], "time_column": ["t"]},
         r"the time column 't' cannot be forecast too: a target is a column of values"),
        ({"time_column": "t", "target": "t"}, {}, r"the time column 't' cannot be forecast"),
    ],
)
def test_a_timeseries_column_named_twice_or_in_two_roles_is_refused(file_values, flags, message):
    # `--target a a` trained two outputs for one column and wrote two columns of one name.
    with pytest.raises(UsageError, match=message):
        make_config(TimeseriesConfig, file_values, flags)


def test_a_setting_given_twice_in_a_config_file_is_refused(tmp_path):
    # The last one won silently (TOML itself refuses a key twice, not two spellings of one).
    path = tmp_path / "twice.json"
    path.write_text('{"epochs": 2, "epochs": 3}')
    with pytest.raises(UsageError, match=r"twice\.json: the setting 'epochs' is given twice; "
                                         r"expected it once"):
        read_config_file(path)
    for name, text in (("spelt.json", '{"batch-size": 8, "batch_size": 16}'),
                       ("spelt.toml", "batch-size = 8\nbatch_size = 16\n")):
        (tmp_path / name).write_text(text)
        with pytest.raises(UsageError, match=rf"{name.replace('.', '[.]')}: the setting "
                                             r"'batch_size' is given twice, as 'batch-size' and "
                                             r"'batch_size'; expected it once"):
            read_config_file(tmp_path / name)


def test_unreadable_config_files_raise_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="config file not found"):
        read_config_file(tmp_path / "none.toml")
    broken = tmp_path / "broken.json"
    broken.write_text("{epochs: 3")
    with pytest.raises(UsageError, match=r"broken\.json: not a valid JSON file \(.*\)$"):
        read_config_file(broken)
    # Another suffix is read as JSON, and the message says so (not "not a valid yaml file").
    yaml = tmp_path / "settings.yaml"
    yaml.write_text("epochs: 3\n")
    with pytest.raises(UsageError, match=r"settings\.yaml: not a valid JSON file \(.*\); a "
                                         r"config file is JSON, or TOML with the suffix \.toml"):
        read_config_file(yaml)
    with pytest.raises(UsageError, match=r": a folder; expected a config file"):
        read_config_file(tmp_path)


@pytest.mark.parametrize("name, text, reason", [
    ("huge.json", '{"epochs": ' + "9" * 5000 + "}", "a number of thousands of digits"),
    ("huge.toml", "epochs = " + "9" * 5000 + "\n", "a number of thousands of digits"),
    ("deep.json", '{"features": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ("deep.toml", "features = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
])
def test_config_files_python_cannot_convert_are_one_line(tmp_path, name, text, reason):
    # Python's own limits came out as a traceback: "Exceeds the limit (4300 digits) for integer
    # string conversion", "RecursionError: maximum recursion depth exceeded".
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UsageError, match=rf"{name}: not a valid (JSON|TOML) file \({reason}"):
        read_config_file(path)


def test_a_config_file_with_a_byte_order_mark_is_read(tmp_path):
    # Windows Notepad writes one: tomllib said "Invalid statement (at line 1, column 1)".
    for name, text in (("c.toml", "epochs = 3\n"), ("c.json", '{"epochs": 3}')):
        (tmp_path / name).write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert read_config_file(tmp_path / name) == {"epochs": 3}


# --- bounds and types, checked before any work ----------------------------------------------------


@pytest.mark.parametrize("task, values, message", [
    ("timeseries", {"lookback": 10**9}, r"lookback must be at most 100000\. Received: "
                                        r"lookback=1000000000"),
    ("timeseries", {"horizon": 10**6}, r"horizon must be at most 10000"),
    ("timeseries", {"season": 10**9}, r"season must be at most 100000"),
    ("timeseries", {"seed": -1}, r"seed must be at least 0\. Received: seed=-1"),
    ("timeseries", {"seed": 2**31}, r"seed must be at most 2147483647"),
    ("timeseries", {"learning_rate": math.inf}, r"learning_rate must be a finite number"),
    ("timeseries", {"learning_rate": math.nan}, r"learning_rate must be a finite number"),
    ("timeseries", {"model": "transformer", "units": 10, "num_heads": 4},
     r"units \(the transformer's width\) must be a multiple of num_heads"),
    ("charrnn", {"sample_chars": 10**8}, r"sample_chars must be at most 100000"),
    ("ner", {"token_column": 1, "tag_column": 1}, r"token_column and tag_column must be "
                                                  r"different columns"),
    ("ner", {"tag_column": -10**6}, r"tag_column must be at least -999"),
    ("translate", {"beam_width": 1000}, r"beam_width must be at most 64"),
    ("translate", {"embedding_dim": 30, "num_heads": 4}, r"embedding_dim must be divisible"),
    ("sentiment", {"ensemble": 10**6}, r"ensemble must be at most 100"),
])
def test_out_of_bounds_settings_are_refused_in_one_line(task, values, message):
    with pytest.raises(UsageError, match=message):
        make_config(load_card(task).config_class, flag_values=values)


@pytest.mark.parametrize("task, action, values, message", [
    ("charrnn", "predict", {"num_chars": 10**9}, r"num_chars must be at most 100000"),
    ("charrnn", "predict", {"temperature": math.inf},
     r"temperature must be 0 \(greedy\) or a positive number"),
    ("translate", "predict", {"beam_width": 65}, r"beam_width must be at most 64"),
    ("translate", "evaluate", {"length_penalty": math.nan}, r"length_penalty must be a finite"),
])
def test_out_of_bounds_action_options_are_refused(task, action, values, message):
    with pytest.raises(UsageError, match=message):
        make_config(load_card(task).options[action], flag_values=values)


@pytest.mark.parametrize("task, name, interval", [
    ("sentiment", "test_fraction", "(0, 1)"), ("sentiment", "val_fraction", "[0, 1)"),
    ("charrnn", "val_fraction", "(0, 1)"),
])
def test_a_fraction_out_of_range_names_one_interval_for_every_value(task, name, interval):
    # -0.1 was told "[0, 1)" and then 0 "must be positive".
    config_class = load_card(task).config_class
    for value in (-0.1, 0.0, 1.0):  # NaN: "must be a finite number", before these checks
        if value == 0.0 and interval.startswith("["):
            make_config(config_class, flag_values={name: value})
            continue
        with pytest.raises(UsageError, match=rf"{name} must lie in {re.escape(interval)}\. "
                                             rf"Received: {name}={value}"):
            make_config(config_class, flag_values={name: value})


def test_a_config_file_of_the_wrong_types_is_refused():
    with pytest.raises(ValueError, match=r"epochs must be int\. Received: epochs='3'"):
        ToyConfig(epochs="3")
    with pytest.raises(ValueError, match=r"columns must be str\. Received: columns=3"):
        ToyConfig(columns=["a", 3])


def test_every_number_a_user_sets_has_a_maximum_or_a_range():
    # --auto-folds 10**23 was accepted and planned hours of classical fits.
    from seqlab.pipelines import TASKS
    from seqlab.pipelines.settings import _field_type

    bounded_otherwise = {"seed", "tsv_columns", "temperature", "dropout", "token_dropout",
                         "val_fraction", "test_fraction"}
    for task in TASKS:
        card = load_card(task)
        for config_class in (card.config_class, *card.options.values()):
            for field in dataclasses.fields(config_class):
                if _field_type(field)[0] in (int, float) and field.name not in bounded_otherwise:
                    assert field.name in MAXIMUMS, f"{task} {config_class.__name__} {field.name}"


def test_the_limits_table_of_the_cli_reference_is_maximums():
    from pathlib import Path
    import re

    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    table = text[text.index("| setting | at most |"):]
    rows = dict(re.findall(r"^\| `--([a-z-]+)` \| ([^ |]+)", table[:table.index("\n\n")],
                           re.MULTILINE))
    assert {name.replace("-", "_"): float(value) for name, value in rows.items()} == {
        name: float(value) for name, value in MAXIMUMS.items()}


# --- settings another setting rules out ---------------------------------------------------------


@pytest.mark.parametrize("task, flags, message", [
    ("sentiment", ["--model", "gru", "--ngrams", "5"],
     "--ngrams 5 is read only with --model ngrams or --model auto, not with --model gru: leave "
     "it out, or choose --model ngrams or --model auto"),
    ("sentiment", ["--model", "cnn", "--num-heads", "2"],
     "--num-heads 2 is read only with --model transformer, not with --model cnn"),
    ("sentiment", ["--model", "transformer", "--units", "512"],
     "--units 512 is read only with --model auto, gru, lstm, bilstm or cnn, not with --model "
     "transformer"),
    # The ngrams model has no embedding, sequence layers, length, pooling or dropout.
    ("sentiment", ["--model", "ngrams", "--units", "8"],
     "--units 8 is read only with --model auto, gru, lstm, bilstm or cnn, not with --model "
     "ngrams: leave it out, or choose one of those"),
    *[("sentiment", ["--model", "ngrams", flag, value],
       f"{flag} {value} is read only with --model auto, gru, lstm, bilstm, transformer or cnn, "
       "not with --model ngrams: leave it out, or choose one of those")
      for flag, value in [("--layers", "2"), ("--embedding-dim", "64"),
                          ("--sequence-length", "40"), ("--truncate", "end"),
                          ("--pooling", "mean"), ("--dropout", "0.1"),
                          ("--token-dropout", "0.0")]],
    ("ner", ["--char-kernel", "5"], "--char-kernel 5 is read only with --char-encoder cnn, not "
                                    "with --char-encoder lstm"),
    ("ner", ["--no-crf-constraints"], "--no-crf-constraints is read only with --crf, not with "
                                      "--no-crf"),
    ("translate", ["--units", "8"], "--units 8 is read only with --model gru-attention, not with "
                                    "--model transformer"),
    ("translate", ["--model", "gru-attention", "--ff-dim", "8"],
     "--ff-dim 8 is read only with --model transformer, not with --model gru-attention"),
    ("timeseries", ["--model", "linear", "--num-heads", "2"],
     "--num-heads 2 is read only with --model transformer, not with --model linear"),
    # The linear model is one dense layer; the backtest folds are auto's.
    *[("timeseries", ["--model", "linear", flag, value],
       f"{flag} {value} is read only with --model auto, lstm, gru, rnn or transformer, not "
       "with --model linear: leave it out, or choose one of those")
      for flag, value in [("--units", "64"), ("--layers", "2"), ("--dropout", "0.5")]],
    ("timeseries", ["--model", "gru", "--auto-folds", "5"],
     "--auto-folds 5 is read only with --model auto, not with --model gru"),
])
def test_a_setting_the_runs_other_settings_leave_unread_is_refused(tmp_path, capsys, task, flags,
                                                                    message):
    from seqlab.cli import main

    assert main([task, "train", *flags, "--out", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_setting_read_with_the_runs_choice_is_taken():
    # The same settings where they are read: no refusal (auto trains the ngrams model too).
    for task, values in [("sentiment", {"model": "auto", "ngrams": 3}),
                         ("sentiment", {"model": "auto", "units": 8, "sequence_length": 40,
                                        "pooling": "max", "truncate": "end", "dropout": 0.1}),
                         ("sentiment", {"model": "gru", "layers": 2, "embedding_dim": 16,
                                        "token_dropout": 0.0}),
                         ("ner", {"crf": True, "crf_constraints": False}),
                         ("translate", {"model": "gru-attention", "units": 8}),
                         ("timeseries", {"model": "transformer", "num_heads": 2}),
                         # One series' filled-in --units 32 and --layers 1: no refusal.
                         ("timeseries", {"model": "linear"}),
                         ("timeseries", {"model": "auto", "auto_folds": 5, "units": 16}),
                         ("timeseries", {"model": "gru", "dropout": 0.2, "layers": 2})]:
        refuse_unread_settings(make_config(load_card(task).config_class, flag_values=values))


# --- a model too large for the machine ----------------------------------------------------------


@pytest.mark.parametrize("kind, layer, bidirectional", [
    ("simple_rnn", "SimpleRNN", False), ("gru", "GRU", False), ("lstm", "LSTM", False),
    ("lstm", "LSTM", True), ("gru", "GRU", True),
])
def test_recurrent_parameters_count_what_keras_builds(kind, layer, bidirectional):
    import keras

    stack = [keras.Input((None, 7))]
    for _ in range(3):
        recurrent = getattr(keras.layers, layer)(5, return_sequences=True)
        stack.append(keras.layers.Bidirectional(recurrent) if bidirectional else recurrent)
    assert recurrent_parameters(kind, 7, 5, 3, bidirectional) == (
        keras.Sequential(stack).count_params())


@pytest.mark.parametrize("task, flags, named", [
    ("charrnn", ["--units", "8192", "--layers", "64"], "--model gru --units 8192 --layers 64"),
    ("sentiment", ["--model", "bilstm", "--units", "4096", "--layers", "8"],
     "--model bilstm --units 4096 --layers 8"),
    ("sentiment", ["--model", "gru", "--units", "2048", "--ensemble", "60"],
     "--model gru --units 2048 --layers 1 --ensemble 60"),
    ("ner", ["--units", "8192", "--char-units", "4096"], "--units 8192 --char-units 4096"),
    ("timeseries", ["--units", "8192", "--layers", "64"], "--model auto --units 8192 --layers 64"),
    ("timeseries", ["--model", "lstm", "--units", "8192", "--layers", "32", "--holdout", "4"],
     "--model lstm --units 8192 --layers 32"),
])
def test_a_model_too_large_for_the_machine_is_refused_before_anything_is_read(
        tmp_path, capsys, monkeypatch, task, flags, named):
    # charrnn --units 8192 --layers 64 was silent for hours while Keras initialised its
    # kernels, then ran out of memory. 8 GiB stands in for the machine: every case needs more.
    from seqlab.cli import main

    monkeypatch.setattr("seqlab.pipelines.settings.physical_memory", lambda: 8 * 2**30)
    unreadable = tmp_path / "data.csv"  # any reading of it would be refused
    unreadable.write_bytes(b"\xff\xfe\x00")
    assert main([task, "train", *flags, "--data", str(unreadable),
                 "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err
    assert f"error: {named}: the model has at least " in error and "this machine has 8.0 GiB" \
        in error, error
    assert list(tmp_path.iterdir()) == [unreadable]


def test_sizes_that_fit_are_not_refused(monkeypatch):
    monkeypatch.setattr("seqlab.pipelines.settings.physical_memory", lambda: 8 * 2**30)
    refuse_oversized_model(8 * 2**30 // 16, "--units 8")
    with pytest.raises(UsageError, match=r"--units 9: the model has at least 536,870,913 "):
        refuse_oversized_model(8 * 2**30 // 16 + 1, "--units 9")
    monkeypatch.setattr("seqlab.pipelines.settings.physical_memory", lambda: None)
    refuse_oversized_model(10**15, "--units 8192")  # unknown memory: nothing refused


def test_a_config_file_that_is_a_pipe_or_device_is_named_as_such(tmp_path):
    # "/dev/null: config file not found"; reading a pipe or a terminal could wait forever.
    with pytest.raises(UsageError, match=r"^/dev/null: not a regular file \(a pipe or device\); "
                                         r"expected a config file on disk$"):
        read_config_file("/dev/null")


def test_a_key_repeated_inside_a_settings_value_is_no_setting_given_twice(tmp_path):
    # `{"epochs": {"a": 1, "a": 2}}` said "the setting 'a' is given twice".
    path = tmp_path / "nested.json"
    path.write_text('{"epochs": {"a": 1, "a": 2}}')
    with pytest.raises(UsageError, match=r"nested\.json: epochs must be int\. Received: "):
        make_config(ToyConfig, read_config_file(path), origin=str(path))


def test_a_message_named_as_flags_keeps_the_values_own_text():
    # A column named "units=kg" among the values was rewritten as if it were the setting.
    message = ("features must name columns of the table, each once. Received: "
               "features=['units=kg', 'units=kg'], units=0, crf=True, embeddings=None")
    assert named_as_flags(message, {"features", "units", "crf", "embeddings"}) == (
        "--features must name columns of the table, each once. Received: "
        "--features ['units=kg', 'units=kg'], --units 0, --crf, no --embeddings")
