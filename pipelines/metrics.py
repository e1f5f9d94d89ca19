"""The figures each task reports (DESIGN.md section 7), and their terminal tables.

One section per task. Figures come from the libraries the field compares with (scikit-learn,
seqeval, sacrebleu) wherever one exists; the baselines every figure is read against are
computed here beside them.
"""

import math
import re
import time
import warnings

import numpy as np
import sacrebleu

from seqlab.data.text import make_dataset, scored_chars
from seqlab.layers import reset_states
from seqlab.models.baselines import naive_forecast, seasonal_naive_forecast
from seqlab.models.forecasting.metrics import root_mean_square
from seqlab.models.forecasting.metrics import ROUNDING
from seqlab.models.forecasting.metrics import rounding as float_rounding
from seqlab.pipelines.common import format_figure, format_table, pyplot, save_figure


# --- timeseries ---------------------------------------------------------------------------------


def _errors(forecast, actual):
    error = forecast - actual
    return {"rmse": float(root_mean_square(error)), "mae": float(np.mean(np.abs(error)))}


def _errors_per_step(forecast, actual):
    """RMSE and MAE of each step ahead (axis 1), pooled over origins and targets."""
    error = forecast - actual
    return {
        "rmse": [float(v) for v in root_mean_square(error, axis=(0, 2))],
        "mae": [float(v) for v in np.mean(np.abs(error), axis=(0, 2))],
    }


BASELINES = ("naive", "seasonal_naive", "ets", "arima", "theta")


def _ratio(rmse, best, rounding=0.0):
    """An RMSE over the best baseline's: infinite where only the baseline is exact, NaN (not
    defined; null in metrics.json, "n/a" in the table) where both are. An RMSE at most
    `rounding` (`seqlab.models.forecasting.metrics.rounding` of the actual values) counts as
    exact."""
    if best > rounding:
        return rmse / best
    return math.nan if rmse <= rounding else math.inf


def forecast_scores(forecast, targets, last_rows, horizon, season, target_names,
                    extra_baselines=None):
    """RMSE / MAE of a forecast beside the naive and seasonal-naive ones from the same origins.

    Args:
        forecast: the model's forecasts, `[origins, horizon, n_targets]`, original units.
        targets: every observed row of the targets, `[rows, n_targets]`.
        last_rows: the last observed row of each origin.
        horizon: steps ahead per origin.
        season: the seasonal-naive baseline's season.
        target_names: the targets' column names, for the per-target figures.
        extra_baselines: `{name: forecasts}` of further baselines from the same origins (the
            pipeline's "ets"), scored and counted in `best_baseline` like the others.

    All figures are pooled over the horizon steps and targets, then given per step ahead
    (`per_step[name]`) and per target. The baselines read the observed rows before each
    origin, which may lie before the model's window when `season > lookback`; origins with
    less than a season of history are not scored. `windows` is the number of origins scored.

    Returns:
        `(metrics dict, actual values [origins, horizon, n_targets])`.
    """
    actual = targets[last_rows[:, None] + np.arange(1, horizon + 1)]
    forecasts = {"model": forecast, "naive": naive_forecast(targets, last_rows, horizon)}
    forecasts["seasonal_naive"], scored = seasonal_naive_forecast(
        targets, last_rows, horizon, season
    )
    forecasts.update(extra_baselines or {})
    metrics = {
        name: _errors(values[scored], actual[scored]) for name, values in forecasts.items()
    }
    best = min((name for name in BASELINES if name in forecasts),
               key=lambda name: metrics[name]["rmse"])
    rounding = float_rounding(actual[scored])
    metrics.update(
        per_step={name: _errors_per_step(values[scored], actual[scored])
                  for name, values in forecasts.items()},
        windows=int(scored.sum()),
        horizon=horizon,
        season=int(season),
        best_baseline=best,
        rmse_ratio_to_best_baseline=_ratio(metrics["model"]["rmse"], metrics[best]["rmse"],
                                           rounding),
        rmse_rounding=rounding,
        per_target={
            name: {
                kind: _errors(values[scored][..., index], actual[scored][..., index])
                for kind, values in forecasts.items()
            }
            for index, name in enumerate(target_names)
        },
    )
    return metrics, actual


def _forecast_names(metrics, model_kind):
    names = {
        "model": f"model ({model_kind})",
        "naive": "naive (last value)",
        "seasonal_naive": f"seasonal naive (season {metrics['season']})",
        "ets": "ETS (exponential smoothing)",
        "arima": "ARIMA (automatic)",
        "theta": "Theta (automatic)",
    }
    return {key: label for key, label in names.items() if key in metrics}


# Errors within this many times float64's rounding of the values (`rmse_rounding`) are near the
# precision the values are held at: the table's note then says how to score them finer.
NEAR_ROUNDING = 1000.0


def forecast_table(metrics, model_kind):
    """The terminal table of `forecast_scores` figures (with the RMSE per step ahead when the
    horizon is longer than one)."""
    best = metrics[metrics["best_baseline"]]["rmse"]
    rounding = metrics.get("rmse_rounding", 0.0)  # runs from before it was stored: none
    names = _forecast_names(metrics, model_kind)
    rows = [[label, metrics[key]["rmse"], metrics[key]["mae"],
             _ratio(metrics[key]["rmse"], best, rounding)]
            for key, label in names.items()]
    table = format_table(["forecast", "RMSE", "MAE", "RMSE / best baseline"], rows)
    exact = [metrics[key]["rmse"] <= rounding for key in names]
    if rounding > 0 and any(exact) and not all(exact):
        table += (f"\nan RMSE of at most {rounding:.3g} ({ROUNDING:g} of the largest actual "
                  f"value, {rounding / ROUNDING:.4g}: float64's rounding) counts as exact, hence "
                  "the ratios inf or n/a")
        inexact = min(metrics[key]["rmse"] for key, same in zip(names, exact) if not same)
        if inexact <= NEAR_ROUNDING * rounding:  # the errors themselves are near float64's
            table += ("; the other errors are within a thousand times that: subtract a "
                      "constant offset from the series to score its forecasts finer")
    if metrics["horizon"] == 1 or "per_step" not in metrics:
        return table
    steps = format_table(
        ["RMSE per step ahead", *map(str, range(1, metrics["horizon"] + 1))],
        [[label, *metrics["per_step"][key]["rmse"]] for key, label in names.items()],
    )
    return f"{table}\n{steps}"


def fold_summary(metrics, rows):
    """One backtest fold's figures: the series rows it kept, and RMSE of every forecast."""
    summary = {"rows": int(rows), "origins": metrics["windows"]}
    for name in ("model", *BASELINES):
        if name in metrics:
            summary[f"{name}_rmse"] = metrics[name]["rmse"]
    summary["rmse_ratio_to_best_baseline"] = metrics["rmse_ratio_to_best_baseline"]
    return summary


def backtest_table(backtest):
    """The terminal table of the backtest folds and their mean."""
    folds, mean = backtest["folds"], backtest["mean"]
    columns = [k for k in folds[-1] if k.endswith("_rmse") or k.startswith("rmse_ratio")]
    kinds = "model_kind" in folds[-1]  # which model each fold kept (--model auto)
    headers = ["backtest fold", "rows", *(["model"] if kinds else []),
               *[c.replace("_rmse", " RMSE").replace("rmse_ratio_to_best_baseline", "ratio")
                 for c in columns]]
    rows = [[str(index), fold["rows"], *([fold.get("model_kind", "")] if kinds else []),
             *[fold.get(c, float("nan")) for c in columns]]
            for index, fold in enumerate(folds, start=1)]
    rows.append(["mean", "", *([""] if kinds else []),
                 *[mean.get(c, float("nan")) for c in columns]])
    return format_table(headers, rows)


# --- charrnn ------------------------------------------------------------------------------------
# Validation loss in nats and bits per character and perplexity, beside a unigram baseline (the
# character frequencies of the training text).


def char_loss_figures(nats):
    """Nats per char, bits per char and perplexity of a mean cross-entropy in nats (a loss
    above about 709.8 nats, a model that diverged without a NaN, has an infinite perplexity:
    no float holds it, and metrics.json writes it as null)."""
    try:
        perplexity = math.exp(nats)
    except OverflowError:
        perplexity = math.inf
    return {
        "nats_per_char": float(nats),
        "bits_per_char": float(nats / math.log(2)),
        "perplexity": float(perplexity),
    }


def char_counts(train_ids, vocabulary):
    """`{character: count}` of the training text, in vocabulary order (saved in metrics.json)."""
    counts = np.bincount(train_ids, minlength=vocabulary.size)[2:]
    return {char: int(count) for char, count in zip(vocabulary.chars, counts)}


def unigram_nats(counts, ids):
    """Cross-entropy of `ids` under the training text's character frequencies `counts` (from
    `char_counts`), add-one smoothed over the characters and [UNK]: the loss of a model that
    ignores context."""
    smoothed = np.array([0, *counts.values()], dtype=np.float64) + 1.0  # [UNK], characters
    log_probabilities = np.log(smoothed / smoothed.sum())
    return float(-log_probabilities[np.asarray(ids) - 1].mean())


def score_char_model(model, ids, counts, window, batch_size, stateful=False, source=None):
    """The figures of a compiled character model on `ids`, read as in training, and of the
    unigram baseline (`unigram_nats` of the training `counts`) on the same `ids`.

    Stateless: windows of `window` characters, each from a zero state. Stateful: `batch_size`
    contiguous streams with the state carried across windows (reset before and after).

    Returns:
        `{"model", "unigram_baseline"}` (`char_loss_figures`), `"chars_scored"` (the
        characters the model was scored on: an incomplete last window or batch is dropped) and
        `"reading"` (how it read them, in words).
    """
    dataset = make_dataset(ids, window, batch_size, stateful=stateful, source=source)
    reset_states(model)
    nats = model.evaluate(dataset, verbose=0, return_dict=True)["loss"]
    reset_states(model)
    if stateful:
        reading = f"{batch_size} contiguous streams, state carried across windows of {window}"
    else:
        reading = f"windows of {window} characters, each from a zero state"
    return {
        "model": char_loss_figures(nats),
        "unigram_baseline": char_loss_figures(unigram_nats(counts, ids)),
        "chars_scored": scored_chars(len(ids), window, batch_size, stateful),
        "reading": reading,
    }


def char_loss_table(metrics, split="validation"):
    """The terminal table of `score_char_model`'s figures: the model and the baseline, on
    `split` (the text scored, for the table's heading)."""
    rows = [
        [name, figures["nats_per_char"], figures["bits_per_char"], figures["perplexity"]]
        for name, figures in (
            ("model", metrics["model"]),
            ("unigram baseline", metrics["unigram_baseline"]),
        )
    ]
    return format_table([split, "nats/char", "bits/char", "perplexity"], rows)


# --- sentiment ----------------------------------------------------------------------------------


def score_classification(probabilities, true_ids, classes, train_counts, members=()):
    """Accuracy, macro F1, per-class figures and the confusion matrix (rows: true classes) of a
    classifier, beside the training split's majority class.

    Macro F1 averages over the classes in the true or predicted labels (scikit-learn's
    default); per-class figures cover every class (0 when undefined).

    Args:
        probabilities: `[n, n_classes]` class probabilities, in the order of `classes`.
        true_ids: the index in `classes` of each example's true class.
        classes: the class names.
        train_counts: `{class: training examples}` (classes without any may be left out).
        members: each ensemble member's `[n, n_classes]` probabilities; their accuracy and
            macro F1 go under `"members"` (not there when empty).
    """
    from sklearn.metrics import (accuracy_score, confusion_matrix, f1_score,
                                 precision_recall_fscore_support)

    true_ids, predicted = np.asarray(true_ids), np.argmax(probabilities, axis=-1)
    # The most frequent training class; the lowest id among equals, as scikit-learn's dummy.
    majority_id = int(np.argmax([train_counts.get(name, 0) for name in classes]))
    majority, majority_class = np.full(len(true_ids), majority_id), classes[majority_id]
    everything = list(range(len(classes)))
    precision, recall, f1, support = precision_recall_fscore_support(
        true_ids, predicted, labels=everything, zero_division=0
    )

    def figures(guess):
        return {
            "accuracy": float(accuracy_score(true_ids, guess)),
            "macro_f1": float(f1_score(true_ids, guess, average="macro", zero_division=0)),
        }

    metrics = {
        "examples": int(len(true_ids)),
        "model": figures(predicted),
        "majority_class": {"class": majority_class, **figures(majority)},
        "per_class": {
            name: {"precision": float(precision[i]), "recall": float(recall[i]),
                   "f1": float(f1[i]), "support": int(support[i])}
            for i, name in enumerate(classes)
        },
        "confusion_matrix": {
            "classes": list(classes),
            "rows_true_columns_predicted": confusion_matrix(
                true_ids, predicted, labels=everything
            ).tolist(),
        },
    }
    if len(members):
        metrics["members"] = [figures(np.argmax(member, axis=-1)) for member in members]
    return metrics


def classification_tables(metrics, model_kind):
    """The terminal summary of `score_classification`'s figures (and an ensemble's members,
    under `"members"`): overall, per class, confusion matrix."""
    members = metrics.get("members", [])
    overall = format_table(
        ["classifier", "accuracy", "macro F1"],
        [
            [f"ensemble of {len(members)} ({model_kind})" if members else f"model ({model_kind})",
             metrics["model"]["accuracy"], metrics["model"]["macro_f1"]],
            *[[f"  member {k}", member["accuracy"], member["macro_f1"]]
              for k, member in enumerate(members)],
            [f"majority class ({metrics['majority_class']['class']})",
             metrics["majority_class"]["accuracy"], metrics["majority_class"]["macro_f1"]],
        ],
    )
    matrix = metrics["confusion_matrix"]
    # A figure whose denominator is 0 is undefined (metrics.json holds scikit-learn's 0 for
    # it): precision of a class never predicted, recall of a class absent from the labels,
    # F1 of a class neither predicted nor present. The table shows "-" there, so that a
    # class absent from the file does not read as one the model got wrong.
    predicted_counts = np.sum(matrix["rows_true_columns_predicted"], axis=0)
    rows, undefined = [], False
    for column, (name, v) in enumerate(metrics["per_class"].items()):
        never_predicted, absent = predicted_counts[column] == 0, v["support"] == 0
        undefined = undefined or never_predicted or absent
        rows.append([name, "-" if never_predicted else v["precision"],
                     "-" if absent else v["recall"],
                     "-" if never_predicted and absent else v["f1"], v["support"]])
    per_class = format_table(["class", "precision", "recall", "F1", "support"], rows)
    note = ("\n(-: undefined: the class was never predicted, or is not in the labels; macro F1 "
            "averages the classes present in either)"
            if undefined else "")
    confusion = format_table(
        ["true \\ predicted", *matrix["classes"]],
        [[name, *row] for name, row in zip(matrix["classes"],
                                           matrix["rows_true_columns_predicted"])],
    )
    return "\n\n".join([overall, per_class + note,
                        "confusion matrix (rows: true class)\n" + confusion])


def save_confusion_plot(path, metrics, title):
    """`score_classification`'s confusion matrix as a heat map with the counts written in."""
    plt = pyplot()
    matrix = np.asarray(metrics["confusion_matrix"]["rows_true_columns_predicted"])
    classes = metrics["confusion_matrix"]["classes"]
    size = 2.5 + 0.6 * len(classes)
    figure, axis = plt.subplots(figsize=(size, size))
    axis.imshow(matrix, cmap="Blues")
    ticks = np.arange(len(classes))
    axis.set_xticks(ticks, classes, rotation=45, ha="right")
    axis.set_yticks(ticks, classes)
    for (row, column), count in np.ndenumerate(matrix):
        axis.text(column, row, str(count), ha="center", va="center",
                  color="white" if count > matrix.max() / 2 else "black")
    axis.set_xlabel("predicted")
    axis.set_ylabel("true")
    axis.set_title(title)
    figure.tight_layout()
    save_figure(figure, path)


# --- ner ----------------------------------------------------------------------------------------
# Entity-level precision, recall and F1 of BIO tags, overall and per type (seqeval, strict IOB2),
# with the conlleval-compatible figures beside them.


def entity_scores(gold, predicted):
    """Entity-level precision, recall and F1 of BIO tag sequences (seqeval).

    Returns:
        A dict: `precision`, `recall`, `f1` and `support` (gold entities) overall (micro
        average, strict IOB2: an entity counts only if its predicted B-/I- tags are a valid
        chunk of the right type and extent), `per_type` (the same per entity type),
        `macro_f1`, `conlleval` (overall figures in seqeval's default mode, which matches
        conlleval: an I-X after O or another type starts an entity), and `sentences`, `tokens`.
    """
    from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
    from seqeval.scheme import IOB2

    summary_rows = {"micro avg", "macro avg", "weighted avg"}
    with warnings.catch_warnings():
        # No entity in the gold tags nor the predictions: the macro average is a mean of no
        # types, which numpy warns about (and which is 0 below, as zero_division says).
        warnings.simplefilter("ignore", RuntimeWarning)
        report = classification_report(
            gold, predicted, mode="strict", scheme=IOB2, output_dict=True, zero_division=0
        )
    types = [kind for kind in report if kind not in summary_rows]

    def figures(row, predicted_any):
        # Without a gold entity, recall (and so F1) is 0 / 0, not 0: a model that rightly
        # predicts none is not a model that learned nothing. Precision is 0 / 0 as well where
        # nothing is predicted either.
        undefined = int(row["support"]) == 0
        return {
            "precision": math.nan if undefined and not predicted_any
            else float(row["precision"]),
            "recall": math.nan if undefined else float(row["recall"]),
            "f1": math.nan if undefined else float(row["f1-score"]),
            "support": int(row["support"]),
        }

    predicted_any = any(tag != "O" for row in predicted for tag in row)
    scores = figures(report["micro avg"], predicted_any)
    no_gold = scores["support"] == 0
    scores.update(
        macro_f1=float(report["macro avg"]["f1-score"]) if types and not no_gold else math.nan,
        per_type={kind: figures(row, True) for kind, row in sorted(report.items())
                  if kind not in summary_rows},
        conlleval={
            "precision": scores["precision"] if no_gold
            else float(precision_score(gold, predicted, zero_division=0)),
            "recall": math.nan if no_gold
            else float(recall_score(gold, predicted, zero_division=0)),
            "f1": math.nan if no_gold else float(f1_score(gold, predicted, zero_division=0)),
        },
        sentences=len(gold),
        tokens=sum(len(tags) for tags in gold),
    )
    return scores


def entity_scores_table(scores):
    """The terminal table of `entity_scores`: one row per type, then the overall row."""
    rows = [[kind, row["precision"], row["recall"], row["f1"], row["support"]]
            for kind, row in scores["per_type"].items()]
    rows.append(["overall (micro)", scores["precision"], scores["recall"], scores["f1"],
                 scores["support"]])
    table = format_table(["entity type", "precision", "recall", "F1", "support"], rows)
    conlleval = scores["conlleval"]
    figure = {name: format_figure(value) for name, value in conlleval.items()}
    lines = [table, "seqeval strict IOB2; conlleval-compatible (seqeval default mode): precision "
             f"{figure['precision']}, recall {figure['recall']}, F1 {figure['f1']}"]
    if scores["support"] == 0:
        lines.append("no entity in the gold tags: recall and F1 are not defined (n/a)"
                     + ("" if math.isnan(scores["precision"]) else
                        ", and every entity predicted is wrong (precision 0)"))
    return "\n".join(lines)


# --- translate ----------------------------------------------------------------------------------
# sacreBLEU's corpus BLEU (with its signature) and chrF of detokenised translations against the
# raw reference lines, greedy and beam search.


# Scripts written without spaces between words, whose BLEU sacreBLEU's default tokenizer
# (13a, which parts at spaces and punctuation) scores as whole clauses: a Chinese test set
# scored 0.0. Chinese gets sacreBLEU's "zh" tokenizer, Japanese (kana) and Thai, Lao, Myanmar
# and Khmer its "char" (its "ja-mecab" needs MeCab, which is not a dependency: "char" scores
# alike on every machine).
HAN, KANA = "\u3400-\u9fff\uf900-\ufaff", "\u3040-\u30ff"
OTHER_UNSPACED = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"


def bleu_tokenizer(references):
    """sacreBLEU's tokenizer for the script of most reference lines: "zh" (Chinese), "char"
    (Japanese, Thai, Lao, Myanmar, Khmer) or its default "13a"."""
    lines = [line for stream in references for line in stream]

    def most(characters):
        return 2 * sum(bool(re.search(f"[{characters}]", line)) for line in lines) >= len(lines)

    if not lines:
        return "13a"
    if most(KANA) or most(OTHER_UNSPACED):
        return "char"
    return "zh" if most(HAN) else "13a"


def corpus_scores(hypotheses, references):
    """sacreBLEU's corpus BLEU and chrF (0-100, with details and signatures) of detokenised
    hypotheses (one str per sentence) against reference streams (sacrebleu's layout:
    `[[ref_1 of every sentence], [ref_2 of every sentence], ...]`); BLEU tokenised for the
    references' script (`bleu_tokenizer`; the signature says which)."""
    bleu, chrf = sacrebleu.BLEU(tokenize=bleu_tokenizer(references)), sacrebleu.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, references)
    chrf_score = chrf.corpus_score(hypotheses, references)
    return {"bleu": float(bleu_score.score), "bleu_details": str(bleu_score),
            "bleu_signature": str(bleu.get_signature()), "chrf": float(chrf_score.score),
            "chrf_signature": str(chrf.get_signature())}


def translation_figures(translate, pairs, beam_width, length_penalty, batch_size):
    """Greedy and beam-search figures of one set of pairs, and its translations.

    Args:
        translate: `translate(texts, batch_size=..., beam_width=..., length_penalty=...)` -> one
            str per text, greedy without `beam_width` (`TextTranslator.translate`).
        pairs: the `SentencePairs` to translate; their targets are the references.
        beam_width, length_penalty: the beam search's settings.
        batch_size: sentences per decoding batch.

    Returns:
        `(figures, translations)`: `{"sentences", "greedy": {corpus_scores, "seconds"}, "beam":
        {corpus_scores, "beam_width", "length_penalty", "seconds"}}` and `{"greedy": [str],
        "beam": [str]}`.
    """
    figures, translations = {"sentences": len(pairs)}, {}
    for decoding, settings in (("greedy", {}), ("beam", {"beam_width": beam_width,
                                                         "length_penalty": length_penalty})):
        started = time.perf_counter()
        translations[decoding] = translate(pairs.sources, batch_size=batch_size, **settings)
        figures[decoding] = {**corpus_scores(translations[decoding], [pairs.targets]),
                             **settings, "seconds": round(time.perf_counter() - started, 2)}
    return figures, translations


def translation_table(test_figures):
    """The terminal table of `{test set name: translation_figures(...)[0]}`: BLEU and chrF of
    each test set, greedy and beam, and the two signatures."""
    rows = []
    for name, figures in test_figures.items():
        beam = figures["beam"]
        rows.append([name, "greedy", figures["greedy"]["bleu"], figures["greedy"]["chrf"]])
        rows.append([name, f"beam (width {beam['beam_width']}, alpha {beam['length_penalty']})",
                     beam["bleu"], beam["chrf"]])
    first = next(iter(test_figures.values()))
    return "\n".join([
        format_table(["test set", "decoding", "BLEU", "chrF"], rows),
        f"BLEU signature: {first['greedy']['bleu_signature']}",
        f"chrF signature: {first['greedy']['chrf_signature']}",
    ])


def translation_examples(pairs, translations, count=3):
    """Terminal lines of the first `count` pairs (`SentencePairs`) beside their greedy and beam
    translations (`translation_figures(...)[1]`)."""
    lines = []
    for index in range(min(count, len(pairs))):
        lines += [f"  source:    {pairs.sources[index]}",
                  f"  reference: {pairs.targets[index]}",
                  f"  greedy:    {translations['greedy'][index]}",
                  f"  beam:      {translations['beam'][index]}"]
    return lines
