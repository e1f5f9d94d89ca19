"""Fuzzing every task and action: damaged input files, flag values at and beyond their bounds,
hand-edited run directories and odd paths, generated with hypothesis.

Each case runs the command line in this process (`cli.main`) inside a fresh sandbox folder and
must end in exactly one of:
- success (exit 0), every JSON file it wrote strict (no NaN, no Infinity) and every figure in
  its CSV output finite;
- exit 2 with one line `seqlab <task> <action>: error: ...` (or argparse's usage line and
  error line for a flag of the wrong type);
never a traceback, a hang (`CASE_SECONDS`) or a NaN figure. Around every command a file-safety
invariant is checked: nothing outside the run directory, the export folder or the `--output`
file is created, changed or deleted, nothing that was there before is deleted, and no
temporary is left anywhere.

Most cases fail before TensorFlow trains anything: flags are checked before the data is read
(the data path given is missing), readers are stopped once `prepare` has read the data (no
training), and run-file damage is done to copies of small finished runs (seqlab 0.1.0's
fixtures and one run trained here). The normal suite runs a small fixed budget, derandomized;
`SEQLAB_FUZZ_EXAMPLES=N` runs N random examples per test (benchmarks/fuzz.sh).
"""

import contextlib
import csv
import dataclasses
import hashlib
import io
import json
import math
import os
import shutil
import signal
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqlab import cli
from seqlab.pipelines import TASKS, load_card
from seqlab.pipelines.settings import MAXIMUMS, _field_type

FIXTURES = Path(__file__).parent / "fixtures" / "v0.1.0"
LONG_BUDGET = int(os.environ.get("SEQLAB_FUZZ_EXAMPLES", "0"))
CASE_SECONDS = 300  # a case running longer is a hang


def fuzz_settings(fast_examples):
    """`fast_examples` fixed examples in the normal suite, `SEQLAB_FUZZ_EXAMPLES` random ones
    in the long budget."""
    return settings(
        max_examples=LONG_BUDGET or fast_examples,
        derandomize=not LONG_BUDGET,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                               HealthCheck.data_too_large],
    )


# --- running one command and judging it ----------------------------------------------------------


class PreparedOnly(Exception):
    """Raised in place of starting the run once `prepare` has read the data."""


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    def expired(signum, frame):
        raise Hang(f"the command ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def snapshot(root):
    """`{relative path: sha256 of a file, "dir" or "link -> target"}` under `root`."""
    state = {}
    for path in sorted(Path(root).rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            state[key] = f"link -> {os.readlink(path)}"
        elif path.is_dir():
            state[key] = "dir"
        else:
            state[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


@dataclasses.dataclass
class Outcome:
    code: object
    out: str
    err: str
    created: set
    changed: set
    deleted: set


def run_command(argv, sandbox):
    """Runs `seqlab argv` in this process; returns its `Outcome` (the files it touched under
    `sandbox`). An exception out of `cli.main` (a traceback) propagates."""
    before = snapshot(sandbox)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            time_limit(CASE_SECONDS):
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as exit:  # argparse refusing a flag
            code = exit.code
        except PreparedOnly:
            code = "prepared"
    after = snapshot(sandbox)
    return Outcome(
        code=code, out=out.getvalue(), err=err.getvalue(),
        created={p for p in after if p not in before},
        changed={p for p in after if p in before and after[p] != before[p]},
        deleted={p for p in before if p not in after},
    )


def within(path, roots):
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def check_outcome(outcome, task, action, sandbox, may_write=()):
    """The promises every case keeps (see the module docstring).

    Args:
        may_write: paths relative to `sandbox` that the command may create or change (its run
            directory, export folder, `--output`).
    """
    described = f"exit {outcome.code}, stderr {outcome.err!r}"
    if outcome.code == 2:
        lines = outcome.err.strip().splitlines()
        if lines and lines[0].startswith("usage: "):  # argparse: usage, then one error line
            assert len(lines) >= 2 and ": error: " in lines[-1], described
        else:
            assert len(lines) == 1, described
            assert lines[0].startswith(f"seqlab {task} {action}: error: "), described
    else:
        assert outcome.code in (0, "prepared"), described
        assert outcome.err.strip() == "", described
    assert not outcome.deleted, f"deleted {sorted(outcome.deleted)} ({described})"
    touched = outcome.created | outcome.changed
    outside = sorted(p for p in touched if not within(p, may_write))
    assert not outside, f"wrote outside its folders: {outside} ({described})"
    leftovers = sorted(p for p in snapshot(sandbox)
                       if any(part.startswith(".") and (".tmp-" in part or ".new-" in part
                                                        or ".replaced-" in part)
                              for part in Path(p).parts))
    assert not leftovers, f"temporaries left: {leftovers}"
    if outcome.code == 0:
        for name in touched:
            check_figures(Path(sandbox) / name)


def check_figures(path):
    """A JSON file parses strictly; a CSV file holds no NaN or infinite number."""
    if path.suffix == ".json":
        json.loads(path.read_text(encoding="utf-8"),
                   parse_constant=lambda name: pytest.fail(f"{path} holds {name}"))
    elif path.suffix == ".csv":
        with open(path, newline="", encoding="utf-8") as file:
            for row in csv.reader(file):
                for cell in row:
                    try:
                        number = float(cell)
                    except ValueError:
                        continue
                    assert math.isfinite(number), f"{path} holds {cell}"


@pytest.fixture
def prepare_only(monkeypatch):
    """Train reads and checks its data, then stops before the run directory is started."""

    def stop(run, config):
        raise PreparedOnly

    monkeypatch.setattr("seqlab.pipelines.lifecycle.start_run", stop)


@contextlib.contextmanager
def sandbox_folder():
    with tempfile.TemporaryDirectory(prefix="seqlab-fuzz-") as folder:
        yield Path(folder)


# --- strategies ----------------------------------------------------------------------------------

EDGE_NUMBERS = ["0", "-1", "1", "nan", "NaN", "inf", "-inf", "1e308", "-1e308", "1e-320",
                "2147483648", "9" * 30, "0.5", "-0.0", "1e15", "1e16", "abc", "", "1,5", "0x10"]


def number_text():
    return st.one_of(st.sampled_from(EDGE_NUMBERS),
                     st.integers(-10**12, 10**12).map(str),
                     st.floats(allow_nan=True, allow_infinity=True).map(repr))


def flag_value(field):
    """Text for a numeric flag: its edge values, its limit and one past it, and noise."""
    base, _, _ = _field_type(field)
    limit = MAXIMUMS.get(field.name)
    edges = [str(limit), str(limit + 1 if base is int else limit * 2)] if limit else []
    return st.one_of(number_text(), st.sampled_from(edges or ["0"]),
                     st.text(max_size=5))


def numeric_fields(config_class):
    return [f for f in dataclasses.fields(config_class)
            if _field_type(f)[0] in (int, float) and not f.metadata.get("positional")]


def damaged(text_strategy):
    """Bytes of a file made from generated text, then damaged: cut short, wrong encodings,
    a byte-order mark, stray bytes, CRLF endings, or left as it is."""
    def damage(text, how, cut):
        data = text.encode("utf-8")
        if how == "truncate":
            return data[:int(len(data) * cut)]
        if how == "latin-1":
            return text.encode("latin-1", "replace")
        if how == "utf-16":
            return text.encode("utf-16")
        if how == "bom":
            return b"\xef\xbb\xbf" + data
        if how == "stray bytes":
            position = int(len(data) * cut)
            return data[:position] + b"\xff\xfe\x00" + data[position:]
        if how == "crlf":
            return data.replace(b"\n", b"\r\n")
        if how == "empty":
            return b""
        return data

    return st.builds(damage, text_strategy,
                     st.sampled_from(["none", "none", "none", "truncate", "latin-1", "utf-16",
                                      "bom", "stray bytes", "crlf", "empty"]),
                     st.floats(0, 1))


def cell():
    return st.one_of(number_text(), st.text(max_size=8),
                     st.sampled_from(['"a,b"', '"', "x" * 5000, " ", "\t"]))


def with_damaged_lines(draw, lines, damaged_line):
    """`lines` (valid data) with a few of them replaced, dropped or doubled, or new ones
    inserted from `damaged_line` (often none: then the data reads, and the run is prepared)."""
    lines = list(lines)
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3]))):
        if not lines:
            break
        index = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["replace", "insert", "drop", "double"]))
        if how == "replace":
            lines[index] = draw(damaged_line)
        elif how == "insert":
            lines.insert(index, draw(damaged_line))
        elif how == "drop":
            del lines[index]
        else:
            lines.insert(index, lines[index])
    return "\n".join(lines) + "\n"


@st.composite
def csv_series(draw):
    """A time-series CSV (time column t, values y and maybe x), some lines damaged."""
    columns = draw(st.sampled_from([["t", "y"], ["t", "y", "x"]]))
    rows = [",".join(columns)] + [
        ",".join([str(row), f"{math.sin(row / 3) * 10:.3f}", f"{row % 7}"][:len(columns)])
        for row in range(draw(st.integers(0, 90)))]
    damaged_row = st.lists(cell(), min_size=0, max_size=4).map(",".join)
    return with_damaged_lines(draw, rows, damaged_row)


@st.composite
def plain_text(draw):
    return draw(st.one_of(
        st.text(min_size=0, max_size=400),
        st.just("the quick brown fox jumps over the lazy dog\n" * 40),
        st.builds(lambda a, b: a * b, st.text(min_size=1, max_size=20), st.integers(1, 200)),
    ))


@st.composite
def labelled_texts(draw):
    rows = ["text,label"] + [f"{'a fine film' if i % 2 else 'dull and long'} {i},"
                             f"{'pos' if i % 2 else 'neg'}"
                             for i in range(draw(st.integers(0, 80)))]
    damaged_row = st.tuples(st.text(max_size=30), st.sampled_from(
        ["pos", "neg", "", "pos,extra", '"', "x" * 5000])).map(",".join)
    return with_damaged_lines(draw, rows, damaged_row)


@st.composite
def conll(draw):
    lines = []
    for i in range(draw(st.integers(0, 60))):
        lines += ["John B-PER", "lives O", "in O", f"Paris{i} B-LOC", ""]
    tags = ["O", "B-PER", "I-PER", "I-ORG", "X", "B-", ""]
    damaged_line = st.tuples(
        st.sampled_from(["John", "-DOCSTART-", ".", "é", "", "a b"]) | st.text(max_size=6),
        st.sampled_from(tags)).map(" ".join)
    return with_damaged_lines(draw, lines, damaged_line)


@st.composite
def sentence_pairs(draw):
    lines = [f"a dog runs {i} .\tein Hund läuft {i} ." for i in range(draw(st.integers(0, 80)))]
    damaged_line = st.tuples(
        st.sampled_from(["a dog runs .", "", "x " * 3000]) | st.text(max_size=20),
        st.sampled_from(["ein Hund läuft .", ""]) | st.text(max_size=20),
        st.sampled_from(["", "extra"])).map("\t".join)
    return with_damaged_lines(draw, lines, damaged_line)


READERS = {
    "timeseries": ("series.csv", csv_series(), ["--time-column", "t", "--lookback", "4",
                                                 "--epochs", "1"]),
    "charrnn": ("text.txt", plain_text(), ["--window", "8", "--epochs", "1"]),
    "sentiment": ("reviews.csv", labelled_texts(), ["--epochs", "1"]),
    "ner": ("train.conll", conll(), ["--epochs", "1"]),
    "translate": ("pairs.tsv", sentence_pairs(), ["--epochs", "1", "--max-length", "12"]),
}


# --- flags at and beyond their bounds ------------------------------------------------------------


@st.composite
def train_flags(draw):
    task = draw(st.sampled_from(sorted(TASKS)))
    fields = numeric_fields(load_card(task).config_class)
    chosen = draw(st.lists(st.sampled_from(fields), min_size=1, max_size=3, unique=True))
    flags = []
    for field in chosen:
        flags += ["--" + field.name.replace("_", "-"), draw(flag_value(field))]
    return task, flags


@fuzz_settings(60)
@given(case=train_flags())
def test_train_flags_at_and_beyond_their_bounds(case):
    task, flags = case
    with sandbox_folder() as sandbox:
        # The data does not exist: a command that accepts the flags stops at reading it.
        argv = [task, "train", "--data", sandbox / "missing.data", "--out", sandbox / "run",
                *flags]
        outcome = run_command(argv, sandbox)
        check_outcome(outcome, task, "train", sandbox)
        assert outcome.code == 2


@st.composite
def action_flags(draw):
    choices = [(task, action) for task in sorted(TASKS)
               for action, options in sorted(load_card(task).options.items())
               if numeric_fields(options)]
    task, action = draw(st.sampled_from(choices))
    field = draw(st.sampled_from(numeric_fields(load_card(task).options[action])))
    return task, action, ["--" + field.name.replace("_", "-"), draw(flag_value(field))]


@fuzz_settings(30)
@given(case=action_flags())
def test_action_options_at_and_beyond_their_bounds(case):
    task, action, flags = case
    with sandbox_folder() as sandbox:
        outcome = run_command([task, action, "--run", sandbox / "no-run", *flags], sandbox)
        check_outcome(outcome, task, action, sandbox)
        assert outcome.code == 2


def good_data(task):
    """`(file name, text)` of small data that `task`'s train reads."""
    rows = range(120)
    if task == "timeseries":
        return "series.csv", "t,y\n" + "".join(f"{i},{math.sin(i / 2):.4f}\n" for i in rows)
    if task == "charrnn":
        return "text.txt", "the quick brown fox jumps over the lazy dog. " * 60
    if task == "sentiment":
        return "reviews.csv", "text,label\n" + "".join(
            f"{'a fine film' if i % 2 else 'dull and long'} {i},{'pos' if i % 2 else 'neg'}\n"
            for i in rows)
    if task == "ner":
        return "train.conll", "".join(
            f"John B-PER\nlives O\nin O\nParis{i} B-LOC\n\n" for i in rows)
    return "pairs.tsv", "".join(f"a dog runs {i} .\tein Hund läuft {i} .\n" for i in rows)


@fuzz_settings(30)
@given(case=train_flags())
def test_train_flags_with_data_that_reads(case, prepare_only):
    """Flags that pass their own checks meet the data (a lookback longer than the series, a
    season beyond it, a window longer than the text): one line or a prepared run."""
    task, flags = case
    name, text = good_data(task)
    with sandbox_folder() as sandbox:
        path = sandbox / name
        path.write_text(text, encoding="utf-8")
        argv = [task, "train", "--data", path, "--out", sandbox / "run", *flags]
        check_outcome(run_command(argv, sandbox), task, "train", sandbox)


# --- damaged input files -------------------------------------------------------------------------


@pytest.mark.parametrize("task", sorted(READERS))
def test_damaged_input_files(task, prepare_only):
    name, contents, flags = READERS[task]

    @fuzz_settings(12)
    @given(data=damaged(contents))
    def case(data):
        with sandbox_folder() as sandbox:
            path = sandbox / name
            path.write_bytes(data)
            outcome = run_command([task, "train", "--data", path, "--out", sandbox / "run",
                                   *flags], sandbox)
            check_outcome(outcome, task, "train", sandbox)

    case()


# --- hand-edited run directories -----------------------------------------------------------------

PREDICT_ARGUMENTS = {
    "timeseries": [],
    "charrnn": ["--prompt", "The ", "--num-chars", "20"],
    "sentiment": ["a fine film", ""],
    "ner": ["John", "lives", "in", "Paris"],
    "ner-crf": ["John", "lives", "in", "Paris"],
    "translate": ["a dog runs ."],
}


@pytest.fixture(scope="session")
def current_runs(tmp_path_factory):
    """Finished runs to damage: seqlab 0.1.0's fixtures, one timeseries run of this version
    (with its marker and export) and one many-series run (panel.json)."""
    folder = tmp_path_factory.mktemp("fuzz-runs")
    runs = {name: FIXTURES / name for name in PREDICT_ARGUMENTS}
    steps = np.arange(80)
    data = folder / "series.csv"
    pd.DataFrame({"t": steps, "y": np.sin(steps / 2)}).to_csv(data, index=False)
    out = folder / "timeseries-now"
    code = cli.main(["timeseries", "train", "--data", str(data), "--time-column", "t",
                     "--lookback", "4", "--units", "2", "--epochs", "1", "--model", "gru",
                     "--out", str(out)])
    assert code == 0
    runs["timeseries-now"] = out
    panel = folder / "panel.csv"
    pd.DataFrame({"id": np.repeat(["a", "b", "c"], 40), "t": np.tile(np.arange(40), 3),
                  "y": np.sin(np.arange(120) / 3) + np.repeat([1.0, 5.0, 9.0], 40)}).to_csv(
        panel, index=False)
    out = folder / "timeseries-panel"
    code = cli.main(["timeseries", "train", "--data", str(panel), "--id-column", "id",
                     "--time-column", "t", "--holdout", "4", "--season", "1", "--units", "4",
                     "--layers", "1", "--epochs", "1", "--out", str(out)])
    assert code == 0
    runs["timeseries-panel"] = out
    return runs


def json_value():
    return st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.text(max_size=4),
                     st.sampled_from([float("nan"), float("inf"), 1e308, -1.0, 0]),
                     st.just([]), st.just({}), st.just([1, "a"]))


def damage_run(run, draw):
    """Damages one file of the copied run `run`; returns what was done, for the report."""
    files = sorted(str(p.relative_to(run)) for p in run.rglob("*")
                   if p.is_file() and not p.name.startswith("expected_"))
    name = draw(st.sampled_from(files))
    path = run / name
    how = draw(st.sampled_from(["remove", "truncate", "garbage", "edit", "edit", "empty"]))
    if how == "remove":
        path.unlink()
    elif how == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[:int(len(data) * draw(st.floats(0, 0.99)))])
    elif how == "garbage":
        path.write_bytes(draw(st.binary(max_size=64)))
    elif how == "empty":
        path.write_bytes(b"")
    elif path.suffix == ".json":
        record = json.loads(path.read_text())
        target = record
        if isinstance(record, dict) and isinstance(record.get("settings"), dict) and draw(
                st.booleans()):
            target = record["settings"]
        if isinstance(target, dict) and target:
            key = draw(st.sampled_from(sorted(target)))
            if draw(st.booleans()):
                del target[key]
            else:
                target[key] = draw(json_value())
        elif isinstance(target, list) and target:
            target[draw(st.integers(0, len(target) - 1))] = draw(json_value())
        path.write_text(json.dumps(record))
    else:
        lines = path.read_bytes().splitlines(keepends=True)
        if lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
        path.write_bytes(b"".join(lines))
    return f"{how} {name}"


@fuzz_settings(8)
@given(data=st.data())
def test_hand_edited_run_directories(current_runs, data):
    name = data.draw(st.sampled_from(sorted(current_runs)))
    task = name.split("-")[0]
    with sandbox_folder() as sandbox:
        run = sandbox / "run"
        shutil.copytree(current_runs[name], run)
        what = damage_run(run, data.draw)
        damaged_files = snapshot(run)
        # The long budget also evaluates and exports (slower: the test split, a SavedModel).
        action = data.draw(st.sampled_from(["predict", "evaluate", "export"] if LONG_BUDGET
                                           else ["predict"]))
        if action == "predict":
            arguments = PREDICT_ARGUMENTS.get(name, [])
        elif action == "evaluate":
            arguments = ["--output", sandbox / "figures.json"]
        else:
            arguments = ["--out", sandbox / "export"]
        outcome = run_command([task, action, "--run", run, *arguments], sandbox)
        # predict may add its output to the run (its default place), nothing else.
        check_outcome(outcome, task, action, sandbox,
                      may_write=["run", "figures.json", "export"])
        assert not outcome.changed, (what, outcome.changed)
        assert {k: v for k, v in snapshot(run).items() if k in damaged_files} == damaged_files


# What each task's predict reads from a file, and how it is given.
PREDICT_INPUTS = {
    "timeseries-now": ("--data", "latest.csv", csv_series()),
    "charrnn": ("--data", "prompt.txt", plain_text()),
    "sentiment": ("--input", "texts.txt", plain_text()),
    "ner": ("--input", "sentences.conll", conll()),
    "translate": ("--input", "sentences.txt", plain_text()),
}


@fuzz_settings(6)
@given(data=st.data())
def test_damaged_files_given_to_a_finished_run(current_runs, data):
    name = data.draw(st.sampled_from(sorted(PREDICT_INPUTS)))
    task = name.split("-")[0]
    flag, file_name, contents = PREDICT_INPUTS[name]
    with sandbox_folder() as sandbox:
        run = sandbox / "run"
        shutil.copytree(current_runs[name], run)
        path = sandbox / file_name
        path.write_bytes(data.draw(damaged(contents)))
        output = sandbox / "predictions.out"
        extra = ["--num-chars", "5"] if task == "charrnn" else []
        outcome = run_command([task, "predict", "--run", run, flag, path, "--output", output,
                               *extra], sandbox)
        check_outcome(outcome, task, "predict", sandbox, may_write=["predictions.out"])


# --- odd paths -----------------------------------------------------------------------------------


def make_path(sandbox, kind, run):
    """A path of the given kind for --out / --output / --run, made inside `sandbox`."""
    mine = sandbox / "mine"
    mine.mkdir(exist_ok=True)
    (mine / "notes.txt").write_text("keep me")
    if kind == "new":
        return sandbox / "new"
    if kind == "trailing separator":
        return f"{sandbox / 'new'}/"
    if kind == "a file":
        return mine / "notes.txt"
    if kind == "under a file":
        return mine / "notes.txt" / "inside"
    if kind == "user folder":
        return mine
    if kind == "user folder with config.json":
        (mine / "config.json").write_text('{"task": "timeseries", "settings": {}}')
        return mine
    if kind == "empty saved_model.pb":
        (mine / "saved_model.pb").write_bytes(b"")
        return mine
    if kind == "symlink to a folder":
        link = sandbox / "link"
        link.symlink_to(mine)
        return link
    if kind == "symlink to the run":
        link = sandbox / "run-link"
        link.symlink_to(run)
        return link
    if kind == "dangling symlink":
        link = sandbox / "dangling"
        link.symlink_to(sandbox / "nowhere")
        return link
    if kind == "a .partial name":
        return sandbox / "x.partial"
    if kind == "user .partial folder":
        partial = sandbox / "new.partial"
        partial.mkdir()
        (partial / "data.csv").write_text("1,2\n")
        return sandbox / "new"
    if kind == "the run itself":
        return run
    raise AssertionError(kind)


PATH_KINDS = ["new", "trailing separator", "a file", "under a file", "user folder",
              "user folder with config.json", "empty saved_model.pb", "symlink to a folder",
              "dangling symlink", "a .partial name", "user .partial folder", "the run itself",
              "symlink to the run"]
# Path kinds with which the command really works (slow: an export or a prediction).
WORKING = {"export": {"new", "trailing separator", "dangling symlink"},
           "predict": {"new", "trailing separator", "a file", "dangling symlink"},
           "run": {"symlink to the run"}}


@fuzz_settings(20)
@given(action=st.sampled_from(["train", "export", "predict", "run"]),
       kind=st.sampled_from(PATH_KINDS), overwrite=st.booleans())
def test_odd_paths(current_runs, action, kind, overwrite):
    if not LONG_BUDGET and kind in WORKING.get(action, ()):
        return  # the fast budget keeps to the cases refused before any work
    with sandbox_folder() as sandbox:
        run = sandbox / "run"
        shutil.copytree(current_runs["timeseries-now"], run)
        path = make_path(sandbox, kind, run)
        target = str(Path(path).relative_to(sandbox)) if str(path).startswith(str(sandbox)) \
            else str(path)
        if action == "train":
            argv = ["timeseries", "train", "--data", sandbox / "missing.csv", "--out", path]
            may_write = [target, target + ".partial"]
        elif action == "export":
            argv = ["timeseries", "export", "--run", run, "--out", path]
            may_write = [target, str(Path(target).resolve()) if kind == "dangling symlink"
                         else target]
        elif action == "predict":
            argv = ["timeseries", "predict", "--run", run, "--output", path]
            may_write = [target]
        else:
            argv = ["timeseries", "predict", "--run", path]
            may_write = [target, "run"]  # predict's default output goes into the run
        if overwrite and action in ("train", "export"):
            argv.append("--overwrite")
        before = snapshot(sandbox / "mine")
        outcome = run_command(argv, sandbox)
        check_outcome(outcome, "timeseries", "predict" if action == "run" else action, sandbox,
                      may_write=may_write)
        if kind not in WORKING.get(action, ()):
            assert snapshot(sandbox / "mine") == before
