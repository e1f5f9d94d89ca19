"""Forecast quality of the default `seqlab timeseries train` on real series, against baselines.

Runs the default command (no settings besides `--data`, plus any extra flags given here) on the
embedded yearly sunspots and on every CSV in a folder of series (default
`../shared/data/timeseries/`), in one process, and prints one table: series, rows, the settings
the data chose (season, lookback, ETS form), the model kept (`--model auto`: GRU or linear),
its test RMSE beside the naive, seasonal-naive and ETS forecasts of the same targets, the ratio
to the best of them, and the training time. The aim is a ratio below 1.0 on every series.

    python benchmarks/forecasting.py [--series DIR] [--only NAME ...] [-- extra train flags]

Prints the table, then one JSON line per series with the figures.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from seqlab.pipelines.common import format_table  # noqa: E402
from seqlab.pipelines.settings import make_config  # noqa: E402
from seqlab.pipelines.timeseries import TASK  # noqa: E402

DEFAULT_SERIES = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "timeseries"


def run_series(data, extra, out):
    """Trains with the defaults on `data` (None: the embedded sunspots); returns the figures."""
    from seqlab.cli import build_parser

    parser = build_parser("timeseries")
    flags = ["timeseries", "train", *([] if data is None else ["--data", str(data)]), *extra]
    values = vars(parser.parse_args(flags))
    for key in ("task", "action", "debug", "config", "overwrite"):
        values.pop(key, None)
    config = make_config(TASK.config_class, {}, {**values, "out": str(out)})
    started = time.perf_counter()
    result = TASK.train(config)
    seconds = time.perf_counter() - started
    metrics = result.metrics
    settled = json.loads((Path(result.path) / "config.json").read_text())["settings"]
    return {
        "series": "sunspots (embedded)" if data is None else Path(data).stem,
        "rows": metrics["data"]["rows"],
        "season": metrics["season"],
        "lookback": settled["lookback"],
        "ets_form": "; ".join((metrics.get("ets_forms") or {}).values()) or "none",
        "origins": metrics["windows"],
        "kept": metrics.get("model_kind", settled["model"]),
        "model": metrics["model"]["rmse"],
        "naive": metrics["naive"]["rmse"],
        "seasonal_naive": metrics["seasonal_naive"]["rmse"],
        "ets": metrics["ets"]["rmse"] if "ets" in metrics else float("nan"),
        "ratio": metrics["rmse_ratio_to_best_baseline"],
        "best_baseline": metrics["best_baseline"],
        "seconds": round(seconds, 1),
        "epochs": metrics.get("epochs_run"),
        # --model auto: both members' validation and test RMSE.
        "members": (metrics.get("auto") or {}).get("members"),
    }


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[: argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=Path, default=DEFAULT_SERIES)
    parser.add_argument("--only", nargs="+", help="series names (file stems, or 'sunspots')")
    args = parser.parse_args(argv)
    files = [None, *sorted(args.series.glob("*.csv"))]
    if args.only:
        files = [f for f in files
                 if (f is None and "sunspots" in args.only) or (f and f.stem in args.only)]
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for index, data in enumerate(files):
            figures = run_series(data, extra, Path(folder) / f"run-{index}")
            results.append(figures)
            print(json.dumps(figures), flush=True)
    columns = ["series", "rows", "season", "lookback", "ets_form", "kept", "model", "naive",
               "seasonal_naive", "ets", "ratio", "best_baseline", "seconds"]
    print(format_table(columns, [[r[c] for c in columns] for r in results]))


if __name__ == "__main__":
    main()
