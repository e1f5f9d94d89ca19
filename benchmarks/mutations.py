"""Mutation run: does the test suite catch a wrong figure?

Applies one-line bugs ("mutations"), one at a time, to a temporary copy of the repository and
runs the test files that guard the mutated code. A mutation is *caught* when a test fails (or
its run outlasts `--timeout`: "caught (timeout)"). Each mutation names its file, the exact
original line (indentation included) and the replacement; a line that is no longer in the file
(the code moved) or that is there more than once is reported as such, never skipped silently.
A mutation whose tests pytest does not run (exit status 4, a usage error, or 5, no test
collected: a `-k` that selects nothing) is an error of the mutation list, "LIST ERROR", neither
caught nor survived. The unmutated tests are run first, once per set of test files, so that a
failure means the mutation and not a broken tree.

The copy (without .venv, .git and caches) is placed in a temporary folder under the name
`seqlab`, first on PYTHONPATH, so it is imported ahead of the installed seqlab (editable or
not: `pip install ".[test]"` gives the dependencies it needs); the script
checks that `import seqlab` resolves to the copy before it runs anything. The working tree is
never changed.

    python benchmarks/mutations.py                  # every mutation
    python benchmarks/mutations.py --only naive_uses_row_t_minus_1 --only scaler_divides_by_variance
    python benchmarks/mutations.py --list           # names, files and test files

Prints one line per mutation as it finishes, then a Markdown table (the one in docs/testing.md)
and one JSON line. Exit status 1 when a mutation was not caught, its line was not found, its
tests did not run, or the unmutated tests failed. Not part of the test suite (a full run takes
several minutes on 2 cores).
"""

import argparse
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
IGNORED = shutil.ignore_patterns(
    ".git", ".venv", ".venv-test", ".ci-venv", "__pycache__", ".pytest_cache", "*.egg-info", "build", "dist",
    "runs", "*.pyc",
)

RECURRENT_TESTS = ("tests/layers/test_simple_rnn.py", "tests/layers/test_gru.py",
                   "tests/layers/test_lstm.py")
TIMESERIES_TESTS = ("tests/models/test_baselines.py", "tests/pipelines/test_timeseries.py")
# Per task: the figure tests, the metrics tests, the pipeline tests.
CHARRNN_TESTS = tuple(f"tests/pipelines/test_{name}.py"
                      for name in ("figures_charrnn", "metrics_charrnn", "charrnn"))
SENTIMENT_TESTS = tuple(f"tests/pipelines/test_{name}.py"
                        for name in ("figures_sentiment", "metrics_sentiment", "sentiment"))
NER_TESTS = tuple(f"tests/pipelines/test_{name}.py"
                  for name in ("figures_ner", "metrics_ner", "ner"))
TRANSLATE_TESTS = tuple(f"tests/pipelines/test_{name}.py"
                        for name in ("figures_translate", "metrics_translate", "translate"))


@dataclasses.dataclass(frozen=True)
class Mutation:
    """One one-line bug: `original` (the whole line, indentation included) becomes
    `replacement` in `file`; `tests` are the test files run against it (`select`: an optional
    `pytest -k` expression, to show that one test alone catches it)."""

    name: str
    file: str
    original: str
    replacement: str
    tests: tuple
    what: str
    select: str | None = None


MUTATIONS = [
    # --- recurrent layers -----------------------------------------------------------------
    Mutation(
        "recurrent_dropout_ignored", "layers/rnn_base.py",
        "            if training and cell.recurrent_dropout > 0",
        "            if False",
        RECURRENT_TESTS,
        "the layers' loop never applies recurrent_dropout (issue 19)",
    ),
    Mutation(
        "lstm_step_gradient_forget_gate", "layers/lstm.py",
        "        tf.raw_ops.SigmoidGrad(y=f, dy=d_c * states[1]),",
        "        tf.raw_ops.SigmoidGrad(y=f, dy=d_c * f),",
        ("tests/layers/test_loop_choice.py",),
        "the written-out LSTM step gradient takes f for c_{t-1} in the forget gate's term",
        select="written_out",
    ),
    Mutation(
        "simple_rnn_step_gradient_drops_the_state", "layers/simple_rnn.py",
        "    d_h = d_states[0] if d_output is None else d_output + d_states[0]",
        "    d_h = d_states[0] if d_output is None else d_output",
        ("tests/layers/test_loop_choice.py",),
        "the written-out SimpleRNN step gradient forgets the gradient carried by the state",
        select="written_out",
    ),
    Mutation(
        "compiled_bptt_not_compiled", "layers/_loop.py",
        "    if compiled:",
        "    if False:",
        ("tests/layers/test_compiled_loop.py",),
        "the compiled_bptt loop runs uncompiled (hand_bptt under another name; issue 28)",
    ),
    Mutation(
        "fully_unrolled_runs_a_while_loop", "layers/rnn_base.py",
        '            variant = "unrolled"  # where it cannot run, as `_loop_choice.choose`',
        '            variant = "unrolled"\n'
        '        variant = "unrolled" if variant == "fully_unrolled" else variant',
        ("tests/layers/test_loop_choice.py",),
        "the fully_unrolled loop runs seqlab's while loop instead (issue 28)",
    ),
    Mutation(
        "grouped_runs_the_batch_in_one_loop", "layers/rnn_base.py",
        "        groups = _loop_choice.loop_groups(self)",
        "        groups = 1",
        ("tests/layers/test_loop_choice.py",),
        "the grouped loop runs the whole batch through one loop (issue 28)",
    ),
    Mutation(
        "grouped_dropout_mask_of_the_first_rows", "layers/rnn_base.py",
        "            input_masks = split(cell.get_dropout_mask(sequences[:, 0, :]))",
        "            input_masks = [cell.get_dropout_mask(sequences[:, 0, :])[:tf.shape(part)[0]]"
        " for part in split(sequences)]",
        ("tests/layers/test_loop_choice.py",),
        "each group of the grouped loop reads the dropout mask of the batch's first rows "
        "(issue 28)",
    ),
    Mutation(
        "bidirectional_direction_timed_alone", "layers/_loop_choice.py",
        '    copies = 2 if getattr(layer, "_beside_another", False) else 1',
        "    copies = 1",
        ("tests/layers/test_loop_choice.py",),
        "the loop measurement times a direction of a Bidirectional without the other "
        "direction's loop beside it (issue 28)",
    ),
    Mutation(
        "bptt_last_output_gradient_dropped", "layers/_loop.py",
        "            d_final_states = [d_final_states[0] + d_last_output, *d_final_states[1:]]",
        "            d_final_states = list(d_final_states)",
        ("tests/layers/test_loop_choice.py",),
        "the hand-scheduled BPTT (as it is, written out or compiled) drops the last output's "
        "gradient on unmasked sequences (issue 28)",
    ),
    Mutation(
        "bptt_masked_last_output_gradient_dropped", "layers/_loop.py",
        "             *((d_last_output,) if carries_output else ()), tuple(d_final_states)),",
        "             *((0 * d_last_output,) if carries_output else ()), tuple(d_final_states)),",
        ("tests/layers/test_loop_choice.py",),
        "the hand-scheduled BPTT drops the last output's gradient on masked sequences, where "
        "it is carried back to the last unmasked step (issue 28)",
    ),
    Mutation(
        "compiled_bptt_second_order_dropped", "layers/_loop.py",
        "                    again = function(*tf.nest.pack_sequence_as(args, flat))",
        "                    again = tf.nest.map_structure(tf.stop_gradient, function("
        "*tf.nest.pack_sequence_as(args, flat)))",
        ("tests/layers/test_compiled_loop.py",),
        "a gradient of the compiled loops' gradient is silently zero",
    ),
    Mutation(
        "cell_recurrent_dropout_ignored", "layers/rnn_base.py",
        "            if training and self.recurrent_dropout > 0",
        "            if False",
        RECURRENT_TESTS,
        "a cell run by keras.layers.RNN never applies recurrent_dropout",
    ),
    Mutation(
        "hand_bptt_ignores_recurrent_mask", "layers/_loop.py",
        "                h = h * recurrent_mask",
        "                h = h",
        ("tests/layers/test_lstm.py",),
        "the hand-scheduled BPTT loop (LSTM training) drops no h_{t-1}",
    ),
    Mutation(
        "recurrent_mask_uses_input_rate", "layers/rnn_base.py",
        "                rate=self.recurrent_dropout,",
        "                rate=self.dropout,",
        RECURRENT_TESTS,
        "the recurrent mask is drawn with the input dropout rate",
    ),
    Mutation(
        "lstm_input_output_gates_swapped", "layers/lstm.py",
        "        z_i, z_f, z_c, z_o = ops.split(z, 4, axis=axis)",
        "        z_o, z_f, z_c, z_i = ops.split(z, 4, axis=axis)",
        ("tests/layers/test_lstm.py",),
        "LSTM input gate i and output gate o swapped; golden tests only (-k golden), so that "
        "the Keras comparison does not do the catching",
        select="golden",
    ),
    Mutation(
        "gru_update_gate_relabelled", "layers/gru.py",
        "            h = candidate + z * (h_previous - candidate)",
        "            h = h_previous + z * (candidate - h_previous)",
        ("tests/layers/test_gru.py",),
        "GRU update in the seeds' other form (z and 1 - z exchanged)",
    ),
    # --- time series ----------------------------------------------------------------------
    Mutation(
        "scaler_divides_by_variance", "data/timeseries.py",
        "            scale = values.std(axis=0)",
        "            scale = values.var(axis=0)",
        ("tests/data/test_timeseries.py",),
        "the standard scaler divides by the variance (issue 19)",
    ),
    Mutation(
        "scaler_fitted_on_every_row", "data/timeseries.py",
        "            self.scaler = Scaler.fit(scaler, "
        "self.frame[used].iloc[train_start:train_end])",
        "            self.scaler = Scaler.fit(scaler, self.frame[used])",
        ("tests/data/test_timeseries.py",),
        "the scaler sees the validation and test rows",
    ),
    Mutation(
        "naive_uses_row_t_minus_1", "models/baselines.py",
        "    return np.repeat(targets[last_rows][:, None, :], horizon, axis=1)",
        "    return np.repeat(targets[last_rows - 1][:, None, :], horizon, axis=1)",
        TIMESERIES_TESTS,
        "the naive baseline repeats row t-1, not the last input row (issue 19)",
    ),
    Mutation(
        "seasonal_naive_reads_the_future", "models/baselines.py",
        "    return last_rows[:, None] + steps - season * np.ceil(steps / season).astype(int)",
        "    return last_rows[:, None] + steps - season * np.floor(steps / season).astype(int)",
        TIMESERIES_TESTS,
        "seasonal naive takes the forecast row itself for steps below one season",
    ),
    Mutation(
        "seasonal_naive_history_off_by_one", "models/baselines.py",
        "    return targets[np.clip(rows, 0, None)], (rows >= 0).all(axis=1)",
        "    return targets[np.clip(rows, 0, None)], (rows >= -1).all(axis=1)",
        TIMESERIES_TESTS,
        "an origin one row short of a season of history is scored",
    ),
    Mutation(
        "forecast_actual_off_by_one", "pipelines/metrics.py",
        "    actual = targets[last_rows[:, None] + np.arange(1, horizon + 1)]",
        "    actual = targets[last_rows[:, None] + np.arange(horizon)]",
        ("tests/pipelines/test_timeseries.py",),
        "forecasts are scored against the rows one step early",
    ),
    Mutation(
        "rmse_without_square_root", "pipelines/metrics.py",
        '    return {"rmse": float(root_mean_square(error)), "mae": float(np.mean(np.abs(error)))}',
        '    return {"rmse": float(np.mean(error**2)), "mae": float(np.mean(np.abs(error)))}',
        ("tests/pipelines/test_timeseries.py",),
        "RMSE reported as the MSE",
    ),
    Mutation(
        "score_origin_off_by_one", "pipelines/timeseries.py",
        "    extra = baseline_forecasts(members, ets_specs, targets, last_rows, horizon)",
        "    last_rows = last_rows + 1\n"
        "    extra = baseline_forecasts(members, ets_specs, targets, last_rows, horizon)",
        ("tests/pipelines/test_timeseries.py",),
        "the baselines' origin is one row after the model's window (they see a row it does not)",
    ),
    Mutation(
        "predict_from_first_window", "pipelines/timeseries.py",
        "        start = every_window_start(len(series.values), config.lookback, 0, "
        "series.source)[-1:]",
        "        start = every_window_start(len(series.values), config.lookback, 0, "
        "series.source)[:1]",
        ("tests/pipelines/test_timeseries.py",),
        "`predict` forecasts from the first lookback rows, not the last (issue 19)",
    ),
    Mutation(
        "target_split_skips_first_row", "data/timeseries.py",
        "            start = max(start - self.lookback, 0)",
        "            start = max(start - self.lookback + 1, 0)",
        ("tests/data/test_timeseries.py",),
        "the first row of each split is never a forecast target (issue 16)",
    ),
    Mutation(
        "best_baseline_ignores_ets", "pipelines/metrics.py",
        "    best = min((name for name in BASELINES if name in forecasts),",
        "    best = min((name for name in BASELINES[:2] if name in forecasts),",
        ("tests/pipelines/test_timeseries.py",),
        "the ratio to the best baseline leaves the classical ones (ETS, ARIMA, Theta) out "
        "(issue 16)",
        select="every_baseline",
    ),
    Mutation(
        "ets_trend_not_damped_ahead", "models/ets.py",
        "    damping = np.cumsum(spec.phi ** steps) if spec.trend else np.zeros(horizon)",
        "    damping = steps.astype(float) if spec.trend else np.zeros(horizon)",
        ("tests/models/test_ets.py",),
        "the damped trend is extrapolated undamped (issue 16)",
    ),
    Mutation(
        "ets_season_one_cycle_old", "models/ets.py",
        "        seasonal = seasons[phase_rows + m]",
        "        seasonal = seasons[np.maximum(phase_rows, 0)]",
        ("tests/models/test_ets.py",),
        "the forecast reads the seasonal state one season older than the latest (issue 16)",
    ),
    Mutation(
        "window_scale_not_restored", "models/forecaster.py",
        "        return self._forecast(read, training) * scale + level",
        "        return self._forecast(read, training) + level",
        ("tests/models/test_forecaster.py",),
        "the window-normalised forecast is shifted back but not scaled back (issue 16)",
    ),
    Mutation(
        "shift_also_scales", "models/forecaster.py",
        '        if self.normalization == "shift":',
        '        if self.normalization == "no such normalization":',
        ("tests/models/test_forecaster.py",),
        "shift normalisation divides by the window's spread as well (issue 16)",
    ),
    Mutation(
        "least_squares_without_bias", "models/forecaster.py",
        "                [read.reshape(len(read), -1), np.ones((len(read), 1))], axis=1)",
        "                [read.reshape(len(read), -1), np.zeros((len(read), 1))], axis=1)",
        ("tests/models/test_forecaster.py",),
        "the least-squares fit of the linear forecaster leaves out its bias (issue 16)",
    ),
    Mutation(
        "auto_keeps_the_worse_member", "models/forecaster.py",
        '        self.choice = "linear" if ranked["linear"] <= ranked["neural"] else "neural"',
        '        self.choice = "linear" if ranked["linear"] >= ranked["neural"] else "neural"',
        ("tests/models/test_forecaster.py", "tests/pipelines/test_timeseries.py"),
        "--model auto keeps the member with the higher validation error (issue 16)",
    ),
    Mutation(
        "auto_keeps_the_worst_candidate", "models/forecasting/selection.py",
        "    best = min(candidates, key=lambda members: candidate_rmse[candidate_name(members)])",
        "    best = max(candidates, key=lambda members: candidate_rmse[candidate_name(members)])",
        ("tests/models/test_selection.py",),
        "--model auto keeps the candidate with the highest backtest error (issue 23)",
    ),
    Mutation(
        "auto_switch_test_inverted", "models/forecasting/selection.py",
        "    return Selection(best if switch.switches else default, switch=switch, **kept)",
        "    return Selection(default if switch.switches else best, switch=switch, **kept)",
        ("tests/models/test_selection.py",),
        "--model auto keeps a candidate no clearer than noise over the mean of the pool",
    ),
    Mutation(
        "auto_pool_is_every_member", "models/forecasting/selection.py",
        "    default = tuple(name for name in combinable if member_rmse[name] <= bound)",
        "    default = tuple(combinable)",
        ("tests/models/test_selection.py",),
        "--model auto's default averages members far behind the best one (issue 23)",
    ),
    Mutation(
        "backtest_fold_forecasts_a_fitting_row", "models/forecasting/selection.py",
        "        origins = np.arange(max(start - 1, first_origin), last)",
        "        origins = np.arange(max(start - 2, first_origin), last)",
        ("tests/models/test_selection.py",),
        "a backtest fold's first origin forecasts a row the fold was fitted on (issue 23)",
    ),
    Mutation(
        "combination_is_its_first_member", "models/forecasting/selection.py",
        "    return np.mean([forecasts[name] for name in members], axis=0)",
        "    return forecasts[members[0]]",
        ("tests/models/test_selection.py",),
        "the mean of the best k is only the best member (issue 23)",
    ),
    Mutation(
        "ets_level_update_without_the_old_level", "models/forecasting/classical.py",
        "        new_level = q + self.alpha * (p - q)",
        "        new_level = q + self.alpha * p",
        ("tests/models/test_classical.py",),
        "the classical ETS member's level update drops the (1 - alpha) share of the old level "
        "(issue 23)",
    ),
    Mutation(
        "rmse_not_scaled_back", "models/forecasting/metrics.py",
        "        scaled = safe * np.sqrt(np.mean((values / safe) ** 2, axis=axis, keepdims=True))",
        "        scaled = np.sqrt(np.mean((values / safe) ** 2, axis=axis, keepdims=True))",
        ("tests/models/test_forecasting_metrics.py",),
        "RMSE of the errors divided by their largest magnitude, not multiplied back",
    ),
    Mutation(
        "model_saved_in_place", "pipelines/common.py",
        "            os.replace(temporary / path.name, path)",
        "            os.replace(temporary / path.name, path) if model.save(path) else None",
        ("tests/pipelines/test_lifecycle.py",),
        "model.keras is written in place (a kill while it is saved leaves half an archive)",
        select="crash_while",
    ),
    Mutation(
        "log_member_not_taken_back", "models/forecasting/classical.py",
        "    return np.exp(forecast.numpy()) if log_scale else forecast.numpy()",
        "    return forecast.numpy()",
        ("tests/models/test_classical.py",),
        "a log-scale member's forecast stays on the log scale (no exp)",
        select="log",
    ),
    Mutation(
        "classical_fitted_on_the_test_rows", "pipelines/timeseries.py",
        "            config, schema, series.values, windows.bounds[\"test\"][0], season)",
        "            config, schema, series.values, len(series.values), season)",
        ("tests/pipelines/test_timeseries.py",),
        "the classical baselines and members are fitted on the test rows too (issue 23)",
        select="classical_baselines",
    ),
    # --- many series (issue 24) ----------------------------------------------------------------
    Mutation(
        "panel_holdout_in_training_part", "pipelines/timeseries_panel.py",
        "        [panel.values[i][:panel.values[i].size - held] for i in keep],",
        "        [panel.values[i] for i in keep],",
        ("tests/pipelines/test_timeseries_panel.py",),
        "every series' training part keeps its holdout values (the test rows are fitted)",
        select="holdout_is_the_last",
    ),
    Mutation(
        "panel_choice_keeps_the_worst", "pipelines/timeseries_panel.py",
        "    best = min(candidates, key=lambda kept: (candidates[kept], len(kept)))",
        "    best = max(candidates, key=lambda kept: (candidates[kept], len(kept)))",
        ("tests/pipelines/test_timeseries_panel.py",),
        "the candidate with the highest validation error is kept",
        select="choose_keeps",
    ),
    Mutation(
        "panel_short_series_keep_the_network", "pipelines/timeseries_panel.py",
        "    return [choice.members_for(series_id) if ok else fallback",
        "    return [choice.members_for(series_id) if True else fallback",
        ("tests/pipelines/test_timeseries_panel.py",),
        "a series too short for the network's lookback is still forecast with it",
        select="cannot_forecast",
    ),
    Mutation(
        "panel_series_switch_on_any_gain", "pipelines/timeseries_panel.py",
        "        if order[row] != best and errors[row] <= SERIES_SWITCH * own:",
        "        if order[row] != best and errors[row] < own:",
        ("tests/pipelines/test_timeseries_panel.py",),
        "a series leaves the set's choice on any validation gain, not only on half the error",
        select="small_gain",
    ),
    Mutation(
        "panel_series_choice_ignored", "pipelines/timeseries_panel.py",
        "        return self.series_kept.get(str(series_id), self.kept)",
        "        return self.kept",
        ("tests/pipelines/test_timeseries_panel.py",),
        "every series is forecast with the set's candidate, its own choice ignored",
        select="cannot_forecast or chosen_members",
    ),
    # --- char-RNN -----------------------------------------------------------------------------
    Mutation(
        "charrnn_unigram_off_by_one", "pipelines/metrics.py",
        "    return float(-log_probabilities[np.asarray(ids) - 1].mean())",
        "    return float(-log_probabilities[np.asarray(ids) - 2].mean())",
        CHARRNN_TESTS,
        "the unigram baseline reads each character's neighbour's frequency (issue 19)",
    ),
    Mutation(
        "charrnn_counts_off_by_one", "pipelines/metrics.py",
        "    counts = np.bincount(train_ids, minlength=vocabulary.size)[2:]",
        "    counts = np.bincount(train_ids, minlength=vocabulary.size)[1:]",
        CHARRNN_TESTS,
        "the training character counts are shifted by one id",
    ),
    # --- sentiment ----------------------------------------------------------------------------
    Mutation(
        "sentiment_true_predicted_swapped", "pipelines/metrics.py",
        "        true_ids, predicted, labels=everything, zero_division=0",
        "        predicted, true_ids, labels=everything, zero_division=0",
        SENTIMENT_TESTS,
        "per-class precision and recall exchanged (issue 19)",
    ),
    Mutation(
        "sentiment_confusion_transposed", "pipelines/metrics.py",
        "                true_ids, predicted, labels=everything",
        "                predicted, true_ids, labels=everything",
        SENTIMENT_TESTS,
        "confusion matrix rows are the predicted classes",
    ),
    # --- NER ----------------------------------------------------------------------------------
    Mutation(
        "ner_gold_predicted_swapped", "pipelines/metrics.py",
        '            gold, predicted, mode="strict", scheme=IOB2, output_dict=True, '
        'zero_division=0',
        '            predicted, gold, mode="strict", scheme=IOB2, output_dict=True, '
        'zero_division=0',
        NER_TESTS,
        "entity precision and recall exchanged (issue 19)",
    ),
    Mutation(
        "ner_conlleval_swapped", "pipelines/metrics.py",
        "            else float(precision_score(gold, predicted, zero_division=0)),",
        "            else float(precision_score(predicted, gold, zero_division=0)),",
        NER_TESTS,
        "the conlleval-compatible precision is its recall",
    ),
    Mutation(
        "ner_train_scores_swapped", "pipelines/ner.py",
        "        metrics = entity_scores([s.tags for s in splits.test], prepared.test_predicted)",
        "        metrics = entity_scores(prepared.test_predicted, [s.tags for s in splits.test])",
        NER_TESTS,
        "train's test figures score the predictions against the gold tags the wrong way round",
    ),
    Mutation(
        "ner_evaluate_scores_swapped", "pipelines/ner.py",
        "            [s.tags for s in sentences], "
        "predict_tags(loaded.model, vocabulary, sentences)",
        "            predict_tags(loaded.model, vocabulary, sentences), "
        "[s.tags for s in sentences]",
        NER_TESTS,
        "evaluate scores the predictions against the gold tags the wrong way round",
    ),
    # --- translate ----------------------------------------------------------------------------
    Mutation(
        "bleu_references_rotated", "pipelines/metrics.py",
        "        figures[decoding] = {**corpus_scores(translations[decoding], [pairs.targets]),",
        "        figures[decoding] = {**corpus_scores(translations[decoding], "
        "[pairs.targets[1:] + pairs.targets[:1]]),",
        TRANSLATE_TESTS,
        "each translation is scored against the next sentence's reference (issue 19)",
    ),
    Mutation(
        "bleu_corpus_references_rotated", "pipelines/metrics.py",
        "    bleu_score = bleu.corpus_score(hypotheses, references)",
        "    bleu_score = bleu.corpus_score(hypotheses, [r[1:] + r[:1] for r in references])",
        TRANSLATE_TESTS,
        "corpus BLEU rotates every reference stream by one sentence",
    ),
]


def copy_repository(destination):
    """Copies the working tree to `destination/seqlab` and checks that `import seqlab` with
    `destination` first on PYTHONPATH finds the copy. Returns `(copy, environment)`."""
    copy = destination / "seqlab"
    shutil.copytree(REPOSITORY, copy, ignore=IGNORED, symlinks=True)
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONDONTWRITEBYTECODE="1",
                       PYTHONPATH=os.pathsep.join(
                           [str(destination), *filter(None, [os.environ.get("PYTHONPATH")])]))
    found = subprocess.run(
        [sys.executable, "-c", "import seqlab.layers, seqlab.pipelines; print(seqlab.__file__)"],
        cwd=copy, env=environment, capture_output=True, text=True,
    )
    if found.returncode or Path(found.stdout.strip()).resolve().parent != copy.resolve():
        sys.exit(f"`import seqlab` does not find the copy in {copy}: "
                 f"{found.stdout.strip() or found.stderr.strip()}")
    return copy, environment


def run_tests(copy, environment, tests, select, timeout):
    """`(outcome, first failing test or note, seconds)` of pytest on `tests` in the copy."""
    # One process (`-n 0`): the suite's default spreads files over workers, which here would
    # only add their start-up.
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider",
               *tests]
    if select:
        command += ["-k", select]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=copy, env=environment, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"over {timeout} s", time.perf_counter() - start
    seconds = time.perf_counter() - start
    output = done.stdout + done.stderr
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", output, flags=re.MULTILINE)
    counts = re.findall(r"^=*\s*(\d+ (?:passed|failed).*?) in [\d.]+s", output, flags=re.MULTILINE)
    if done.returncode == 0:
        return "passed", counts[-1] if counts else "", seconds
    if done.returncode == 1:
        return "failed", failed[0] if failed else "", seconds
    note = (failed or output.strip().splitlines()[-1:] or [""])[0]
    return f"pytest exit {done.returncode}", note, seconds


# pytest's exit statuses that say the mutation list is wrong, not the mutated code: a test file
# or option pytest refuses (4), or a -k that selects no test (5). Counted as neither caught nor
# survived: an error of the list.
LIST_ERRORS = {"pytest exit 4": "usage error", "pytest exit 5": "no tests collected"}


def verdict_of(outcome):
    """The table's verdict on a mutation's pytest `outcome` (`run_tests`): "caught" (a test
    failed; "caught (timeout)" where the run ran out of time, the usual convention, or "caught
    (pytest exit N)" for another status, a collection error the mutation caused among them),
    "NOT CAUGHT", or "LIST ERROR (...)" where pytest ran no test of the list."""
    if outcome in LIST_ERRORS:
        return f"LIST ERROR ({outcome}: {LIST_ERRORS[outcome]})"
    return {"failed": "caught", "passed": "NOT CAUGHT"}.get(outcome, f"caught ({outcome})")


def apply(copy, mutation):
    """Applies `mutation` to the copy; returns the original text, or a reason it cannot."""
    path = copy / mutation.file
    if not path.is_file():
        return None, f"file {mutation.file} not found"
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    matches = [i for i, line in enumerate(lines) if line == mutation.original]
    if not matches:
        return None, f"original line not found in {mutation.file} (the code may have moved)"
    if len(matches) > 1:
        return None, f"original line found {len(matches)} times in {mutation.file}"
    lines[matches[0]] = mutation.replacement
    path.write_text("\n".join(lines), encoding="utf-8")
    return text, None


def stop_on_sigterm(signum, frame):
    """SIGTERM (what `timeout` and `kill` send) as a normal exit: Python would otherwise die at
    once and leave the temporary copy of the repository behind; SystemExit unwinds through the
    `TemporaryDirectory` context (which deletes it) and `subprocess.run` (which kills the running
    pytest first)."""
    raise SystemExit(128 + signum)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run this mutation (repeatable; default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--timeout", type=float, default=1200,
                        help="seconds per pytest run (default 1200); a mutation whose run "
                        "ends by it counts as caught, its verdict 'caught (timeout)'")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the run of the unmutated tests")
    args = parser.parse_args(argv)
    if not args.timeout > 0:  # 0 or less ended every run at once, each "caught (timeout)"
        parser.error(f"--timeout must be above 0 seconds, not {args.timeout:g}")

    mutations = MUTATIONS
    if args.only:
        unknown = sorted(set(args.only) - {m.name for m in MUTATIONS})
        if unknown:
            parser.error(f"unknown mutation(s): {', '.join(unknown)}; "
                         f"known: {', '.join(m.name for m in MUTATIONS)}")
        mutations = [m for m in MUTATIONS if m.name in args.only]
    if args.list:
        for m in mutations:
            select = f" -k {m.select}" if m.select else ""
            print(f"{m.name}: {m.file}; {' '.join(m.tests)}{select}\n    {m.what}")
        return 0

    results, problems = [], 0
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    with tempfile.TemporaryDirectory(prefix="seqlab-mutations-") as folder:
        copy, environment = copy_repository(Path(folder))
        print(f"copy: {copy} (imported as seqlab)", flush=True)
        if not args.no_baseline:
            for tests, select in dict.fromkeys((m.tests, m.select) for m in mutations):
                outcome, note, seconds = run_tests(copy, environment, tests, select, args.timeout)
                label = " ".join(tests) + (f" -k {select}" if select else "")
                print(f"unmutated  {label}: {outcome} {note} ({seconds:.0f} s)", flush=True)
                if outcome != "passed":
                    problems += 1
        for mutation in mutations:
            original, reason = apply(copy, mutation)
            if reason:
                verdict, note, seconds = "LINE NOT FOUND", reason, 0.0
            else:
                try:
                    outcome, note, seconds = run_tests(copy, environment, mutation.tests,
                                                       mutation.select, args.timeout)
                finally:
                    (copy / mutation.file).write_text(original, encoding="utf-8")
                verdict = verdict_of(outcome)
            if verdict in ("LINE NOT FOUND", "NOT CAUGHT") or verdict.startswith("LIST ERROR"):
                problems += 1
            results.append(dict(name=mutation.name, file=mutation.file, verdict=verdict,
                                note=note, seconds=round(seconds, 1), what=mutation.what))
            print(f"{verdict:>14}  {mutation.name}: {note} ({seconds:.0f} s)", flush=True)

    print("\n| mutation | file | what it breaks | verdict | first failing test | s |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| `{r['name']}` | {r['file']} | {r['what']} | {r['verdict']} | "
              f"{r['note'].replace('|', '/')} | {r['seconds']:.0f} |")
    caught = sum(r["verdict"].startswith("caught") for r in results)
    errors = sum(r["verdict"].startswith("LIST ERROR") for r in results)
    print(f"\n{caught} of {len(results)} mutations caught"
          + (f"; {errors} not run by pytest (LIST ERROR: fix their tests or -k)" if errors
             else ""))
    print(json.dumps({"caught": caught, "list_errors": errors, "total": len(results),
                      "results": results}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
