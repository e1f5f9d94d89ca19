"""Tests of models/forecasting/selection.py: backtest folds, candidates and the choice."""

import itertools
import json

import numpy as np
import pytest
from scipy import stats

from seqlab.models.forecasting import selection as selection_module
from seqlab.models.forecasting.selection import (
    Selection,
    backtest_folds,
    backtest_region,
    combine,
    diebold_mariano,
    select,
)
from seqlab.pipelines.common import write_json_atomic


@pytest.mark.parametrize("region_start, region_end, horizon, folds, first_origin",
                         [(40, 70, 1, 3, 0), (40, 70, 3, 3, 0), (10, 13, 1, 5, 0),
                          (30, 100, 6, 4, 35), (50, 51, 1, 3, 0)])
def test_no_fold_target_lies_in_its_fitting_rows(region_start, region_end, horizon, folds,
                                                 first_origin):
    result = backtest_folds(region_start, region_end, horizon, folds, first_origin)
    assert result and len(result) <= folds
    for fold in result:
        targets = fold.origins[:, None] + np.arange(1, horizon + 1)
        assert targets.min() >= fold.fit_end  # never a fitting row
        assert targets.max() < region_end  # never a test row
        assert fold.origins.min() >= first_origin
    # Each origin is scored once, and with horizon 1 every target row of the region from the
    # first origin on is forecast exactly once.
    origins = np.concatenate([fold.origins for fold in result])
    assert len(origins) == len(set(origins))
    if horizon == 1:
        assert sorted(origins + 1) == list(range(max(region_start, first_origin + 1), region_end))
    assert [fold.fit_end for fold in result] == sorted(fold.fit_end for fold in result)


def test_the_backtest_region_is_a_third_of_the_rows_at_least_the_test_split():
    assert backtest_region(90, 16, 10) == 60  # a third: 30 rows
    assert backtest_region(90, 40, 10) == 50  # the test split is longer: 40 rows
    assert backtest_region(30, 5, 26) == 26  # the earliest fit keeps 26 rows
    assert backtest_region(30, 5, 30) is None  # nothing left to score


def brute_force_choice(forecasts, actual):
    """Every subset's mean, scored; the best among the singles and the best-k prefixes."""
    scores = {}
    for size in range(1, len(forecasts) + 1):
        for members in itertools.combinations(sorted(forecasts), size):
            mean = np.mean([forecasts[m] for m in members], axis=0)
            scores[members] = float(np.sqrt(np.mean((mean - actual) ** 2)))
    return scores


def test_select_keeps_the_candidate_with_the_lowest_backtest_rmse():
    rng = np.random.default_rng(3)
    actual = rng.normal(size=(40, 2, 1))
    # Three members with independent errors: their mean beats each one.
    forecasts = {name: actual + rng.normal(scale=scale, size=actual.shape)
                 for name, scale in (("a", 1.0), ("b", 1.1), ("c", 1.2), ("bad", 5.0))}
    selection = select(forecasts, actual)
    scores = brute_force_choice(forecasts, actual)
    singles = {members[0]: score for members, score in scores.items() if len(members) == 1}
    assert selection.member_rmse == pytest.approx(singles)
    ranked = sorted(singles, key=singles.get)
    tried = [(name,) for name in ranked] + [tuple(ranked[:k]) for k in range(2, 5)]
    best = min(tried, key=lambda members: scores[tuple(sorted(members))])
    assert selection.kept == best and len(selection.kept) > 1
    assert selection.candidate_rmse[selection.name] == pytest.approx(
        scores[tuple(sorted(best))])
    assert selection.name == "mean of " + " + ".join(best)
    assert len(selection.candidate_rmse) == 4 + 3
    np.testing.assert_allclose(combine(forecasts, ("a", "b")),
                               (forecasts["a"] + forecasts["b"]) / 2)


def test_select_keeps_a_single_member_that_beats_every_mean(tmp_path):
    actual = np.zeros((10, 1, 1))
    # Off by 1 and 1.2 at every origin: both in the pool (1.2 is within 1.5 times 1), but the
    # better one alone gains the same at every origin, an infinite statistic (strict JSON
    # writes it as null).
    forecasts = {"better": actual + 1.0, "off": actual + 1.2, "worse": actual + 3.0}
    selection = select(forecasts, actual)
    assert selection.default == ("better", "off") and selection.left_out == ("worse",)
    assert selection.kept == ("better",) and selection.name == "better"
    assert selection.switch.statistic == -np.inf and selection.switch.switches
    assert ("lowest backtest RMSE (1 over 10 origins) of 5 candidates, clearly below the mean "
            "of the pool (mean of better + off 1.1;") in selection.reason()
    write_json_atomic(tmp_path / "members.json", selection.to_dict())
    again = Selection.from_dict(json.loads((tmp_path / "members.json").read_text()))
    assert again == selection and again.reason() == selection.reason()
    # An exact member: the pool is that member alone (nothing is within 1.5 times 0).
    forecasts["exact"] = actual.copy()
    selection = select(forecasts, actual)
    assert selection.kept == selection.default == ("exact",) and selection.switch is None
    assert "lowest backtest RMSE (0 over 10 origins) of 7 candidates" in selection.reason()


def test_a_member_kept_alone_only_never_enters_a_mean():
    actual = np.zeros((6, 1, 1))
    forecasts = {"a": actual + 1.0, "b": actual - 1.2, "benchmark": actual - 0.9}
    assert select(forecasts, actual).kept == ("benchmark", "a")  # the best mean of the two
    selection = select(forecasts, actual, alone_only=("benchmark",))
    assert selection.kept == ("a", "b")
    assert "mean of benchmark + a" not in selection.candidate_rmse
    assert select({"benchmark": actual}, actual, alone_only=("benchmark",)).kept == ("benchmark",)


def test_select_leaves_out_members_with_non_finite_forecasts():
    actual = np.zeros((5, 1, 1))
    forecasts = {"nan": np.full_like(actual, np.nan), "ok": actual + 0.5}
    selection = select(forecasts, actual)
    assert selection.kept == ("ok",) and set(selection.member_rmse) == {"ok"}
    with pytest.raises(ValueError, match="finite"):
        select({"nan": forecasts["nan"]}, actual)
    with pytest.raises(ValueError, match="origin"):
        select({"ok": actual[:0]}, actual[:0])


def test_a_selection_survives_its_dict():
    actual = np.zeros((4, 1, 1))
    selection = select({"a": actual + 1, "b": actual - 1.5}, actual)
    again = Selection.from_dict(selection.to_dict())
    assert again == selection and again.reason() == selection.reason()
    assert selection.to_dict()["why"] == selection.reason()


def test_the_mean_of_all_members_stays_unless_a_candidate_is_clearly_better_on_the_backtest():
    rng = np.random.default_rng(0)
    actual = rng.normal(size=(30, 1, 1))
    # Four members of equal skill: whichever scores lowest on 30 origins does so by chance.
    forecasts = {name: actual + rng.normal(size=actual.shape) for name in "abcd"}
    selection = select(forecasts, actual)
    best = min(selection.candidate_rmse, key=selection.candidate_rmse.get)
    default = selection.default
    assert sorted(default) == list("abcd") and selection.kept == default
    assert best == "mean of c + d + a" != selection.name  # lower on the backtest, by chance
    switch = selection.switch
    assert switch.best == best and not switch.switches and switch.candidates == 4 + 3 - 1
    # Bonferroni: the level split among the 6 other candidates, t with 29 degrees of freedom.
    assert switch.critical == pytest.approx(stats.t.ppf(1 - 0.05 / 6, 29))
    assert "was not clearly below it" in selection.reason()
    # One member far better than the rest at every origin: it is the pool, alone.
    forecasts["e"] = actual + 0.05 * rng.normal(size=actual.shape)
    selection = select(forecasts, actual)
    assert selection.kept == selection.default == ("e",) and selection.switch is None
    assert sorted(selection.left_out) == list("abcd")
    assert "the pool (e): the members within 1.5 times" in selection.reason()
    again = Selection.from_dict(json.loads(json.dumps(selection.to_dict())))
    assert again == selection and again.reason() == selection.reason()


def test_the_reason_gives_the_level_the_run_tested_at(monkeypatch):
    rng = np.random.default_rng(0)
    actual = rng.normal(size=(30, 1, 1))
    forecasts = {name: actual + rng.normal(size=actual.shape) for name in "abcd"}
    monkeypatch.setattr(selection_module, "SWITCH_LEVEL", 0.1)
    selection = select(forecasts, actual)
    assert selection.switch.level == 0.1 and "at 10% over 6 candidates" in selection.reason()
    assert selection.switch.critical == pytest.approx(stats.t.ppf(1 - 0.1 / 6, 29))
    saved = selection.to_dict()
    monkeypatch.setattr(selection_module, "SWITCH_LEVEL", 0.05)
    assert Selection.from_dict(saved).reason() == saved["why"]
    # A run saved before the level was stored tested at 5 %.
    del saved["switch_test"]["level"]
    assert "at 5% over 6 candidates" in Selection.from_dict(saved).reason()


def test_diebold_mariano_at_one_step_is_the_paired_t_statistic():
    rng = np.random.default_rng(1)
    loss, baseline = rng.gamma(2.0, size=25), rng.gamma(2.2, size=25)
    expected = stats.ttest_rel(loss, baseline).statistic
    assert diebold_mariano(loss, baseline, 1) == pytest.approx(expected, rel=1e-12)


def test_diebold_mariano_over_several_steps_follows_harvey_leybourne_and_newbold():
    rng = np.random.default_rng(2)
    loss, baseline = rng.gamma(2.0, size=20), rng.gamma(2.0, size=20)
    n, h = 20, 3
    d = loss - baseline
    # Written out as in the paper: gamma_k = sum_{t>k} (d_t - mean)(d_{t-k} - mean) / n.
    gamma = [sum((d[t] - d.mean()) * (d[t - k] - d.mean()) for t in range(k, n)) / n
             for k in range(h)]
    statistic = d.mean() / np.sqrt((gamma[0] + 2 * (gamma[1] + gamma[2])) / n)
    expected = statistic * np.sqrt((n + 1 - 2 * h + h * (h - 1) / n) / n)
    assert diebold_mariano(loss, baseline, h) == pytest.approx(expected, rel=1e-12)
    # Identical differences everywhere: no variance; the sign decides.
    assert diebold_mariano(np.ones(5), np.zeros(5), 1) == np.inf


def test_a_selection_saved_before_the_switch_test_still_reads_and_explains_itself():
    old = {"kept": ["a"], "name": "a", "origins": 12,
           "member_backtest_rmse": {"a": 1.0, "b": 2.0},
           "candidate_backtest_rmse": {"a": 1.0, "b": 2.0, "mean of a + b": 1.2},
           "why": "lowest backtest RMSE (1 over 12 origins) of 3 candidates; next: mean of a + b 1.2"}
    selection = Selection.from_dict(old)
    assert selection.kept == ("a",) and selection.default is None and selection.switch is None
    assert selection.reason() == old["why"]


def test_a_member_far_behind_the_best_is_left_out_of_the_pool():
    rng = np.random.default_rng(1)
    actual = rng.normal(size=(24, 1, 1))
    # Three members of equal skill, and one whose fit ran away at two origins: its backtest
    # RMSE is over 1.5 times the best member's, so it would drag the mean far off.
    forecasts = {name: actual + rng.normal(scale=0.3, size=actual.shape) for name in "abc"}
    forecasts["wild"] = forecasts["a"].copy()
    forecasts["wild"][[5, 17]] += 8.0
    selection = select(forecasts, actual)
    rmse = selection.member_rmse
    assert rmse["wild"] > 1.5 * min(rmse.values())
    assert max(rmse[name] for name in "abc") <= 1.5 * min(rmse.values())
    assert selection.left_out == ("wild",)
    assert sorted(selection.default) == list("abc") and selection.kept == selection.default
    assert selection.candidate_rmse[selection.name] == pytest.approx(
        brute_force_choice(forecasts, actual)[("a", "b", "c")])
    pool = " + ".join(selection.default)
    assert (f"the mean of the pool (backtest RMSE {selection.candidate_rmse[selection.name]:.4g}"
            in selection.reason() or selection.reason().startswith("the mean of the pool, "))
    assert (f"; the pool ({pool}): the members within 1.5 times the lowest backtest RMSE of "
            f"those that may be averaged; left out: wild ({rmse['wild']:.4g})"
            ) in selection.reason()
    # It stays a candidate alone, and the record keeps what was left out and at what ratio.
    assert "wild" in selection.candidate_rmse
    saved = json.loads(json.dumps(selection.to_dict()))
    assert saved["left_out_of_default"] == {"members": ["wild"], "ratio": 1.5}
    assert saved["pool_ratio"] == 1.5
    again = Selection.from_dict(saved)
    assert again == selection and again.reason() == selection.reason()
    # Within 1.5 times the best: a member that is merely worse stays in the mean.
    forecasts["wild"] = forecasts["a"] + 0.2  # a's errors and a bias
    selection = select(forecasts, actual)
    rmse = selection.member_rmse
    assert max(rmse[name] for name in "abc") < rmse["wild"] <= 1.5 * min(rmse.values())
    assert selection.left_out == () and sorted(selection.default) == ["a", "b", "c", "wild"]
    assert "left_out_of_default" not in selection.to_dict()


def test_members_off_by_rounding_of_an_exact_forecast_are_all_in_the_pool():
    constant = np.full((10, 1, 1), 5.0)
    rounded = {"exact": constant.copy(), "exp_log": np.full_like(constant, np.nextafter(5, 6)),
               "also_exact": constant.copy()}
    selection = select(rounded, constant)
    assert selection.left_out == () and len(selection.default) == 3


def test_a_selection_saved_before_the_pool_still_explains_itself_as_it_did():
    # Written by the rule before the pool: the mean of all members but those over 3 times the
    # median member's backtest RMSE (no `pool_ratio`).
    old = {"kept": ["a", "b", "c"], "name": "mean of a + b + c", "origins": 24,
           "member_backtest_rmse": {"a": 0.3, "b": 0.31, "c": 0.32, "wild": 2.3},
           "candidate_backtest_rmse": {"a": 0.3, "b": 0.31, "c": 0.32, "wild": 2.3,
                                       "mean of a + b": 0.25, "mean of a + b + c": 0.2,
                                       "mean of a + b + c + wild": 0.7},
           "default": ["a", "b", "c"], "switch_test": None,
           "left_out_of_default": {"members": ["wild"], "ratio": 3.0},
           "why": "the mean of all members, lowest backtest RMSE (0.2 over 24 origins) of 7 "
                  "candidates; next: mean of a + b 0.25; left out of the mean of all members "
                  "for a backtest RMSE over 3 times the median member's: wild (2.3)"}
    selection = Selection.from_dict(old)
    assert selection.reference == "median" and selection.ratio == 3.0
    assert selection.reason() == old["why"]
    assert "pool_ratio" not in selection.to_dict()


def test_an_old_selection_that_switched_explains_itself_as_it_did():
    # Saved by the rule before the pool: the best candidate clearly below the mean of all.
    old = {"kept": ["e"], "name": "e", "origins": 30,
           "member_backtest_rmse": {"a": 1.0, "b": 1.1, "e": 0.05},
           "candidate_backtest_rmse": {"e": 0.05, "a": 1.0, "b": 1.1, "mean of e + a": 0.5,
                                       "mean of e + a + b": 0.7},
           "default": ["e", "a", "b"],
           "switch_test": {"best": "e", "statistic": -13.32, "critical": 2.76,
                           "candidates": 4, "level": 0.05},
           "why": "lowest backtest RMSE (0.05 over 30 origins) of 5 candidates, clearly below "
                  "the mean of all members (0.7; t = -13.32, against -2.76 at 5% over 4 "
                  "candidates)"}
    selection = Selection.from_dict(old)
    assert selection.reason() == old["why"] and not selection.pooled


def test_with_one_origin_the_lowest_candidate_is_kept_and_the_reason_says_why():
    actual = np.zeros((1, 1, 1))
    forecasts = {"a": actual + 1.0, "b": actual - 1.6, "c": actual + 2.0}
    selection = select(forecasts, actual)
    assert selection.default == ("a",) and selection.switch is None
    assert selection.kept == ("a", "b")  # the mean: 0.3 off
    assert selection.reason().startswith("lowest backtest RMSE (0.3 over 1 origin)")
    assert "(one origin: too few to test it against the pool)" in selection.reason()


def test_a_selection_without_a_backtest_or_a_pool_records_no_pool_ratio():
    no_backtest = Selection(("ets", "arima"), {}, {}, 0)
    assert not no_backtest.pooled and "pool_ratio" not in no_backtest.to_dict()
    assert Selection.from_dict(no_backtest.to_dict()) == no_backtest
    actual = np.zeros((5, 1, 1))
    alone = select({"benchmark": actual + 1.0}, actual, alone_only=("benchmark",))
    assert alone.default is None and "pool_ratio" not in alone.to_dict()


def test_an_old_selection_with_one_origin_explains_itself_as_it_did():
    # Saved by the rule before the pool with one origin: the lowest candidate kept, untested.
    old = {"kept": ["a", "b"], "name": "mean of a + b", "origins": 1,
           "member_backtest_rmse": {"a": 1.0, "b": 1.6},
           "candidate_backtest_rmse": {"a": 1.0, "b": 1.6, "mean of a + b": 0.3},
           "default": ["a", "b", "c"], "switch_test": None,
           "why": "lowest backtest RMSE (0.3 over 1 origin) of 3 candidates; next: a 1"}
    assert Selection.from_dict(old).reason() == old["why"]
