"""The M4 competition's protocol on its hourly and weekly series: Naive2, seasonal naive and
naive from the end of each training part, scored as M4 scored them.

Every series' test values (48 hourly, 13 weekly) are forecast from the end of its training part;
sMAPE and MASE (scale: the in-sample seasonal naive with M4's period, 24 hourly and 1 weekly)
are averaged over the series of a set, and OWA relates them to Naive2's
(`seqlab.models.forecasting.metrics`). Naive2's published figures (Makridakis, Spiliotis &
Assimakopoulos 2020, the M4 paper's table of benchmarks) are printed beside ours: reproducing
them to three decimals is the check that the reader, the metrics and Naive2 are the
competition's. The script exits with status 1 when a published figure is not reproduced.

`--peers` adds statsforecast's AutoETS and AutoTheta (season M4's period) on the first
`--limit N` series of each set (default 20), with Naive2 on the same series for their OWA;
AutoETS on every hourly series takes tens of minutes on 2 cores.

    python benchmarks/m4.py [--data DIR_OR_NAME] [--sets hourly weekly] [--peers [--limit N]]

`--seqlab` also runs seqlab's many-series command, `seqlab timeseries train --data <the set's
files>` with its defaults (one process, as a user types it), and scores its kept forecast and
every member from the run's `holdout_forecasts.csv` beside the benchmarks and, with `--peers`,
statsforecast's models on the same series (`--limit 0`: every series; AutoETS with season 24
on all hourly series takes about 25 minutes on 2 cores).

    python benchmarks/m4.py --sets weekly --seqlab --peers --limit 0

`--data` is a folder with `<Frequency>-train.csv` and `<Frequency>-test.csv`, or a registered
name (`m4-hourly`, `m4-weekly`: one frequency each, which is then the set unless `--sets` is
given). Without it each set is read by its registered name, downloaded on first use
(`seqlab datasets download m4-weekly`).
"""

import argparse
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

# seqlab first: its import hook keeps TensorFlow's load notices (which ignore
# TF_CPP_MIN_LOG_LEVEL) and C++ log off the terminal, as the command line does.
import seqlab  # noqa: E402,F401

import numpy as np  # noqa: E402

from seqlab.data import datasets  # noqa: E402
from seqlab.data.errors import DataError  # noqa: E402
from seqlab.data.panel import M4_SETS, read_m4_folder  # noqa: E402
from seqlab.models.forecasting import metrics  # noqa: E402

DEFAULT_SETS = ("hourly", "weekly")
# Naive2's sMAPE and MASE in the M4 paper (Makridakis et al. 2020, International Journal of
# Forecasting 36(1), the table of the benchmarks' accuracy by frequency).
PUBLISHED_NAIVE2 = {"hourly": (18.383, 2.395), "weekly": (9.161, 2.777)}
PEERS = ("AutoETS", "AutoTheta")


def set_sources(parser, data, sets):
    """`{frequency: folder or registered name}` of the sets to read, from `--data` and `--sets`
    (None where not given); a combination that cannot be read is a one-line `parser.error`.

    Without `--data` each set is read by its registered name (`m4-hourly`, downloaded on first
    use). A registered name holds one frequency, so it is the set when `--sets` is left out,
    and `--sets` naming another is refused rather than read from the wrong files. A folder
    holds the files of every set in `--sets` (default: hourly and weekly).
    """
    registered = [name for name in datasets.names() if name.startswith("m4-")]
    if data is None:
        sets = sets or DEFAULT_SETS
        unnamed = [frequency for frequency in sets if f"m4-{frequency}" not in registered]
        if unnamed:
            parser.error(f"no registered data set holds M4 {', '.join(unnamed)} (only "
                         f"{', '.join(registered)}); give --data FOLDER holding its files")
        return {frequency: f"m4-{frequency}" for frequency in sets}
    if datasets.is_name(data):
        if data not in registered:
            parser.error(f"--data {data} is not an M4 set; expected {', '.join(registered)} or "
                         "a folder of <Frequency>-train.csv and <Frequency>-test.csv")
        frequency = data[len("m4-"):]
        if sets and list(sets) != [frequency]:
            parser.error(f"--data {data} holds the {frequency} set only; leave --sets out or "
                         f"give --sets {frequency}")
        return {frequency: data}
    if not Path(data).is_dir():
        parser.error(f"--data {data}: no such folder, nor a registered name (expected "
                     f"{', '.join(registered)} or a folder of <Frequency>-train.csv and "
                     "<Frequency>-test.csv)")
    return {frequency: data for frequency in sets or DEFAULT_SETS}


def read_set(source, frequency):
    """`read_m4_folder(source, frequency)`; a file it cannot read (or download) is one line
    and exit status 2, as the other refusals of the data given (it was status 1, a failure to
    reproduce Naive2's figures)."""
    try:
        return read_m4_folder(source, frequency)
    except DataError as error:
        refuse(f"M4 {frequency}: {error}")


def refuse(message):
    """Ends the script with `message` in one line and exit status 2, as `parser.error` does
    (status 1 is a failure to reproduce Naive2's figures)."""
    print(f"m4.py: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def benchmark_forecasts(panel, frequency):
    """`{method: [forecast per series]}` of Naive2, seasonal naive and naive, and the seconds
    each took."""
    horizon, season = M4_SETS[frequency]["horizon"], M4_SETS[frequency]["season"]
    methods = {
        "Naive2": lambda history: metrics.naive2_forecast(history, horizon, season),
        "sNaive": lambda history: metrics.seasonal_naive_forecast(history, horizon, season),
        "Naive": lambda history: metrics.naive_forecast(history, horizon),
    }
    forecasts, seconds = {}, {}
    for name, method in methods.items():
        start = time.perf_counter()
        forecasts[name] = [method(history) for history in panel.values]
        seconds[name] = time.perf_counter() - start
    return forecasts, seconds


def peer_forecasts(panel, frequency, limit):
    """`({peer: [forecast per series]}, {peer: seconds})` of statsforecast's AutoETS and
    AutoTheta on the first `limit` series, each model fitted on its own (one process)."""
    from statsforecast import StatsForecast
    from statsforecast.models import AutoETS, AutoTheta

    horizon, season = M4_SETS[frequency]["horizon"], M4_SETS[frequency]["season"]
    frame = panel.to_frame()
    frame = frame[frame["unique_id"].isin(panel.ids[:limit])]
    forecasts, seconds = {}, {}
    for model in (AutoETS(season_length=season), AutoTheta(season_length=season)):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = StatsForecast(models=[model], freq=1, n_jobs=1).forecast(df=frame,
                                                                              h=horizon)
        seconds[repr(model)] = time.perf_counter() - start
        by_id = {key: group[repr(model)].to_numpy()
                 for key, group in result.groupby("unique_id", sort=False)}
        forecasts[repr(model)] = [by_id[series_id] for series_id in panel.ids[:limit]]
    return forecasts, seconds


def link_set_files(source, frequency, work):
    """`work/<frequency>-files`, a folder of links to the set's two files in `source` (the
    files the run reads, without the other sets'). A link there to another folder's file of
    that name (one this script made for an earlier `--data`) is replaced; anything else in
    its place is refused in one line, never deleted."""
    files = work / f"{frequency}-files"
    try:
        files.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        refuse(f"--out {work}: cannot hold the folder {files.name} (a file stands in its "
               "way); give another --out")
    for part in ("train", "test"):
        name = f"{frequency.capitalize()}-{part}.csv"
        target, link = (source / name).resolve(), files / name
        if link.is_symlink() and Path(os.readlink(link)).name == name:
            if Path(os.readlink(link)) == target:
                continue
            link.unlink()  # this script's link to an earlier --data's file
        elif link.exists() or link.is_symlink():
            refuse(f"{link} is not a link m4.py made; remove it or give another --out")
        link.symlink_to(target)
    return files


def seqlab_forecasts(data, frequency, panel, out=None):
    """`({"seqlab": [...], "seqlab:<member>": [...]}, seconds)`: runs `seqlab timeseries
    train` with its defaults on the set's two files and reads the run's holdout forecasts.
    Without `out` the run is made in a temporary folder, deleted before returning."""
    import tempfile

    import pandas as pd

    from seqlab.cli import main as seqlab_main

    source = Path(data)
    if not source.is_dir():
        from seqlab.data.datasets import resolve_path
        source = resolve_path(data)
    work = Path(out) if out else Path(tempfile.mkdtemp(prefix="seqlab-m4-"))
    try:
        files = link_set_files(source, frequency, work)
        run = work / f"{frequency}-run"
        start = time.perf_counter()
        status = seqlab_main(["timeseries", "train", "--data", str(files), "--out", str(run),
                              "--overwrite"])
        seconds = time.perf_counter() - start
        if status != 0:
            raise SystemExit(f"seqlab timeseries train failed on {frequency} (status {status})")
        table = pd.read_csv(run / "holdout_forecasts.csv", dtype={"id": str})
    finally:
        if not out:
            shutil.rmtree(work, ignore_errors=True)
    groups = {key: rows for key, rows in table.groupby("id", sort=False)}
    columns = [c for c in table.columns if c not in ("id", "step", "actual")]
    forecasts = {}
    for column in columns:
        name = "seqlab" if column == "model" else f"seqlab:{column}"
        forecasts[name] = [groups[series_id][column].to_numpy() for series_id in panel.ids]
    return forecasts, seconds


def score(panel, forecasts, frequency, count=None):
    """`{method: PanelScores}` on the first `count` series (all by default)."""
    count = len(panel) if count is None else count
    season = M4_SETS[frequency]["season"]
    return {name: metrics.score_panel(panel.holdout[:count], values[:count],
                                      panel.values[:count], season)
            for name, values in forecasts.items()}


def print_table(title, scores, seconds, published=None):
    naive2 = scores["Naive2"]
    print(title)
    print(f"  {'method':<24} {'sMAPE':>8} {'MASE':>8} {'OWA':>7} {'seconds':>8}"
          + ("   published sMAPE / MASE" if published else ""))
    for name, result in scores.items():
        beside = ""
        if published and name == "Naive2":
            beside = f"   {published[0]:.3f} / {published[1]:.3f}"
        print(f"  {name:<24} {result.mean_smape:8.3f} {result.mean_mase:8.3f} "
              f"{metrics.owa(result, naive2):7.3f} {seconds.get(name, 0.0):8.2f}{beside}")


def add_data_arguments(parser):
    """`--data` and `--sets`, read by `set_sources` (this script's and global_forecaster.py's)."""
    parser.add_argument("--data", default=None,
                        help="folder of M4's files or a registered name (default: each set's "
                        "registered name, m4-hourly and m4-weekly, downloaded on first use)")
    parser.add_argument("--sets", nargs="+", default=None, choices=sorted(M4_SETS),
                        help="default: the set --data names, else hourly and weekly")


def check_out(parser, out):
    """A one-line `parser.error` where `--out` is a file, or lies under one (the run would
    end, after the sets were read, in a NotADirectoryError traceback)."""
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                where = "" if folder == out else f" ({folder} is a file)"
                parser.error(f"--out {out}: not a folder{where}; expected a folder for the "
                             "runs (made if missing)")
            return


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_arguments(parser)
    parser.add_argument("--peers", action="store_true",
                        help="also statsforecast's AutoETS and AutoTheta on --limit series")
    parser.add_argument("--limit", type=int, default=20,
                        help="series per set for --peers, 0 for all (default: %(default)s)")
    parser.add_argument("--seqlab", action="store_true",
                        help="also run `seqlab timeseries train` with its defaults on each set")
    parser.add_argument("--out", default=None,
                        help="--seqlab: folder for the runs, kept (default: a temporary folder, "
                        "deleted at the end)")
    args = parser.parse_args(argv)
    if args.limit < 0:  # a negative limit ran every series, as 0 does
        parser.error(f"--limit must be 0 (every series) or more, not {args.limit}")
    if args.out is not None:
        check_out(parser, Path(args.out))
    sources = set_sources(parser, args.data, args.sets)
    failures = []
    for frequency, source in sources.items():
        start = time.perf_counter()
        panel = read_set(source, frequency)
        read_seconds = time.perf_counter() - start
        seasonal = sum(metrics.is_seasonal(values, M4_SETS[frequency]["season"])
                       for values in panel.values)
        print(f"M4 {frequency}: {len(panel)} series, {panel.lengths.min()} to "
              f"{panel.lengths.max()} training values, horizon {panel.horizon}, season "
              f"{M4_SETS[frequency]['season']}; {seasonal} seasonal by M4's test; read in "
              f"{read_seconds:.2f} s")
        forecasts, seconds = benchmark_forecasts(panel, frequency)
        scores = score(panel, forecasts, frequency)
        published = PUBLISHED_NAIVE2.get(frequency)
        print_table(f"  all {len(panel)} series:", scores, seconds, published)
        if published:
            measured = (round(scores["Naive2"].mean_smape, 3), round(scores["Naive2"].mean_mase, 3))
            if measured != published:
                failures.append(f"{frequency}: Naive2 sMAPE / MASE {measured}, published "
                                f"{published}")
        subset = {name: forecasts[name] for name in ("Naive2", "sNaive")}
        subset_seconds = {}
        count = len(panel)
        if args.peers:
            count = min(args.limit, len(panel)) if args.limit > 0 else len(panel)
            extra, subset_seconds = peer_forecasts(panel, frequency, count)
            subset.update(extra)
        if args.seqlab:
            ours, seconds_taken = seqlab_forecasts(source, frequency, panel, args.out)
            subset.update(ours)
            subset_seconds["seqlab"] = seconds_taken
        if args.peers or args.seqlab:
            scores = score(panel, subset, frequency, count)
            print_table(f"  the first {count} series, side by side:", scores, subset_seconds)
            if args.seqlab:
                peers = [name for name in scores if name not in ("seqlab",)
                         and not name.startswith("seqlab:")]
                best = min(peers, key=lambda name: scores[name].mean_smape)
                ours = scores["seqlab"]
                print(f"  seqlab / best other by sMAPE ({best}): "
                      f"{ours.mean_smape / scores[best].mean_smape:.3f} sMAPE, "
                      f"{ours.mean_mase / scores[best].mean_mase:.3f} MASE")
    if failures:
        print("NOT reproduced: " + "; ".join(failures), file=sys.stderr)
        return 1
    checked = [f for f in sources if f in PUBLISHED_NAIVE2]
    if checked:
        print(f"Naive2's published sMAPE and MASE reproduced to 3 decimals: {', '.join(checked)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
