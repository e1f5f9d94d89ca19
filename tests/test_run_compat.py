"""Run directories written by earlier versions still evaluate and predict as they did.

`tests/fixtures/v0.1.0/<task>/` holds a tiny finished run of each task written by seqlab 0.1.0
(`tests/fixtures/make_runs.sh`), with what its `evaluate` and `predict` answered then;
`tests/fixtures/v0.2.0/timeseries/` a forecasting run of `--model auto` written before the
classical members (commit bddc84d: a GRU and a linear member chosen on the validation split,
a statsmodels ETS baseline in ets.json, no members.json). One change of behaviour is in the
expectations: translate's BLEU, chrF and predicted text were written again when each output
row came to end at twice its own source's tokens + 10 instead of the padded batch's (the
untrained fixture model never chooses the end token, so its rows ran to the limit). The runs
are copied to a temporary folder first: reading a run must work without writing into it, and
the fixtures stay untouched.
"""

import csv
import json
import math
import os
import re
import shutil
from pathlib import Path

import pytest

from seqlab.pipelines import load_task
from seqlab.pipelines.common import UsageError

FIXTURE_ROOT = Path(__file__).parent / "fixtures"
FIXTURES = FIXTURE_ROOT / "v0.1.0"

PREDICT_CALLS = {
    "timeseries": ({}, "expected_predict.csv"),
    "charrnn": ({"prompt": "The ", "num_chars": 30, "seed": 3}, "expected_predict.txt"),
    "sentiment": ({"texts": ["a fine film", "dull and long"]}, "expected_predict.csv"),
    "ner": ({"sentence": ["John", "lives", "in", "Paris"]}, "expected_predict.txt"),
    "ner-crf": ({"sentence": ["John", "lives", "in", "Paris"]}, "expected_predict.txt"),
    "translate": ({"texts": ["a dog runs .", "two men are talking ."]}, "expected_predict.txt"),
}


def assert_same_figures(actual, expected, where="metrics"):
    """Every figure of `expected` is in `actual`, numbers equal to 1e-5 relative or 2e-6
    absolute: float32 models on another CPU round otherwise, and the CSV files' figures are
    written to 6 decimals (a last digit that flips is 1e-6)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        for key, value in expected.items():
            if "seconds" in key:  # timings are not figures of the model
                continue
            assert key in actual, f"{where}.{key} is missing"
            assert_same_figures(actual[key], value, f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_same_figures(a, e, f"{where}[{index}]")
    elif isinstance(expected, float) and not isinstance(actual, str):
        assert math.isclose(actual, expected, rel_tol=1e-5, abs_tol=2e-6), (where, actual, expected)
    else:
        assert actual == expected, (where, actual, expected)


def _cells(path):
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.reader(file))


def _as_number(cell):
    try:
        return float(cell)
    except ValueError:
        return cell


# "<version>/<run>" of every fixture run.
OLD_RUNS = [f"v0.1.0/{name}" for name in PREDICT_CALLS] + ["v0.2.0/timeseries"]


@pytest.fixture
def old_run(tmp_path, request):
    fixture = FIXTURE_ROOT / request.param
    run = tmp_path / fixture.name
    shutil.copytree(fixture, run)
    return fixture, run


@pytest.mark.parametrize("old_run", OLD_RUNS, indirect=True)
def test_an_old_run_evaluates_to_the_same_figures(old_run, tmp_path):
    fixture, run = old_run
    name = fixture.name
    output = tmp_path / "figures.json"
    result = load_task(name.split("-")[0]).evaluate(run=str(run), output=str(output))
    expected = json.loads((fixture / "expected_evaluate.json").read_text())
    written = json.loads(output.read_text())
    # Paths in the figures name the copy, not the fixture.
    for figures in (expected, written):
        figures.pop("source", None)
    assert_same_figures(written, expected)
    assert result.metrics is not None


@pytest.mark.parametrize("old_run", OLD_RUNS, indirect=True)
def test_an_old_run_predicts_the_same(old_run, tmp_path):
    fixture, run = old_run
    name = fixture.name
    arguments, expected_name = PREDICT_CALLS[name]
    output = tmp_path / expected_name
    load_task(name.split("-")[0]).predict(run=str(run), output=str(output), **arguments)
    expected = fixture / expected_name
    if expected.suffix == ".csv":
        actual_rows, expected_rows = _cells(output), _cells(expected)
        assert actual_rows[0] == expected_rows[0]
        assert len(actual_rows) == len(expected_rows)
        for actual_row, expected_row in zip(actual_rows[1:], expected_rows[1:]):
            assert_same_figures([_as_number(c) for c in actual_row],
                                [_as_number(c) for c in expected_row])
    else:
        assert output.read_text(encoding="utf-8") == expected.read_text(encoding="utf-8")


def test_a_vocabulary_that_does_not_match_the_model_is_named(tmp_path):
    run = tmp_path / "translate"
    shutil.copytree(FIXTURES / "translate", run)
    lines = (run / "source_vocabulary.txt").read_text(encoding="utf-8").splitlines(True)
    (run / "source_vocabulary.txt").write_text("".join(lines[:5]), encoding="utf-8")
    with pytest.raises(UsageError, match=r"layer 'source_embedding' holds weights of shapes "
                                         r"\[\(160, 8\)\], but the run's settings and files give "
                                         r"\[\(9, 8\)\]: a vocabulary or settings file does not"):
        load_task("translate").predict(run=str(run), texts=["a dog"])


def test_an_emptied_vocabulary_is_one_line(tmp_path):
    # Found by tests/test_fuzz.py: an empty vocabulary.txt reached Keras's StringLookup, whose
    # ValueError came out as a traceback.
    run = tmp_path / "sentiment"
    shutil.copytree(FIXTURES / "sentiment", run)
    (run / "vocabulary.txt").write_text("", encoding="utf-8")
    with pytest.raises(UsageError, match=r"sentiment: its settings and files do not make a "
                                         r"model \(the bilstm kind's vocabulary starts with the "
                                         r"padding token \"\" and \[UNK\]\. Received: \[\];"):
        load_task("sentiment").predict(run=str(run), texts=["a fine film"])


def test_a_missing_metrics_json_is_one_line_when_evaluate_needs_it(tmp_path):
    # Found by tests/test_fuzz.py: charrnn evaluate read the training character counts from a
    # metrics.json that was not there, and failed with a KeyError.
    run = tmp_path / "charrnn"
    shutil.copytree(FIXTURES / "charrnn", run)
    (run / "metrics.json").unlink()
    with pytest.raises(UsageError, match=r"metrics\.json: not found \(its field 'data' is "
                                         r"needed\); the run is incomplete"):
        load_task("charrnn").evaluate(run=str(run))


@pytest.mark.parametrize("task, keys, value, field", [
    ("timeseries", ("season",), "eleven", "season"),
    ("timeseries", ("season",), 0, "season"),
    ("charrnn", ("data", "train_char_counts"), [1, 2], "data.train_char_counts"),
    ("sentiment", ("data", "split", "class_counts", "train"), {"negative": "many"},
     "data.split.class_counts.train"),
])
def test_a_hand_edited_metrics_field_is_named_not_used(tmp_path, task, keys, value, field):
    run = tmp_path / task
    shutil.copytree(FIXTURES / task, run)
    metrics = json.loads((run / "metrics.json").read_text())
    target = metrics
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    (run / "metrics.json").write_text(json.dumps(metrics))
    with pytest.raises(UsageError, match=rf"metrics\.json: the field '{re.escape(field)}' holds "
                                         r".*expected .*; the file was edited or damaged"):
        load_task(task).evaluate(run=str(run))


def test_a_missing_vocabulary_of_an_old_run_is_named(tmp_path):
    # An old run's marker lists nothing, so the file's absence shows when it is read: the
    # message named the error's type and number but not the file.
    run = tmp_path / "sentiment"
    shutil.copytree(FIXTURES / "sentiment", run)
    (run / "vocabulary.txt").unlink()
    with pytest.raises(UsageError, match=rf"a file of the run is missing or damaged "
                                         rf"\({re.escape(str(run / 'vocabulary.txt'))}: No such "
                                         r"file or directory\)"):
        load_task("sentiment").predict(run=str(run), texts=["a fine film"])


@pytest.mark.parametrize("name", ["model.keras", "vocabulary.txt"])
def test_a_file_of_the_run_that_cannot_be_read_is_named_so(tmp_path, name):
    # Said "damaged (not a complete .keras archive ...)" and "missing or damaged": the file is
    # whole, this user may not read it.
    run = tmp_path / "charrnn"
    shutil.copytree(FIXTURES / "charrnn", run)
    (run / name).chmod(0)
    if os.access(run / name, os.R_OK):
        pytest.skip("this user reads any file (root)")
    with pytest.raises(UsageError, match=rf"^{re.escape(str(run / name))}: cannot be read "
                                         r"\(Permission denied\): this user may not read it"):
        load_task("charrnn").evaluate(run=str(run))
