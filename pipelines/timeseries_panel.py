"""Many series at once: `seqlab timeseries train` on a panel, with the competition protocol.

A run is many series when `--id-column` names the series of a long table, `--data` is a folder
of CSV files (one series each), or an `m4-*` data set (or a folder holding M4's
`<Frequency>-train.csv` and `-test.csv`). The last `--holdout H` values of every series are its
test part (M4's own test files for an M4 set); every series is forecast `H` steps from the end
of the rest (direct multi-step), as in M3 and M4.

Members (`--model auto`): one global network (`seqlab.models.GlobalForecaster`, N-BEATS-style or
recurrent, trained on windows drawn from every series, each window normalised on its own) and
statsforecast's AutoETS, dynamic optimised Theta and AutoARIMA fitted on every series; seasonal
naive is a member too (alone only). They are scored at a validation origin: the last `H` values
of each series' training part, forecast from the rest (the network's training windows end before
them; it stops early on them). The candidate kept is the member or the mean of the best k
members with the lowest relative error there, `(sMAPE / sMAPE of seasonal naive + MASE / MASE of
seasonal naive) / 2` over the series. A series then keeps its own best candidate instead where
that candidate's relative error on the series is at most half the set's choice's
(`SERIES_SWITCH`): a choice per series on one origin of `H` values is mostly noise, so a series
leaves the set's choice only on strong evidence (measured on M4 in docs/performance.md:
switching on any improvement loses on weekly, on half wins on hourly and weekly). A series too
short for the network's lookback is forecast by the kept candidate without the network (or the
best classical candidate), and named in the summary.

Scores (`models/forecasting/metrics.py`): sMAPE (M4), MASE (in-sample seasonal naive scale),
MAPE where every actual is positive, RMSE, per series and averaged over series, and OWA against
Naive2 for the model, every member and the benchmarks (naive, seasonal naive, Naive2).

Run directory (besides the common files): `panel.json` (the settings chosen and why, the
series' ids, the choice), `holdout_forecasts.csv` (one row per series and holdout step: the id
column, the time column, `actual`, `model`, one column per member and benchmark),
`plots/series.png` (the best, median and worst series by the model's sMAPE) and
`saved_model/` with the global network: `serving_default(window: float32[None, lookback]) ->
{"forecast": float32[None, H]}`, each window a series' last `lookback` values in its own
units (the classical members need each series' fit: `predict` gives them).
"""

import dataclasses
import math
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from seqlab.data.datasets import resolve_path
from seqlab.data.errors import DataError, listed
from seqlab.data.long_table import find_id_column_in_file
from seqlab.data.panel import M4_SETS, read_m4_folder, read_panel
from seqlab.data.timeseries import calendar_season, choose_season, future_times
from seqlab.models.forecasting import metrics as forecast_metrics
from seqlab.models.global_forecaster import (
    KINDS as NETWORK_KINDS,
    LEGACY_SCALE_FLOOR,
    GlobalForecaster,
    default_min_history,
    default_settings,
    last_windows,
    panel_training_dataset,
)
from seqlab.pipelines.common import (
    ActionResult,
    UsageError,
    format_duration,
    format_figure,
    format_table,
    free_column_name,
    plural,
    pyplot,
    read_json,
    rows_to_csv,
    save_figure,
    write_export_archive,
    write_text_atomic,
)
from seqlab.models.serving import checked_input
from seqlab.pipelines.configs.timeseries import (
    CARD,
    PANEL_MODEL_KINDS,
    TimeseriesConfig,
    is_many_series,
)
from seqlab.pipelines.lifecycle import Pipeline, evaluation_result
from seqlab.pipelines.settings import (
    MAXIMUMS,
    fill_in_setting,
    recurrent_parameters,
    typed_flag,
)
from seqlab.pipelines.timeseries_classical_panel import (
    ETS_MAX_SEASON,
    PANEL_BASELINES,
    PANEL_CLASSICAL,
    baseline_forecasts,
    classical_forecasts,
)

PANEL_FORMAT = 1
# The id column of holdout_forecasts.csv and predict's CSV when the input names none (M4's
# files, a folder of CSV files).
DEFAULT_ID_COLUMN = "id"
# A member only ever kept alone, never part of a mean (as for one series).
ALONE_ONLY = ("seasonal_naive",)
# A series keeps its own best candidate instead of the set's where that candidate's relative
# error on the series' validation values is at most this share of the set choice's.
SERIES_SWITCH = 0.5
# Batches of the endless window sampler per epoch (early stopping looks once an epoch).
STEPS_PER_EPOCH = 100
# How many series the summary names in a list before "and N more".
_NAMED = 5
# The season is the one most of this many of the longest series find (`panel_season`).
SEASON_VOTERS = 25


def is_m4_source(data):
    """`frequency` when `data` names an M4 set (`m4-hourly`) or a folder holding one
    frequency's `<Frequency>-train.csv` and `-test.csv`; else None.

    Raises:
        DataError: a folder with the files of several frequencies.
    """
    if data is None:
        return None
    text = str(data)
    if text.startswith("m4-") and text[3:] in M4_SETS:
        return text[3:]
    path = Path(text)
    if path.is_dir():
        found = [f for f in M4_SETS if (path / f"{f.capitalize()}-train.csv").is_file()
                 and (path / f"{f.capitalize()}-test.csv").is_file()]
        for f in ([] if found else M4_SETS):  # beside a complete pair, a stray file is noted
            parts = [(path / f"{f.capitalize()}-{part}.csv").is_file() for part in ("train",
                                                                                  "test")]
            if any(parts) and not all(parts):
                have, lack = (("train", "test") if parts[0] else ("test", "train"))
                name = f.capitalize()
                raise DataError(f"the folder holds M4's {name}-{have}.csv but not "
                                f"{name}-{lack}.csv; expected both files of the frequency "
                                "(the test file holds each series' holdout)", path=path)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise DataError(f"the folder holds M4's files of {len(found)} frequencies "
                            f"({', '.join(found)}); expected one: copy one frequency's "
                            "<Frequency>-train.csv and -test.csv into a folder of their own, "
                            "or pass a data set name (m4-hourly, m4-weekly)", path=path)
    return None


def is_panel(config):
    """Whether a run's settings are many series (see the module's docstring)."""
    return is_many_series(config)


def is_panel_run(run):
    """Whether the run directory `run` holds a many-series run (its panel.json)."""
    return (Path(run) / "panel.json").is_file()


# Settings that only one series reads: many series have their own protocol (the holdout),
# window normalisation and network (`default_settings`).
ONE_SERIES_ONLY = {
    "backtest": "many series are scored on their holdout",
    "stride": "the network draws windows at random from every series",
    "val_fraction": "the network is chosen on each series' last --holdout values before it",
    "test_fraction": "each series' test part is its last --holdout values",
    "split_targets": "each series' test part is its last --holdout values",
    "scaler": "each window is normalised by its own last value",
    "normalization": "each window is normalised by its own last value",
    "auto_folds": "the members are chosen on each series' last --holdout values before it",
    "num_heads": "the networks of many series are nbeats, gru and lstm",
    "ff_dim": "the networks of many series are nbeats, gru and lstm",
    "fill": "missing values inside a series are refused",
    "fill_ends": "missing values inside a series are refused",
}


def refuse_one_series_settings(config):
    """Refuses a setting of `ONE_SERIES_ONLY` set to other than its default: many series
    would not read it, and a setting silently ignored is a result the user did not ask for.

    Raises:
        UsageError: naming the first such setting and why many series do without it.
    """
    defaults = {f.name: f.default for f in dataclasses.fields(TimeseriesConfig)}
    for name, why in ONE_SERIES_ONLY.items():
        if getattr(config, name) != defaults[name]:
            raise UsageError(f"{typed_flag(name, getattr(config, name))} is for one series; "
                             f"many series do without it: {why}")


def _named(ids):
    return listed(ids, _NAMED)


# ---------------------------------------------------------------------------------------------
# Reading


@dataclasses.dataclass
class PanelData:
    """A panel split for the competition protocol.

    Attributes:
        source: what was read.
        ids: the series' ids.
        train: each series' training part (float64).
        holdout: each series' test part, `horizon` values.
        times: each series' time stamps of the training part and holdout together.
        time_kind: "dates", "numbers" or "steps".
        id_column, time_label: the column names of the CSV files written.
        horizon, horizon_source: `H` and why.
        season, season_source: the season and why.
        notes: what reading did.
        target: the value column read (None for M4's files, which have none).
    """

    source: str
    ids: list
    train: list
    holdout: list
    times: list
    time_kind: str
    id_column: str
    time_label: str
    horizon: int
    horizon_source: str
    season: int
    season_source: str
    notes: list
    target: str | None = None


def read_panel_data(config, data=None, horizon=None, season=None, target=None,
                    time_kind=None, hold_out=True):
    """Reads the panel of `data` (default: the run's) and holds out the last values.

    Args:
        config: the run's settings (id column, time column, target, holdout, horizon,
            season).
        data: another file or folder, read with the run's settings (evaluate, predict).
        horizon: the run's `H` (evaluate, predict); None chooses it (train).
        season: the run's season (evaluate, predict); None chooses it (train).
        target: the run's value column (evaluate, predict), where `--target` did not name it;
            None chooses it (train).
        time_kind: the run's kind of time stamps (evaluate, predict: "dates", "numbers" or
            "steps"); `data` must hold the same kind. None (train, or a run saved before
            panel.json kept it) takes any.
        hold_out: False (predict): nothing is held out, every series is kept whole (its
            `holdout` empty), however short; H is still the run's horizon.

    Raises:
        DataError: what the readers refuse; no series long enough for the holdout.
        UsageError: settings that do not fit many series.
    """
    data = config.data if data is None else data
    frequency = is_m4_source(data)
    notes = []
    if frequency is not None:
        m4 = M4_SETS[frequency]
        # (train only for --horizon: a run's config.json records the horizon it used.)
        for name, value, unset in (("holdout", config.holdout, None),
                                   ("horizon", 1 if horizon else config.horizon, 1)):
            if value not in (unset, m4["horizon"]):
                raise UsageError(f"--{name} {value}: M4's {frequency} files hold out "
                                 f"{m4['horizon']} values per series; leave --{name} out")
        if horizon is None:  # train: what M4's fixed layout has no place for was ignored
            for flag, value in (("--id-column", config.id_column),
                                ("--time-column", config.time_column),
                                ("--target", config.target)):
                if value:
                    shown = value if isinstance(value, str) else " ".join(value)
                    raise UsageError(f"{flag} {shown}: M4's files name each series in their "
                                     "first column and hold its values in the others, without "
                                     f"time stamps; leave {flag} out")
        if horizon is not None and horizon != m4["horizon"]:
            raise DataError(f"M4's {frequency} files hold out {m4['horizon']} values per "
                            f"series; this run forecasts {horizon}: expected series held out "
                            "as the run's were", path=data)
        if time_kind is not None and time_kind != "steps":
            raise DataError(f"the run was trained on series whose time stamps are "
                            f"{time_kind}; M4's files have none (steps 0, 1, ...): expected "
                            f"{time_kind}", path=data)
        panel = read_m4_folder(data, frequency)
        chosen_h = horizon or m4["horizon"]
        h_source = f"M4 {frequency}'s horizon (its test files)"
        chosen_season = season or config.season or m4["season"]
        season_source = ("--season" if config.season else
                         f"M4's period for {frequency} series")
        ids, train, holdout = list(panel.ids), list(panel.values), list(panel.holdout)
        if not hold_out:  # predict: each series whole, its test file's values included
            train = [np.concatenate([t, h]) for t, h in zip(train, holdout)]
            holdout = [h[:0] for h in holdout]
        times = [np.arange(t.size + h.size) for t, h in zip(train, holdout)]
        folder = Path(panel.source).parent
        read = {f"{frequency.capitalize()}-{part}.csv" for part in ("train", "test")}
        others = sorted(p.name for p in folder.iterdir()
                        if p.suffix.lower() == ".csv" and p.name not in read)
        notes = list(panel.notes) + ([f"{folder}: read M4's {' and '.join(sorted(read))} "
                                      f"only, not {_named(others)}"] if others else [])
        return PanelData(str(data), ids, train, holdout, times, "steps", DEFAULT_ID_COLUMN,
                         "step", chosen_h, h_source, chosen_season, season_source, notes)
    if config.time_column is not None and len(config.time_column) > 1:
        raise UsageError("many series take one --time-column (dates or numbers); got "
                         f"{' '.join(config.time_column)}")
    if config.target is not None and len(config.target) > 1:
        raise UsageError(f"many series forecast one --target column; got "
                         f"{' '.join(config.target)}")
    if config.features or config.categorical:
        raise UsageError("many series are forecast from their own past values only; "
                         "--features and --categorical are for one series")
    path = resolve_path(data)
    if config.id_column is None and path.is_file():
        found = find_id_column_in_file(path, config.time_column[0] if config.time_column
                                       else None)
        if found is not None and horizon is None:
            raise found.refusal(path)
        if found is not None and not found.ambiguous:  # evaluate, predict: no flag to add
            raise DataError(f"{found.describe()}; the run was trained without an id column "
                            "(one series per file), so it would read them end to end as one "
                            "series: expected a file of one series, or a folder of them",
                            path=path)
    # Without --time-column, a column of dates is found and read as the time column, in
    # training (no run's horizon yet) and for a run that read dates; not for a run that read
    # steps (saved before seqlab looked for one: it forecasts as it did).
    panel = read_panel(path, config.id_column,
                       config.time_column[0] if config.time_column else None,
                       config.target[0] if config.target else target,
                       find_time=horizon is None or time_kind == "dates",
                       # evaluate, predict: the run's settings stand; no flag names another
                       time_flag="--time-column" if horizon is None else None)
    if time_kind is not None and panel.time_kind != time_kind:
        raise DataError(f"the run was trained on series whose time stamps are {time_kind}; "
                        f"these are {panel.time_kind}: expected {time_kind}, as the run's "
                        "season and forecast dates were chosen from them",
                        path=panel.source)
    lengths = panel.lengths
    if season is not None:
        chosen_season, season_source = season, "the run's"
    elif config.season is not None:
        chosen_season, season_source = config.season, "--season"
    else:
        chosen_season, season_source = panel_season(panel)
    if horizon is not None:
        chosen_h, h_source = horizon, "the run's"
    elif config.holdout is not None:
        if config.horizon not in (1, config.holdout):
            raise UsageError(f"--horizon {config.horizon} with --holdout {config.holdout}: "
                             "many series forecast their holdout, so the two are one; give "
                             "one of them")
        chosen_h, h_source = config.holdout, "--holdout"
    elif config.horizon > 1:
        chosen_h, h_source = config.horizon, "--horizon"
    elif chosen_season > 1:
        chosen_h, h_source = chosen_season, f"one season ({season_source})"
    else:
        chosen_h = max(1, int(np.median(lengths)) // 10)
        # A season of 1 given is no season found: said as it came.
        without = ("as --season 1 gives none" if season_source == "--season"
                   else "as no season was found")
        h_source = f"a tenth of the median series length ({int(np.median(lengths))}), {without}"
    held = chosen_h if hold_out else 0
    short = [i for i, n in enumerate(lengths) if n <= chosen_h + 1] if hold_out else []
    if len(short) == len(lengths):
        fits = int(max(lengths)) - 2  # a holdout of H needs H + 2 values in a series
        remedy = ("" if frequency is not None or fits < 1 else
                  f"; expected --holdout of at most {fits}")
        raise DataError(f"the longest series has {plural(max(lengths), 'value')}; the holdout of "
                        f"{chosen_h} ({h_source}) needs at least {chosen_h + 2} in a series"
                        + remedy, path=panel.source)
    longest = int(max(lengths)) - held
    if season_source == "--season" and chosen_season > 1 and chosen_season >= longest:
        # As one series refuses it: no series has a season of values before its holdout,
        # so no seasonal baseline, MASE or choice of member could be computed.
        # Where the holdout is one season, a shorter season also shortens the holdout: the
        # longest season that fits leaves more values than itself before a holdout of itself.
        most = ((int(max(lengths)) - 1) // 2 if h_source.startswith("one season")
                else longest - 1)
        raise DataError(
            f"--season {chosen_season} is not shorter than every series' values before its "
            f"holdout of {held} (the longest has {longest}): the seasonal baselines, MASE and "
            f"the choice of member need more values than a season before it; expected "
            f"--season of at most {most}"
            + (" (the holdout is one season, so a shorter season shortens it too)"
               if h_source.startswith("one season") else ""), path=panel.source)
    if short:
        notes.append(f"{len(short)} series left out: at most {plural(chosen_h + 1, 'value')}, "
                     "too few "
                     f"for a holdout of {chosen_h} ({_named(panel.ids[i] for i in short)})")
    short_set = set(short)
    keep = [i for i in range(len(panel)) if i not in short_set]
    time_column = config.time_column[0] if config.time_column else panel.time_column
    id_label = config.id_column or free_column_name(DEFAULT_ID_COLUMN, [time_column])
    return PanelData(
        panel.source, [panel.ids[i] for i in keep],
        [panel.values[i][:panel.values[i].size - held] for i in keep],
        [panel.values[i][panel.values[i].size - held:] for i in keep],
        [panel.times[i] for i in keep], panel.time_kind, id_label,
        time_column or free_column_name("step", [id_label]), chosen_h, h_source,
        chosen_season, season_source, [*panel.notes, *notes], panel.target)


def _shorter_than_the_lookback(ids, usable, lookback):
    """The note naming the series too short for the network's window (`usable[i]` False), as
    train and evaluate say it: `[]` or one line."""
    short = [i for i, ok in zip(ids, usable) if not ok]
    if not short:
        return []
    return [f"{len(short)} series shorter than the lookback {lookback}: forecast without the "
            f"network, whose own figures are over the other {len(usable) - len(short)} "
            f"({_named(short)})"]


def validation_histories(train_lengths, horizon):
    """The histories the network reads at the validation origin, which bound the default
    lookback (`default_settings`): each training part without its last `horizon` values, of
    the series that have one. A series of at most `horizon` training values has none: counted
    as 1, ten such series beside two long ones pulled the median, and the lookback, to 1 (the
    long series read one value at a time). Every series' (at least 1) where none has one."""
    histories = np.asarray(train_lengths) - horizon
    present = histories[histories >= 1]
    return present if present.size else np.maximum(histories, 1)


def lookback_that_trains(lookback, fitting_lengths, horizon):
    """`lookback`, or where it leaves no series the history a training origin takes
    (`default_min_history`) beside its targets, the longest lookback that lets the longest
    series train: the default's window comes from the median length, and on a panel of
    short series its half-window of history may fit none of them, though a shorter window
    would (`fitting_lengths`: each series' values before its validation origin). Unchanged
    where no lookback fits (not one value of history beside the targets)."""
    fitting_lengths = np.asarray(fitting_lengths)
    room = int(fitting_lengths.max()) - horizon
    if room < 1 or (fitting_lengths >= default_min_history(lookback, horizon) + horizon).any():
        return lookback
    # default_min_history: min(lookback // 2, horizon), and here room < horizon.
    return min(lookback, 2 * room + 1)


def _network_remedies(config, data, lookback_given):
    """What gets the network past series too short for it to train on (`prepare`): the
    longest --lookback whose history fits the longest training part beside twice the horizon,
    and the longest --holdout that leaves it room (with the --lookback given, or the lookback
    chosen again from the new horizon, as `prepare` chooses it), as "; expected ..." or ""."""
    h = data.horizon
    longest_train = max(t.size for t in data.train)
    room = longest_train - 2 * h
    remedies = []
    if room >= 1:
        # default_min_history: min(lookback // 2, h) of history, so a lookback of up to
        # 2 * room + 1 needs no more than the room left (any lookback, where room >= h, up
        # to the training part's length, the longest a window reads of it).
        remedies.append(f"--lookback of at most "
                        f"{longest_train if room >= h else 2 * room + 1}")
    if is_m4_source(config.data) is not None:  # M4's holdout is its test files'
        return (f"; expected {remedies[0]}" if remedies else
                "; M4's files fix the holdout, and no lookback fits beside it")
    lengths = np.array([t.size + v.size for t, v in zip(data.train, data.holdout)])
    for holdout in range(h - 1, 0, -1):
        train = lengths - holdout
        if lookback_given:
            lookback = config.lookback
        else:
            lookback = default_settings(holdout, data.season,
                                        validation_histories(train, holdout))["lookback"]
            lookback = lookback_that_trains(lookback, train - holdout, holdout)
        # As `prepare` asks: some series trains, and some series is as long as the window.
        if ((train - holdout >= default_min_history(lookback, holdout) + holdout).any()
                and (train >= lookback).any()):
            remedies.append(f"--holdout of at most {holdout}")
            break
    return f"; expected {' or '.join(remedies)}" if remedies else ""


def panel_season(panel):
    """`(season, where it came from)` of a panel: `choose_season` of each of its
    `SEASON_VOTERS` longest series whose values vary, and the season most of them find (a tie
    goes to the longer series'). One series alone would decide for all by its file's name or
    its place in the table, a constant one among them. A series too short for its time stamps'
    season (fewer than three cycles) finds none and does not vote, unless no series can test
    it: ten 20-month series out-voted two of 120 months that found 12."""
    lengths = panel.lengths  # a property that builds the array: once, not once a series
    order = sorted(range(len(panel)), key=lambda i: -lengths[i])  # stable: ties by place
    varying = [i for i in order if np.ptp(panel.values[i]) > 0]
    voters = (varying or order)[:SEASON_VOTERS]
    found, untested = {}, set()
    for i in voters:  # longest first, so that a tie keeps the longer series' season
        stamps = pd.Series(panel.times[i]) if panel.time_kind == "dates" else None
        found[i] = choose_season(panel.values[i], stamps, panel.target)
        calendar = calendar_season(stamps)
        if found[i][0] == 1 and calendar and calendar[0] > len(panel.values[i]) // 3:
            untested.add(i)
    if len(untested) < len(voters):
        voters = [i for i in voters if i not in untested]
    votes = {}
    for i in voters:
        votes[found[i][0]] = votes.get(found[i][0], 0) + 1
    season = max(votes, key=votes.get)
    first = next(i for i in voters if found[i][0] == season)
    where = found[first][1]
    if len(voters) == 1:
        return season, f"{where} (the longest series, {panel.ids[first]!r})"
    others = ", ".join(f"{n} find {k}" for k, n in votes.items() if k != season)
    which = "that vary" if varying else "(none of the series varies)"
    short = (f"; {len(untested)} too short for their time stamps' season do not vote"
             if untested and len(untested) < len(found) else "")
    return season, (f"{where}, of the longest series {panel.ids[first]!r}: {votes[season]} of "
                    f"the {len(voters)} longest series {which} find {season}"
                    + (f" ({others})" if others else "") + short)


# ---------------------------------------------------------------------------------------------
# Scoring and choosing


def score_series(actuals, forecasts, histories, season):
    """`{"smape", "mase", "mape", "rmse"}` arrays, one value per series (NaN where a figure is
    undefined: MAPE of a non-positive actual, MASE of a history no longer than the season or
    whose in-sample seasonal-naive error is 0; all NaN where the forecast is None, a series
    the forecaster does not forecast)."""
    rows = []
    for actual, forecast, history in zip(actuals, forecasts, histories):
        if forecast is None:
            rows.append((math.nan,) * 4)
            continue
        share = forecast_metrics.mape(actual, forecast)
        try:
            scale = forecast_metrics.mase_scale(history, season)
        except ValueError:
            scale = 0.0
        # Undefined for every forecast alike where the scale is 0, so that each forecast's mean
        # MASE is over the same series (`mase`'s 0 for a perfect forecast would count the
        # series for some forecasts and not others).
        scaled = (forecast_metrics.mase(actual, forecast, history, season) if scale > 0
                  else math.nan)
        rows.append((forecast_metrics.smape(actual, forecast), scaled,
                     math.nan if share is None else share,
                     forecast_metrics.rmse(actual, forecast)))
    columns = np.array(rows, dtype="float64").reshape(-1, 4).T
    return dict(zip(("smape", "mase", "mape", "rmse"), columns))


def _mean(values):
    values = np.asarray(values, dtype="float64")
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else None


def set_figures(scores, naive2=None):
    """The set's averages of `score_series`'s arrays (and OWA against Naive2's)."""
    figures = {name: _mean(values) for name, values in scores.items()}
    figures["series"] = int(scores["smape"].size)
    # MASE is undefined (NaN) where the in-sample scale is 0 or missing, for every forecast
    # alike: left out of its mean, and counted here.
    figures["mase_series"] = int(np.isfinite(scores["mase"]).sum())
    if naive2 is not None:
        figures["owa"] = owa_of(figures, set_figures(naive2))
    return figures


def holdout_figures(data, forecasts):
    """`({name: score_series arrays}, {name: set_figures})` of every forecast of `data`'s
    holdout (Naive2's among them, the reference of OWA). A forecast that is None for some
    series (the network's, of series shorter than its lookback) is figured over the others,
    and so is Naive2 in its OWA."""
    scores = {name: score_series(data.holdout, values, data.train, data.season)
              for name, values in forecasts.items()}
    figures = {}
    for name, values in forecasts.items():
        present = np.array([v is not None for v in values], dtype=bool)
        if present.all():
            figures[name] = set_figures(scores[name], scores["naive2"])
        else:
            figures[name] = set_figures({k: v[present] for k, v in scores[name].items()},
                                        {k: v[present] for k, v in scores["naive2"].items()})
    return scores, figures


def owa_of(figures, naive2_figures):
    """M4's OWA from two sets of averages; None where a figure is missing or Naive2's is 0."""
    parts = [(figures.get(k), naive2_figures.get(k)) for k in ("smape", "mase")]
    if any(a is None or not b for a, b in parts):
        return None
    return 0.5 * sum(a / b for a, b in parts)


def relative_error(scores, reference):
    """`(mean sMAPE / reference's + mean MASE / reference's) / 2` over the series where both
    are finite: the choice's criterion (OWA with seasonal naive in Naive2's place). Where the
    reference's mean is 0 (it forecasts those series perfectly), a ratio is 0 for a candidate
    as perfect and infinite for any other; a figure defined nowhere is left out."""
    total, parts = 0.0, 0
    for key in ("smape", "mase"):
        a, b = np.asarray(scores[key]), np.asarray(reference[key])
        both = np.isfinite(a) & np.isfinite(b)
        if not both.any():
            continue
        ours, theirs = a[both].mean(), b[both].mean()
        total += ours / theirs if theirs > 0 else (0.0 if ours == 0 else math.inf)
        parts += 1
    return total / parts if parts else math.inf


def candidate_name(kept):
    return kept[0] if len(kept) == 1 else "mean(" + "+".join(kept) + ")"


def _mase_series_line(figures, data):
    """The summary's line where MASE averages over fewer series than the other figures, as a
    list of it or of nothing."""
    scaled = figures.get("mase_series", len(data.ids))
    if scaled >= len(data.ids):
        return []
    return [f"  MASE over {scaled} of {len(data.ids)} series: the in-sample seasonal naive "
            f"error of the other {len(data.ids) - scaled} is 0 (every value equals the one a "
            f"season before) or undefined (no more than {data.season} values)"]


@dataclasses.dataclass
class PanelChoice:
    """The kept candidate and what every member and candidate scored at the validation
    origin (relative error: see `relative_error`), with the series that keep their own best
    candidate instead (`series_kept`: series id -> members)."""

    kept: tuple
    member_scores: dict
    candidate_scores: dict
    series: int
    series_kept: dict = dataclasses.field(default_factory=dict)
    # Why the kept candidate was kept where nothing was chosen (empty `candidate_scores`).
    unchosen: str = ""

    @property
    def name(self):
        return candidate_name(self.kept)

    def members_for(self, series_id):
        """The members whose mean forecasts the series `series_id`."""
        return self.series_kept.get(str(series_id), self.kept)

    def reason(self):
        if not self.candidate_scores:
            return self.unchosen or (f"no series long enough for a validation origin: "
                                     f"{self.name} kept without a choice")
        ranked = sorted(self.candidate_scores.items(), key=lambda item: item[1])
        text = (f"lowest relative error ({ranked[0][1]:.4f}: (sMAPE + MASE) / seasonal "
                f"naive's, on the last H values before the holdout of {self.series} series) "
                f"of {len(ranked)} candidates")
        if len(ranked) > 1:
            text += f"; next: {ranked[1][0]} {ranked[1][1]:.4f}"
        return text

    def series_reason(self):
        """One line on the series that keep their own candidate."""
        if not self.series_kept:
            return (f"every series kept {self.name}: no other candidate had at most "
                    f"{SERIES_SWITCH:g} of its relative error on a series' validation values")
        counts = {}
        for members in self.series_kept.values():
            counts[candidate_name(members)] = counts.get(candidate_name(members), 0) + 1
        listed = ", ".join(f"{name} {count}" for name, count in
                           sorted(counts.items(), key=lambda item: (-item[1], item[0])))
        return (f"{len(self.series_kept)} of {self.series} series keep their own candidate "
                f"(relative error on the series' validation values at most {SERIES_SWITCH:g} "
                f"of {self.name}'s): {listed}")

    def to_dict(self):
        return {"kept": list(self.kept), "name": self.name, "series": self.series,
                "member_validation": self.member_scores,
                "candidate_validation": self.candidate_scores, "why": self.reason(),
                "series_kept": {k: list(v) for k, v in self.series_kept.items()},
                "series_why": self.series_reason()}

    @classmethod
    def from_dict(cls, values):
        if not (isinstance(values, dict) and _names(values.get("kept"))
                and isinstance(values.get("member_validation"), dict)
                and isinstance(values.get("candidate_validation"), dict)):
            raise ValueError("panel.json: choice must be an object with kept (a list of member "
                             "names), member_validation and candidate_validation (objects)")
        series_kept = values.get("series_kept", {})
        if not isinstance(series_kept, dict) or not all(map(_names, series_kept.values())):
            raise ValueError("panel.json: choice.series_kept must map series ids to lists of "
                             "member names")
        return cls(tuple(values["kept"]), dict(values["member_validation"]),
                   dict(values["candidate_validation"]), int(values["series"]),
                   {str(k): tuple(v) for k, v in series_kept.items()})


def _names(value):
    """Whether `value` is a non-empty list of member names."""
    return isinstance(value, list) and bool(value) and all(isinstance(m, str) for m in value)


def series_relative_errors(scores, reference):
    """Per series, `(sMAPE / reference's + MASE / reference's) / 2` (the part of a figure that
    is undefined or whose reference is 0 left out; NaN where no part is left)."""
    parts = []
    for key in ("smape", "mase"):
        a, b = np.asarray(scores[key], "float64"), np.asarray(reference[key], "float64")
        with np.errstate(divide="ignore", invalid="ignore"):
            parts.append(np.where(np.isfinite(a) & np.isfinite(b) & (b > 0), a / b, np.nan))
    stacked = np.stack(parts)
    counts = np.isfinite(stacked).sum(axis=0)
    total = np.nansum(stacked, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)


def choose(forecasts, actuals, histories, season, ids=None):
    """Ranks the members by relative error on the validation origin and tries each alone and
    the mean of the best k (members of `ALONE_ONLY` only alone); returns a `PanelChoice`.
    A series (of `ids`) keeps its own best candidate where that candidate's relative error on
    it is at most `SERIES_SWITCH` of the set's choice's.

    Args:
        forecasts: `{member: [forecast per series]}`, the same series for every member.
        actuals, histories: each series' validation values and the history before them.
        season: the MASE scale's season.
        ids: the series' ids (default: their positions).
    """
    ids = [str(i) for i in (range(len(actuals)) if ids is None else ids)]
    reference = score_series(
        actuals, [forecast_metrics.seasonal_naive_forecast(h, a.size, season)
                  for h, a in zip(histories, actuals)], histories, season)
    scores = {(name,): score_series(actuals, values, histories, season)
              for name, values in forecasts.items()}
    relative = {name[0]: relative_error(s, reference) for name, s in scores.items()}
    member_scores = {name[0]: {"smape": _mean(s["smape"]), "mase": _mean(s["mase"]),
                               "relative": relative[name[0]]} for name, s in scores.items()}
    ranked = sorted(relative, key=lambda name: relative[name])
    candidates = {(name,): relative[name] for name in ranked}
    pooled = [name for name in ranked if name not in ALONE_ONLY]
    for k in range(2, len(pooled) + 1):
        kept = tuple(pooled[:k])
        mean = [np.mean([forecasts[n][i] for n in kept], axis=0) for i in range(len(actuals))]
        scores[kept] = score_series(actuals, mean, histories, season)
        candidates[kept] = relative_error(scores[kept], reference)
    best = min(candidates, key=lambda kept: (candidates[kept], len(kept)))
    per_series = {kept: series_relative_errors(scores[kept], reference) for kept in candidates}
    order = list(candidates)
    table = np.stack([per_series[kept] for kept in order])
    series_kept = {}
    for column, series_id in enumerate(ids):
        errors = table[:, column]
        own = per_series[best][column]
        if not np.isfinite(own) or own <= 0 or not np.isfinite(errors).any():
            continue
        row = int(np.nanargmin(errors))
        if order[row] != best and errors[row] <= SERIES_SWITCH * own:
            series_kept[series_id] = order[row]
    return PanelChoice(best, member_scores,
                       {candidate_name(k): v for k, v in candidates.items()}, len(actuals),
                       series_kept)


def fallback_members(choice, network):
    """The members that forecast a series the network cannot (too short for its lookback):
    the kept ones without the network, or, when the network was kept alone, the best
    classical candidate (seasonal naive when nothing else was scored)."""
    fallback = tuple(n for n in choice.kept if n != network)
    if fallback:
        return fallback
    classical = {name: score for name, score in choice.candidate_scores.items()
                 if network not in name}
    if not classical:
        return ("seasonal_naive",)
    return _members_of(min(classical, key=classical.get))


def series_members(choice, network, ids, usable):
    """The members whose mean forecasts each series: its own candidate or the set's, and
    `fallback_members` where the network cannot forecast it (`usable[i]` False)."""
    fallback = fallback_members(choice, network)
    return [choice.members_for(series_id) if ok else fallback
            for series_id, ok in zip(ids, usable)]


def combined(choice, forecasts, network, usable, ids):
    """The kept forecast of every series (of `ids`): the mean of `series_members`'."""
    members = series_members(choice, network, ids, usable)
    return [np.mean([forecasts[n][i] for n in kept], axis=0)
            for i, kept in enumerate(members)]


def _members_of(name):
    if name.startswith("mean(") and name.endswith(")"):
        return tuple(name[5:-1].split("+"))
    return (name,)


# ---------------------------------------------------------------------------------------------
# Forecasting every series from the end of its history: the one code path of validation,
# holdout, evaluate and predict.


def network_forecasts(model, histories):
    """The global network's forecast of every history (one batch pass, float64)."""
    if not histories:  # no series long enough for a validation origin, say
        return []
    windows = last_windows(histories, model.lookback)
    forecast = model.predict(windows, batch_size=1024, verbose=0)
    return [np.asarray(row, dtype="float64") for row in forecast]


def forecast_all(model, histories, horizon, season, classical_methods, what="", later=None,
                 fitted=None):
    """`({member or benchmark: [forecast per series]}, {classical member: [forecast from the
    end of later]} or None, notes)`: the network (under its kind's name), each classical member
    and the benchmarks, from the end of each history (see `classical_forecasts` for `later`).
    `fitted`: the positions of the series the classical members are fitted on (default all);
    the others get None from them."""
    positions = range(len(histories)) if fitted is None else list(fitted)
    classical, rolled, seconds, notes = classical_forecasts(
        [histories[i] for i in positions], horizon, season, classical_methods, what=what,
        later=None if later is None else [later[i] for i in positions])
    if fitted is not None:
        classical = _placed(classical, positions, len(histories))
        rolled = None if rolled is None else _placed(rolled, positions, len(histories))
    if classical_methods and positions:
        notes = [f"classical fits {what}: "
                 + ", ".join(f"{name} {format_duration(value)}" for name, value in seconds.items())
                 + f" for {len(positions)} series", *notes]
    return {**network_and_benchmarks(model, histories, horizon, season, classical)}, rolled, notes


def _placed(by_method, positions, count):
    """`{method: [value per position]}` spread over `count` series, None elsewhere."""
    spread = {}
    for method, values in by_method.items():
        spread[method] = [None] * count
        for position, value in zip(positions, values):
            spread[method][position] = value
    return spread


def network_and_benchmarks(model, histories, horizon, season, classical=None):
    """`{network kind: ..., *classical, naive, seasonal_naive, naive2}` in that order."""
    forecasts = {} if model is None else {model.kind: network_forecasts(model, histories)}
    forecasts.update(classical or {})
    forecasts.update(baseline_forecasts(histories, horizon, season))
    return forecasts


def classical_members(config, season):
    """The classical members of a run: none unless `--model auto`; AutoARIMA only up to a
    season of `ETS_MAX_SEASON` (its seasonal search takes seconds per series beyond)."""
    if config.model != "auto":
        return ()
    return tuple(m for m in PANEL_CLASSICAL if m != "arima" or season <= ETS_MAX_SEASON)


@dataclasses.dataclass
class HoldoutForecasts:
    """What the protocol forecasts on a panel: at the validation origin (the series in
    `valid`, their `histories` and `actuals`) and at the holdout origin (every series). The
    network's forecast is None for a history shorter than its lookback."""

    valid: list
    histories: list
    actuals: list
    validation: dict
    holdout: dict
    notes: list


def holdout_protocol(model, data, methods):
    """Forecasts every member at the validation origin (the last H values of each training
    part, where more than H plus a season come before them) and at the holdout origin (the
    end of each training part). The classical models fitted at the validation origin are
    rolled forward to the holdout origin (parameters kept, state updated); a series too short
    to validate is fitted on its whole training part."""
    h, season = data.horizon, data.season
    valid = [i for i, t in enumerate(data.train) if t.size > h + season]
    valid_set = set(valid)
    others = [i for i in range(len(data.ids)) if i not in valid_set]
    histories = [data.train[i][:-h] for i in valid]
    actuals = [data.train[i][-h:] for i in valid]
    validation, rolled, notes = forecast_all(
        model, histories, h, season, methods, what="at the validation origin",
        later=[data.train[i] for i in valid])
    classical = _placed(rolled, valid, len(data.ids))
    if others:
        fitted, _, more = forecast_all(None, [data.train[i] for i in others], h, season,
                                       methods, what="on the series too short to validate")
        notes += more
        for method in methods:
            for position, i in enumerate(others):
                classical[method][i] = fitted[method][position]
    holdout = network_and_benchmarks(model, data.train, h, season, classical)
    if model is not None:  # a window padded before the series' start is no forecast of it
        for forecasts, series in ((validation, histories), (holdout, data.train)):
            forecasts[model.kind] = [f if x.size >= model.lookback else None
                                     for f, x in zip(forecasts[model.kind], series)]
    return HoldoutForecasts(valid, histories, actuals, validation, holdout, notes)


# ---------------------------------------------------------------------------------------------
# The pipeline


@dataclasses.dataclass
class PreparedPanel:
    data: PanelData
    network: dict
    network_source: str
    fit_series: list  # each series' training part without its validation values
    usable: list  # per series: long enough for the network's windows
    notes: list
    choice: PanelChoice | None = None
    holdout_forecasts: dict | None = None
    model_forecast: list | None = None


class PanelPipeline(Pipeline):
    """Many series on the shared run lifecycle; `TimeseriesPipeline` hands panels to it."""

    name = CARD.name
    config_class = TimeseriesConfig
    model_class = GlobalForecaster
    monitor_metric = "loss"
    data_folder_files = {"data": "*.csv"}  # a folder's series (data.panel.read_panel)

    def least_parameters(self, config):
        # Unset sizes come from the data in `prepare`; the ones given bound the network.
        if config.model not in ("gru", "lstm") or config.units is None:
            return None
        layers = f" --layers {config.layers}" if config.layers else ""
        return (recurrent_parameters(config.model, 1, config.units, config.layers or 1),
                f"--model {config.model} --units {config.units}{layers}")

    def prepare(self, config, distribution):
        if config.model not in PANEL_MODEL_KINDS:
            raise UsageError(f"--model {config.model}: many series take "
                             f"{', '.join(PANEL_MODEL_KINDS)} (one network for all series)")
        refuse_one_series_settings(config)
        data = read_panel_data(config)
        lengths = np.array([t.size for t in data.train])
        # The lookback is bounded by the histories at the validation origin (each training
        # part without its last H values), which the network must read to be chosen on them.
        settings = default_settings(data.horizon, data.season,
                                    validation_histories(lengths, data.horizon))
        # Recorded in panel.json: a run from before it was recorded read its windows with the
        # legacy floor, which `_network_model` then gives it.
        settings = {**settings, "scale_floor": 0.0}
        source = "chosen from the horizon, season and series lengths (default_settings)"
        given = [name for name in ("lookback", "units", "layers", "batch_size", "learning_rate",
                                   "epochs") if getattr(config, name) is not None]
        network_source = source if not given else (
            f"{', '.join('--' + name.replace('_', '-') for name in given)} as given, the rest "
            f"{source}" if len(given) < 6 else "as given")
        if config.model != "auto":
            settings["kind"] = config.model
        # Set by the user (None otherwise: `TimeseriesConfig`), or chosen here; either way
        # config.json records the value used. The batch is per replica (with --distribute
        # the lifecycle multiplies it).
        for name, kind in (("units", int), ("layers", int), ("batch_size", int),
                           ("learning_rate", float)):
            if getattr(config, name) is not None:
                settings[name] = getattr(config, name)
            setattr(config, name, kind(settings[name]))
        notes = list(data.notes)
        if config.lookback is not None:
            settings["lookback"] = config.lookback
        else:
            lookback = int(settings["lookback"])
            fitting = lengths - data.horizon
            shorter = lookback_that_trains(lookback, fitting, data.horizon)
            if shorter != lookback:
                notes.append(
                    f"lookback {shorter}, not the default's {lookback}: a window of "
                    f"{lookback} takes {default_min_history(lookback, data.horizon)} values of "
                    f"history before a training target, and no series has them beside its "
                    f"targets and validation values (the longest has "
                    f"{plural(int(fitting.max() - data.horizon), 'value')}); a window of "
                    f"{shorter} takes {default_min_history(shorter, data.horizon)}")
                settings["lookback"] = lookback = shorter
            fill_in_setting(config, "lookback", lookback, source)
        # An epoch is `steps_per_epoch` batches of the endless window sampler; the network
        # trains for the default's steps unless --epochs says otherwise (early stopping on
        # the validation origin may end it sooner).
        settings.setdefault("steps_per_epoch", STEPS_PER_EPOCH)
        if config.epochs is None:
            config.epochs = max(1, math.ceil(int(settings["steps"])
                                             / int(settings["steps_per_epoch"])))
        h = config.horizon = data.horizon  # config.json records the horizon forecast
        fit_series = [t[:-h] if t.size > h else t[:0] for t in data.train]
        min_history = default_min_history(config.lookback, h)
        settings["min_history"] = min_history
        usable = [t.size >= config.lookback for t in data.train]
        if not any(usable) and "lookback" in given:
            # The longest that fits, not the training part's length: a lookback of that
            # length was refused next, needing its history beside twice the horizon.
            longest = max(t.size for t in data.train)
            raise UsageError(f"--lookback {config.lookback} is longer than every series' "
                             f"training part (the longest has {plural(longest, 'value')}), so the "
                             "network would forecast none of them"
                             f"{_network_remedies(config, data, True)}")
        trainable = [s for s in fit_series if s.size >= min_history + h]
        if not trainable:
            raise DataError(f"no series has the {min_history + 2 * h} values the network "
                            f"needs before the holdout ({min_history} of history and twice "
                            f"the horizon {h}: training targets and validation)"
                            f"{_network_remedies(config, data, 'lookback' in given)}",
                            path=data.source)
        if config.model == "auto" and "arima" not in classical_members(config, data.season):
            notes.append(f"arima left out: its seasonal search on a season of {data.season} "
                         f"(above {ETS_MAX_SEASON}) takes seconds per series; ets fits the "
                         "seasonally adjusted series (M4's classical decomposition)")
        notes += _shorter_than_the_lookback(data.ids, usable, config.lookback)
        return PreparedPanel(data, settings, network_source, fit_series, usable, notes)

    def build_model(self, config, prepared):
        n = prepared.network
        model = _network_model(config, n, prepared.data.horizon)
        model.compile(optimizer=keras.optimizers.Adam(float(n["learning_rate"]),
                                                      clipnorm=config.clipnorm),
                      loss=n.get("loss", "mae"))
        model.build((None, config.lookback))
        return model

    def fit_options(self, config, prepared):
        return {"steps_per_epoch": int(prepared.network["steps_per_epoch"])}

    def datasets(self, config, prepared, batch_size):
        h = prepared.data.horizon
        min_history = int(prepared.network["min_history"])
        trainable = [s for s in prepared.fit_series if s.size >= min_history + h]
        train = panel_training_dataset(trainable, config.lookback, h, batch_size, config.seed,
                                       min_history=min_history)
        with_validation = [i for i, t in enumerate(prepared.data.train) if t.size > h]
        windows = last_windows([prepared.fit_series[i] for i in with_validation],
                               config.lookback)
        targets = np.stack([prepared.data.train[i][-h:] for i in with_validation])
        validation = tf.data.Dataset.from_tensor_slices(
            (windows.astype("float32"), targets.astype("float32"))).batch(1024)
        return train, validation

    def after_fit(self, config, prepared, model):
        data, season = prepared.data, prepared.data.season
        methods = classical_members(config, season)
        protocol = holdout_protocol(model, data, methods)
        prepared.notes.extend(protocol.notes)
        forecasts, actuals, histories = protocol.validation, protocol.actuals, protocol.histories
        members = {name: forecasts[name] for name in (model.kind, *methods, "seasonal_naive")}
        usable = [f is not None for f in forecasts[model.kind]]
        ids = [data.ids[i] for i in protocol.valid]
        if config.model == "auto" and methods and protocol.valid and not any(usable):
            # No history at the validation origin is as long as the network's lookback: the
            # choice is among the members that were scored, never an unscored network.
            del members[model.kind]
            prepared.notes.append(
                f"the network is left out of the choice: no series has the {model.lookback} "
                "values of history it reads at the validation origin (--lookback sets fewer)")
        elif not all(usable):
            # The choice is made on the series every member forecasts.
            members = {name: [v for v, u in zip(values, usable) if u]
                       for name, values in members.items()}
            actuals = [a for a, u in zip(actuals, usable) if u]
            histories = [x for x, u in zip(histories, usable) if u]
            ids = [x for x, u in zip(ids, usable) if u]
        if config.model == "auto" and actuals:
            prepared.choice = choose(members, actuals, histories, season, ids)
        else:
            prepared.choice = PanelChoice((model.kind,), {}, {}, 0, unchosen=(
                f"--model {config.model}: the network alone, without a choice"
                if config.model != "auto" else
                f"no series has more than H + season = {data.horizon + season} values before "
                f"its holdout, so none has a validation origin: {model.kind} kept without a "
                "choice"))
        # The holdout: every series from the end of its training part.
        prepared.holdout_forecasts = protocol.holdout
        prepared.model_forecast = combined(prepared.choice, prepared.holdout_forecasts,
                                           model.kind, prepared.usable, data.ids)

    def score(self, config, model, prepared):
        data = prepared.data
        scores, table = holdout_figures(
            data, {"model": prepared.model_forecast, **prepared.holdout_forecasts})
        model_scores = scores["model"]
        id_key = free_column_name(data.id_column, [*model_scores, "network"])
        best_baseline = min(PANEL_BASELINES,
                            key=lambda b: table[b]["smape"] if table[b]["smape"] is not None
                            else math.inf)
        return {
            "model": table["model"],
            "model_kind": prepared.choice.name,
            "members": {name: table[name] for name in prepared.holdout_forecasts
                        if name not in PANEL_BASELINES},
            "baselines": {name: table[name] for name in PANEL_BASELINES},
            "best_baseline": best_baseline,
            "smape_ratio_to_best_baseline": _ratio(table["model"]["smape"],
                                                   table[best_baseline]["smape"]),
            "choice": prepared.choice.to_dict(),
            "network": {**prepared.network, "lookback": config.lookback,
                        "source": prepared.network_source},
            "split": "holdout",
            "protocol": f"the last {data.horizon} values of every series, forecast from the "
                        "end of the rest",
            "horizon": data.horizon,
            "horizon_source": data.horizon_source,
            "season": data.season,
            "season_source": data.season_source,
            "lookback": config.lookback,
            "targets": [None],
            # Keyed by the id column's name, or that name with "_" added where it is one of
            # the figures' (an id column called "smape"): `series_id_key` says which.
            "series_id_key": id_key,
            "series": [{id_key: str(series_id),
                        **{k: _finite(v[i]) for k, v in model_scores.items()},
                        "network": bool(prepared.usable[i])}
                       for i, series_id in enumerate(data.ids)],
            "notes": prepared.notes,
            "data": {"source": data.source, "series": len(data.ids),
                     "values": int(sum(t.size + h.size for t, h in zip(data.train,
                                                                      data.holdout))),
                     "id_column": data.id_column, "time_column": data.time_label},
        }

    def artifacts(self, config, prepared):
        data = prepared.data
        return {"panel": {
            "format": PANEL_FORMAT, "horizon": data.horizon, "season": data.season,
            "id_column": data.id_column, "time_label": data.time_label, "target": data.target,
            "time_kind": data.time_kind,
            "network": prepared.network, "choice": prepared.choice.to_dict(),
            "classical": list(classical_members(config, data.season)),
        }, "forecasts": holdout_frame(data, {"model": prepared.model_forecast,
                                             **prepared.holdout_forecasts})}

    def write_artifacts(self, run, artifacts):
        run.write_json("panel.json", artifacts["panel"])
        frame = artifacts.get("forecasts")
        if frame is not None:
            write_text_atomic(run.path("holdout_forecasts.csv"), frame.to_csv(index=False))

    def read_artifacts(self, path, config):
        panel = read_json(path / "panel.json")
        if not isinstance(panel, dict) or panel.get("format") != PANEL_FORMAT:
            raise ValueError(f"panel.json: expected an object with format {PANEL_FORMAT}")
        # Refused here, as the rest of a run's files, not when a forecast reads a member or a
        # hand-edited size builds a network of a billion outputs.
        network = panel.get("network")
        if not isinstance(network, dict) or network.get("kind") not in NETWORK_KINDS:
            raise ValueError(f"panel.json: network must be an object whose kind is one of "
                             f"{', '.join(NETWORK_KINDS)}")
        for where, value, most in (
                ("horizon", panel.get("horizon"), MAXIMUMS["horizon"]),
                ("season", panel.get("season"), MAXIMUMS["season"]),
                ("network.units", network.get("units"), MAXIMUMS["units"]),
                ("network.layers", network.get("layers"), MAXIMUMS["layers"]),
                # Not a flag (3, N-BEATS' own); bounded as layers are.
                ("network.blocks", network.get("blocks", 3), MAXIMUMS["layers"])):
            if not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most):
                raise ValueError(f"panel.json: {where} must be a whole number from 1 to "
                                 f"{most:,}; got {value!r}")
        if panel.get("time_kind") not in (None, "dates", "numbers", "steps"):
            raise ValueError(f"panel.json: time_kind must be dates, numbers, steps or null; "
                             f"got {panel['time_kind']!r}")
        if not isinstance(panel.get("target"), (str, type(None))):
            raise ValueError(f"panel.json: target must be a column name or null; got "
                             f"{panel['target']!r}")
        classical = panel.get("classical")
        if not (isinstance(classical, list) and set(classical) <= set(PANEL_CLASSICAL)):
            raise ValueError(f"panel.json: classical must be a list of members among "
                             f"{', '.join(PANEL_CLASSICAL)}; got {classical!r}")
        choice = PanelChoice.from_dict(panel["choice"])
        known = {network["kind"], *classical, *ALONE_ONLY}
        unknown = sorted({m for members in (choice.kept, *choice.series_kept.values())
                          for m in members} - known)
        if unknown:
            raise ValueError(f"panel.json: the choice names {', '.join(unknown)}, not members "
                             f"of this run ({', '.join(sorted(known))})")
        return {"panel": panel}

    def model_for_run(self, config, artifacts):
        panel = artifacts["panel"]
        model = _network_model(config, panel["network"], int(panel["horizon"]))
        model.build((None, config.lookback))
        return model

    def save_plots(self, run, config, prepared, model, metrics, history):
        save_series_grid(run.path("plots", "series.png"), prepared.data,
                         prepared.model_forecast, metrics["series"])

    def summary_lines(self, config, prepared, metrics):
        data, choice = prepared.data, prepared.choice
        rows = [["model: " + metrics["model_kind"], *_row(metrics["model"])]]
        rows += [[name, *_row(figures)] for name, figures in metrics["members"].items()]
        rows += [[name, *_row(figures)] for name, figures in metrics["baselines"].items()]
        lengths = [t.size for t in data.train]
        lines = [
            f"timeseries: {data.source}, {len(data.ids)} series"
            + (f" by column {config.id_column!r}" if config.id_column else "")
            + f" ({min(lengths)} to {max(lengths)} training values), each forecast "
            f"{plural(data.horizon, 'step')} from the end of its training part (holdout)",
            format_table(["forecast", "sMAPE", "MASE", "MAPE", "RMSE", "OWA"], rows),
            "  (means over series; MAPE over the series whose actuals are all positive; OWA "
            "against Naive2)",
        ]
        lines += _mase_series_line(metrics["model"], data)
        lines.append(f"  kept {choice.name}: {choice.reason()}")
        if choice.candidate_scores:
            lines.append(f"  per series: {choice.series_reason()}")
        n = metrics["network"]
        lines += [
            f"holdout {data.horizon}: {data.horizon_source}",
            f"season {data.season}: {data.season_source}",
            f"network: {n['kind']}, lookback {config.lookback}, {plural(n['units'], 'unit')}, "
            f"{plural(n['layers'], 'layer')}, batch {n['batch_size']}, "
            f"{plural(n['steps_per_epoch'], 'step')} an epoch, at most "
            f"{plural(config.epochs, 'epoch')} ({prepared.network_source})",
            *prepared.notes,
        ]
        served = {name for names in (choice.kept, *choice.series_kept.values()) for name in names}
        short = [i for i, ok in zip(data.ids, prepared.usable) if not ok]
        if short and n["kind"] in served:
            # Said: the model's row and "every series kept nbeats" read as if the network
            # forecast them too.
            lines.append(f"  the {len(short)} series shorter than the lookback are forecast by "
                         f"{' + '.join(fallback_members(choice, n['kind']))} instead of the "
                         f"network (their rows of holdout_forecasts.csv: its model column)")
        if served != {n["kind"]}:
            lines.append(f"saved_model/ serves the network ({n['kind']}) alone: the classical "
                         "members need each series' own fit, so the kept forecasts are "
                         "predict's")
        return lines

    def export_model(self, model, config, artifacts, path):
        horizon = int(artifacts["panel"]["horizon"])
        lookback = config.lookback

        expected = f"float32[batch, {lookback}]"

        def serve(window):
            # The loaded signature does not check shapes itself: a wrong window would forecast.
            window = checked_input(window, "window", expected, 2, [
                (1, tf.debugging.assert_equal, lookback, f"exactly lookback={lookback} values")])
            return {"forecast": model(window, training=False)}

        archive = keras.export.ExportArchive()
        archive.track(model)
        archive.add_endpoint("serving_default", serve, input_signature=[
            tf.TensorSpec([None, lookback], tf.float32, name="window")])
        write_export_archive(archive, path)
        return (f"serving_default(window: float32[None, {lookback}]: each series' last "
                f"{lookback} values, in its own units) -> {{'forecast': float32[None, "
                f"{horizon}]}} (the global network; the classical members need each series' "
                "fit: predict gives the kept candidate)")

    def evaluate(self, run, data=None, output=None):
        """Scores a many-series run: its holdout again (the network forecasts anew, the
        classical members are refitted), or another panel's holdout, read with the run's
        settings and `H`."""
        loaded = self.load_run(run)
        config, panel = loaded.config, loaded.artifacts["panel"]
        data_read = read_panel_data(config, data, horizon=int(panel["horizon"]),
                                    season=int(panel["season"]), target=panel.get("target"),
                                    time_kind=panel.get("time_kind"))
        protocol = holdout_protocol(loaded.model, data_read, panel["classical"])
        forecasts, notes = protocol.holdout, protocol.notes
        choice = PanelChoice.from_dict(panel["choice"])
        usable = [t.size >= config.lookback for t in data_read.train]
        forecasts = {"model": combined(choice, forecasts, loaded.model.kind, usable,
                                       data_read.ids), **forecasts}
        # As train names them (the network's row was "-" unexplained).
        notes = [*notes, *_shorter_than_the_lookback(data_read.ids, usable, config.lookback)]
        _, table = holdout_figures(data_read, forecasts)
        figures = {"model": table["model"], "model_kind": choice.name,
                   "members": {k: v for k, v in table.items()
                               if k not in PANEL_BASELINES and k != "model"},
                   "baselines": {k: table[k] for k in PANEL_BASELINES},
                   "split": "holdout", "source": data_read.source, "notes": notes}
        rows = [[name, *_row(f)] for name, f in table.items()]
        summary = [f"timeseries: {data_read.source}, {len(data_read.ids)} series, holdout "
                   f"{data_read.horizon}",
                   format_table(["forecast", "sMAPE", "MASE", "MAPE", "RMSE", "OWA"], rows),
                   *_mase_series_line(table["model"], data_read),
                   *data_read.notes, *notes]
        return evaluation_result(summary, figures, output)

    def predict(self, run, data=None, output=None):
        """Forecasts `H` steps after the end of every series (training part and holdout
        together) with the kept candidate; one long CSV: the id column, the time column,
        `step`, `forecast` (default `<run>/forecast.csv`)."""
        loaded = self.load_run(run)
        config, panel = loaded.config, loaded.artifacts["panel"]
        data_read = read_panel_data(config, data, horizon=int(panel["horizon"]),
                                    season=int(panel["season"]), target=panel.get("target"),
                                    time_kind=panel.get("time_kind"), hold_out=False)
        histories = data_read.train  # each series whole: predict holds nothing out
        choice = PanelChoice.from_dict(panel["choice"])
        usable = [h.size >= config.lookback for h in histories]
        # Only the classical members the kept forecasts read are fitted, and only on the
        # series that read them (M4 weekly: 19 of 359 series, where the network is kept).
        members = series_members(choice, loaded.model.kind, data_read.ids, usable)
        classical = [m for m in panel["classical"] if any(m in kept for kept in members)]
        forecasts, _, notes = forecast_all(
            loaded.model, histories, data_read.horizon, data_read.season, classical,
            what="from the end of the series that read them",
            fitted=[i for i, kept in enumerate(members) if set(kept) & set(classical)])
        kept = combined(choice, forecasts, loaded.model.kind, usable, data_read.ids)
        frame = future_frame(data_read, kept)
        path = Path(output) if output else loaded.file("forecast.csv")
        write_text_atomic(path, frame.to_csv(index=False))
        chosen = series_members(choice, loaded.model.kind, data_read.ids, [True] * len(usable))
        short = [i for i, u, names in zip(data_read.ids, usable, chosen)
                 if not u and loaded.model.kind in names]
        if short:
            notes.append(f"{len(short)} series shorter than the lookback {config.lookback}: "
                         f"forecast without the network ({_named(short)})")
        summary = [f"timeseries: forecast of the {plural(data_read.horizon, 'step')} after "
                   "the end of "
                   f"each of {len(histories)} series of {data_read.source} ({choice.name})",
                   *data_read.notes, *notes, f"written to {path}"]
        return ActionResult(summary="\n".join(summary), path=path)


def _finite(value):
    return float(value) if np.isfinite(value) else None


def _ratio(a, b):
    return None if a is None or not b else a / b


def _network_model(config, network, horizon):
    """The run's `GlobalForecaster` from its network settings (panel.json's `network`)."""
    return GlobalForecaster(
        lookback=config.lookback, horizon=horizon, kind=network["kind"],
        units=int(network["units"]), layers=int(network["layers"]),
        blocks=int(network.get("blocks", 3)), dropout=config.dropout, seed=config.seed,
        scale_floor=float(network.get("scale_floor", LEGACY_SCALE_FLOOR)))


def _row(figures):
    # RMSE is in the series' units: 4 decimals would print a panel of values around 1e-9 as
    # 0.0000 (format_figure switches to significant digits there).
    def cell(value, digits=3):
        return "-" if value is None else format_figure(value, digits)
    return [cell(figures.get("smape")), cell(figures.get("mase")), cell(figures.get("mape")),
            cell(figures.get("rmse"), 4), cell(figures.get("owa"))]


def _stamps(times, start, count, reference=None):
    """`count` time stamps from position `start` of a series' `times`, continued past its end
    as one series' forecast is (`data.timeseries.future_times`: dates with the calendar
    frequency pandas infers, so monthly stays on the 1st or the month's end, business days
    skip weekends; else the most common step, not the last one, which may span a gap). A
    series of one stamp has no step of its own, one of two no calendar frequency: they take
    that of `reference` (the panel's longest series), where given and, for two stamps,
    where it steps from the first to the second."""
    times = np.asarray(times)
    if start + count <= times.size:
        return times[start:start + count]
    more = start + count - times.size
    like = None
    if reference is not None and times.size < 3 and len(reference) > times.size:
        like = pd.Series(reference)
    if times.size == 2 and like is not None:
        # Two stamps have a step; the reference's frequency serves where it gives that step
        # (two month starts are 28 to 31 days apart: their own step would drift).
        if future_times(pd.Series(times[:1]), 1, like=like)[0] != times[1]:
            like = None
    if times.size >= 2 or like is not None:
        extra = np.asarray(future_times(pd.Series(times), more, like=like))
    else:
        extra = times[-1] + np.arange(1, more + 1)
    return np.concatenate([times[start:], extra])


def holdout_frame(data, forecasts):
    """holdout_forecasts.csv: one row per series and holdout step."""
    actual = free_column_name("actual", [data.id_column, data.time_label])
    labels = {}  # a forecast's name -> its column: the data's columns keep theirs
    for name in forecasts:
        labels[name] = free_column_name(name, [data.id_column, data.time_label, actual,
                                               *labels.values()])
    columns = {data.id_column: [], data.time_label: [], actual: [],
               **{label: [] for label in labels.values()}}
    for i, series_id in enumerate(data.ids):
        h = data.holdout[i].size
        columns[data.id_column] += [series_id] * h
        columns[data.time_label] += list(_stamps(data.times[i], data.train[i].size, h))
        columns[actual] += list(data.holdout[i])
        for name, values in forecasts.items():
            columns[labels[name]] += [math.nan] * h if values[i] is None else list(values[i])
    return pd.DataFrame(columns)


def future_frame(data, forecasts):
    """predict's CSV: `H` rows per series after its last value: the id, the time column
    (continued), `step` (1 to H), `forecast`. Without time stamps (M4's files, a table without
    a time column) the positions would be a second `step` column: `step` alone counts them."""
    stamped = data.time_kind != "steps"
    taken = [data.id_column, *([data.time_label] if stamped else [])]
    step = free_column_name("step", taken)
    forecast = free_column_name("forecast", [*taken, step])
    columns = {data.id_column: [], **({data.time_label: []} if stamped else {}), step: [],
               forecast: []}
    longest = max(data.times, key=len) if data.times else None
    for i, series_id in enumerate(data.ids):
        h = forecasts[i].size
        n = data.train[i].size + data.holdout[i].size
        columns[data.id_column] += [series_id] * h
        if stamped:
            columns[data.time_label] += list(_stamps(data.times[i], n, h, longest))
        columns[step] += list(range(1, h + 1))
        # float32, as the SavedModel's: the float64 of a classical member or a mean printed 16
        # digits (81.30027770996094) of a float32 network's forecast.
        columns[forecast] += list(np.asarray(forecasts[i], np.float32))
    return pd.DataFrame(columns)


def save_series_grid(path, data, forecast, series_figures):
    """The best, median and worst series by the model's sMAPE: history tail, holdout and
    forecast."""
    plt = pyplot()
    order = sorted(range(len(data.ids)),
                   key=lambda i: (series_figures[i]["smape"] is None,
                                  series_figures[i]["smape"] or 0.0))
    picks = [("best", order[0]), ("median", order[len(order) // 2]), ("worst", order[-1])]
    figure, axes = plt.subplots(len(picks), 1, figsize=(9, 2.6 * len(picks)))
    for axis, (label, i) in zip(np.atleast_1d(axes), picks):
        h = data.holdout[i].size
        tail = data.train[i][-4 * h:]
        x = np.arange(-tail.size, h)
        axis.plot(x[:tail.size], tail, color="0.4", label="history")
        axis.plot(x[tail.size:], data.holdout[i], color="black", label="actual")
        axis.plot(x[tail.size:], forecast[i], color="tab:blue", label="forecast")
        smape = series_figures[i]["smape"]
        axis.set_title(f"{label}: {data.ids[i]} (sMAPE {smape:.2f})" if smape is not None
                       else f"{label}: {data.ids[i]}", fontsize=9)
        axis.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(figure, path, dpi=90)


PANEL_PIPELINE = PanelPipeline()
