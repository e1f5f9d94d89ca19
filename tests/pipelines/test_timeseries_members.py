"""Tests of pipelines/timeseries_members.py: the backtest of --model auto's members."""

import json

import numpy as np
import pandas as pd
import pytest

from seqlab.data.timeseries import Scaler
from seqlab.models.forecaster import Forecaster
from seqlab.models.forecasting.classical import fit_classical, forecast_at_origins
from seqlab.pipelines.timeseries_members import (
    ForecastMembers,
    classical_backtest,
    linear_backtest,
    neural_backtest_gap,
    plan_backtest,
)
from seqlab.models.forecasting.selection import Selection


def seasonal_series(rows=120, seed=0):
    rng = np.random.default_rng(seed)
    steps = np.arange(rows)
    return 50 + 0.3 * steps + 8 * np.sin(2 * np.pi * steps / 12) + rng.normal(size=rows)


def test_the_plan_keeps_two_seasons_and_a_window_before_the_first_fold():
    plan = plan_backtest(pre_test_rows=102, test_rows=18, lookback=24, horizon=2, season=12,
                         folds=3)
    assert plan.region_start == 68 and plan.region_end == 102  # a third of 102 rows
    assert [fold.fit_end for fold in plan.folds] == [68, 79, 91]
    assert plan.origins.min() == 67 and plan.origins.max() == 100 - 1  # targets up to row 101
    assert plan_backtest(26, 4, 8, 1, 12, 3) is None  # two seasons leave one origin
    assert plan.describe() == "3 folds over rows 68..101 (33 origins)"
    one_fold = plan_backtest(102, 18, 24, 2, 12, folds=1)
    assert one_fold.describe() == "1 fold over rows 68..101 (33 origins)"
    # More folds than origins: one per origin, and the summary says so (it was silent).
    many = plan_backtest(102, 18, 24, 2, 12, folds=100)
    assert len(many.folds) == 33 and many.describe() == (
        "33 folds over rows 68..101 (33 origins; --auto-folds 100 asked for more, but a fold "
        "needs an origin of its own)")


def test_classical_members_are_refitted_on_the_rows_before_each_fold():
    values = seasonal_series()
    plan = plan_backtest(102, 18, 24, 1, 12, 3)
    forecasts, notes = classical_backtest(plan, values[:, None], 12, ["y"], ["ets", "theta"], 1)
    assert notes == []
    # Independent: each fold fitted by hand on its own rows only, forecast from its origins.
    expected = np.concatenate([
        forecast_at_origins(fit_classical("ets", values[:fold.fit_end], 12), values,
                            fold.origins, 1) for fold in plan.folds])
    np.testing.assert_allclose(forecasts["ets"][:, :, 0], expected, rtol=1e-12)
    assert forecasts["theta"].shape == (len(plan.origins), 1, 1)
    # Changing the rows at and after a fold's first target changes nothing it was fitted on:
    # the first fold's forecast from its first origin (which reads rows up to 67) stays.
    changed = values.copy()
    changed[68:] += 100.0
    again, _ = classical_backtest(plan, changed[:, None], 12, ["y"], ["ets"], 1)
    assert again["ets"][0, 0, 0] == pytest.approx(forecasts["ets"][0, 0, 0], rel=1e-12)


def test_the_linear_member_is_refitted_on_the_windows_before_each_fold():
    values = seasonal_series()
    frame = pd.DataFrame({"y": values})
    schema = type("Schema", (), {"input_columns": ["y"], "targets": ["y"]})()
    scaler = Scaler.fit("standard", frame.iloc[:80])
    plan = plan_backtest(102, 18, 12, 1, 12, 3)
    forecasts = linear_backtest(plan, scaler, schema, frame, lookback=12, horizon=1)
    scaled = scaler.transform(values[:, None], ["y"])
    for fold, block in zip(plan.folds, np.split(forecasts, np.cumsum(
            [len(f.origins) for f in plan.folds])[:-1])):
        # Reference: a linear forecaster fitted on the windows whose target row lies before
        # the fold (rows 0 .. fit_end - 1), forecasting the fold's origins.
        starts = np.arange(0, fold.fit_end - 12)
        windows = scaled[starts[:, None] + np.arange(12)].astype("float32")
        goals = scaled[starts + 12][:, None, :].astype("float32")
        reference = Forecaster(lookback=12, n_features=1, kind="linear", normalization="shift")
        reference.fit_least_squares((windows, goals))
        inputs = scaled[(fold.origins - 11)[:, None] + np.arange(12)].astype("float32")
        expected = scaler.inverse_transform(np.asarray(reference(inputs)), ["y"])
        # float32 layers: the same solve, rounding in the last digits.
        np.testing.assert_allclose(block, expected, rtol=1e-5, atol=1e-4)


def test_members_json_is_validated_on_load():
    values = seasonal_series(60)
    spec = fit_classical("seasonal_naive", values, 12)
    members = ForecastMembers({"seasonal_naive": [spec]},
                              Selection(("seasonal_naive", "linear"), {}, {}, 0), "gru")
    again = ForecastMembers.from_dict(json.loads(json.dumps(members.to_dict())))
    assert again.kept == ("seasonal_naive", "linear") and again.uses_history()
    broken = members.to_dict()
    broken["selection"]["kept"] = ["seasonal_naive", "prophet"]
    with pytest.raises(ValueError, match=r"selection.kept' names members this run does not "
                                         r"have: \['prophet'\]"):
        ForecastMembers.from_dict(broken)
    with pytest.raises(ValueError, match="format 1"):
        ForecastMembers.from_dict({"classical": {}})
    # Found by the fuzzing harness's long budget: a list there was an AttributeError traceback.
    broken["selection"] = []
    with pytest.raises(ValueError, match="members.json: field 'selection' must be an object "
                                         "or null"):
        ForecastMembers.from_dict(broken)
    # The first rows a served history must start with: kept, checked, absent in older runs.
    members.history_start = [[1.0, 2.0], [3.0, 4.5]]
    assert ForecastMembers.from_dict(members.to_dict()).history_start == [[1.0, 2.0], [3.0, 4.5]]
    older = members.to_dict()
    del older["history_start"]
    assert ForecastMembers.from_dict(older).history_start is None
    for bad in ([[1.0], [2.0, 3.0]], [[float("nan")]], [["1"]], [], [[True]]):
        with pytest.raises(ValueError, match="field 'history_start' must be null or rows"):
            ForecastMembers.from_dict({**members.to_dict(), "history_start": bad})


def test_the_network_is_left_out_of_a_backtest_whose_validation_rows_hold_no_horizon():
    # 120 monthly rows with --horizon 12: the network's backtest training had 10 validation
    # rows, and the run failed after its whole training ("must hold one horizon = 12").
    import types

    plan = plan_backtest(pre_test_rows=102, test_rows=18, lookback=24, horizon=12, season=12,
                         folds=3)
    config = types.SimpleNamespace(lookback=24, horizon=12, val_fraction=0.15)
    assert neural_backtest_gap(config, plan) == (
        f"the {round(plan.region_start * 0.15)} validation rows before the backtest (rows "
        f"{plan.region_start}..) hold less than one horizon (12)")
    assert neural_backtest_gap(types.SimpleNamespace(lookback=24, horizon=12, val_fraction=0.2),
                               plan) is None
    short = types.SimpleNamespace(lookback=plan.region_start - 30, horizon=12, val_fraction=0.2)
    assert neural_backtest_gap(short, plan).startswith("fewer than 20 windows lie before")
