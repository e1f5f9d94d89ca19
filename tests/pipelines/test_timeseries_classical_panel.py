"""The classical members of many series against statsforecast itself, on tiny series."""

import concurrent.futures
import io
import multiprocessing
import os
import signal
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from statsforecast.models import AutoETS, DynamicOptimizedTheta

from seqlab import _worker
from seqlab.models.forecasting import metrics
from seqlab.pipelines import timeseries_classical_panel as classical_panel
from seqlab.pipelines.timeseries_classical_panel import (
    ETS_MAX_SEASON,
    baseline_forecasts,
    classical_forecasts,
)


def _seasonal(n, season, level=100.0, seed=0):
    t = np.arange(n)
    noise = np.random.default_rng(seed).normal(0.0, 1.0, n)
    return level * (1.0 + 0.2 * np.sin(2 * np.pi * t / season)) + 0.3 * t + noise


def _fit(model, values):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(values)


def test_each_series_gets_statsforecasts_own_forecast_and_its_forward():
    histories = [_seasonal(48, 4, seed=s) for s in range(2)]
    longer = [np.concatenate([h, _seasonal(54, 4, seed=9)[48:]]) for h in histories]
    forecasts, rolled, seconds, notes = classical_forecasts(
        histories, 5, 4, ("ets", "theta"), stream=False, later=longer)
    assert not notes and set(seconds) == {"ets", "theta"}
    for i, history in enumerate(histories):
        for method, model in (("ets", AutoETS(season_length=4)),
                              ("theta", DynamicOptimizedTheta(season_length=4))):
            fitted = _fit(model, history)
            # The same library call on the same values: equal to float64 rounding.
            np.testing.assert_allclose(forecasts[method][i], fitted.predict(h=5)["mean"],
                                       rtol=1e-10)
            np.testing.assert_allclose(rolled[method][i],
                                       fitted.forward(y=longer[i], h=5)["mean"], rtol=1e-10)


def test_a_long_history_is_fitted_on_its_last_rows_and_rolled_forward_from_there(
        monkeypatch):
    # FIT_ROWS made small (30 rows of 48, 2 seasons of 4) to keep the fits fast.
    monkeypatch.setattr(metrics, "FIT_ROWS", 30)
    monkeypatch.setattr(metrics, "FIT_SEASONS", 2)
    histories = [_seasonal(48, 4, seed=3), _seasonal(24, 4, seed=4)]  # long, short
    longer = [np.concatenate([h, _seasonal(54, 4, seed=9)[h.size:h.size + 6]])
              for h in histories]
    forecasts, rolled, _, notes = classical_forecasts(
        histories, 5, 4, ("ets",), stream=False, later=longer)
    assert not notes
    for i, start in enumerate((18, 0)):
        fitted = _fit(AutoETS(season_length=4), histories[i][start:])
        # The library's own fit of the last rows, rolled over the later values from there.
        np.testing.assert_allclose(forecasts["ets"][i], fitted.predict(h=5)["mean"],
                                   rtol=1e-10)
        np.testing.assert_allclose(rolled["ets"][i],
                                   fitted.forward(y=longer[i][start:], h=5)["mean"], rtol=1e-10)


@pytest.mark.parametrize("bounded", [False, True])
def test_ets_with_a_long_season_fits_the_seasonally_adjusted_series(monkeypatch, bounded):
    season = ETS_MAX_SEASON + 12
    # Long enough for M4's seasonality test to look at lag 24 (R's acf stops at 10 log10(n)).
    history = _seasonal(12 * season, season)
    assert metrics.is_seasonal(history, season)
    start = 0
    if bounded:  # fitted without a season, so the bound's rows are not seasons of 36
        monkeypatch.setattr(metrics, "FIT_ROWS", 100)
        start = history.size - 100
    forecasts, _, _, _ = classical_forecasts([history], 6, season, ("ets",), stream=False)
    indices = metrics.seasonal_indices(history, season)
    adjusted = history / indices[np.arange(history.size) % season]
    expected = _fit(AutoETS(season_length=1), adjusted[start:]).predict(h=6)["mean"]
    expected = expected * indices[np.arange(history.size, history.size + 6) % season]
    np.testing.assert_allclose(forecasts["ets"][0], expected, rtol=1e-10)


def test_a_series_statsforecast_cannot_fit_gets_the_seasonal_naive_and_a_note():
    history = np.array([1.0, np.nan, 3.0, 4.0, 5.0, 6.0])
    forecasts, _, _, notes = classical_forecasts([history], 2, 1, ("ets",), stream=False)
    np.testing.assert_array_equal(forecasts["ets"][0],
                                  metrics.seasonal_naive_forecast(history, 2, 1))
    assert notes and "failed on 1 of 1 series" in notes[0]


def test_fits_in_worker_processes_equal_the_fits_in_this_process(monkeypatch, capfd):
    # Series of different lengths, one that statsforecast cannot fit (too short for ETS).
    histories = [_seasonal(20 + 7 * k, 4, seed=k) for k in range(9)] + [np.arange(1.0, 5.0)]
    longer = [np.concatenate([h, _seasonal(h.size + 3, 4, seed=50)[h.size:]])
              for h in histories]
    here = classical_forecasts(histories, 3, 4, ("ets", "theta"), stream=False, later=longer,
                               workers=1)
    # Workers however quick the fits: two series timed here, the rest sent to the workers.
    monkeypatch.setattr(classical_panel, "PARALLEL_MIN_SECONDS", 0.0)
    monkeypatch.setattr(classical_panel, "PROBE_SERIES", 2)
    # The command line's quiet level (the suite's own is 2): the workers inherit it.
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    stream = io.StringIO()
    there = classical_forecasts(histories, 3, 4, ("ets", "theta"), stream=stream,
                                later=longer, workers=2, quiet_for=0.0)
    assert any("2 worker processes" in note for note in there[3])
    # Should a worker load TensorFlow (it does not: the next test), its load notices, which
    # ignore the level, stay off the terminal it shares with the command.
    printed = capfd.readouterr().err
    assert not any(notice in printed for notice in ("oneDNN", "cuda", "absl", "I0000"))
    # The same library calls on the same values in another process: the same float64 values.
    for method in ("ets", "theta"):
        for a, b in zip(here[0][method] + here[1][method], there[0][method] + there[1][method]):
            np.testing.assert_array_equal(a, b)
    failed = [note for note in there[3] if "failed" in note]
    assert failed == [note for note in here[3] if "failed" in note] and len(failed) == 1
    assert stream.getvalue().splitlines()[-1].startswith(
        "classical members: (ets, theta), 20/20 series fits")


def test_chunks_end_every_few_seconds_so_that_progress_moves():
    # 20,000 one-series files at 0.08 s of fits a series (as measured, 2 cores): 8 chunks a
    # worker were 100 s each, and progress moves only when a chunk ends.
    positions = range(8, 20_008)
    chunks = classical_panel._chunks(positions, 2, per_series=0.08)
    assert max(len(chunk) for chunk in chunks) * 0.08 <= classical_panel.CHUNK_SECONDS
    assert [i for chunk in chunks for i in chunk] == list(positions)
    # Few or quick series: still `CHUNKS_PER_WORKER` a worker, to balance their lengths.
    assert len(classical_panel._chunks(range(160), 2, per_series=0.001)) == 16
    assert len(classical_panel._chunks(range(3), 2, per_series=60.0)) == 3


def test_a_worker_fits_without_importing_tensorflow():
    """A worker needs NumPy, statsforecast and the competition metrics: `seqlab.models` leaves
    its models out there (`seqlab._worker.started`), which would load TensorFlow and Keras."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
            1, mp_context=context, initializer=_worker.start,
            initargs=(True, os.getpid())) as pool:
        with classical_panel._bare_main():  # the worker starts at the first submission
            fitted = pool.submit(classical_panel._fit_chunk, [_seasonal(40, 4)], 2, 4,
                                 ("theta",), None, range(1)).result()
        loaded = pool.submit(eval, "sorted(name for name in __import__('sys').modules "
                                   "if name.split('.')[0] in ('tensorflow', 'keras', 'seqlab'))"
                             ).result()
    assert fitted["failed"] == {"theta": 0} and len(fitted["forecasts"]["theta"]) == 1
    assert "seqlab.pipelines.timeseries_classical_panel" in loaded  # the fitting code ran there
    assert "seqlab.models.forecasting.metrics" in loaded
    assert [name for name in loaded if not name.startswith("seqlab")] == []
    assert not any(name.startswith("seqlab.models.") and "forecasting" not in name
                   for name in loaded)


def test_an_interrupted_pool_ends_at_once():
    """A Ctrl-C reaches the workers too: they ignore it, and the parent ends them with their
    queued work cancelled (the pool's `with` waited for every queued chunk, 100-200 s on M4's
    weekly series, and a second Ctrl-C hung the exit)."""
    context = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(
        2, mp_context=context, initializer=_worker.start, initargs=(True, os.getpid()))
    with classical_panel._bare_main():
        handler = pool.submit(signal.getsignal, signal.SIGINT).result()
        sleeping = [pool.submit(time.sleep, 600) for _ in range(12)]
    processes = list(pool._processes.values())
    assert len(processes) == 2 and handler == signal.SIG_IGN
    classical_panel._stop_pool(pool)
    assert all(_ended(process) for process in processes)
    # Two ran and up to three more had been handed to the workers' queue: the rest never start.
    assert sum(future.cancelled() for future in sleeping) >= 7


def _ended(process):
    """Whether a worker is gone. Not `is_alive()`: where the pool's own thread reaped it first,
    its `poll` meets ECHILD and answers None, "alive", for a process that has ended."""
    if process.exitcode is not None:
        return True
    try:
        os.kill(process.pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_fits_that_take_little_time_stay_in_this_process():
    # Ten short series of theta: far below PARALLEL_MIN_SECONDS, so no worker is started.
    histories = [_seasonal(30, 4, seed=k) for k in range(10)]
    _, _, _, notes = classical_forecasts(histories, 2, 4, ("theta",), stream=False, workers=2)
    assert not any("worker" in note for note in notes)


def test_a_users_script_without_a_main_guard_is_not_run_again_by_the_workers(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "fit.py"
    script.write_text(
        "import numpy as np\n"
        "from seqlab.pipelines import timeseries_classical_panel as panel\n"
        "print('top level ran', flush=True)\n"
        "panel.PARALLEL_MIN_SECONDS, panel.PROBE_SERIES = 0.0, 2\n"
        "histories = [np.sin(np.arange(40.0) + k) + 5.0 for k in range(6)]\n"
        "_, _, _, notes = panel.classical_forecasts(histories, 3, 1, ('theta',),\n"
        "                                           stream=False, workers=2)\n"
        "print(notes, flush=True)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("top level ran") == 1
    assert "2 worker processes" in done.stdout and "failed" not in done.stdout


def _children(pid):
    """Process ids whose parent is `pid` and that are still running (not zombies), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc (Linux)")
def test_the_workers_end_when_the_command_is_killed(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "fit.py"
    script.write_text(
        "import numpy as np\n"
        "from seqlab.pipelines import timeseries_classical_panel as panel\n"
        "panel.PARALLEL_MIN_SECONDS, panel.PROBE_SERIES = 0.0, 2\n"
        "rng = np.random.default_rng(0)\n"
        "histories = [np.cumsum(rng.normal(size=300)) + 100 for _ in range(400)]\n"
        "panel.classical_forecasts(histories, 6, 4, ('arima',), stream=False, workers=2)\n")
    command = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        workers = []
        while len(workers) < 2 and time.monotonic() < deadline and command.poll() is None:
            time.sleep(0.5)
            workers = [pid for pid in _children(command.pid)
                       if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert len(workers) == 2, "the workers did not start"
    finally:
        command.send_signal(signal.SIGKILL)  # no clean-up runs in the command
        command.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.5)
    assert not any(_alive(pid) for pid in workers)


def _alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_progress_without_a_terminal_ends_with_a_line_of_every_fit():
    stream = io.StringIO()
    classical_forecasts([_seasonal(30, 4)], 2, 4, ("theta",), what="here", stream=stream,
                        quiet_for=0.0)
    assert stream.getvalue().strip().splitlines()[-1].startswith(
        "classical members here: theta (theta), 1/1 series fits")
    # By default fits that end within PROGRESS_EVERY seconds print nothing.
    quiet = io.StringIO()
    classical_forecasts([_seasonal(30, 4)], 2, 4, ("theta",), what="here", stream=quiet)
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("season", [1, 4])
def test_the_benchmarks_are_the_metrics_modules(season):
    history = _seasonal(40, 4)
    found = baseline_forecasts([history], 3, season)
    np.testing.assert_array_equal(found["naive"][0], metrics.naive_forecast(history, 3))
    np.testing.assert_array_equal(found["seasonal_naive"][0],
                                  metrics.seasonal_naive_forecast(history, 3, season))
    np.testing.assert_array_equal(found["naive2"][0],
                                  metrics.naive2_forecast(history, 3, season))


def test_theta_forecasts_a_series_in_tiny_or_huge_units_as_in_units_near_one():
    # The reference: the same series divided by 10 (magnitude about 5, fitted as it is), its
    # forecasts times 10. In nanounits or gigaunits it is fitted divided by its power of ten,
    # the same values up to float64 rounding (1e-6 of the spread allows for the optimiser's
    # carrying that further); without the unit, statsforecast's Theta was 0.07 of the spread
    # off at 1e-9.
    rng = np.random.default_rng(3)
    steps = np.arange(96)
    values = 50 + 8 * np.sin(2 * np.pi * steps / 12) + np.cumsum(rng.normal(0, 1, 96))
    history, longer = values[:72], values
    first, second = classical_panel._fit_and_forecast("theta", history / 10, 12, 12, longer / 10)
    for unit in (1e-9, 1e9):
        scaled = classical_panel._fit_and_forecast("theta", history * unit, 12, 12,
                                                   longer * unit)
        np.testing.assert_allclose(scaled[0] / unit, first * 10, rtol=0,
                                   atol=1e-6 * np.std(values))
        np.testing.assert_allclose(scaled[1] / unit, second * 10, rtol=0,
                                   atol=1e-6 * np.std(values))
