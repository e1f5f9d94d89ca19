"""Choosing and combining forecasting members by rolling-origin backtest.

Every member (a classical model, the network, the least-squares autoregression) is scored on
the same backtest origins before the test split: fold k is fitted on the rows before its own
block and forecasts the origins whose targets start inside that block, so no target of a fold
lies in its fitting rows. The candidates are each member alone and the mean of the best k
members by backtest error (k = 2, 3, ...), the combination the forecasting competitions found
most reliable (M3, M4); the candidate with the lowest backtest RMSE is kept. Nothing here
knows which member is which: the figures decide.
"""

import dataclasses

import numpy as np

from seqlab.models.forecasting.metrics import root_mean_square

# Backtest region: at least this share of the rows before the test split (and at least the
# test split's length), so that the choice rests on more than one short validation block.
BACKTEST_SHARE = 1 / 3


@dataclasses.dataclass(frozen=True)
class Fold:
    """One backtest fold: members are fitted on rows `[0, fit_end)` and forecast from the
    `origins` (the last observed row of each forecast; its targets are the rows after it)."""

    fit_end: int
    origins: np.ndarray


def backtest_region(pre_test_rows, test_rows, min_fit_rows):
    """The first row of the backtest region before the test split.

    Args:
        pre_test_rows: rows before the test split (the region ends there).
        test_rows: rows of the test split: the region is at least as long where it can be.
        min_fit_rows: the fewest rows the earliest fold may be fitted on.

    Returns:
        The region's first row, or None when not even one row is left for it.
    """
    length = max(test_rows, int(round(pre_test_rows * BACKTEST_SHARE)))
    start = max(pre_test_rows - length, min_fit_rows)
    return start if start < pre_test_rows else None


def backtest_folds(region_start, region_end, horizon, folds, first_origin=0):
    """Splits the target rows `[region_start, region_end)` into up to `folds` blocks.

    Fold k is fitted on the rows before its block and forecasts from every origin `r >=
    first_origin` whose first target `r + 1` lies in the block and whose last target
    `r + horizon` lies before `region_end` (a forecast may reach into later blocks: those rows
    are not fitting rows of this fold either).

    Returns:
        A list of `Fold`s, earliest first, without empty ones.
    """
    length = region_end - region_start
    folds = max(1, min(folds, length))
    edges = region_start + np.round(np.linspace(0, length, folds + 1)).astype(int)
    result = []
    for start, stop in zip(edges[:-1], edges[1:]):
        last = min(stop, region_end - horizon + 1) - 1
        origins = np.arange(max(start - 1, first_origin), last)
        if len(origins):
            result.append(Fold(int(start), origins))
    return result


def rmse(forecast, actual):
    return float(root_mean_square(np.asarray(forecast) - np.asarray(actual)))


def combine(forecasts, members):
    """The mean of the members' forecasts (arrays of one shape)."""
    return np.mean([forecasts[name] for name in members], axis=0)


def candidate_name(members):
    return members[0] if len(members) == 1 else "mean of " + " + ".join(members)


@dataclasses.dataclass
class Selection:
    """The kept candidate and what every candidate scored on the backtest.

    Attributes:
        kept: the members whose mean forecasts (one member: that member alone).
        member_rmse: `{member: backtest RMSE}`.
        candidate_rmse: `{candidate name: backtest RMSE}` (members alone and the means of the
            best k), in the order tried.
        origins: backtest origins scored.
    """

    kept: tuple
    member_rmse: dict
    candidate_rmse: dict
    origins: int

    @property
    def name(self):
        return candidate_name(self.kept)

    def reason(self):
        """Why the kept candidate was kept, in one sentence."""
        if not self.candidate_rmse:
            return ("too few rows before the test split for a backtest: the mean of the "
                    "members that need none")
        ranked = sorted(self.candidate_rmse.items(), key=lambda item: item[1])
        best, runner_up = ranked[0], (ranked[1] if len(ranked) > 1 else None)
        text = (f"lowest backtest RMSE ({best[1]:.4g} over {self.origins} origins) of "
                f"{len(ranked)} candidates")
        if runner_up is not None:
            text += f"; next: {runner_up[0]} {runner_up[1]:.4g}"
        return text

    def to_dict(self):
        return {"kept": list(self.kept), "name": self.name, "origins": self.origins,
                "member_backtest_rmse": self.member_rmse,
                "candidate_backtest_rmse": self.candidate_rmse, "why": self.reason()}

    @classmethod
    def from_dict(cls, values):
        return cls(tuple(values["kept"]), dict(values["member_backtest_rmse"]),
                   dict(values["candidate_backtest_rmse"]), int(values["origins"]))


def select(forecasts, actual, alone_only=()):
    """Chooses among the members and the means of the best k by backtest RMSE.

    Args:
        forecasts: `{member: forecasts}` over the same backtest origins, each
            `[origins, horizon, n_targets]`; a member whose forecasts are not all finite is
            left out.
        actual: the observed targets, the same shape.
        alone_only: members that are candidates alone but never part of a mean (a benchmark
            such as seasonal naive: on the 16 series of benchmarks/forecasting.py, means that
            took it in because of a good backtest paid for it on the test rows).

    Returns:
        A `Selection`; ties keep the candidate tried first (fewer members).

    Raises:
        ValueError: no member has finite forecasts, or there are no origins.
    """
    if not len(actual):
        raise ValueError("select needs at least one backtest origin. Received none.")
    usable = {name: values for name, values in forecasts.items()
              if np.all(np.isfinite(values))}
    if not usable:
        raise ValueError("select needs a member with finite forecasts. Received none.")
    member_rmse = {name: rmse(values, actual) for name, values in usable.items()}
    ranked = sorted(member_rmse, key=member_rmse.get)
    combinable = [name for name in ranked if name not in alone_only]
    candidates = [(name,) for name in ranked] + [tuple(combinable[:k])
                                                for k in range(2, len(combinable) + 1)]
    candidate_rmse = {candidate_name(members): rmse(combine(usable, members), actual)
                      for members in candidates}
    kept = min(candidates, key=lambda members: candidate_rmse[candidate_name(members)])
    return Selection(kept, member_rmse, candidate_rmse, len(actual))
