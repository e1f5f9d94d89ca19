"""The benchmark scripts' own logic (benchmarks/ is no package: loaded from its files), on tiny
inputs: what they run and report, never a timing."""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from seqlab.data.errors import DataError

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the scripts import each other by name
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_series_seqlab_refuses_is_skipped_and_named_not_the_end_of_the_benchmark(
        monkeypatch, capsys):
    # A series with a missing value ended benchmarks/forecasting.py with a traceback, before
    # the table of the series already measured.
    forecasting = load("forecasting", monkeypatch)

    def measure(name, data, index):
        if name == "bad":
            raise DataError("column 'v' has missing values at lines 5", path=data)
        return {"series": name, "index": index}

    series = [("good", "a.csv"), ("bad", "bad.csv"), ("also", "c.csv")]
    results, skipped = forecasting.measure_each(series, measure)
    assert results == [{"series": "good", "index": 0}, {"series": "also", "index": 2}]
    assert skipped == [("bad", "bad.csv: column 'v' has missing values at lines 5")]
    assert "bad: skipped: bad.csv: column 'v'" in capsys.readouterr().err
    assert forecasting.report_skipped(skipped) == 1
    assert "skipped 1 series, not in the figures: bad" in capsys.readouterr().out
    assert forecasting.report_skipped([]) == 0


def test_flags_for_every_run_are_refused_once_before_the_first(monkeypatch, capsys):
    forecasting = load("forecasting", monkeypatch)
    with pytest.raises(SystemExit) as stopped:
        forecasting.main(["--no-public", "--only", "sunspots", "--", "--epochs", "0"])
    assert stopped.value.code == 2
    assert ("error: the flags after --: --epochs must be at least 1. Received: --epochs 0"
            in capsys.readouterr().err)


@pytest.mark.parametrize("validate", [False, True])
def test_the_global_forecaster_benchmark_trains_every_step_its_spec_names(validate,
                                                                          monkeypatch):
    """`steps // 250` rounds of 250 dropped the rest (499 steps trained 250, gru:2:600 500),
    and with --validate each round re-read the dataset's first 250 batches."""
    benchmark = load("global_forecaster", monkeypatch)
    monkeypatch.setattr(benchmark, "EVALUATE_EVERY", 3)
    trained, scored = [], []
    fit = benchmark.GlobalForecaster.fit

    def counting_fit(model, *args, **kwargs):
        history = fit(model, *args, **kwargs)
        trained.append(int(model.optimizer.iterations.numpy()))
        return history

    monkeypatch.setattr(benchmark.GlobalForecaster, "fit", counting_fit)
    score = benchmark.metrics.score_panel
    monkeypatch.setattr(benchmark.metrics, "score_panel",
                        lambda *args: scored.append(1) or score(*args))
    rng = np.random.default_rng(0)
    history = [10.0 + rng.normal(size=40).cumsum() for _ in range(3)]
    settings = {"lookback": 4, "kind": "nbeats", "units": 4, "layers": 1, "blocks": 1,
                "normalization": "shift", "learning_rate": 1e-3, "batch_size": 8, "steps": 7}
    forecast, best_step = benchmark.train_and_forecast(settings, history, 2, 0, validate)
    assert forecast.shape == (3, 2) and np.isfinite(forecast).all()
    assert trained == [7]
    if validate:  # scored after steps 3 and 6 and after the last, 7
        assert len(scored) == 3 and best_step in (3, 6, 7)


def test_an_m4_folder_without_a_sets_files_exits_with_the_usage_status(monkeypatch, capsys,
                                                                       tmp_path):
    # Status 1 is the benchmark's "Naive2 NOT reproduced"; a folder lacking the files was 1 too.
    m4 = load("m4", monkeypatch)
    with pytest.raises(SystemExit) as stopped:
        m4.main(["--data", str(tmp_path), "--sets", "hourly"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("m4.py: error: M4 hourly: ") and str(tmp_path) in error, error


def test_a_series_a_peer_forecasts_exactly_has_no_ratio_and_is_left_out_of_the_mean(
        monkeypatch, capsys):
    # A constant (or exactly periodic) series: the best peer's RMSE is 0, and the ratio to it
    # ended the benchmark with ZeroDivisionError, losing the table of the series before it.
    forecasting = load("forecasting", monkeypatch)
    metrics = {"data": {"rows": 40, "split_rows": {"test": 8}}, "horizon": 1, "season": 12,
               "windows": 8, "model": {"rmse": 0.5}, "rmse_ratio_to_best_baseline": math.nan}
    monkeypatch.setattr(forecasting, "run_seqlab",
                        lambda data, extra, out: (metrics, {"lookback": 4, "model": "auto"},
                                                  1.0, None))
    monkeypatch.setattr(forecasting, "target_values", lambda config, metrics: np.ones(40))
    monkeypatch.setattr(forecasting, "run_peers", lambda *args: {
        peer: (0.0 if peer == "SeasonalNaive" else 1.0, 0.1) for peer in forecasting.PEERS})
    figures = forecasting.benchmark("flat", "flat.csv", [], "out")
    assert figures["ratio"] is None and figures["ratio_note"] == forecasting.NO_RATIO
    # The run's own ratio, NaN where its baseline and model are both exact, is null in JSON.
    assert figures["ratio_to_own_best_baseline"] is None
    json.loads(json.dumps(figures), parse_constant=lambda name: pytest.fail(name))
    assert forecasting.describe_ratios("ratio", [0.5, None, 2.0]) == (
        "ratio: geometric mean 1.000 over 2 series, worst 2.000, at most 1.0 on 1 of 2; "
        "1 series left out (n/a: the best peer's RMSE is 0)")
    assert forecasting.describe_ratios("ratio", [None]) == (
        "ratio: no geometric mean; 1 series left out (n/a: the best peer's RMSE is 0)")


def test_the_peers_read_the_target_as_the_run_filled_it(monkeypatch, tmp_path):
    # `--fill ffill`, the advice given for a series with a missing value, ended the benchmark
    # with "the target as read here differs from the run's": the peers read the gap unfilled.
    forecasting = load("forecasting", monkeypatch)
    path = tmp_path / "gap.csv"
    path.write_text("date,v\n" + "".join(f"2000-{1 + t // 28:02d}-{1 + t % 28:02d},"
                                         f"{'' if t == 5 else t}\n" for t in range(30)))
    config = forecasting.default_config(path, ["--fill", "ffill"], tmp_path / "run")
    values = forecasting.target_values(config, {"targets": ["v"], "data": {"rows": 30}})
    assert values[5] == 4.0 and np.isfinite(values).all()



def test_a_series_too_short_for_a_backtest_is_skipped_by_the_members_benchmark(
        monkeypatch, capsys, tmp_path):
    # A 12-row CSV, which forecasting.py measures, ended forecast_members.py with a ValueError.
    members = load("forecast_members", monkeypatch)
    path = tmp_path / "short.csv"
    path.write_text("date,value\n" + "".join(f"2000-{month:02d}-01,{10 + 1.5 * month}\n"
                                             for month in range(1, 13)))
    results, skipped = members.measure_each(
        [("short", path)], lambda name, data, index: members.measure(name, data, tmp_path / "r"))
    assert results == [] and skipped == [
        ("short", f"{path}: 12 rows: too few for a backtest, which the choice among the "
                  "members needs")]
    assert members.report_skipped(skipped) == 1


def test_a_mutation_whose_tests_do_not_run_is_a_list_error_and_a_timeout_is_said(
        monkeypatch, capsys):
    # pytest's exit 4 (usage error) and 5 (no test collected: a -k selecting nothing) counted
    # as "caught"; --timeout 0 was taken, and every run ended at once as caught.
    mutations = load("mutations", monkeypatch)
    assert mutations.verdict_of("failed") == "caught"
    assert mutations.verdict_of("passed") == "NOT CAUGHT"
    assert mutations.verdict_of("timeout") == "caught (timeout)"
    assert mutations.verdict_of("pytest exit 2") == "caught (pytest exit 2)"
    assert mutations.verdict_of("pytest exit 5") == (
        "LIST ERROR (pytest exit 5: no tests collected)")
    assert mutations.verdict_of("pytest exit 4").startswith("LIST ERROR (pytest exit 4")
    for timeout in ("0", "-3"):
        with pytest.raises(SystemExit) as stopped:
            mutations.main(["--timeout", timeout, "--list"])
        assert stopped.value.code == 2
        assert f"error: --timeout must be above 0 seconds, not {timeout}" in (
            capsys.readouterr().err)


def test_m4_links_a_second_data_folder_and_deletes_its_temporary_folder(monkeypatch, capsys,
                                                                        tmp_path):
    # A reused --out kept the links to the first --data's files (the run then trained on them,
    # and ended in a KeyError); without --out the temporary folder was never deleted.
    m4 = load("m4", monkeypatch)
    first, second, out = tmp_path / "first", tmp_path / "second", tmp_path / "out"
    for folder in (first, second):
        folder.mkdir()
        for part in ("train", "test"):
            (folder / f"Hourly-{part}.csv").write_text(folder.name)
    m4.link_set_files(first, "hourly", out)
    files = m4.link_set_files(second, "hourly", out)
    assert (files / "Hourly-train.csv").read_text() == "second"
    (files / "Hourly-test.csv").unlink()
    (files / "Hourly-test.csv").write_text("the user's")  # not a link it made: kept
    with pytest.raises(SystemExit) as stopped:
        m4.link_set_files(second, "hourly", out)
    assert stopped.value.code == 2 and (files / "Hourly-test.csv").read_text() == "the user's"
    assert "Hourly-test.csv is not a link m4.py made" in capsys.readouterr().err

    made = []

    def train(argv):
        run = Path(argv[argv.index("--out") + 1])
        made.append(run.parent)
        run.mkdir()
        (run / "holdout_forecasts.csv").write_text("id,step,actual,model\nH1,1,1.0,2.0\n")
        return 0

    monkeypatch.setattr("seqlab.cli.main", train)
    panel = type("Panel", (), {"ids": ["H1"]})()
    forecasts, _ = m4.seqlab_forecasts(str(second), "hourly", panel)
    assert forecasts["seqlab"][0].tolist() == [2.0]
    assert made and not made[0].exists()


@pytest.mark.parametrize("flags, error", [
    (["--limit", "-3"], "--limit must be 0 (every series) or more, not -3"),
    (["--seqlab", "--out", "{file}"], "--out {file}: not a folder"),
    (["--seqlab", "--out", "{file}/runs"], "--out {file}/runs: not a folder ({file} is a file)"),
])
def test_m4_refuses_a_negative_limit_and_an_out_that_is_a_file(flags, error, monkeypatch,
                                                               capsys, tmp_path):
    m4 = load("m4", monkeypatch)
    file = tmp_path / "file"
    file.write_text("")
    flags = [flag.format(file=file) for flag in flags]
    with pytest.raises(SystemExit) as stopped:
        m4.main(["--data", str(tmp_path), "--sets", "hourly", *flags])
    assert stopped.value.code == 2
    assert f"error: {error.format(file=file)}" in capsys.readouterr().err


@pytest.mark.parametrize("flags, error", [
    (["--seed", "-1"], "--seed must lie in [0, 2**32), not -1"),
    (["--out", "{folder}"], "--out {folder}: a folder; expected a file"),
    (["--out", "{folder}/missing/runs.jsonl"], "--out {folder}/missing/runs.jsonl: no folder"),
])
def test_the_global_forecaster_refuses_a_bad_seed_or_out_before_it_trains(flags, error,
                                                                          monkeypatch, capsys,
                                                                          tmp_path):
    # An --out that is a folder failed after the first run had trained (IsADirectoryError);
    # --seed -1 was a traceback.
    benchmark = load("global_forecaster", monkeypatch)
    flags = [flag.format(folder=tmp_path) for flag in flags]
    with pytest.raises(SystemExit) as stopped:
        benchmark.main(["--data", str(tmp_path), "--sets", "hourly", *flags])
    assert stopped.value.code == 2
    assert f"error: {error.format(folder=tmp_path)}" in capsys.readouterr().err


@pytest.mark.parametrize("examples", ["abc", "0", "-3"])
def test_fuzz_sh_refuses_a_budget_that_is_no_positive_whole_number(examples):
    # 'abc' reached pytest as a collection error, 0 ran the normal budget silently.
    import subprocess

    finished = subprocess.run(["bash", str(BENCHMARKS / "fuzz.sh"), examples, "no_such_test"],
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 2
    assert finished.stderr.startswith(
        f"fuzz.sh: error: N must be a whole number of at least 1, not '{examples}'")
    assert finished.stderr.count("\n") == 1


def test_long_documents_keeps_tensorflows_log_off_the_terminal(tmp_path):
    # It set TF_CPP_MIN_LOG_LEVEL itself, which seqlab takes for the user's own level: every
    # run showed TensorFlow's load notices (oneDNN, cuda drivers, absl).
    import subprocess
    import sys

    from tests.test_quiet import environment_without_log_level, tensorflow_log

    source = tmp_path / "snippets"
    source.mkdir()
    for label in ("pos", "neg"):
        (source / f"rt-polarity.{label}").write_text(
            "".join(f"a {label} sentence number {index}\n" for index in range(20)))
    finished = subprocess.run(
        [sys.executable, str(BENCHMARKS / "long_documents.py"), "build", str(tmp_path / "out"),
         "--source", str(source), "--documents", "20", "--words", "5"],
        capture_output=True, text=True, timeout=300, env=environment_without_log_level())
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert tensorflow_log(finished.stderr) == [] and finished.stderr == "", finished.stderr
    assert len(list((tmp_path / "out").glob("*/*/*.txt"))) == 20
