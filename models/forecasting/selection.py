"""Choosing and combining forecasting members by rolling-origin backtest.

Every member (a classical model, the network, the least-squares autoregression) is scored on
the same backtest origins before the test split: fold k is fitted on the rows before its own
block and forecasts the origins whose targets start inside that block, so no target of a fold
lies in its fitting rows. The candidates are each member alone and the mean of the best k
members by backtest error (k = 2, 3, ...). The default is the mean of the pool: the members whose
backtest RMSE is within `POOL_RATIO` times the best member's (forecast pooling, Kourentzes,
Barrow and Petropoulos 2019: a simple combination is what the forecasting competitions found
hardest to beat, M3, M4, but a member far behind the others drags it off; a member more than
that far ahead of every other is a pool of one, kept alone); the candidate with
the lowest backtest RMSE replaces it only when its backtest errors are clearly lower: a
one-sided Diebold-Mariano test of the per-origin squared errors (Harvey, Leybourne and Newbold's
small-sample form, t with origins - 1 degrees of freedom) at `SWITCH_LEVEL`, split among the
candidates (Bonferroni: the best of many looks better on the backtest than it is). Keeping the
lowest backtest RMSE outright chased noise on short backtests: on 15 public series not used to
develop it, its test RMSE was 1.050 of the best statsforecast model's (geometric mean) and 0.994
with the test. The pool replaced the mean of all members but those over `OUTLIER_RATIO` times
the median member's after 131 series (docs/performance.md "Pooling by backtest"). Nothing here
knows which member is which: the figures decide.
"""

import dataclasses
import math

import numpy as np
from scipy import stats

from seqlab.models.forecasting.metrics import root_mean_square, rounding

# Backtest region: at least this share of the rows before the test split (and at least the
# test split's length), so that the choice rests on more than one short validation block.
BACKTEST_SHARE = 1 / 3

# The level at which a candidate must beat the mean of the pool on the backtest to replace
# it, split among the candidates tried.
SWITCH_LEVEL = 0.05

# The default's members: those whose backtest RMSE is at most this many times the best
# member's. The rest stay candidates alone. Chosen among 1.2, 1.5 and 2 on 81 public series and
# confirmed on 50 more drawn afterwards (docs/performance.md "Pooling by backtest").
POOL_RATIO = 1.5

# Before the pool (runs saved then say so): the default was the mean of all members but those
# whose backtest RMSE was over this many times the median member's.
OUTLIER_RATIO = 3.0


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


@dataclasses.dataclass(frozen=True)
class SwitchTest:
    """The test of the lowest-backtest candidate against the default (the mean of the pool).

    Attributes:
        best: the candidate with the lowest backtest RMSE.
        statistic: the Diebold-Mariano statistic of its per-origin squared errors less the
            mean's (negative: lower than the mean's).
        critical: it replaces the mean when `statistic < -critical`.
        candidates: the candidates the level was split among.
        level: the test's level before the split (runs from before it was stored: 5 %).
    """

    best: str
    statistic: float
    critical: float
    candidates: int
    level: float = 0.05

    @property
    def switches(self):
        return self.statistic < -self.critical

    def to_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Selection:
    """The kept candidate and what every candidate scored on the backtest.

    Attributes:
        kept: the members whose mean forecasts (one member: that member alone).
        member_rmse: `{member: backtest RMSE}`.
        candidate_rmse: `{candidate name: backtest RMSE}` (members alone and the means of the
            best k), in the order tried.
        origins: backtest origins scored.
        default: the mean of the pool, kept unless `switch` says otherwise (None in runs from
            before the test, which kept the lowest backtest RMSE).
        switch: the `SwitchTest`, or None when the default is itself the lowest or no test
            could be made.
        left_out: members that may be combined but were left out of the default for a
            backtest RMSE above `ratio` times the `reference` member's.
        ratio: the ratio when the selection was made (`POOL_RATIO`).
        reference: "best" (the pool), or "median" in runs saved before it (the mean of all
            members but those over `OUTLIER_RATIO` times the median member's).
    """

    kept: tuple
    member_rmse: dict
    candidate_rmse: dict
    origins: int
    default: tuple = None
    switch: SwitchTest = None
    left_out: tuple = ()
    ratio: float = POOL_RATIO
    reference: str = "best"

    @property
    def name(self):
        return candidate_name(self.kept)

    @property
    def pooled(self):
        """Whether the default is a pool (None for runs saved before it, and no default)."""
        return self.reference == "best" and self.default is not None

    @property
    def _default_text(self):
        if self.reference == "median":
            return "the mean of all members"
        return "the mean of the pool" if len(self.default) > 1 else "the pool"

    def reason(self):
        """Why the kept candidate was kept, in one sentence."""
        reason = self._reason()
        if self.left_out:
            failed = ", ".join(f"{name} ({self.member_rmse[name]:.4g})" for name in self.left_out)
            if self.reference == "median":
                reason += (f"; left out of the mean of all members for a backtest RMSE over "
                           f"{self.ratio:g} times the median member's: {failed}")
            else:
                pool = " + ".join(self.default)
                reason += (f"; the pool ({pool}): the members within {self.ratio:g} "
                           f"times the lowest backtest RMSE of those that may be averaged; "
                           f"left out: {failed}")
        return reason

    def _reason(self):
        if not self.candidate_rmse:
            return ("too few rows before the test split for a backtest: the mean of the "
                    "members that need none")
        ranked = sorted(self.candidate_rmse.items(), key=lambda item: item[1])
        best, runner_up = ranked[0], (ranked[1] if len(ranked) > 1 else None)
        over = f"over {self.origins} origin{'s' * (self.origins != 1)}"
        if self.default is None or self.switch is None:
            lead = (f"{self._default_text}, " if self.default is not None
                    and len(self.default) > 1 and best[0] == candidate_name(self.default)
                    else "")
            text = f"{lead}lowest backtest RMSE ({best[1]:.4g} {over}) of {len(ranked)} candidates"
            if runner_up is not None:
                text += f"; next: {runner_up[0]} {runner_up[1]:.4g}"
            if self.pooled and self.kept != self.default:
                text += f" (one origin: too few to test it against {self._default_text})"
            return text
        default = candidate_name(self.default)
        test = (f"t = {self.switch.statistic:.2f}, against -{self.switch.critical:.2f} at "
                f"{self.switch.level:.0%} over {self.switch.candidates} candidates")
        if self.switch.switches:
            named = "" if self.reference == "median" else f"{default} "  # as runs saved it
            return (f"lowest backtest RMSE ({best[1]:.4g} {over}) of {len(ranked)} candidates, "
                    f"clearly below {self._default_text} ({named}"
                    f"{self.candidate_rmse[default]:.4g}; {test})")
        return (f"{self._default_text} (backtest RMSE {self.candidate_rmse[default]:.4g} "
                f"{over}): the lowest of {len(ranked)} candidates, {best[0]} ({best[1]:.4g}), "
                f"was not clearly below it ({test})")

    def to_dict(self):
        values = {"kept": list(self.kept), "name": self.name, "origins": self.origins,
                  "member_backtest_rmse": self.member_rmse,
                  "candidate_backtest_rmse": self.candidate_rmse, "why": self.reason()}
        if self.default is not None:
            values["default"] = list(self.default)
            values["switch_test"] = None if self.switch is None else self.switch.to_dict()
        if self.left_out:
            values["left_out_of_default"] = {"members": list(self.left_out),
                                             "ratio": self.ratio}
        if self.pooled:
            values["pool_ratio"] = self.ratio
        return values

    @classmethod
    def from_dict(cls, values):
        default = values.get("default")
        switch = values.get("switch_test")
        if switch is not None and switch["statistic"] is None:
            # Strict JSON writes an infinite statistic as null; only -inf can occur (the best
            # candidate's errors lower than the mean's by the same amount at every origin).
            switch = {**switch, "statistic": -math.inf}
        # Runs saved before the pool have no `pool_ratio`: their default was the mean of all
        # members but those over `OUTLIER_RATIO` times the median member's.
        left_out = values.get("left_out_of_default") or {"members": ()}
        if "pool_ratio" in values or default is None:
            reference, ratio = "best", values.get("pool_ratio", POOL_RATIO)
        else:
            reference, ratio = "median", left_out.get("ratio", OUTLIER_RATIO)
        return cls(tuple(values["kept"]), dict(values["member_backtest_rmse"]),
                   dict(values["candidate_backtest_rmse"]), int(values["origins"]),
                   None if default is None else tuple(default),
                   None if switch is None else SwitchTest(**switch),
                   tuple(left_out["members"]), float(ratio), reference)


def diebold_mariano(loss, baseline_loss, horizon):
    """The Diebold-Mariano statistic of `mean(loss - baseline_loss)`, per-origin losses of
    forecasts `horizon` steps long, in Harvey, Leybourne and Newbold's small-sample form (1997):
    the variance of the mean from the autocovariances up to lag horizon - 1 (overlapping
    forecasts share errors), scaled by sqrt((n + 1 - 2h + h (h - 1) / n) / n). Compare with
    the t distribution with n - 1 degrees of freedom. Negative: `loss` is lower.
    """
    difference = np.asarray(loss, dtype="float64") - np.asarray(baseline_loss, dtype="float64")
    n, mean = len(difference), float(np.mean(difference))
    centred = difference - mean
    autocovariance = [float(centred[lag:] @ centred[:n - lag]) / n
                      for lag in range(min(horizon, n))]
    variance = autocovariance[0] + 2 * sum(autocovariance[1:])
    if variance <= 0:  # the truncated sum can go negative; lag 0 alone cannot
        variance = autocovariance[0]
    # The same difference at every origin leaves only rounding in the variance (relative to
    # the differences themselves): no spread, so the sign alone decides.
    if variance <= rounding(difference) ** 2:
        return -math.inf if mean < 0 else (math.inf if mean > 0 else 0.0)
    correction = math.sqrt(max(n + 1 - 2 * horizon + horizon * (horizon - 1) / n, 1) / n)
    return correction * mean / math.sqrt(variance / n)


def _origin_losses(forecast, actual):
    """The squared error of each origin, averaged over its steps and targets."""
    errors = (np.asarray(forecast) - np.asarray(actual)) ** 2
    return errors.reshape(len(errors), -1).mean(axis=1)


def select(forecasts, actual, alone_only=()):
    """Chooses among the members and the means of the best k: the mean of the pool unless the
    lowest-backtest candidate is clearly better (see the module's docstring).

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
    best = min(candidates, key=lambda members: candidate_rmse[candidate_name(members)])
    if not combinable:
        return Selection(best, member_rmse, candidate_rmse, len(actual))
    # The pool: within POOL_RATIO of the best member's error, or of float64 rounding of the
    # values where that is larger (a constant series: members off by rounding are exact too).
    # The best k members for some k: one of the candidates.
    bound = POOL_RATIO * max(member_rmse[combinable[0]], rounding(actual))
    default = tuple(name for name in combinable if member_rmse[name] <= bound)
    left_out = tuple(name for name in combinable if name not in default)
    kept = dict(member_rmse=member_rmse, candidate_rmse=candidate_rmse, origins=len(actual),
                default=default, left_out=left_out)
    if len(actual) < 2:  # too few origins to test: the lowest
        return Selection(best, **kept)
    if best == default:
        return Selection(default, **kept)
    horizon = np.asarray(actual).shape[1] if np.ndim(actual) > 1 else 1
    statistic = diebold_mariano(_origin_losses(combine(usable, best), actual),
                                _origin_losses(combine(usable, default), actual), horizon)
    others = len(candidates) - 1
    critical = float(stats.t.ppf(1 - SWITCH_LEVEL / others, len(actual) - 1))
    switch = SwitchTest(candidate_name(best), float(statistic), critical, others, SWITCH_LEVEL)
    return Selection(best if switch.switches else default, switch=switch, **kept)
