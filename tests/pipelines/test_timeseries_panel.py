"""Many series (`seqlab timeseries train --id-column`, a folder, M4's files): the holdout
protocol, the choice among members, the files a run writes, and evaluate, predict and export.

Tiny panels built here; the figures are checked against values computed by hand or by the
metrics module from the CSV the run wrote, never against a machine's floating-point details.
"""

import json
import shutil
import types

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from seqlab.cli import main
from seqlab.data.errors import DataError
from seqlab.pipelines.errors import UsageError
from seqlab.data.panel import read_panel
from seqlab.models.forecasting import metrics as forecast_metrics
from seqlab.pipelines import timeseries_panel as panel_module
from seqlab.pipelines.configs.timeseries import TimeseriesConfig
from seqlab.pipelines.distribute import Distribution
from seqlab.pipelines.timeseries_panel import (
    PANEL_PIPELINE,
    SERIES_SWITCH,
    PanelChoice,
    choose,
    combined,
    read_panel_data,
    relative_error,
    score_series,
    series_members,
    set_figures,
)

SEASON = 4
HOLDOUT = 3
# Tiny network settings: the tests check the protocol and the files, not the accuracy.
TINY = ["--units", "8", "--layers", "1", "--epochs", "2", "--batch-size", "16", "--seed", "0"]


def _series(n, level, phase=0):
    t = np.arange(n)
    return level * (1.0 + 0.3 * np.sin(2 * np.pi * (t + phase) / SEASON)) + 0.01 * level * t


def write_long_table(path, lengths=(30, 26, 34), shuffle=True, short=True):
    """A long table of seasonal series of different lengths, levels and starts (times are
    numbers, each series starting elsewhere), rows shuffled; plus a series too short for the
    holdout."""
    rows = []
    for index, n in enumerate(lengths):
        start = 5 * index
        for t, value in enumerate(_series(n, 10.0 ** (index + 1), index)):
            rows.append((f"s{index}", start + t, value))
    if short:
        rows += [("tiny", 0, 1.0), ("tiny", 1, 2.0), ("tiny", 2, 3.0)]
    frame = pd.DataFrame(rows, columns=["item", "t", "sales"])
    if shuffle:
        frame = frame.sample(frac=1.0, random_state=3)
    frame.to_csv(path, index=False)
    return pd.read_csv(path)  # the values as the file holds them


def config_for(path, **settings):
    return TimeseriesConfig(data=str(path), id_column="item", time_column=["t"],
                            target=["sales"], **settings)


# ---------------------------------------------------------------------------------------------
# Reading and the holdout split


def test_the_holdout_is_the_last_values_of_every_series_and_never_in_a_training_part(tmp_path):
    frame = write_long_table(tmp_path / "long.csv")
    data = read_panel_data(config_for(tmp_path / "long.csv", holdout=HOLDOUT))
    # Ids in the order they first appear in the (shuffled) table.
    assert data.ids == [i for i in dict.fromkeys(frame["item"]) if i != "tiny"]
    assert sorted(data.ids) == ["s0", "s1", "s2"] and data.horizon == HOLDOUT
    assert "tiny" in " ".join(data.notes)  # named, not dropped silently
    for series_id, train, holdout in zip(data.ids, data.train, data.holdout):
        rows = frame[frame["item"] == series_id].sort_values("t")["sales"].to_numpy()
        np.testing.assert_array_equal(holdout, rows[-HOLDOUT:])
        np.testing.assert_array_equal(train, rows[:-HOLDOUT])


@pytest.mark.parametrize("settings, expected_h, source", [
    ({"holdout": 5}, 5, "--holdout"),
    ({"horizon": 2}, 2, "--horizon"),
    ({"season": 4}, 4, "one season"),
])
def test_the_holdouts_length_comes_from_the_flags_else_the_season(tmp_path, settings,
                                                                  expected_h, source):
    write_long_table(tmp_path / "long.csv", short=False)
    data = read_panel_data(config_for(tmp_path / "long.csv", **settings))
    assert data.horizon == expected_h and data.horizon_source.startswith(source)


def test_without_a_season_the_holdout_is_a_tenth_of_the_median_length(tmp_path):
    rows = [(f"s{i}", t, float(t * (i + 1))) for i in range(3) for t in range(40)]
    pd.DataFrame(rows, columns=["item", "t", "sales"]).to_csv(tmp_path / "trend.csv",
                                                              index=False)
    data = read_panel_data(config_for(tmp_path / "trend.csv", season=1))
    # The season given is said as given (it read "as no season was found").
    assert data.horizon == 4 and data.horizon_source == (
        "a tenth of the median series length (40), as --season 1 gives none")


def dated_table(path, frequency, lengths):
    """A long table of dated series (`frequency` a pandas alias), ids in `item`."""
    rows = []
    for index, n in enumerate(lengths):
        stamps = pd.date_range("1990-01-01", periods=n, freq=frequency)
        rows += [(f"s{index}", str(stamp.date()), float(10 * index + step))
                 for step, stamp in enumerate(stamps)]
    pd.DataFrame(rows, columns=["item", "ds", "sales"]).to_csv(path, index=False)


def test_a_long_table_without_its_id_column_named_is_found_and_forecast_as_many_series(
        tmp_path, capsys):
    dated_table(tmp_path / "long.csv", "MS", (30, 36, 40))
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(tmp_path / "long.csv"), "--season", "4",
                 "--out", str(out), *TINY]) == 0
    printed = capsys.readouterr()
    assert ("--id-column item: 3 series named by column 'item': the 'ds' stamps repeat in the "
            "table") in printed.err
    assert "long.csv, 3 series by column 'item' (" in printed.out
    settings = json.loads((out / "config.json").read_text())["settings"]
    assert settings["id_column"] == "item" and settings["time_column"] == ["ds"]
    held = pd.read_csv(out / "holdout_forecasts.csv")
    assert sorted(held["item"].unique()) == ["s0", "s1", "s2"]


def test_whole_numbers_that_could_each_name_the_series_are_asked_for_in_one_line(tmp_path,
                                                                                  capsys):
    rows = [(store, step, float(store + step)) for store in range(3) for step in range(30)]
    pd.DataFrame(rows, columns=["store", "step", "sales"]).to_csv(tmp_path / "s.csv",
                                                                  index=False)
    assert main(["timeseries", "train", "--data", str(tmp_path / "s.csv"), "--out",
                 str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "the columns 'store' and 'step' could each name the series" in err
    assert "--id-column" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def shop_table(path, columns=("shop", "date", "sales"), shuffle=False):
    """Four shops' daily sales, 40 days each, with `shipped` (two days after `date`) and `day`
    (1..40 within each shop) for the columns that ask for them."""
    rows = []
    for shop in range(4):
        for day in range(40):
            date = pd.Timestamp("2020-01-01") + pd.Timedelta(days=day)
            rows.append((f"shop{shop}", str(date.date()),
                         str((date + pd.Timedelta(days=2)).date()), day + 1,
                         100.0 + shop + day % 7))
    frame = pd.DataFrame(rows, columns=["shop", "date", "shipped", "day", "sales"])
    if shuffle:
        frame = frame.sample(frac=1.0, random_state=0)
    frame[list(columns)].to_csv(path, index=False)


@pytest.mark.parametrize("columns, shuffle, expected", [
    # `shipped` was taken as the time column, silently; with --id-column it was refused.
    (("shop", "shipped", "date", "sales"), False,
     "the columns 'shipped', 'date' all hold dates, whose stamps each repeat in the table but "
     "not within the rows of one value of column 'shop' (4 series); expected one time column: "
     "name it with --time-column"),
    # One series of 160 scrambled rows was trained, `shop` named only as a column left out.
    (("shop", "day", "sales"), True,
     "the whole numbers of column 'day' repeat in the table but not within the rows of one "
     "value of column 'shop', yet do not increase within them in the file's order"),
])
def test_a_long_table_whose_time_column_is_in_doubt_is_asked_for_in_one_line(
        tmp_path, capsys, columns, shuffle, expected):
    shop_table(tmp_path / "shops.csv", columns, shuffle)
    assert main(["timeseries", "train", "--data", str(tmp_path / "shops.csv"), "--target",
                 "sales", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_a_config_without_the_id_column_of_a_long_table_is_refused_naming_it(tmp_path):
    """Built in Python (no command line to find it), one series would put every series end
    to end, and many series without an id column would be one series."""
    dated_table(tmp_path / "long.csv", "MS", (30, 36))
    from seqlab.pipelines.timeseries import TASK

    with pytest.raises(DataError, match=r"long.csv: 2 series named by column 'item'.*"
                       r"expected id_column='item'"):
        TASK.train(TimeseriesConfig(data=str(tmp_path / "long.csv"),
                                    out=str(tmp_path / "one")))
    with pytest.raises(DataError, match=r"2 series named by column 'item'.*expected id_column"):
        read_panel_data(TimeseriesConfig(data=str(tmp_path / "long.csv"), holdout=3))
    assert not (tmp_path / "one").exists()


def test_a_holdout_longer_than_every_series_names_the_longest(tmp_path):
    rows = [(f"s{i}", t, float(t)) for i in range(2) for t in range(10 + 5 * i)]
    pd.DataFrame(rows, columns=["item", "t", "sales"]).to_csv(tmp_path / "short.csv",
                                                              index=False)
    # ...and the holdout that fits (it named none).
    with pytest.raises(DataError, match=r"short.csv: the longest series has 15 values; the "
                       r"holdout of 14 \(--holdout\) needs at least 16 in a series; expected "
                       r"--holdout of at most 13$"):
        read_panel_data(config_for(tmp_path / "short.csv", holdout=14, season=1))
    assert read_panel_data(config_for(tmp_path / "short.csv", holdout=13, season=1)).horizon == 13


def test_the_season_is_the_one_most_of_the_longest_varying_series_find(tmp_path):
    # A constant series first (or longest) decided every series' season, and so every figure:
    # renaming its file from a_flat.csv to z_flat.csv changed season 1 into 7.
    folder = tmp_path / "series"
    folder.mkdir()
    cycle7, cycle4 = [0, 3, 5, 2, -4, -6, 0], [0, 6, -3, -3]

    def write(name, n, values):
        pd.DataFrame({"t": range(n), "y": [values(i) for i in range(n)]}).to_csv(
            folder / f"{name}.csv", index=False)

    write("a_flat", 90, lambda i: 5.0)
    write("b_four", 84, lambda i: 50 + 10 * cycle4[i % 4] + 0.1 * (i * 13 % 5))
    for k in range(3):
        write(f"c_seven{k}", 70, lambda i, k=k: 100 + k + 20 * cycle7[i % 7] + 0.1 * (i * 13 % 5))
    season, source = panel_module.panel_season(read_panel(folder, time_column="t"))
    assert season == 7
    assert "'c_seven0': 3 of the 4 longest series that vary find 7 (1 find 4)" in source
    # The longest varying series keeps a tie.
    for name in ("c_seven1", "c_seven2"):
        (folder / f"{name}.csv").unlink()
    assert panel_module.panel_season(read_panel(folder, time_column="t"))[0] == 4
    # No series varies: the summary does not call the voters series that vary.
    for path in folder.iterdir():
        path.unlink()
    write("flat_a", 30, lambda i: 5.0)
    write("flat_b", 20, lambda i: 7.0)
    source = panel_module.panel_season(read_panel(folder, time_column="t"))[1]
    assert "2 of the 2 longest series (none of the series varies) find 1" in source


def test_settings_of_one_series_are_refused_for_many(tmp_path):
    write_long_table(tmp_path / "long.csv")
    with pytest.raises(Exception, match="--features and --categorical are for one series"):
        read_panel_data(config_for(tmp_path / "long.csv", features=["sales"]))
    with pytest.raises(Exception, match="one --target"):
        read_panel_data(TimeseriesConfig(data=str(tmp_path / "long.csv"), id_column="item",
                                         target=["sales", "t"]))


# ---------------------------------------------------------------------------------------------
# Scores and the choice


def test_series_scores_are_the_competitions_definitions_by_hand():
    history = np.array([1.0, 2.0, 3.0, 5.0, 4.0, 6.0])
    actual, forecast = np.array([6.0, 8.0]), np.array([5.0, 10.0])
    scores = score_series([actual], [forecast], [history], season=2)
    # sMAPE: 200/2 * (1/11 + 2/18); MASE: mean |e| = 1.5 over the lag-2 scale mean(2,3,1,1) = 1.75.
    assert scores["smape"][0] == pytest.approx(100 * (1 / 11 + 2 / 18))
    assert scores["mase"][0] == pytest.approx(1.5 / 1.75)
    assert scores["mape"][0] == pytest.approx(50 * (1 / 6 + 2 / 8))
    assert scores["rmse"][0] == pytest.approx(np.sqrt((1 + 4) / 2))


def test_a_series_shorter_than_the_season_has_no_mase_but_keeps_its_smape():
    scores = score_series([np.array([1.0])], [np.array([2.0])], [np.array([1.0, 1.0])], 4)
    assert np.isnan(scores["mase"][0]) and scores["smape"][0] == pytest.approx(200 / 3)


def test_the_set_counts_the_series_whose_mase_is_defined():
    # A constant history (scale 0, an error: infinite), one no longer than the season (NaN),
    # and one series with a scale: MASE's mean is that one's, over 1 of 3 series.
    histories = [np.full(8, 5.0), np.array([1.0, 2.0]), np.arange(8.0)]
    actuals = [np.array([6.0]), np.array([2.0]), np.array([9.0])]
    forecasts = [np.array([5.0]), np.array([2.0]), np.array([8.5])]
    figures = set_figures(score_series(actuals, forecasts, histories, 2))
    assert figures["series"] == 3 and figures["mase_series"] == 1
    assert figures["mase"] == pytest.approx(0.5 / 2.0)  # scale: mean |y_t - y_{t-2}| = 2


def test_every_forecast_averages_mase_over_the_same_series():
    # A constant history has scale 0: its MASE is undefined for a perfect forecast as for any
    # other (`mase` alone says 0 and infinite), so OWA divides means over the same series.
    histories = [np.full(8, 5.0), np.zeros(8), np.arange(8.0)]
    actuals = [np.array([5.0]), np.array([0.0]), np.array([9.0])]
    perfect = score_series(actuals, [np.array([5.0]), np.array([0.0]), np.array([8.5])],
                           histories, 2)
    wrong = score_series(actuals, [np.array([6.0]), np.array([1.0]), np.array([7.0])],
                         histories, 2)
    for scores in (perfect, wrong):
        assert np.isnan(scores["mase"][:2]).all() and set_figures(scores)["mase_series"] == 1
    assert set_figures(perfect, wrong)["owa"] == pytest.approx(
        0.5 * (perfect["smape"].mean() / wrong["smape"].mean() + (0.5 / 2.0) / (2.0 / 2.0)))


def _noisy(actual, scale, seed):
    return actual + np.random.default_rng(seed).normal(0.0, scale, actual.shape)


def test_choose_keeps_the_lowest_relative_error_and_never_pools_seasonal_naive():
    rng = np.random.default_rng(0)
    histories = [rng.uniform(50, 150, 24) for _ in range(6)]
    actuals = [rng.uniform(50, 150, 4) for _ in range(6)]
    forecasts = {
        "good": [_noisy(a, 1.0, i) for i, a in enumerate(actuals)],
        "fair": [_noisy(a, 5.0, 10 + i) for i, a in enumerate(actuals)],
        "poor": [_noisy(a, 40.0, 20 + i) for i, a in enumerate(actuals)],
        "seasonal_naive": [a.copy() for a in actuals],  # perfect, but only ever alone
    }
    choice = choose(forecasts, actuals, histories, season=1)
    assert choice.kept == ("seasonal_naive",)
    assert all("seasonal_naive" not in name for name in choice.candidate_scores
               if name.startswith("mean("))
    # Brute force: every candidate's relative error recomputed from its forecasts.
    reference = score_series(actuals, [forecast_metrics.seasonal_naive_forecast(h, 4, 1)
                                       for h in histories], histories, 1)
    for name, value in choice.candidate_scores.items():
        members = name[5:-1].split("+") if name.startswith("mean(") else [name]
        mean = [np.mean([forecasts[m][i] for m in members], axis=0) for i in range(6)]
        assert value == pytest.approx(
            relative_error(score_series(actuals, mean, histories, 1), reference))
    del forecasts["seasonal_naive"]
    assert choose(forecasts, actuals, histories, season=1).kept[0] == "good"


def test_a_series_the_network_cannot_forecast_gets_the_kept_members_without_it():
    forecasts = {"nbeats": [np.full(2, 1.0), np.full(2, 1.0)],
                 "ets": [np.full(2, 3.0), np.full(2, 3.0)],
                 "theta": [np.full(2, 5.0), np.full(2, 5.0)],
                 "seasonal_naive": [np.full(2, 7.0), np.full(2, 7.0)]}
    mean = PanelChoice(("nbeats", "ets"), {}, {"nbeats": 1.0, "mean(nbeats+ets)": 0.5}, 2)
    kept = combined(mean, forecasts, "nbeats", [True, False], ["a", "b"])
    np.testing.assert_array_equal(kept[0], [2.0, 2.0])
    np.testing.assert_array_equal(kept[1], [3.0, 3.0])
    alone = PanelChoice(("nbeats",), {}, {"nbeats": 0.5, "theta": 0.7, "ets": 0.9}, 2)
    np.testing.assert_array_equal(
        combined(alone, forecasts, "nbeats", [False, True], ["a", "b"])[0], [5.0, 5.0])
    # A series' own candidate with the network falls back the same way when it is too short.
    own = PanelChoice(("ets",), {}, {"ets": 0.5, "theta": 0.7}, 2,
                      {"a": ("nbeats", "theta"), "b": ("theta",)})
    assert series_members(own, "nbeats", ["a", "b", "c"], [False, True, True]) == [
        ("ets",), ("theta",), ("ets",)]
    kept = combined(own, {**forecasts, "nbeats": [np.full(2, 9.0)] * 2}, "nbeats",
                    [True, True], ["a", "b"])
    np.testing.assert_array_equal(kept[0], [7.0, 7.0])  # mean of nbeats 9 and theta 5
    np.testing.assert_array_equal(kept[1], [5.0, 5.0])


def test_the_networks_figures_leave_out_the_series_shorter_than_its_lookback(tmp_path):
    # Training parts of 27, 23 and 31 values: the second is shorter than the lookback of 24,
    # so the network's window of it would be padded before the series' start.
    write_long_table(tmp_path / "long.csv", short=False)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(tmp_path / "long.csv"), "--id-column",
                 "item", "--time-column", "t", "--holdout", str(HOLDOUT), "--season",
                 str(SEASON), "--lookback", "24", "--model", "auto", "--out", str(out),
                 *TINY]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    kind = metrics["network"]["kind"]
    network = metrics["members"][kind]
    assert network["series"] == 2 and metrics["members"]["ets"]["series"] == 3
    table = pd.read_csv(out / "holdout_forecasts.csv")
    assert table.loc[table["item"] == "s1", kind].isna().all()
    kept = table[table["item"] != "s1"]
    # Its sMAPE is the mean over the two series it forecasts, by hand from the CSV.
    smapes = {name: [forecast_metrics.smape(rows["actual"], rows[name])
                     for _, rows in kept.groupby("item")] for name in (kind, "naive2")}
    assert network["smape"] == pytest.approx(np.mean(smapes[kind]), rel=1e-6)
    assert network["owa"] is not None
    assert {row["item"]: row["network"] for row in metrics["series"]} == {
        "s0": True, "s1": False, "s2": True}
    # The summary says which settings were given rather than chosen from the data.
    assert metrics["network"]["source"].startswith("--lookback, ")
    assert "as given, the rest chosen from the horizon" in metrics["network"]["source"]


def _train_network_alone(tmp_path, lookback):
    """A run of --model nbeats on `write_long_table`'s three series (27, 23 and 31 training
    values); returns its directory."""
    write_long_table(tmp_path / "long.csv", short=False)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(tmp_path / "long.csv"), "--id-column",
                 "item", "--time-column", "t", "--holdout", str(HOLDOUT), "--season",
                 str(SEASON), "--lookback", str(lookback), "--model", "nbeats", "--out",
                 str(out), *TINY]) == 0
    return out


def test_train_says_what_forecast_the_series_shorter_than_the_lookback(tmp_path, capsys):
    # --model nbeats: the summary's model row and "the network alone" read as if the network
    # forecast every series, though s1 (23 training values, lookback 24) got the seasonal
    # naive forecast.
    out = _train_network_alone(tmp_path, lookback=24)
    assert ("  the 1 series shorter than the lookback are forecast by seasonal_naive instead of "
            "the network (their rows of holdout_forecasts.csv: its model column)"
            in capsys.readouterr().out.splitlines())
    table = pd.read_csv(out / "holdout_forecasts.csv")
    short = table[table["item"] == "s1"]
    np.testing.assert_array_equal(short["model"], short["seasonal_naive"])


def test_predict_names_the_series_its_network_could_not_read(tmp_path, capsys):
    # The network alone, lookback 20: a new table whose s1 holds 12 values is forecast by the
    # seasonal naive forecast there, and the summary now says so (it named the network only).
    out = _train_network_alone(tmp_path, lookback=20)
    frame = pd.read_csv(tmp_path / "long.csv").sort_values(["item", "t"])
    frame = frame[(frame["item"] != "s1") | (frame["t"] < 5 + 12)]
    frame.to_csv(tmp_path / "new.csv", index=False)
    capsys.readouterr()
    assert main(["timeseries", "predict", "--run", str(out), "--data", str(tmp_path / "new.csv"),
                 "--output", str(tmp_path / "forecast.csv")]) == 0
    assert ("1 series shorter than the lookback 20: forecast without the network (s1)"
            in capsys.readouterr().out)
    # evaluate on it names the series too (the network's row left it out unexplained).
    assert main(["timeseries", "evaluate", "--run", str(out), "--data",
                 str(tmp_path / "new.csv")]) == 0
    assert ("1 series shorter than the lookback 20: forecast without the network, whose own "
            "figures are over the other 2 (s1)" in capsys.readouterr().out)


def test_a_lookback_longer_than_every_series_is_refused_naming_the_longest(tmp_path, capsys):
    # Before, the network trained and no series was forecast by it: every forecast was another
    # member's, under the network's name.
    write_long_table(tmp_path / "long.csv", short=False)
    assert main(["timeseries", "train", "--data", str(tmp_path / "long.csv"), "--id-column",
                 "item", "--time-column", "t", "--holdout", str(HOLDOUT), "--lookback", "1000",
                 "--out", str(tmp_path / "run"), *TINY]) == 2
    assert ("--lookback 1000 is longer than every series' training part (the longest has "
            f"{34 - HOLDOUT} values)") in capsys.readouterr().err
    assert not (tmp_path / "run").exists() and not (tmp_path / "run.partial").exists()


def test_a_season_longer_than_every_series_is_refused_naming_the_longest(tmp_path, capsys):
    # It trained, with every MASE and OWA "-" and the network kept without a choice.
    write_long_table(tmp_path / "long.csv", short=False)
    for season in (34 - HOLDOUT + 1, 34 - HOLDOUT):  # MASE needs more values than a season
        assert main(["timeseries", "train", "--data", str(tmp_path / "long.csv"), "--id-column",
                     "item", "--time-column", "t", "--holdout", str(HOLDOUT), "--season",
                     str(season), "--out", str(tmp_path / "run"), *TINY]) == 2
        assert (f"--season {season} is not shorter than every series' values before its "
                f"holdout of {HOLDOUT} (the longest has {34 - HOLDOUT}): the seasonal "
                "baselines, MASE and the choice of member need more values than a season "
                f"before it; expected --season of at most {34 - HOLDOUT - 1}"
                ) in capsys.readouterr().err
    assert not (tmp_path / "run").exists() and not (tmp_path / "run.partial").exists()


def test_a_season_that_is_also_the_holdout_is_refused_naming_the_longest_that_fits(tmp_path):
    # Without --holdout the holdout is one season, so a shorter season leaves more values
    # before it: the longest series (34) fits a season of 16 (18 values before a holdout of
    # 16), where the message said "at most 33 - 20 = 13".
    write_long_table(tmp_path / "long.csv", short=False)
    with pytest.raises(DataError, match=r"--season 20 is not shorter than every series' values "
                                        r"before its holdout of 20 \(the longest has 14\).*"
                                        r"expected --season of at most 16 \(the holdout is one "
                                        r"season, so a shorter season shortens it too\)"):
        read_panel_data(config_for(tmp_path / "long.csv", season=20))
    assert read_panel_data(config_for(tmp_path / "long.csv", season=16)).horizon == 16
    with pytest.raises(DataError, match=r"--season 17 is not shorter"):
        read_panel_data(config_for(tmp_path / "long.csv", season=17))


def test_a_forecast_missing_for_a_series_is_figured_with_naive2_over_the_others():
    rng = np.random.default_rng(0)
    train = [rng.uniform(5, 10, n) for n in (12, 9, 15)]
    holdout = [rng.uniform(5, 10, 2) for _ in train]
    data = types.SimpleNamespace(train=train, holdout=holdout, season=2)
    naive2 = [np.full(2, t[-1]) for t in train]
    network = [h + 1.0 for h in holdout]
    network[1] = None
    _, figures = panel_module.holdout_figures(data, {"nbeats": network, "naive2": naive2})
    by_hand = {}
    for name, values in (("nbeats", network), ("naive2", naive2)):
        by_hand[name] = (
            np.mean([forecast_metrics.smape(holdout[i], values[i]) for i in (0, 2)]),
            np.mean([forecast_metrics.mase(holdout[i], values[i], train[i], 2) for i in (0, 2)]))
    assert figures["nbeats"]["series"] == 2 and figures["naive2"]["series"] == 3
    assert figures["nbeats"]["smape"] == pytest.approx(by_hand["nbeats"][0], rel=1e-12)
    assert figures["nbeats"]["owa"] == pytest.approx(
        0.5 * (by_hand["nbeats"][0] / by_hand["naive2"][0]
               + by_hand["nbeats"][1] / by_hand["naive2"][1]), rel=1e-12)


def _switch_panel():
    """Six series; "steady" is good on all of them, "spiky" ruins three and is near perfect
    on the others."""
    rng = np.random.default_rng(1)
    histories = [rng.uniform(50, 150, 24) for _ in range(6)]
    actuals = [rng.uniform(50, 150, 4) for _ in range(6)]
    steady = [_noisy(a, 4.0, i) for i, a in enumerate(actuals)]
    spiky = [_noisy(a, 0.05, 30 + i) if i < 3 else a + 300.0 for i, a in enumerate(actuals)]
    return {"steady": steady, "spiky": spiky}, actuals, histories


def test_a_series_keeps_its_own_candidate_only_where_it_halves_the_sets_error():
    forecasts, actuals, histories = _switch_panel()
    ids = [f"s{i}" for i in range(6)]
    choice = choose(forecasts, actuals, histories, season=1, ids=ids)
    assert choice.kept == ("steady",)
    # Brute force: each series' relative error of every candidate, from its own forecasts.
    reference = score_series(actuals, [forecast_metrics.seasonal_naive_forecast(h, 4, 1)
                                       for h in histories], histories, 1)
    candidates = [("steady",), ("spiky",), ("steady", "spiky")]
    expected = {}
    for i, series_id in enumerate(ids):
        def error(members):
            mean = np.mean([forecasts[m][i] for m in members], axis=0)
            one = score_series([actuals[i]], [mean], [histories[i]], 1)
            return 0.5 * (one["smape"][0] / reference["smape"][i]
                          + one["mase"][0] / reference["mase"][i])
        best = min(candidates, key=error)
        if best != ("steady",) and error(best) <= SERIES_SWITCH * error(("steady",)):
            expected[series_id] = best
    assert expected and choice.series_kept == expected
    assert set(expected) <= {"s0", "s1", "s2"}  # never where spiky ruins the series
    assert PanelChoice.from_dict(json.loads(json.dumps(choice.to_dict()))) == choice
    assert f"{len(expected)} of 6 series keep their own candidate" in choice.series_reason()


def test_no_series_leaves_the_sets_choice_on_a_small_gain():
    forecasts, actuals, histories = _switch_panel()
    # "spiky" now only a little better than "steady" where it was near perfect.
    forecasts["spiky"] = [a + 0.9 * (s - a) if i < 3 else f
                          for i, (a, s, f) in enumerate(zip(actuals, forecasts["steady"],
                                                            forecasts["spiky"]))]
    choice = choose(forecasts, actuals, histories, season=1)
    assert choice.kept == ("steady",) and choice.series_kept == {}
    assert "every series kept steady" in choice.series_reason()


# ---------------------------------------------------------------------------------------------
# The command


@pytest.fixture(scope="module")
def panel_run(tmp_path_factory):
    """One `--model auto` run on a tiny long table, shared by the tests that read it."""
    folder = tmp_path_factory.mktemp("panel")
    frame = write_long_table(folder / "long.csv")
    out = folder / "run"
    status = main(["timeseries", "train", "--data", str(folder / "long.csv"), "--id-column",
                   "item", "--time-column", "t", "--holdout", str(HOLDOUT), "--season",
                   str(SEASON), "--out", str(out), *TINY])
    assert status == 0
    return folder, frame, out


def test_a_run_writes_the_holdout_forecasts_of_every_series_and_step(panel_run):
    folder, frame, out = panel_run
    table = pd.read_csv(out / "holdout_forecasts.csv")
    assert list(table.columns[:4]) == ["item", "t", "actual", "model"]
    assert {"nbeats", "ets", "theta", "arima", "naive", "seasonal_naive",
            "naive2"} <= set(table.columns)
    assert len(table) == 3 * HOLDOUT and set(table["item"]) == {"s0", "s1", "s2"}
    for series_id, rows in table.groupby("item"):
        original = frame[frame["item"] == series_id].sort_values("t")
        np.testing.assert_array_equal(rows["t"], original["t"].to_numpy()[-HOLDOUT:])
        np.testing.assert_allclose(rows["actual"], original["sales"].to_numpy()[-HOLDOUT:])
        history = original["sales"].to_numpy()[:-HOLDOUT]
        # The benchmarks are what the metrics module computes from the training part alone.
        np.testing.assert_allclose(
            rows["seasonal_naive"],
            forecast_metrics.seasonal_naive_forecast(history, HOLDOUT, SEASON))
        np.testing.assert_allclose(rows["naive2"],
                                   forecast_metrics.naive2_forecast(history, HOLDOUT, SEASON))


def test_metrics_json_averages_the_per_series_figures_of_the_csv(panel_run):
    _, frame, out = panel_run
    figures = json.loads((out / "metrics.json").read_text())
    table = pd.read_csv(out / "holdout_forecasts.csv")
    smape = [forecast_metrics.smape(rows["actual"], rows["model"])
             for _, rows in table.groupby("item", sort=False)]
    assert figures["model"]["smape"] == pytest.approx(np.mean(smape), rel=1e-9)
    assert [s["item"] for s in figures["series"]] == list(table["item"].unique())
    assert figures["model"]["owa"] == pytest.approx(
        0.5 * (figures["model"]["smape"] / figures["baselines"]["naive2"]["smape"]
               + figures["model"]["mase"] / figures["baselines"]["naive2"]["mase"]))
    assert figures["baselines"]["naive2"]["owa"] == pytest.approx(1.0)
    assert figures["choice"]["name"] == figures["model_kind"]
    assert figures["horizon"] == HOLDOUT and figures["season"] == SEASON
    assert any("tiny" in note for note in figures["notes"])
    assert (out / "plots" / "series.png").is_file()


def test_each_series_holdout_forecast_is_the_mean_of_its_chosen_members(panel_run):
    _, _, out = panel_run
    choice = json.loads((out / "metrics.json").read_text())["choice"]
    panel = json.loads((out / "panel.json").read_text())
    assert panel["choice"] == choice
    assert panel["network"]["scale_floor"] == 0.0  # no absolute floor on a new run's windows
    table = pd.read_csv(out / "holdout_forecasts.csv")
    for series_id, rows in table.groupby("item"):
        members = choice["series_kept"].get(series_id, choice["kept"])
        np.testing.assert_allclose(rows["model"], rows[members].mean(axis=1), rtol=1e-12)


def test_predict_writes_every_series_forecast_after_its_last_time(panel_run, capsys):
    folder, frame, out = panel_run
    assert main(["timeseries", "predict", "--run", str(out), "--output",
                 str(folder / "forecast.csv")]) == 0
    table = pd.read_csv(folder / "forecast.csv")
    assert list(table.columns) == ["item", "t", "step", "forecast"]
    for series_id, rows in table.groupby("item"):
        last = frame[frame["item"] == series_id]["t"].max()
        np.testing.assert_array_equal(rows["t"], last + np.arange(1, HOLDOUT + 1))
        assert rows["forecast"].notna().all()
    # New data with one more numeric column reads the run's value column, as training chose it.
    frame.assign(price=1.0).to_csv(folder / "more.csv", index=False)
    assert main(["timeseries", "predict", "--run", str(out), "--data", str(folder / "more.csv"),
                 "--output", str(folder / "more_forecast.csv")]) == 0
    np.testing.assert_allclose(pd.read_csv(folder / "more_forecast.csv")["forecast"],
                               table["forecast"], rtol=1e-6)


def test_predict_forecasts_series_too_short_for_a_holdout(panel_run, tmp_path, capsys):
    """predict holds nothing out: a series that training left out for the holdout ("tiny", 3
    values) and one of a single value are forecast from their end (by the members that can
    fit them, else the seasonal naive forecast, here the last value), not left out."""
    folder, frame, out = panel_run
    assert any("tiny" in note for note in json.loads((out / "metrics.json").read_text())["notes"])
    single = pd.DataFrame({"item": ["single"], "t": [7], "sales": [5.5]})
    pd.concat([frame, single]).to_csv(tmp_path / "short.csv", index=False)
    assert main(["timeseries", "predict", "--run", str(out), "--data", str(tmp_path / "short.csv"),
                 "--output", str(tmp_path / "forecast.csv")]) == 0
    assert "left out" not in capsys.readouterr().out
    table = pd.read_csv(tmp_path / "forecast.csv")
    assert set(table["item"]) == {"s0", "s1", "s2", "tiny", "single"}
    tiny = table[table["item"] == "tiny"]
    np.testing.assert_array_equal(tiny["t"], [3, 4, 5])
    assert np.isfinite(tiny["forecast"]).all()
    alone = table[table["item"] == "single"]
    np.testing.assert_array_equal(alone["t"], [8, 9, 10])
    np.testing.assert_array_equal(alone["forecast"], [5.5] * HOLDOUT)


def test_a_table_of_dates_without_a_time_column_named_is_read_in_date_order(tmp_path, capsys):
    """Without --time-column the column of dates is found (rows shuffled: a file's order
    would scramble the series) and continued in predict's CSV; a run saved before seqlab
    looked for one (panel.json: steps) predicts from the file's order as it did."""
    frame = write_long_table(tmp_path / "long.csv", short=False)
    dated = frame.assign(t=pd.Timestamp("2020-01-01") + pd.to_timedelta(frame["t"], unit="D"))
    dated.to_csv(tmp_path / "dated.csv", index=False)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(tmp_path / "dated.csv"), "--id-column",
                 "item", "--holdout", str(HOLDOUT), "--season", str(SEASON), "--out", str(out),
                 *TINY]) == 0
    assert "time column 't': its values are dates" in capsys.readouterr().out
    assert json.loads((out / "panel.json").read_text())["time_kind"] == "dates"
    held = pd.read_csv(out / "holdout_forecasts.csv")
    for series_id, rows in held.groupby("item"):
        original = dated[dated["item"] == series_id].sort_values("t")
        np.testing.assert_allclose(rows["actual"], original["sales"].to_numpy()[-HOLDOUT:])
    assert main(["timeseries", "predict", "--run", str(out), "--output",
                 str(tmp_path / "forecast.csv")]) == 0
    table = pd.read_csv(tmp_path / "forecast.csv")
    assert list(table.columns) == ["item", "t", "step", "forecast"]
    last = dated[dated["item"] == "s0"]["t"].max()
    assert table[table["item"] == "s0"]["t"].tolist() == [
        str((last + pd.Timedelta(days=k)).date()) for k in range(1, HOLDOUT + 1)]
    panel = json.loads((out / "panel.json").read_text())
    (out / "panel.json").write_text(json.dumps({**panel, "time_kind": "steps"}))
    assert main(["timeseries", "predict", "--run", str(out), "--output",
                 str(tmp_path / "old.csv")]) == 0
    assert list(pd.read_csv(tmp_path / "old.csv").columns) == ["item", "step", "forecast"]


def test_a_folder_runs_new_data_is_refused_without_naming_flags_predict_lacks(tmp_path, capsys):
    """A run trained on a folder (one series per file, no id column) given a long table read
    it as one series and blamed the repeated dates, advising `--time-column`, which predict
    does not take; the table's id column is now named, and no train flag is advised."""
    frame = write_long_table(tmp_path / "long.csv", short=False)
    dated = frame.assign(t=pd.Timestamp("2020-01-01") + pd.to_timedelta(frame["t"], unit="D"))
    folder = tmp_path / "series"
    folder.mkdir()
    for series_id, rows in dated.groupby("item"):
        rows[["t", "sales"]].to_csv(folder / f"{series_id}.csv", index=False)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(folder), "--holdout", str(HOLDOUT),
                 "--season", str(SEASON), "--model", "nbeats", "--out", str(out), *TINY]) == 0
    dated.to_csv(tmp_path / "long_dated.csv", index=False)
    for action in ("predict", "evaluate"):
        capsys.readouterr()
        assert main(["timeseries", action, "--run", str(out), "--data",
                     str(tmp_path / "long_dated.csv")]) == 2
        error = capsys.readouterr().err
        assert "3 series named by column 'item'" in error
        assert "the run was trained without an id column" in error and "--" not in error
    # One series' file with a date twice: the fault, without a flag predict lacks.
    rows = dated[dated["item"] == "s0"][["t", "sales"]]
    pd.concat([rows, rows.iloc[:1]]).to_csv(tmp_path / "twice.csv", index=False)
    assert main(["timeseries", "predict", "--run", str(out), "--data",
                 str(tmp_path / "twice.csv")]) == 2
    error = capsys.readouterr().err
    assert "was taken for its dates)" in error and "--time-column" not in error


def test_a_series_of_one_or_two_stamps_continues_with_the_longest_series_frequency():
    months = pd.date_range("2021-01-01", periods=12, freq="MS").to_numpy()
    one = panel_module._stamps(months[:1], 1, 2, reference=months)
    two = panel_module._stamps(months[:2], 2, 2, reference=months)
    assert [str(s)[:10] for s in one.astype("datetime64[D]")] == ["2021-02-01", "2021-03-01"]
    assert [str(s)[:10] for s in two.astype("datetime64[D]")] == ["2021-03-01", "2021-04-01"]
    assert panel_module._stamps(np.array([4]), 1, 2, reference=np.array([0, 2, 4])).tolist() == [
        6, 8]


def test_new_data_whose_time_stamps_are_of_another_kind_is_refused(panel_run, tmp_path,
                                                                   capsys):
    folder, frame, out = panel_run
    assert json.loads((out / "panel.json").read_text())["time_kind"] == "numbers"
    dated = frame.assign(t=pd.Timestamp("2020-01-01") + pd.to_timedelta(frame["t"], unit="D"))
    dated.to_csv(tmp_path / "dated.csv", index=False)
    for action in ("predict", "evaluate"):
        assert main(["timeseries", action, "--run", str(out), "--data",
                     str(tmp_path / "dated.csv"), "--output", str(tmp_path / action)]) != 0
        error = capsys.readouterr().err
        assert "dated.csv" in error and "time stamps are numbers; these are dates" in error
        assert not (tmp_path / action).exists()
    # A run saved before panel.json kept the kind takes either, as it did.
    copy = tmp_path / "old"
    shutil.copytree(out, copy)
    panel = json.loads((copy / "panel.json").read_text())
    del panel["time_kind"]
    (copy / "panel.json").write_text(json.dumps(panel))
    assert main(["timeseries", "predict", "--run", str(copy), "--data",
                 str(tmp_path / "dated.csv"), "--output", str(tmp_path / "old.csv")]) == 0


@pytest.mark.parametrize("stamps,expected", [
    # Month starts and month ends stay on them (the last step, 31 days, would drift).
    (pd.date_range("2021-01-01", periods=12, freq="MS"), ["2022-01-01", "2022-02-01"]),
    (pd.date_range("2021-01-31", periods=12, freq="ME"), ["2022-01-31", "2022-02-28"]),
    # Business days skip the weekend (a Monday's last step spans it).
    (pd.bdate_range("2024-01-01", periods=20), ["2024-01-29", "2024-01-30"]),
    # A missing last day is a gap, not the series' step.
    (pd.DatetimeIndex(list(pd.date_range("2024-01-01", periods=19)) + ["2024-01-21"]),
     ["2024-01-22", "2024-01-23"]),
])
def test_predict_continues_each_series_with_its_calendar_frequency(stamps, expected):
    extended = panel_module._stamps(stamps.to_numpy(), len(stamps), 2)
    assert [str(stamp)[:10] for stamp in extended.astype("datetime64[D]")] == expected
    assert panel_module._stamps(np.array([3, 5, 7, 9]), 3, 3).tolist() == [9, 11, 13]


def test_evaluate_rescoring_the_holdout_gives_the_runs_figures(panel_run, capsys):
    folder, _, out = panel_run
    assert main(["timeseries", "evaluate", "--run", str(out), "--output",
                 str(folder / "eval.json")]) == 0
    again = json.loads((folder / "eval.json").read_text())
    figures = json.loads((out / "metrics.json").read_text())
    # The network's forecasts are recomputed in float32 and the classical models refitted:
    # equal up to float32 rounding of the network's part.
    assert again["model"]["smape"] == pytest.approx(figures["model"]["smape"], rel=1e-4)
    assert again["baselines"]["naive2"]["smape"] == pytest.approx(
        figures["baselines"]["naive2"]["smape"], rel=1e-12)


def test_a_panel_json_with_a_malformed_series_choice_is_refused_in_one_line(panel_run, tmp_path,
                                                                          capsys):

    _, _, out = panel_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    panel = json.loads((copy / "panel.json").read_text())
    for kept, expected in (("ets", "series_kept"), (["prophet"], "prophet")):
        panel["choice"]["series_kept"] = {"s0": kept}  # not a list of this run's members
        (copy / "panel.json").write_text(json.dumps(panel))
        capsys.readouterr()
        assert main(["timeseries", "predict", "--run", str(copy)]) != 0
        error = capsys.readouterr().err.strip()
        assert "panel.json" in error and expected in error and "Traceback" not in error


def test_predict_fits_a_classical_member_only_on_the_series_that_read_it(panel_run, tmp_path,
                                                                       monkeypatch):

    _, _, out = panel_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    fits = []
    real = panel_module.classical_forecasts

    def spy(histories, horizon, season, methods, **kwargs):
        fits.append((len(histories), list(methods)))
        return real(histories, horizon, season, methods, **kwargs)

    monkeypatch.setattr(panel_module, "classical_forecasts", spy)
    panel = json.loads((copy / "panel.json").read_text())

    def predict(kept, series_kept, name):
        panel["choice"].update(kept=kept, series_kept=series_kept)
        (copy / "panel.json").write_text(json.dumps(panel))
        assert main(["timeseries", "predict", "--run", str(copy), "--output",
                     str(tmp_path / name)]) == 0
        return pd.read_csv(tmp_path / name).set_index(["item", "step"])["forecast"]

    # The network kept, one series keeping ETS: ETS is fitted on that series alone (and on
    # "tiny", 3 values, shorter than the network's lookback: it falls back to the classical
    # members), and its forecast is the one a fit on every series gives it.
    alone = predict(["nbeats"], {"s1": ["ets"]}, "alone.csv")
    every = predict(["ets"], {}, "every.csv")
    network = predict(["nbeats"], {}, "network.csv")
    assert fits == [(2, ["ets"]), (4, ["ets"]), (1, ["ets"])]
    pd.testing.assert_series_equal(alone.loc["s0"], network.loc["s0"])
    pd.testing.assert_series_equal(alone.loc["s1"], every.loc["s1"])
    assert not np.allclose(alone.loc["s0"], every.loc["s0"])  # the network's, not ETS's


@pytest.mark.parametrize("key, value, expected", [
    # A billion outputs: the network's weights alone would not fit in memory.
    ("horizon", 10**9, "horizon must be a whole number from 1 to 10,000; got 1000000000"),
    ("horizon", 2.5, "horizon must be a whole number from 1 to 10,000; got 2.5"),
    ("season", 0, "season must be a whole number from 1 to 100,000; got 0"),
    ("season", True, "season must be a whole number from 1 to 100,000; got True"),
    ("classical", "ets", "classical must be a list of members among ets, theta, arima; got "
                         "'ets'"),
    # A billion units: the process was killed for memory.
    ("network", {"units": 10**9}, "network.units must be a whole number from 1 to 8,192; got "
                                  "1000000000"),
    ("network", {"blocks": -1}, "network.blocks must be a whole number from 1 to 64; got -1"),
    ("network", {"kind": "prophet"}, "network must be an object whose kind is one of nbeats, "
                                     "gru, lstm"),
    ("choice", 5, "choice must be an object with kept (a list of member names)"),  # traceback
])
def test_hand_edited_panel_sizes_and_members_are_refused_in_one_line(panel_run, tmp_path, capsys,
                                                                     key, value, expected):

    _, _, out = panel_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    panel = json.loads((copy / "panel.json").read_text())
    if key == "network":
        panel[key].update(value)
    else:
        panel[key] = value
    (copy / "panel.json").write_text(json.dumps(panel))
    for action in ("predict", "evaluate"):
        capsys.readouterr()
        assert main(["timeseries", action, "--run", str(copy)]) == 2
        error = capsys.readouterr().err.strip()
        assert f"panel.json: {expected}" in error and len(error.splitlines()) == 1


def test_the_export_serves_the_networks_forecast_of_a_window(panel_run, capsys):
    folder, _, out = panel_run
    assert main(["timeseries", "export", "--run", str(out), "--out",
                 str(folder / "serving")]) == 0
    table = pd.read_csv(out / "holdout_forecasts.csv")
    served = tf.saved_model.load(str(folder / "serving")).signatures["serving_default"]
    lookback = json.loads((out / "config.json").read_text())["settings"]["lookback"]
    data = read_panel_data(config_for(folder / "long.csv", holdout=HOLDOUT, season=SEASON))
    windows = panel_module.last_windows(data.train, lookback)
    forecast = served(window=tf.constant(windows))["forecast"].numpy()
    for i, series_id in enumerate(data.ids):
        expected = table[table["item"] == series_id]["nbeats"].to_numpy()
        np.testing.assert_allclose(forecast[i], expected, rtol=1e-5)


@pytest.mark.parametrize("id_column, time_column, time_kind, holdout_columns, future_columns", [
    # The data's columns keep their names; a column seqlab adds takes an underscore.
    ("forecast", "step", "numbers", ["forecast", "step", "actual", "model", "naive"],
     ["forecast", "step", "step_", "forecast_"]),
    ("model", "actual", "numbers", ["model", "actual", "actual_", "model_", "naive"],
     ["model", "actual", "step", "forecast"]),
    ("step", None, "steps", ["step", "step_", "actual", "model", "naive"],
     ["step", "step_", "forecast"]),
    (None, "id", "numbers", ["id_", "id", "actual", "model", "naive"],
     ["id_", "id", "step", "forecast"]),
])
def test_the_csv_columns_seqlab_adds_never_collide_with_the_datas(
        tmp_path, id_column, time_column, time_kind, holdout_columns, future_columns):
    rows = [(series, t, 10.0 * (k + 1) + t) for k, series in enumerate("ab") for t in range(12)]
    frame = pd.DataFrame(rows, columns=["who", "when", "sales"])
    names = {"who": id_column or "who", "when": time_column or "when"}
    if id_column is None:  # one series, named by the file
        frame = frame[frame["who"] == "a"].drop(columns="who")
    if time_column is None:
        frame = frame.drop(columns="when")
    frame.rename(columns=names).to_csv(tmp_path / "panel.csv", index=False)
    config = TimeseriesConfig(data=str(tmp_path / "panel.csv"), id_column=id_column,
                              time_column=[time_column] if time_column else None,
                              target=["sales"], holdout=3, season=1)
    data = panel_module.read_panel_data(config)
    assert data.time_kind == time_kind
    forecasts = [np.full(3, 1.0 + i) for i in range(len(data.ids))]
    holdout = panel_module.holdout_frame(data, {"model": forecasts, "naive": forecasts})
    future = panel_module.future_frame(data, forecasts)
    assert list(holdout.columns) == holdout_columns
    assert list(future.columns) == future_columns
    assert len(holdout) == len(future) == 3 * len(data.ids)
    np.testing.assert_array_equal(holdout[holdout_columns[3]], np.concatenate(forecasts))
    np.testing.assert_array_equal(future[future_columns[-1]], np.concatenate(forecasts))


def test_metrics_json_keeps_each_series_id_when_the_id_column_is_named_like_a_figure(tmp_path):
    # An id column called "smape" lost every id to the figure of that name.
    rows = [(f"s{k}", t, 10.0 * (k + 1) + t % 4) for k in range(2) for t in range(30)]
    pd.DataFrame(rows, columns=["smape", "t", "sales"]).to_csv(tmp_path / "p.csv", index=False)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(tmp_path / "p.csv"), "--id-column",
                 "smape", "--time-column", "t", "--model", "nbeats", "--holdout", "2", "--out",
                 str(out),
                 *TINY]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["series_id_key"] == "smape_"
    assert [entry["smape_"] for entry in metrics["series"]] == ["s0", "s1"]
    assert all(isinstance(entry["smape"], float) for entry in metrics["series"])


def shop_folder(tmp_path, lengths=(28, 32)):
    """A folder of one CSV file per series (shop0.csv, shop1.csv, ...): a column of sales."""
    folder = tmp_path / "series"
    folder.mkdir()
    for index, n in enumerate(lengths):
        pd.DataFrame({"sales": _series(n, 100.0 * (index + 1))}).to_csv(
            folder / f"shop{index}.csv", index=False)
    return folder


def test_a_folder_of_csv_files_is_many_series_with_the_network_alone(tmp_path, capsys):
    folder = shop_folder(tmp_path)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(folder), "--model", "nbeats",
                 "--holdout", "2", "--out", str(out), *TINY]) == 0
    figures = json.loads((out / "metrics.json").read_text())
    assert figures["model_kind"] == "nbeats" and figures["data"]["series"] == 2
    table = pd.read_csv(out / "holdout_forecasts.csv")
    assert list(table["id"].unique()) == ["shop0", "shop1"] and "ets" not in table.columns

    # Files whose value columns are named differently: evaluate and predict read them as train
    # did (they refused the second file for not having the first file's column name).
    frame = pd.read_csv(folder / "shop1.csv").rename(columns={"sales": "value"})
    frame.to_csv(folder / "shop1.csv", index=False)
    out = tmp_path / "mixed"
    assert main(["timeseries", "train", "--data", str(folder), "--model", "nbeats",
                 "--holdout", "2", "--out", str(out), *TINY]) == 0
    assert json.loads((out / "panel.json").read_text())["target"] is None
    assert main(["timeseries", "evaluate", "--run", str(out)]) == 0
    assert main(["timeseries", "predict", "--run", str(out)]) == 0
    assert pd.read_csv(out / "forecast.csv")["id"].unique().tolist() == ["shop0", "shop1"]


def test_a_panel_without_a_validation_origin_trains_and_says_why_nothing_was_chosen(
        tmp_path, capsys):
    # Two years of monthly values, holdout 6, season 12: no training part holds more than
    # H + season = 18 values. Train ended in a traceback after the network's epochs.
    rows = [(f"n{k}", day, 100 + k + 15 * np.sin(2 * np.pi * day / 12) + (day % 5))
            for k in range(4) for day in range(24)]
    pd.DataFrame(rows, columns=["id", "t", "y"]).to_csv(tmp_path / "short.csv", index=False)
    flags = ["--data", str(tmp_path / "short.csv"), "--id-column", "id", "--time-column", "t",
             "--holdout", "6", "--season", "12", *TINY]
    assert main(["timeseries", "train", *flags, "--out", str(tmp_path / "auto")]) == 0
    printed = capsys.readouterr().out
    assert ("kept nbeats: no series has more than H + season = 18 values before its holdout, "
            "so none has a validation origin: nbeats kept without a choice") in printed
    assert "at the validation origin" not in printed and "left out of the choice" not in printed
    # evaluate on it with a flat series beside: MASE has no scale there, and evaluate says so
    # as train does.
    flat = pd.DataFrame({"id": "flat", "t": range(24), "y": 5.0})
    pd.concat([pd.read_csv(tmp_path / "short.csv"), flat]).to_csv(tmp_path / "flat.csv",
                                                                   index=False)
    assert main(["timeseries", "evaluate", "--run", str(tmp_path / "auto"), "--data",
                 str(tmp_path / "flat.csv")]) == 0
    assert "MASE over 4 of 5 series: the in-sample seasonal naive error of the other 1 is 0" in (
        capsys.readouterr().out)
    # The network alone was never a choice: it says so, not "no validation origin".
    assert main(["timeseries", "train", *flags, "--model", "nbeats", "--out",
                 str(tmp_path / "alone")]) == 0
    assert "kept nbeats: --model nbeats: the network alone, without a choice" in (
        capsys.readouterr().out)


def test_network_settings_given_are_used_and_config_json_records_the_ones_used(tmp_path,
                                                                              capsys):
    # --units 32 --layers 1 --batch-size 32 are one series' defaults: they used to count as
    # not given, so many series trained 256 units in 4 layers while config.json said 32 and 1.
    folder = shop_folder(tmp_path)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(folder), "--model", "nbeats",
                 "--holdout", "2", "--units", "32", "--layers", "1", "--batch-size", "32",
                 "--learning-rate", "0.001", "--epochs", "2", "--out", str(out)]) == 0
    network = json.loads((out / "panel.json").read_text())["network"]
    config = json.loads((out / "config.json").read_text())["settings"]
    assert (network["units"], network["layers"], network["batch_size"]) == (32, 1, 32)
    assert {k: config[k] for k in ("units", "layers", "batch_size", "epochs", "horizon")} == {
        "units": 32, "layers": 1, "batch_size": 32, "epochs": 2, "horizon": 2}
    # Not given: chosen from the data, and config.json says what was chosen.
    chosen = TimeseriesConfig(data=str(folder), holdout=2)
    assert chosen.units is None and chosen.epochs is None
    prepared = PANEL_PIPELINE.prepare(chosen, Distribution())
    assert (chosen.units, chosen.layers, chosen.batch_size, chosen.horizon) == (
        prepared.network["units"], prepared.network["layers"],
        prepared.network["batch_size"], 2)
    assert chosen.units == 256 and chosen.epochs == 60
    # One series takes its own defaults as soon as the settings are made.
    one = TimeseriesConfig(data=str(folder / "shop0.csv"))
    assert (one.units, one.layers, one.batch_size, one.epochs) == (32, 1, 32, 200)


def test_the_default_lookback_lets_the_network_be_scored_at_the_validation_origin(tmp_path):
    # 5 series of 40 days, season 7: the training parts hold 33 values, their histories at
    # the validation origin 26. The lookback (4 horizons, 28) used to be bounded by 33 only,
    # so the network forecast no series there and was kept without being scored.
    rows = [(store, day, 100 + 10 * store + 20 * np.sin(2 * np.pi * day / 7) + (day % 3))
            for store in range(5) for day in range(40)]
    pd.DataFrame(rows, columns=["store", "day", "sales"]).to_csv(tmp_path / "s.csv", index=False)
    config = TimeseriesConfig(data=str(tmp_path / "s.csv"), id_column="store",
                              time_column=["day"])
    prepared = PANEL_PIPELINE.prepare(config, Distribution())
    assert prepared.data.horizon == 7 and config.lookback == 26


def _monthly_panel(path, values):
    rows = [(f"s{i}", str(stamp.date()), 50.0 + i + 10 * np.sin(stamp.month / 2) + (k % 3))
            for i in range(4)
            for k, stamp in enumerate(pd.date_range("2018-01-31", periods=values, freq="ME"))]
    pd.DataFrame(rows, columns=["id", "date", "y"]).to_csv(path, index=False)


def _prepare_panel(path, **settings):
    config = TimeseriesConfig(data=str(path), id_column="id", time_column=["date"], season=12,
                              **settings)
    return PANEL_PIPELINE.prepare(config, Distribution())


def test_the_default_lookback_shrinks_to_one_that_lets_short_series_train(tmp_path):
    # 4 monthly series of 40 values, season and holdout 12: 28 before the holdout. The
    # default's window (the median history, 16) takes 8 of history before a training target,
    # and 8 + twice 12 is more than 28, so the run was refused, though --lookback 9 (4 of
    # history) trains.
    _monthly_panel(tmp_path / "m.csv", 40)
    prepared = _prepare_panel(tmp_path / "m.csv", model="nbeats")
    assert prepared.data.horizon == 12 and prepared.network["lookback"] == 9
    assert prepared.network["min_history"] == 4
    assert ("lookback 9, not the default's 16: a window of 16 takes 8 values of history before "
            "a training target, and no series has them beside its targets and validation values "
            "(the longest has 4 values); a window of 9 takes 4") in prepared.notes
    # Where the default fits, it stays: 5 more values give its window the history it takes.
    _monthly_panel(tmp_path / "longer.csv", 50)
    prepared = _prepare_panel(tmp_path / "longer.csv", model="nbeats")
    assert prepared.network["lookback"] > 16
    assert not any(note.startswith("lookback") for note in prepared.notes)


def _mixed_monthly_panel(path):
    # Two seasonal series of 120 months beside ten of 20 months.
    rows = [(f"S{k}", str(stamp.date()),
             100 + 10 * k + 0.5 * i + 15 * np.sin(2 * np.pi * i / 12) + (i * 7 % 5))
            for k, n in enumerate([120, 120] + [20] * 10)
            for i, stamp in enumerate(pd.date_range("2000-01-01", periods=n, freq="MS"))]
    pd.DataFrame(rows, columns=["id", "date", "y"]).to_csv(path, index=False)


def test_short_series_neither_vote_on_the_season_nor_shrink_the_lookback(tmp_path):
    # Ten 20-month series, too short to test a season of 12, out-voted the two of 120 months
    # that found it (season 1); and, counted with a history of 1 at the validation origin they
    # do not have, pulled the default lookback's median bound to 1: the long series were read
    # one value at a time.
    _mixed_monthly_panel(tmp_path / "mix.csv")
    config = TimeseriesConfig(data=str(tmp_path / "mix.csv"), id_column="id",
                              time_column=["date"], holdout=12, model="nbeats")
    prepared = PANEL_PIPELINE.prepare(config, Distribution())
    assert prepared.data.season == 12
    assert prepared.data.season_source.endswith(
        "of the longest series 'S0': 2 of the 2 longest series that vary find 12; 10 too short "
        "for their time stamps' season do not vote")
    assert prepared.network["lookback"] == 48  # 4 horizons, the histories of 96 allowing it
    assert panel_module.validation_histories([20, 8, 8], 12).tolist() == [8]
    assert panel_module.validation_histories([8, 8], 12).tolist() == [1, 1]  # none has one


def test_series_too_short_for_the_network_are_refused_naming_what_gets_past_it(tmp_path):
    # A lookback given stays: the message names the longest that fits, or the holdout that
    # fits beside it.
    _monthly_panel(tmp_path / "m.csv", 40)
    with pytest.raises(DataError, match=r"no series has the 34 values the network needs before "
                                        r"the holdout \(10 of history and twice the horizon 12: "
                                        r"training targets and validation\); expected "
                                        r"--lookback of at most 9 or --holdout of at most 10$"):
        _prepare_panel(tmp_path / "m.csv", model="nbeats", lookback=20)
    assert _prepare_panel(tmp_path / "m.csv", model="nbeats", lookback=9).data.horizon == 12
    # Longer than every training part: the message named the part's length (28), a lookback
    # then refused in turn; it names the one that fits.
    with pytest.raises(UsageError, match=r"--lookback 30 is longer than every series' training "
                                         r"part \(the longest has 28 values\), so the network "
                                         r"would forecast none of them; expected --lookback of "
                                         r"at most 9 or --holdout of at most 10$"):
        _prepare_panel(tmp_path / "m.csv", model="nbeats", lookback=30)
    # The --holdout named leaves a training part as long as the window.
    with pytest.raises(UsageError, match=r"--holdout of at most 5$"):
        _prepare_panel(tmp_path / "m.csv", model="nbeats", lookback=35)
    assert _prepare_panel(tmp_path / "m.csv", model="nbeats", lookback=35,
                          holdout=5).data.horizon == 5
    assert _prepare_panel(tmp_path / "m.csv", model="nbeats", lookback=20,
                          holdout=10).data.horizon == 10
    # 36 values leave no history beside twice the horizon: no lookback trains, a shorter
    # holdout does, its default lookback shrunk as above (the message named the holdout that
    # fits the lookback chosen for 12, not the one chosen for it).
    _monthly_panel(tmp_path / "short.csv", 36)
    with pytest.raises(DataError, match=r"no series has the 30 values .*; expected --holdout of "
                                        r"at most 11$"):
        _prepare_panel(tmp_path / "short.csv", model="nbeats")
    assert _prepare_panel(tmp_path / "short.csv", model="nbeats", holdout=11).data.horizon == 11


def test_a_network_no_validation_history_can_feed_is_left_out_of_the_choice(tmp_path, capsys):
    rows = [(store, day, 100 + 10 * store + 20 * np.sin(2 * np.pi * day / 7) + (day % 3))
            for store in range(4) for day in range(40)]
    pd.DataFrame(rows, columns=["store", "day", "sales"]).to_csv(tmp_path / "s.csv", index=False)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(tmp_path / "s.csv"), "--id-column",
                 "store", "--time-column", "day", "--lookback", "30", "--out", str(out),
                 *TINY]) == 0
    choice = json.loads((out / "metrics.json").read_text())["choice"]
    assert "nbeats" not in choice["kept"] and choice["candidate_validation"]
    assert "nbeats" not in choice["member_validation"]
    assert not any("nbeats" in name for name in choice["candidate_validation"])
    printed = capsys.readouterr().out
    assert "the network is left out of the choice: no series has the 30 values of history" in (
        printed)
    # What train writes in saved_model/ is not what it kept: it says so (docs/cli.md).
    assert ("saved_model/ serves the network (nbeats) alone: the classical members need each "
            "series' own fit, so the kept forecasts are predict's") in printed
    assert ", 8 units, 1 layer, batch 16," in printed and "at most 2 epochs" in printed


@pytest.mark.parametrize("flags, message", [
    (["--stride", "5"], "--stride 5 is for one series; many series do without it: the "
                        "network draws windows"),
    (["--no-split-targets"], "--no-split-targets is for one series"),
    (["--scaler", "minmax"], "--scaler minmax is for one series"),
    (["--horizon", "3"], "--horizon 3 with --holdout 2: many series forecast their holdout"),
    # Not "choose --model transformer", which many series refuse.
    (["--num-heads", "8"], "--num-heads 8 is for one series; many series do without it"),
])
def test_settings_many_series_would_not_read_are_refused(tmp_path, capsys, flags, message):
    folder = shop_folder(tmp_path, lengths=(30,))
    assert main(["timeseries", "train", "--data", str(folder), "--holdout", "2", *flags,
                 "--out", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_m4_files_in_a_folder_are_read_with_their_own_holdout(tmp_path, capsys):
    folder = tmp_path / "m4"
    folder.mkdir()
    lengths = [40 + 4 * i for i in range(3)]

    def wide(rows, width):
        header = ",".join(f'"V{k}"' for k in range(1, width + 2))
        return "\n".join([header] + [",".join([f'"W{i}"'] + values + [""] * (width - len(values)))
                                     for i, values in enumerate(rows)]) + "\n"

    train = wide([[f"{v:.3f}" for v in _series(n, 50.0 * (i + 1))]
                  for i, n in enumerate(lengths)], max(lengths))
    test = wide([["1.0"] * 13 for _ in lengths], 13)
    (folder / "Weekly-train.csv").write_text(train)
    (folder / "Weekly-test.csv").write_text(test)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(folder), "--model", "nbeats",
                 "--out", str(out), *TINY]) == 0
    figures = json.loads((out / "metrics.json").read_text())
    assert figures["horizon"] == 13 and figures["season"] == 1
    assert "M4 weekly" in figures["horizon_source"]
    table = pd.read_csv(out / "holdout_forecasts.csv")
    assert (table["actual"] == 1.0).all() and list(table.columns[:2]) == ["id", "step"]
    # Plain integer steps: the holdout follows each training part.
    assert table.groupby("id")["step"].min().tolist() == [40, 44, 48]
    # No time stamps: predict's CSV counts the steps after each series' end (a second "step"
    # column, the positions, once broke the frame).
    assert main(["timeseries", "predict", "--run", str(out), "--output",
                 str(tmp_path / "forecast.csv")]) == 0
    forecast = pd.read_csv(tmp_path / "forecast.csv")
    assert list(forecast.columns) == ["id", "step", "forecast"] and len(forecast) == 3 * 13
    assert forecast.groupby("id")["step"].apply(list).tolist() == [list(range(1, 14))] * 3
    assert forecast["forecast"].notna().all()
    # predict forecasts from the end of each whole series, its test file's values included.
    config = TimeseriesConfig(data=str(folder))
    whole = read_panel_data(config, horizon=13, season=1, time_kind="steps", hold_out=False)
    assert [t.size for t in whole.train] == [53, 57, 61]
    assert [h.size for h in whole.holdout] == [0, 0, 0]
    np.testing.assert_array_equal(whole.train[0][-13:], np.ones(13))
    # M4 files of another horizon or time kind than a run's: one line (a traceback was).
    with pytest.raises(DataError, match=r"M4's weekly files hold out 13 values per series; "
                                        r"this run forecasts 3: expected series held out"):
        read_panel_data(config, horizon=3, time_kind="steps")
    with pytest.raises(DataError, match=r"the run was trained on series whose time stamps "
                                        r"are numbers; M4's files have none"):
        read_panel_data(config, horizon=13, time_kind="numbers")
    # Flags M4's layout has no place for were ignored, the summary naming "column 'foo'".
    for flags, named in ((dict(id_column="foo"), "--id-column foo"),
                         (dict(time_column=["ds"]), "--time-column ds"),
                         (dict(target=["y"]), "--target y")):
        with pytest.raises(UsageError, match=rf"{named}: M4's files name each series in their "
                                             rf"first column .*; leave {named.split()[0]} out"):
            read_panel_data(TimeseriesConfig(data=str(folder), **flags))
    # Another CSV file beside them is not read, and the summary says so.
    (folder / "notes.csv").write_text("a,b\n1,2\n")
    (folder / "Daily-train.csv").write_text("a,b\n1,2\n")  # a stray half of another pair
    assert read_panel_data(config).notes[-1] == (f"{folder}: read M4's Weekly-test.csv and "
                                                 "Weekly-train.csv only, not Daily-train.csv, "
                                                 "notes.csv")
    (folder / "Daily-train.csv").unlink()
    # One of the two files alone: named (it was read as a folder of one-series tables, and
    # the error spoke of its value columns V2, V3, ...).
    (folder / "Weekly-test.csv").unlink()
    with pytest.raises(DataError, match=r"the folder holds M4's Weekly-train\.csv but not "
                                        r"Weekly-test\.csv; expected both files"):
        read_panel_data(config)


def test_wrong_settings_for_many_series_are_one_line_errors(tmp_path, capsys):
    write_long_table(tmp_path / "long.csv")
    assert main(["timeseries", "train", "--data", str(tmp_path / "long.csv"), "--id-column",
                 "item", "--model", "transformer", "--out", str(tmp_path / "a")]) == 2
    assert "many series take auto, nbeats, gru, lstm" in capsys.readouterr().err
    # One series (the shuffled long table without --id-column is asked about: its numbers
    # do not increase within each item).
    pd.DataFrame({"t": range(30), "sales": np.arange(30.0)}).to_csv(tmp_path / "one.csv",
                                                                   index=False)
    assert main(["timeseries", "train", "--data", str(tmp_path / "one.csv"), "--model",
                 "nbeats", "--out", str(tmp_path / "b")]) == 2
    assert "--model nbeats is the many-series network" in capsys.readouterr().err
    assert main(["timeseries", "train", "--data", str(tmp_path / "long.csv"), "--id-column",
                 "shop", "--out", str(tmp_path / "c")]) == 2
    assert "shop" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_the_global_network_trains_under_a_mirrored_strategy(tmp_path, capsys):
    write_long_table(tmp_path / "long.csv", short=False)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(tmp_path / "long.csv"), "--id-column",
                 "item", "--time-column", "t", "--model", "nbeats", "--holdout", "2",
                 "--distribute", "mirrored", "--epochs", "1", "--units", "8", "--layers",
                 "1", "--batch-size", "8", "--out", str(out)]) == 0
    figures = json.loads((out / "metrics.json").read_text())
    assert figures["distribution"]["kind"] == "mirrored"
    assert figures["distribution"]["global_batch_size"] == 8 * figures["distribution"][
        "replicas"]


def test_a_perfect_seasonal_naive_is_kept_over_an_imperfect_member():
    # Periodic series without noise: the seasonal naive error is 0, a ratio to it undefined.
    histories = [np.tile([1.0, 2.0, 3.0, 4.0], 6) * (i + 1) for i in range(3)]
    actuals = [h[:4].copy() for h in histories]
    forecasts = {"nbeats": [a + 0.1 for a in actuals],
                 "ets": [a.copy() for a in actuals],
                 "seasonal_naive": [a.copy() for a in actuals]}
    choice = choose(forecasts, actuals, histories, season=4)
    assert choice.kept == ("ets",)  # as perfect as seasonal naive, tried before it
    assert choice.candidate_scores["nbeats"] == float("inf")


def test_the_summary_row_keeps_the_rmse_of_series_in_tiny_or_huge_units():
    # RMSE is in the series' units: a panel of values around 1e-9 printed 0.0000 before.
    tiny = panel_module._row({"smape": 2.25, "mase": 0.72, "mape": 2.2, "rmse": 1.5277e-9,
                              "owa": 0.61})
    assert tiny == ["2.250", "0.720", "2.200", "1.528e-09", "0.610"]
    huge = panel_module._row({"smape": 2.25, "mase": 0.72, "mape": None, "rmse": 1.5277e12,
                              "owa": None})
    assert huge == ["2.250", "0.720", "-", "1.528e+12", "-"]
    assert panel_module._row({"rmse": 17.58912})[3] == "17.5891"


def test_a_run_from_before_the_scale_floor_was_recorded_reads_its_windows_as_it_was_trained():
    # panel.json's network settings without `scale_floor` were written by a run whose network
    # read its windows on a scale of at least the legacy floor; a new run records none (0.0).
    from types import SimpleNamespace

    from seqlab.models.global_forecaster import LEGACY_SCALE_FLOOR

    config = SimpleNamespace(lookback=8, dropout=0.0, seed=1)
    network = {"kind": "nbeats", "units": 8, "layers": 2, "blocks": 2}
    old = panel_module._network_model(config, network, 3)
    new = panel_module._network_model(config, {**network, "scale_floor": 0.0}, 3)
    assert (old.scale_floor, new.scale_floor) == (LEGACY_SCALE_FLOOR, 0.0)


def test_a_one_step_horizon_is_said_in_the_singular_and_forecasts_are_written_as_float32(
        tmp_path, capsys):
    # "each forecast 1 steps", "forecast of the 1 steps"; and a classical member's or a mean's
    # float64 was written with 16 digits (81.30027770996094) beside the SavedModel's float32.
    write_long_table(tmp_path / "long.csv", short=False)
    out = tmp_path / "run"
    assert main(["timeseries", "train", "--data", str(tmp_path / "long.csv"), "--id-column",
                 "item", "--time-column", "t", "--holdout", "1", "--season", str(SEASON),
                 "--out", str(out), *TINY]) == 0
    assert "each forecast 1 step from the end of its training part" in capsys.readouterr().out
    assert main(["timeseries", "predict", "--run", str(out), "--output",
                 str(tmp_path / "forecast.csv")]) == 0
    assert "timeseries: forecast of the 1 step after the end of each of 3 series" in (
        capsys.readouterr().out)
    written = pd.read_csv(tmp_path / "forecast.csv", dtype={"forecast": str})["forecast"]
    # float32's shortest round-trip text has at most 9 significant digits; float64's 17.
    digits = written.str.replace(r"e.*|[-.]", "", regex=True).str.lstrip("0")
    assert digits.str.len().max() <= 9, written.tolist()
    np.testing.assert_array_equal(written.astype(np.float32).astype(str), written)
