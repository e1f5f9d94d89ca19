"""The global neural forecaster on M4 hourly and weekly: which kind, lookback and number of
training steps, scored as M4 scores (sMAPE, MASE), with the seconds each run took.

Each run trains one `GlobalForecaster` on windows of every training series
(`panel_training_dataset`), forecasts the test part (48 hourly, 13 weekly values) from the end
of each training series (`last_windows`) and scores it with
`seqlab.models.forecasting.metrics.score_panel` (MASE's scale: the in-sample seasonal naive,
period 24 hourly and 1 weekly). Seasonal naive is printed beside them, and the row `default`
is what `default_settings` picks from the data.

    python benchmarks/global_forecaster.py [--data DIR_OR_NAME] [--sets hourly weekly]
        [--runs KIND:LOOKBACK_MULTIPLE:STEPS[:NORMALIZATION[:UNITS]] ...] [--seed N]
        [--validate] [--out results.jsonl]

`--runs` lists runs as `nbeats:2:3000` (kind, lookback in multiples of the horizon, steps,
then optionally the normalisation, default "shift", and the units) or `default`; the default
list takes about 10 minutes per set on 2 cores. Recurrent runs use one layer of 64 units unless
given. `--validate` holds out the last horizon of each training series, checks the
validation sMAPE every `EVALUATE_EVERY` steps and keeps the best weights (early stopping);
the final model is that one (trained without the last horizon of each series).
`--data` is a folder with `<Frequency>-train.csv` and `<Frequency>-test.csv`, or a registered
name (`m4-hourly`, `m4-weekly`: one frequency each, which is then the set unless `--sets` is
given); without it each set is read by its registered name, downloaded on first use. Every
`--runs` spec is checked before the first run trains.
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

# seqlab first: its import hook keeps TensorFlow's load notices (which ignore
# TF_CPP_MIN_LOG_LEVEL) and C++ log off the terminal, as the command line does.
import seqlab  # noqa: E402,F401

import keras  # noqa: E402
import numpy as np  # noqa: E402
from m4 import add_data_arguments, read_set, set_sources  # noqa: E402

from seqlab.data.panel import M4_SETS  # noqa: E402
from seqlab.models.forecasting import metrics  # noqa: E402
from seqlab.models.global_forecaster import (  # noqa: E402
    KINDS,
    NORMALIZATIONS,
    GlobalForecaster,
    default_settings,
    last_windows,
    panel_training_dataset,
)

DEFAULT_RUNS = ("default", "nbeats:2:3000", "nbeats:4:3000", "nbeats:7:3000",
                "nbeats:4:3000:level", "gru:2:600")
EVALUATE_EVERY = 250
# The M4 paper's (Makridakis et al. 2020) sMAPE of the winning method (Smyl's ES-RNN).
PUBLISHED_WINNER_SMAPE = {"hourly": 9.328, "weekly": 7.817}


def parse_spec(spec):
    """`"default"` or `"kind:multiple:steps[:normalization[:units]]"` -> the settings the spec
    sets (`{}` for default; the lookback as `multiple`, in horizons). `main` parses every spec
    before the first run trains, so that a typo in a later one does not end the script after
    the runs before it took minutes.

    Raises:
        ValueError: a spec of another form, said in words.
    """
    if spec == "default":
        return {}
    parts = spec.split(":")
    if not 3 <= len(parts) <= 5:
        raise ValueError("expected default or KIND:LOOKBACK_MULTIPLE:STEPS[:NORMALIZATION"
                         "[:UNITS]], such as nbeats:2:3000")
    kind, normalization = parts[0], parts[3] if len(parts) > 3 else "shift"
    if kind not in KINDS:
        raise ValueError(f"the kind {kind!r} is not one of {', '.join(KINDS)}")
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"the normalisation {normalization!r} is not one of "
                         f"{', '.join(NORMALIZATIONS)}")
    try:
        multiple, steps = float(parts[1]), int(parts[2])
        units = int(parts[4]) if len(parts) > 4 else None
    except ValueError:
        raise ValueError("the lookback multiple must be a number, the steps and the units "
                         "whole numbers") from None
    if not (math.isfinite(multiple) and multiple > 0) or steps < 1 or (units or 1) < 1:
        raise ValueError("the lookback multiple, the steps and the units must be above 0")
    run = dict(kind=kind, multiple=multiple, steps=steps, normalization=normalization)
    if units is not None:
        run["units"] = units
    if kind != "nbeats":
        run.update(layers=1, units=units or 64)
    return run


def parse_run(spec, horizon, season, lengths):
    """`"default"` or `"kind:multiple:steps[:normalization[:units]]"` -> settings dict."""
    settings = {**default_settings(horizon, season, lengths), "normalization": "shift"}
    run = parse_spec(spec)
    if not run:
        return {**settings, "name": "default"}
    multiple = run.pop("multiple")
    settings.update(run, lookback=int(round(multiple * horizon)))
    return {**settings, "name": spec}


def train_and_forecast(settings, history, horizon, seed, validate):
    """Trains one model on `history` (a list of arrays) and forecasts from each end."""
    keras.utils.set_random_seed(seed)
    lookback = settings["lookback"]
    model = GlobalForecaster(lookback, horizon, kind=settings["kind"], units=settings["units"],
                             layers=settings["layers"], blocks=settings["blocks"], seed=seed,
                             normalization=settings["normalization"])
    model.compile(optimizer=keras.optimizers.Adam(settings["learning_rate"], clipnorm=1.0),
                  loss="mae")
    steps = settings["steps"]
    if not validate:
        dataset = panel_training_dataset(history, lookback, horizon, settings["batch_size"],
                                         seed)
        # Every step the spec names (`steps // EVALUATE_EVERY` epochs of EVALUATE_EVERY
        # dropped the remainder: 499 steps trained 250); one epoch of them reads the same
        # batches as several would, the dataset's iterator running on between epochs.
        model.fit(dataset, steps_per_epoch=steps, epochs=1, shuffle=False, verbose=0)
        return model.predict(last_windows(history, lookback), verbose=0), None
    fitting = [values[:-horizon] for values in history]
    actual = [values[-horizon:] for values in history]
    windows = last_windows(fitting, lookback)
    dataset = panel_training_dataset(fitting, lookback, horizon, settings["batch_size"], seed)
    best = {"score": np.inf, "weights": None, "step": 0}

    class KeepBest(keras.callbacks.Callback):
        """Scores the validation windows every EVALUATE_EVERY steps and after the last."""

        def on_train_batch_end(self, batch, logs=None):
            step = batch + 1
            if step % EVALUATE_EVERY and step != steps:
                return
            score = metrics.score_panel(actual, model.predict(windows, verbose=0), fitting,
                                        1).mean_smape
            if score < best["score"]:
                best.update(score=score, weights=model.get_weights(), step=step)

    model.fit(dataset, steps_per_epoch=steps, epochs=1, shuffle=False, verbose=0,
              callbacks=[KeepBest()])
    model.set_weights(best["weights"])
    return model.predict(last_windows(history, lookback), verbose=0), best["step"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_arguments(parser)
    parser.add_argument("--runs", nargs="+", default=list(DEFAULT_RUNS),
                        help="default or KIND:LOOKBACK_MULTIPLE:STEPS[:NORMALIZATION[:UNITS]] "
                        "(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--validate", action="store_true")
    parser.add_argument("--out", help="append one JSON line per run to this file")
    args = parser.parse_args(argv)
    if not 0 <= args.seed < 2 ** 32:  # NumPy's range of seeds: -1 was a traceback
        parser.error(f"--seed must lie in [0, 2**32), not {args.seed}")
    if args.out is not None:  # checked before the first run trains, not after
        out = Path(args.out)
        if out.is_dir():
            parser.error(f"--out {out}: a folder; expected a file to append the runs' JSON "
                         "lines to (made if missing)")
        if not out.parent.is_dir():
            parser.error(f"--out {out}: no folder {out.parent} to write it in")
    sources = set_sources(parser, args.data, args.sets)
    for spec in args.runs:
        try:
            run = parse_spec(spec)
        except ValueError as error:
            parser.error(f"--runs {spec}: {error}")
        for frequency in sources:
            if run and round(run["multiple"] * M4_SETS[frequency]["horizon"]) < 1:
                parser.error(f"--runs {spec}: the lookback is 0 values at the {frequency} "
                             f"horizon of {M4_SETS[frequency]['horizon']}")
    print("| set | run | kind | lookback | steps | units | sMAPE | MASE | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for frequency, source in sources.items():
        panel = read_set(source, frequency)
        horizon, season = M4_SETS[frequency]["horizon"], M4_SETS[frequency]["season"]
        lengths = [len(values) for values in panel.values]
        naive = [metrics.seasonal_naive_forecast(values, horizon, season)
                 for values in panel.values]
        score = metrics.score_panel(panel.holdout, naive, panel.values, season)
        print(f"| {frequency} | seasonal naive | | | | | {score.mean_smape:.3f} | "
              f"{score.mean_mase:.3f} | |", flush=True)
        for spec in args.runs:
            settings = parse_run(spec, horizon, season, lengths)
            start = time.perf_counter()
            forecasts, best_step = train_and_forecast(settings, list(panel.values), horizon,
                                                      args.seed, args.validate)
            seconds = time.perf_counter() - start
            score = metrics.score_panel(panel.holdout, forecasts, panel.values, season)
            steps = settings["steps"] if best_step is None else f"{best_step}/{settings['steps']}"
            print(f"| {frequency} | {spec}{' (validated)' if args.validate else ''} | "
                  f"{settings['kind']}/{settings['normalization']} | "
                  f"{settings['lookback']} | {steps} | {settings['units']} | "
                  f"{score.mean_smape:.3f} | {score.mean_mase:.3f} | {seconds:.0f} |",
                  flush=True)
            if args.out:
                with open(args.out, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps({
                        "set": frequency, "run": spec, "validate": args.validate,
                        "seed": args.seed, "settings": settings, "best_step": best_step,
                        "smape": score.mean_smape, "mase": score.mean_mase,
                        "seconds": seconds}) + "\n")
        if frequency in PUBLISHED_WINNER_SMAPE:
            print(f"| {frequency} | M4 winner (published) | | | | | "
                  f"{PUBLISHED_WINNER_SMAPE[frequency]} | | |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
