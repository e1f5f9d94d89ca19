"""The settings of `seqlab timeseries` and its command-line card (no TensorFlow: see `configs`)."""

import dataclasses
import typing
from pathlib import Path

from seqlab.pipelines.errors import UsageError
from seqlab.pipelines.settings import (
    TaskCard,
    TrainConfig,
    check_at_least,
    check_distinct,
    check_rate,
    check_split_fractions,
    data_help,
    option,
)

TASK_NAME = "timeseries"
# The choices of data/timeseries.py and models/forecaster.py (those import TensorFlow); the
# tests check that they agree.
FILL_METHODS = ("ffill", "interpolate")
FILL_ENDS = ("drop", "nearest", "refuse")
SCALER_METHODS = ("minmax", "standard")
MODEL_KINDS = ("auto", "lstm", "gru", "rnn", "transformer", "linear")
# The network kinds of many series (one global network); "auto" adds the classical members.
PANEL_MODEL_KINDS = ("auto", "nbeats", "gru", "lstm")
NORMALIZATIONS = ("window", "shift", "none")
# The network settings of one series where the user sets none (`TimeseriesConfig`).
ONE_SERIES_DEFAULTS = {"epochs": 200, "batch_size": 32, "units": 32, "layers": 1,
                       "learning_rate": 1e-3}
# The data-set names of the M4 sets (data/panel.py `M4_SETS`; a test checks they agree).
M4_NAMES = tuple(f"m4-{frequency}" for frequency in
                 ("hourly", "daily", "weekly", "monthly", "quarterly", "yearly"))


def is_many_series(config):
    """Whether the settings `config` are of many series: an id column, a holdout, an M4 set
    by name or a folder of data."""
    data = getattr(config, "data", None)
    return (getattr(config, "id_column", None) is not None
            or getattr(config, "holdout", None) is not None
            or (data is not None and (str(data) in M4_NAMES or Path(str(data)).is_dir())))


def long_table_settings(given):
    """`(settings, notes)`: the id column (and its time column) of a long table of many series
    given as `--data` without `--id-column` (`data.long_table.find_id_column`: its time stamps
    repeat in the table, never within one series), which would otherwise be read as one series,
    every series end to end; nothing for one series, a folder, a data-set name or where
    `--id-column` or two time columns are given (`TaskCard.data_settings`). A `--time-column`
    whose stamps are distinct in every row makes the file one series."""
    data, time_column = given.get("data"), given.get("time_column") or []
    if isinstance(time_column, str):  # a config file's "ds", or "year,month" (two columns)
        time_column = time_column.split(",")
    if (given.get("id_column") is not None or data is None or len(time_column) > 1
            or not Path(str(data)).is_file()):
        return {}, []
    from seqlab.data.long_table import find_id_column_in_file

    found = find_id_column_in_file(data, time_column[0].strip() if time_column else None)
    if found is None:
        return {}, []
    if found.ambiguous:
        raise UsageError(f"--data {data}: {found.describe()}; {found.question()} "
                         f"({ONE_SERIES})")
    return ({"id_column": found.name, "time_column": [found.time_column]},
            [f"--id-column {found.name}: {found.describe()}, so the file is a long table of "
             f"many series (--id-column names another; {ONE_SERIES})"])


# How a file that looks like a long table is read as one series, for the messages.
ONE_SERIES = "--time-column naming a column whose stamps differ in every row reads it as one series"


@dataclasses.dataclass
class TimeseriesConfig(TrainConfig):
    """Every setting of a forecasting run; the defaults suit the embedded yearly sunspots."""

    # Settings only some kinds read (`settings.refuse_unread_settings`).
    READ_ONLY_WITH: typing.ClassVar[dict] = {
        "num_heads": ("model", ("transformer",)),
        "ff_dim": ("model", ("transformer",)),
        # The linear model is one dense layer over the window; auto's network is a GRU.
        **{name: ("model", ("auto", "lstm", "gru", "rnn", "transformer"))
           for name in ("units", "layers", "dropout")},
        "auto_folds": ("model", ("auto",)),
    }

    data: str | None = option(
        None, data_help(TASK_NAME, "CSV file to forecast",
                        "yearly sunspots 1700-2008 from statsmodels")
    )
    id_column: str | None = option(
        None, "many series in one long table (one row per series and time): the column naming "
        "each row's series (default: found where the time stamps repeat in the table but not "
        "within the rows of one value of a column); a folder of CSV files (one series each) or "
        "an m4-* data set is many series without it. Many series are forecast with the "
        "competition protocol (--holdout) by one network trained on all of them and "
        "per-series classical models",
        metavar="COL",
    )
    holdout: int | None = option(
        None, "many series: the last H values of every series are its test part, forecast H "
        "steps from the end of the rest (as in M3/M4); default: the M4 set's horizon, else "
        "--horizon when above 1, else the season, else a tenth of the median series length"
    )
    epochs: int | None = option(
        None, "maximum number of epochs (early stopping usually ends sooner); default: one "
        "series 200, many series 60 of 100 batches"
    )
    batch_size: int | None = option(
        None, "windows per batch (default: one series 32, many series 256)"
    )
    time_column: list[str] | None = option(
        None, "time column (dates or numbers), or the columns whose whole numbers make the time "
        "stamps (year month day hour, or year,month,day,hour); default: the first column if it "
        "holds dates, else columns named year, month[, day, hour, minute, second]",
        metavar="COL",
    )
    target: list[str] | None = option(
        None, "column(s) to forecast (default: the only numeric column)"
    )
    features: list[str] | None = option(
        None, "input columns (default: every numeric column besides time)"
    )
    categorical: list[str] = option([], "columns to one-hot encode as inputs")
    fill: str | None = option(
        None, "repair missing or non-numeric values (default: refuse them)", FILL_METHODS
    )
    fill_ends: str = option(
        "drop", "rows --fill cannot repair (before a column's first value; with interpolate also "
        "after its last): drop them (the summary says which), copy the nearest value, or refuse",
        FILL_ENDS,
    )
    lookback: int | None = option(
        None, "past rows the model sees per forecast (default: two seasons, or 24 rows without "
        "a season; at most half the training rows and 256)"
    )
    horizon: int = option(1, "future rows to forecast")
    stride: int = option(1, "rows between the starts of training windows")
    val_fraction: float = option(0.15, "share of rows for validation (after training rows)")
    test_fraction: float = option(0.15, "share of rows for the test split (the last rows)")
    split_targets: bool = option(
        True, "splits hold the forecast targets, windows may reach back into earlier rows "
        "(--no-split-targets: windows inside each split, as seqlab 0.1.0)"
    )
    backtest: int = option(
        0, "also retrain and score at K-1 earlier origins, each one test split before the next "
        "(expanding window); 0 or 1: the test split only"
    )
    scaler: str = option("standard", "scaling fitted on training rows", SCALER_METHODS)
    model: str = option(
        "auto", "model kind (many series: auto, nbeats, gru or lstm, one network for all "
        "series; auto adds statsforecast's models per series and keeps the member or mean of "
        "the best k with the lowest error on each series' last --holdout values before the "
        "test part); one series: auto: statsforecast's automatic ETS, ARIMA and Theta (ETS and "
        "ARIMA also on the logs of a positive series), seasonal naive, a GRU and a linear "
        "autoregression fitted by least squares, all scored by a rolling-origin backtest "
        "before the test split; the mean of the pool (the members within 1.5 times the best "
        "one's backtest RMSE, never seasonal naive) is kept unless a member or mean of the "
        "best k beats it clearly there (a Diebold-Mariano test; every figure reported); "
        "linear: one dense layer over the normalised window, trained like the others",
        (*MODEL_KINDS, "nbeats"),
    )
    auto_folds: int = option(
        3, "--model auto: backtest folds over the last third of the rows before the test "
        "split (at least the test split's length); the classical and linear members are "
        "refitted at each fold"
    )
    normalization: str = option(
        "window", "window: each window shifted by its last value and scaled by its spread "
        "(restored on the forecast); shift: by its last value only; none: as it is "
        "(auto's linear member always uses shift)", NORMALIZATIONS
    )
    units: int | None = option(
        None, "units per recurrent layer (transformer: model width; default: one series 32, "
        "many series 256)"
    )
    layers: int | None = option(
        None, "stacked recurrent or Transformer layers (default: one series 1, many series 4)"
    )
    dropout: float = option(0.0, "dropout rate of the layers' inputs")
    clipnorm: float | None = option(1.0, "gradient norm clipping of Adam")
    learning_rate: float | None = option(None, "Adam learning rate (default: 0.001)")
    patience: int = option(20, "early-stopping patience in epochs (best weights restored)")
    season: int | None = option(
        None, "season of the seasonal-naive baseline (default: estimated from training data)"
    )
    num_heads: int = option(4, "transformer: attention heads")
    ff_dim: int = option(64, "transformer: feed-forward width")

    def read_only_with(self):
        """`READ_ONLY_WITH` for one series; many series refuse these settings themselves
        (pipelines/timeseries_panel.py `ONE_SERIES_ONLY`: they have no transformer to offer)."""
        return {} if is_many_series(self) else self.READ_ONLY_WITH

    def __post_init__(self):
        # Unset, these take one series' defaults here, and many series' from the data in
        # their `prepare` (models/global_forecaster.py `default_settings`), which must know
        # which ones the user set: a value equal to one series' default is a choice too.
        if not is_many_series(self):
            for name, value in ONE_SERIES_DEFAULTS.items():
                if getattr(self, name) is None:
                    setattr(self, name, value)
        super().__post_init__()
        check_at_least(self, 1, "lookback", "horizon", "stride", "units", "layers", "patience",
                       "num_heads", "ff_dim", "season", "auto_folds", "holdout")
        check_at_least(self, 0, "backtest")
        check_distinct(self, "target", "features", "categorical", "time_column")
        forecast_stamps = [name for name in _names(self.target)
                           if name in _names(self.time_column)]
        if forecast_stamps:
            # Numeric stamps (Unix seconds) were forecast, and predict then failed to write
            # them beside their own column.
            raise ValueError(f"the time column {forecast_stamps[0]!r} cannot be forecast too: "
                             "a target is a column of values. Received: "
                             f"time_column={self.time_column}, target={self.target}")
        both = [name for name in self.categorical if name in (self.target or [])]
        if both:
            raise ValueError(f"categorical columns are one-hot inputs, never forecast: "
                             f"{both[0]!r} is a target too. Received: target={self.target}, "
                             f"categorical={self.categorical}")
        check_rate(self, "dropout")
        check_split_fractions(self)
        if self.model == "transformer" and self.units is not None and self.units % self.num_heads:
            raise ValueError(
                "units (the transformer's width) must be a multiple of num_heads. Received: "
                f"units={self.units}, num_heads={self.num_heads}"
            )



def _names(value):
    """A list setting's names: a config file may give one name as a string; None is none."""
    return [value] if isinstance(value, str) else list(value or [])


CARD = TaskCard(
    name=TASK_NAME,
    description=(
        "Forecast the next --horizon rows of one or more numeric columns from the last "
        "--lookback rows, with a GRU, LSTM, SimpleRNN, Transformer or linear model built from "
        "seqlab's layers (by default, of one series, the mean of the members closest to the "
        "best on a rolling-origin backtest, unless one member or mean beats it clearly: "
        "statsforecast's automatic ETS, ARIMA and Theta, ETS and ARIMA on the logs, seasonal "
        "naive, a GRU and a least-squares linear autoregression). Every row of the test split "
        "(the last rows) is forecast and scored in original units beside the naive (last "
        "value), seasonal-naive and statsforecast's automatic ETS, ARIMA and Theta forecasts. "
        "Without --data it uses the yearly sunspot numbers 1700-2008 shipped with statsmodels."
    ),
    examples={
        "train": [
            "seqlab timeseries train",
            "seqlab timeseries train --data temps.csv --time-column Date --target Temp "
            "--lookback 30 --out runs/temps",
            "seqlab timeseries train --data sales.csv --target sales --features sales price "
            "--categorical weekday --fill interpolate --horizon 7 --model gru",
            "seqlab timeseries train --config settings.toml --epochs 50",
        ],
        "evaluate": [
            "seqlab timeseries evaluate --run runs/temps",
            "seqlab timeseries evaluate --run runs/temps --data temps-to-1991.csv --output "
            "eval.json",
        ],
        "predict": [
            "seqlab timeseries predict --run runs/temps",
            "seqlab timeseries predict --run runs/temps --data temps-with-new-days.csv "
            "--output forecast.csv",
        ],
        "export": [
            "seqlab timeseries export --run runs/temps --out serving/temps/1",
        ],
    },
    config_class=TimeseriesConfig,
    data_settings=long_table_settings,
)
