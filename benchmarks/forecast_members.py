"""How far a choice among the members of `--model auto` can go, beside statsforecast's peers.

For every series of `benchmarks/forecasting.py`: the classical members and the least-squares
linear member of `seqlab timeseries train` (default settings), fitted in this process as a run
fits them (refitted at every backtest fold; the test forecasts from the fits on all rows
before the test split). The network is left out: it would be trained twice per series for
little (leaving it out moved the default's geometric mean by 0.002 on the 16 series of
docs/performance.md). Then the test RMSE, as a ratio to the best of statsforecast's AutoETS,
AutoARIMA, AutoTheta and SeasonalNaive in hindsight (`forecasting.run_peers`, same targets), of

- `rule`: the candidate the backtest keeps (`models/forecasting/selection.select`), as a run;
- `best member`: the member with the lowest test RMSE, picked on the test rows (an oracle);
- `best mean`: the mean of any subset of the members (seasonal naive only alone), picked on
  the test rows: an oracle over every equal-weight combination rule.

Where the best mean's geometric mean misses a goal, no choice or equal-weight combination of
these members reaches it: only better members can.

    python benchmarks/forecast_members.py [--series DIR] [--only NAME ...] [--no-public] [--more]
"""

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

# seqlab first: its import hook keeps TensorFlow's load notices (which ignore
# TF_CPP_MIN_LOG_LEVEL) and C++ log off the terminal, as the command line does.
import seqlab  # noqa: E402,F401

import numpy as np  # noqa: E402
from forecasting import (  # noqa: E402
    add_series_arguments,
    benchmark_series,
    NO_RATIO,
    default_config,
    describe_ratios,
    measure_each,
    ratio_to,
    report_skipped,
    run_peers,
)

from seqlab.data.errors import DataError  # noqa: E402
from seqlab.models.forecasting.selection import Fold, combine, rmse, select  # noqa: E402
from seqlab.pipelines.common import format_table  # noqa: E402
from seqlab.pipelines.distribute import Distribution  # noqa: E402
from seqlab.pipelines.timeseries import PIPELINE  # noqa: E402
from seqlab.pipelines.timeseries_members import (  # noqa: E402
    ALONE_ONLY,
    BacktestPlan,
    backtest_actual,
    classical_forecasts,
    linear_backtest,
)


def member_forecasts(data, out):
    """The members' backtest and test forecasts on one series, as a default run makes them.

    Returns:
        `(backtest {member: forecasts}, backtest actual, test {member: forecasts}, test
        actual, target values, season, horizon)`.
    """
    config = default_config(data, [], out)
    prepared = PIPELINE.prepare(config, Distribution())
    if prepared.plan is None:  # a DataError: the series is skipped, as forecasting.py does
        raise DataError(f"{len(prepared.series.values)} rows: too few for a backtest, which "
                        "the choice among the members needs", path=data)
    schema, values, plan = prepared.schema, prepared.series.values, prepared.plan
    if len(schema.targets) != 1:
        raise ValueError(f"{data}: the peers forecast one target; this one has {schema.targets}")
    targets = values[schema.targets].to_numpy(dtype="float64")
    test_start, horizon = prepared.windows.bounds["test"][0], config.horizon
    test_origins = np.arange(test_start - 1, len(values) - horizon)
    test = classical_forecasts(prepared.members.classical, targets, test_origins, horizon)
    backtest = dict(prepared.classical_backtest)
    # The test fold of the linear member: fitted on every window before the test split.
    test_plan = BacktestPlan(test_start, len(values), [Fold(test_start, test_origins)])
    for plan_of, forecasts in ((plan, backtest), (test_plan, test)):
        forecasts["linear"] = linear_backtest(plan_of, prepared.windows.scaler, schema, values,
                                              config.lookback, horizon)
    return (backtest, backtest_actual(targets, plan.origins, horizon), test,
            backtest_actual(targets, test_origins, horizon), targets[:, 0], prepared.season,
            horizon)


def hindsight(test, actual):
    """`({member: test RMSE}, best mean's members, its RMSE)`, the best picked on the test
    rows."""
    member_rmse = {name: rmse(forecast, actual) for name, forecast in test.items()}
    combinable = [name for name in test if name not in ALONE_ONLY]
    subsets = [subset for size in range(1, len(combinable) + 1)
               for subset in itertools.combinations(combinable, size)]
    mean_rmse = {subset: rmse(combine(test, subset), actual) for subset in subsets}
    best_mean = min(mean_rmse, key=mean_rmse.get)
    return member_rmse, best_mean, mean_rmse[best_mean]


def measure(name, data, out):
    backtest, backtest_target, test, test_target, values, season, horizon = member_forecasts(
        data, out)
    selection = select(backtest, backtest_target, alone_only=ALONE_ONLY)
    test_rows = len(test_target) + horizon - 1
    peers = run_peers(values, test_rows, horizon, max(season, 1))
    best_peer = min(error for error, _ in peers.values())
    member_rmse, subset, subset_error = hindsight(test, test_target)
    member = min(member_rmse, key=member_rmse.get)
    return {
        "series": name,
        "rows": len(values),
        "season": season,
        "kept": selection.name,
        "rule": ratio_to(rmse(combine(test, selection.kept), test_target), best_peer),
        "best_member": member,
        "best_member_ratio": ratio_to(member_rmse[member], best_peer),
        "best_mean": " + ".join(subset),
        "best_mean_ratio": ratio_to(subset_error, best_peer),
        "members": {name: ratio_to(error, best_peer) for name, error in member_rmse.items()},
        **({"ratio_note": NO_RATIO} if best_peer == 0 else {}),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_series_arguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory() as folder:
        results, skipped = measure_each(
            benchmark_series(args, folder),
            lambda name, data, index: measure(name, data, Path(folder) / f"run-{index}"))
    if results:
        columns = ["series", "rows", "kept", "rule", "best_member", "best_member_ratio",
                   "best_mean", "best_mean_ratio"]
        print(format_table(columns, [["-" if r[c] is None else r[c] for c in columns]
                                     for r in results]))
        for column in ("rule", "best_member_ratio", "best_mean_ratio"):
            print(describe_ratios(column, [r[column] for r in results], digits=4))
    return report_skipped(skipped)


if __name__ == "__main__":
    sys.exit(main())
