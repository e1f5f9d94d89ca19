"""`seqlab --help`, `seqlab <task> --help` and `seqlab <task> <action> --help` answer without
importing TensorFlow: the parser is built from the tasks' cards (pipelines/configs/), whose
settings and choices must agree with the task modules and the TensorFlow modules they mirror."""

import dataclasses
import json
import subprocess
import sys

import pytest

from seqlab.pipelines import TASKS, load_card, load_task
from seqlab.pipelines.settings import data_set_names, flag_name

ACTIONS = ("train", "evaluate", "predict", "export")
# Runs each command line of argv[1] (a JSON list) in one fresh interpreter, then prints, as JSON,
# what each printed and which heavy modules got imported.
HELP_SCRIPT = """
import contextlib, io, json, sys
from seqlab import cli
printed = []
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            cli.main(argv)
        except SystemExit as exit_:
            assert exit_.code in (0, None), (argv, exit_.code)
    printed.append(out.getvalue())
loaded = [name for name in ("tensorflow", "keras") if name in sys.modules]
print(json.dumps({"printed": printed, "loaded": loaded}))
"""
# `seqlab timeseries train --help` as it was before the parser was built from the card.
TIMESERIES_TRAIN_FLAGS = (
    "--data --out --epochs --batch-size --seed --distribute --tensorboard --no-tensorboard "
    "--max-minutes --id-column --holdout "
    "--time-column --target --features --categorical --fill --fill-ends --lookback --horizon "
    "--stride --val-fraction --test-fraction --split-targets --no-split-targets --backtest "
    "--scaler --model --auto-folds --normalization --units --layers --dropout --clipnorm "
    "--learning-rate --patience --season --num-heads --ff-dim --config --overwrite --debug"
).split()


def help_texts(command_lines):
    """What each of `command_lines` prints, and whether tensorflow or keras got imported."""
    finished = subprocess.run(
        [sys.executable, "-c", HELP_SCRIPT, json.dumps(command_lines)],
        capture_output=True, text=True, timeout=120,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    result = json.loads(finished.stdout)
    return result["printed"], result["loaded"]


def option_flags(options_class):
    return [flag_name(field.name) for field in dataclasses.fields(options_class)
            if not field.metadata.get("positional")]


def test_top_level_help_imports_no_tensorflow():
    (top, datasets), loaded = help_texts([["--help"], ["datasets", "--help"]])
    assert loaded == []
    assert all(task in top for task in TASKS)
    assert "download" in datasets


@pytest.mark.parametrize("task", TASKS)
def test_a_tasks_help_imports_no_tensorflow_and_shows_every_setting(task):
    card = load_card(task)
    printed, loaded = help_texts([[task, "--help"]] + [[task, action, "--help"]
                                                       for action in ACTIONS])
    assert loaded == []
    task_help, train, evaluate, predict, export = printed
    assert card.description.split()[0] in task_help and all(a in task_help for a in ACTIONS)
    for flag in option_flags(card.config_class) + ["--config", "--overwrite"]:
        assert flag in train, flag
    assert card.examples["train"][0] in train
    for text, action in ((evaluate, "evaluate"), (predict, "predict")):
        assert "--run" in text and "--data" in text
        if action in card.options:
            for flag in option_flags(card.options[action]):
                assert flag in text, (action, flag)
    assert "--run" in export and "--out" in export
    assert "(default: the run's next version <run>/export/<n>" in " ".join(export.split())


@pytest.mark.parametrize("task", TASKS)
def test_train_help_says_that_data_takes_a_data_set_name(task):
    (train,), _ = help_texts([[task, "train", "--help"]])
    words = " ".join(train.split())
    data_help = words.split("--data DATA ", 1)[1].split(" --out ", 1)[0]
    assert "or a data-set name" in data_help and "seqlab datasets list" in data_help
    assert "downloaded on first use" in data_help and "(default: " in data_help
    names = data_set_names(task)
    assert names or task not in {"timeseries", "charrnn", "sentiment", "ner", "translate"}
    for name in names:
        assert name in data_help, name


@pytest.mark.parametrize("task", TASKS)
def test_the_help_examples_name_no_folder_outside_the_users_own(task):
    # `--data ../shared/data/wnut17`, this project's own folder, failed on a user's machine:
    # a data set is named (`--data wnut17`), or a file of the user's.
    for action, lines in load_card(task).examples.items():
        for line in lines:
            assert "../" not in line and "shared/data" not in line, (action, line)


def test_timeseries_train_help_has_the_flags_it_had():
    (train,), _ = help_texts([["timeseries", "train", "--help"]])
    usage = train.split("\n\n")[0]
    flags = [word.strip("[]") for word in usage.split() if word.strip("[]").startswith("--")]
    assert flags == TIMESERIES_TRAIN_FLAGS
    assert "{auto,lstm,gru,rnn,transformer,linear,nbeats}" in usage
    assert "default: one series 200" in train  # --epochs, the task's own default


def test_only_a_forecast_predicts_from_the_runs_training_data_by_default():
    texts, _ = help_texts([["timeseries", "predict", "--help"], ["sentiment", "predict", "--help"],
                           ["sentiment", "evaluate", "--help"]])
    default = "(default: the run's training data)"
    for text, expected in zip(texts, (True, False, True)):
        assert (default in " ".join(text.split())) == expected


def test_an_action_alias_answers_without_tensorflow():
    (generate,), loaded = help_texts([["charrnn", "generate", "--help"]])
    assert loaded == [] and "--temperature" in generate


@pytest.mark.parametrize("task", TASKS)
def test_the_task_module_takes_its_settings_and_help_from_the_card(task):
    card, task_object = load_card(task), load_task(task)
    for field in dataclasses.fields(card):
        assert getattr(task_object, field.name) == getattr(card, field.name), field.name


def test_the_cards_choices_agree_with_the_tensorflow_modules():
    from seqlab.data import conll, panel, text, timeseries as timeseries_data
    from seqlab.layers import char_encoder
    from seqlab.models import char_lm, forecaster, text_classifier, translator
    from seqlab.pipelines.configs import charrnn, ner, sentiment, timeseries, translate
    from seqlab.pipelines.settings import MAXIMUMS

    assert timeseries.FILL_METHODS == timeseries_data.FILL_METHODS
    assert timeseries.FILL_ENDS == timeseries_data.FILL_ENDS
    assert timeseries.SCALER_METHODS == timeseries_data.SCALER_METHODS
    assert timeseries.MODEL_KINDS == ("auto", *forecaster.KINDS)
    assert timeseries.NORMALIZATIONS == forecaster.NORMALIZATIONS
    assert set(timeseries.M4_NAMES) == {f"m4-{frequency}" for frequency in panel.M4_SETS}
    assert charrnn.RECURRENT_KINDS == tuple(char_lm.RECURRENT_LAYERS)
    assert charrnn.UNSEEN_POLICIES == text.UNSEEN_POLICIES
    assert sentiment.MODEL_KINDS == text_classifier.KINDS
    assert sentiment.POOLINGS == text_classifier.POOLINGS
    assert sentiment.TRUNCATIONS == text_classifier.TRUNCATIONS
    assert ner.SCHEMES == conll.SCHEMES
    assert ner.INPUT_FORMATS == conll.INPUT_FORMATS
    assert ner.CHAR_ENCODERS == char_encoder.CHAR_ENCODERS
    assert translate.MODEL_KINDS == translator.KINDS
    # One limit for `charrnn predict --num-chars` and the SavedModel's generate signature.
    assert MAXIMUMS["num_chars"] == char_lm.MAX_NUM_CHARS


def test_unknown_task_has_no_card():
    with pytest.raises(KeyError):
        load_card("settings")


@pytest.mark.parametrize("task", TASKS)
def test_every_train_setting_says_its_default(task):
    """Each setting's help gives its default, in its own words or as "(default: ...)"; a help
    that merely used the word "default" (`ner --repair`: "... is now the default") used to
    go without one."""
    from seqlab import cli

    fields = {f.name for f in dataclasses.fields(load_card(task).config_class)}
    train = cli.build_parser(task)._subparsers._group_actions[0].choices[task]
    parser = train._subparsers._group_actions[0].choices["train"]
    settings = [a for a in parser._actions if a.option_strings and a.dest in fields]
    assert len(settings) >= 10
    for action in settings:
        assert "(default" in action.help or "default:" in action.help, (
            action.option_strings, action.help)
