"""Exponential smoothing (Holt-Winters, ETS): the classical forecast learned models must beat.

The form (trend none / additive / damped additive; season none / additive / multiplicative) and
the parameters are fitted by statsmodels on the TRAINING rows only, the form chosen by AICc.
The fitted smoothing then runs on over the rest of the series with those parameters fixed, so
that the forecast from every later origin uses the state after the origin's row and nothing
after it: the parameters are not refitted per origin, the state is updated per origin.

`smoothing_states` and `forecast_from_states` are the Holt-Winters recursion and forecast
equations (Hyndman & Athanasopoulos, "Forecasting: principles and practice", section 8.3; the
error-correction form statsmodels' `ExponentialSmoothing` uses); the tests compare them with
statsmodels on the same parameters.
"""

import dataclasses
import warnings

import numpy as np

TREND_FORMS = (None, "add", "damped")
SEASON_FORMS = (None, "add", "mul")


@dataclasses.dataclass
class SmoothingSpec:
    """A fitted exponential-smoothing model: its form and parameters.

    Attributes:
        trend: None, "add" or "damped" (additive, damped by `phi`).
        seasonal: None, "add" or "mul".
        season: season length in rows (1 without a season).
        alpha, beta, gamma, phi: smoothing of the level, trend and season, and the damping.
        initial_level, initial_trend: the state before the first row.
        initial_seasons: the `season` seasonal states before the first row, oldest first.
        aicc: the fit's corrected Akaike criterion on the training rows.
    """

    trend: str | None
    seasonal: str | None
    season: int
    alpha: float
    beta: float
    gamma: float
    phi: float
    initial_level: float
    initial_trend: float
    initial_seasons: list
    aicc: float

    @property
    def form(self):
        """The form in words, e.g. "damped trend, multiplicative season 12"."""
        trend = {None: "no trend", "add": "additive trend", "damped": "damped trend"}[self.trend]
        season = {None: "no season", "add": f"additive season {self.season}",
                  "mul": f"multiplicative season {self.season}"}[self.seasonal]
        return f"{trend}, {season}"

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        return cls(**values)


def candidate_forms(values, season):
    """The `(trend, seasonal)` forms worth fitting to `values`: a season needs two full cycles,
    a multiplicative one positive values."""
    seasons = [None]
    if season >= 2 and len(values) >= 2 * season + 2:
        seasons.append("add")
        if np.all(np.asarray(values) > 0):
            seasons.append("mul")
    return [(trend, seasonal) for trend in TREND_FORMS for seasonal in seasons]


def fit_smoothing(values, season):
    """Fits every candidate form to `values` with statsmodels and keeps the lowest AICc.

    Args:
        values: the training rows of one target, 1-D.
        season: the season length (1 or less: no seasonal forms).

    Returns:
        `(spec or None, notes)`: the chosen `SmoothingSpec` (None when no form could be
        fitted), and one line per form that failed or did not converge.
    """
    from statsmodels.tools.sm_exceptions import ConvergenceWarning
    from statsmodels.tsa.holtwinters import ExponentialSmoothing

    values = np.asarray(values, dtype="float64")
    best, notes = None, []
    for trend, seasonal in candidate_forms(values, season):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                fitted = ExponentialSmoothing(
                    values,
                    trend=None if trend is None else "add",
                    damped_trend=trend == "damped",
                    seasonal=seasonal,
                    seasonal_periods=season if seasonal else None,
                    initialization_method="estimated",
                ).fit()
            except (ConvergenceWarning, ValueError, np.linalg.LinAlgError) as error:
                notes.append(f"trend {trend}, season {seasonal}: {str(error).splitlines()[0]}")
                continue
        params, aicc = fitted.params, float(fitted.aicc)
        if not np.isfinite(aicc):
            notes.append(f"trend {trend}, season {seasonal}: AICc is not finite")
            continue
        if best is not None and aicc >= best.aicc:
            continue
        best = SmoothingSpec(
            trend=trend,
            seasonal=seasonal,
            season=int(season) if seasonal else 1,
            alpha=float(params["smoothing_level"]),
            beta=float(params["smoothing_trend"]) if trend else 0.0,
            gamma=float(params["smoothing_seasonal"]) if seasonal else 0.0,
            phi=float(params["damping_trend"]) if trend == "damped" else 1.0,
            initial_level=float(params["initial_level"]),
            initial_trend=float(params["initial_trend"]) if trend else 0.0,
            initial_seasons=[float(v) for v in params["initial_seasons"]] if seasonal else [],
            aicc=aicc,
        )
    return best, notes


def smoothing_states(values, spec):
    """The level, trend and seasonal states after each row of `values` under `spec`.

    Returns:
        `(level[n], trend[n], seasons[n + season])`: `level[t]` and `trend[t]` after row `t`;
        `seasons[t + season]` is the seasonal state written at row `t`, and `seasons[:season]`
        are the initial ones (rows -season .. -1).
    """
    values = np.asarray(values, dtype="float64")
    n, m = len(values), spec.season
    level, trend = np.empty(n), np.empty(n)
    seasons = np.empty(n + m)
    seasons[:m] = spec.initial_seasons if spec.seasonal else 0.0
    previous_level, previous_trend = spec.initial_level, spec.initial_trend
    multiplicative = spec.seasonal == "mul"
    for t, y in enumerate(values):
        trended = previous_level + spec.phi * previous_trend
        old_season = seasons[t] if spec.seasonal else (1.0 if multiplicative else 0.0)
        deseasonalised = y / old_season if multiplicative else y - old_season
        level[t] = spec.alpha * deseasonalised + (1 - spec.alpha) * trended
        trend[t] = (spec.beta * (level[t] - previous_level)
                    + (1 - spec.beta) * spec.phi * previous_trend) if spec.trend else 0.0
        if spec.seasonal:
            detrended = y / trended if multiplicative else y - trended
            seasons[t + m] = spec.gamma * detrended + (1 - spec.gamma) * old_season
        previous_level, previous_trend = level[t], trend[t]
    return level, trend, seasons


def forecast_from_states(states, spec, last_rows, horizon):
    """The forecasts of the `horizon` rows after each origin row in `last_rows`.

    Step `h` from origin `t`: `(level[t] + (phi + ... + phi^h) * trend[t])`, plus (or times) the
    latest seasonal state of the same phase, `seasons[t + h - season * ceil(h / season)]`.

    Returns:
        `[len(last_rows), horizon]` float64.
    """
    level, trend, seasons = states
    last_rows = np.asarray(last_rows)
    steps = np.arange(1, horizon + 1)
    damping = np.cumsum(spec.phi ** steps) if spec.trend else np.zeros(horizon)
    forecast = level[last_rows][:, None] + damping * trend[last_rows][:, None]
    if spec.seasonal:
        m = spec.season
        phase_rows = last_rows[:, None] + steps - m * np.ceil(steps / m).astype(int)
        seasonal = seasons[phase_rows + m]
        forecast = forecast * seasonal if spec.seasonal == "mul" else forecast + seasonal
    return forecast


def smoothing_forecast(targets, last_rows, horizon, specs):
    """The ETS forecast of every target from each origin, `[origins, horizon, n_targets]`.

    Args:
        targets: every observed row of the targets, `[rows, n_targets]`.
        last_rows: the last observed row of each origin.
        horizon: steps ahead.
        specs: one fitted `SmoothingSpec` per target (from `fit_smoothing`).
    """
    columns = [
        forecast_from_states(smoothing_states(targets[:, index], spec), spec, last_rows, horizon)
        for index, spec in enumerate(specs)
    ]
    return np.stack(columns, axis=-1)
