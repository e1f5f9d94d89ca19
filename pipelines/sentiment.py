"""Masked sentiment (text) classification: raw strings in, a class and its probability out.

`train` reads labelled texts (a CSV/TSV table, line files named by class, or class folders; see
`data/classification.py`) or the smoke-test sample shipped in the package, splits them (given
train/test, or a seeded stratified split), learns the training split's vocabulary and fits a
`seqlab.models.TextClassifier` (`--ensemble` N > 1: a `TextClassifierEnsemble`, each member
stopping at its own best epoch; `--model auto`, the default: an `AutoTextClassifier`, the
ngrams model and a cnn trained side by side, then the one or their average that scores best
on the validation split kept) that vectorises raw strings itself and cuts long ones to a
length taken from the training texts (`settle_length_and_pooling`). Scored on the test split
beside the majority-class baseline. `evaluate`, `predict` and `export` work from the run
directory, also one written by seqlab 0.1.0.

The run directory holds, besides the common files (pipelines/common.py): `vocabulary.txt` (one
token per line; line n is token id n - 1, line 1 is the empty padding token, line 2 `[UNK]`;
ngrams model: one n-gram per line, line 1 `[UNK]`), `ngram_vocabulary.txt` (auto: its ngrams
member's, laid out alike), `classes.json` (class names in the order of
the model's outputs), `plots/loss.png`, `plots/confusion.png`, and `saved_model/` with
`serving_default(text: string[None]) -> {"probabilities": float32[None, n_classes], "label":
string[None]}`. `model.keras` loads with `keras.saving.load_model` once `seqlab.models` is
imported.
"""

import dataclasses
import json
import re
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from seqlab.data.classification import (
    SAMPLE_SOURCE,
    LabelledData,
    label_ids,
    load_training_data,
    make_dataset,
    make_splits,
    read_lines,
    read_scored_examples,
)
from seqlab.data.embeddings import PretrainedEmbeddings, pretrained_embeddings
from seqlab.data.errors import DataError, decode_utf8
from seqlab.models.serving import checked_rank, checked_utf8
from seqlab.models.text_classifier import (
    AUTO_CHOICES,
    AutoTextClassifier,
    MemberEarlyStopping,
    TextClassifier,
    TextClassifierEnsemble,
    adapt_vocabulary,
    candidate_figures,
    count_tokens,
    text_vectorizer,
)
from seqlab.pipelines.common import (
    ActionResult,
    UsageError,
    format_table,
    overlap_line,
    read_json,
    rows_to_csv,
    write_export_archive,
    write_text_atomic,
)
from seqlab.pipelines.configs.sentiment import (
    AUTO_NEURAL_KIND,
    CARD,
    DEFAULT_WORD_VOCABULARY,
    LENGTH_PERCENTILE,
    MAX_DEFAULT_CNN_SEQUENCE_LENGTH,
    MAX_DEFAULT_SEQUENCE_LENGTH,
    MIN_DEFAULT_SEQUENCE_LENGTH,
    TASK_NAME,
    PredictOptions,
    SentimentConfig,
)
from seqlab.pipelines.lifecycle import Pipeline, evaluation_result
from seqlab.pipelines.metrics import (
    classification_tables,
    save_confusion_plot,
    score_classification,
)
from seqlab.pipelines.settings import fill_in_setting, make_config, recurrent_parameters

# How many predictions `predict` prints; all of them go to its output file.
PRINTED_PREDICTIONS = 50


# ---------------------------------------------------------------------------------------------
# Data and model


def load_data(config):
    """The `LabelledData` the config names: `--data` (and `--test-data`), or the sample."""
    if config.data is None and config.test_data is not None:
        raise UsageError("--test-data needs --data (the embedded sample has no test file)")
    columns = config.text_column, config.label_column
    data = load_training_data(config.data, *columns, config.classes)
    if config.test_data is not None:
        if data.test is not None:
            raise UsageError(
                f"--test-data was given, but {config.data} holds its own test/ split"
            )
        data.test, _ = read_scored_examples(config.test_data, *columns, config.classes)
    return data


def _standardize(config):
    return None if config.standardize == "none" else config.standardize


def neural_kind(config):
    """The kind of the config's word-sequence model (auto's neural member), or "ngrams"."""
    return AUTO_NEURAL_KIND if config.model == "auto" else config.model


def settle_length_and_pooling(config, splits):
    """Sets an unset `config.sequence_length` and `config.pooling` from the training texts, and
    reports them and the texts the length cuts.

    The default length is the `LENGTH_PERCENTILE`th percentile of the training split's token
    counts (as the model tokenises them), at least `MIN_DEFAULT_SEQUENCE_LENGTH` and at most
    `MAX_DEFAULT_SEQUENCE_LENGTH` (cnn, and auto's cnn: `MAX_DEFAULT_CNN_SEQUENCE_LENGTH`).
    The default pooling is the masked mean for the cnn; for the others the masked mean up to
    `MIN_DEFAULT_SEQUENCE_LENGTH` tokens and the masked maximum beyond.

    Returns:
        The `truncation` figures of metrics.json: `sequence_length` and `chosen_by` (why),
        `pooling` and `pooling_chosen_by`, the `percentile` and `percentile_tokens` of the
        training split, the `bounds` of the default length, `truncate`, and per split the
        texts `cut` (longer than the length), `texts` and `longest` (tokens); None for the
        ngrams model, which reads whole texts.

    Raises:
        UsageError: the config refuses a chosen value.
    """
    if config.model == "ngrams":  # no length or pooling to settle (`READ_ONLY_WITH`)
        return None
    counts = {name: count_tokens(examples.texts, _standardize(config))
              for name, examples in splits.items()}
    percentile_tokens = int(np.ceil(np.percentile(counts["train"], LENGTH_PERCENTILE)))
    kind = neural_kind(config)
    longest = (MAX_DEFAULT_CNN_SEQUENCE_LENGTH if kind == "cnn"
               else MAX_DEFAULT_SEQUENCE_LENGTH)
    chosen_by = "--sequence-length"
    if config.sequence_length is None:
        chosen_by = (f"the {LENGTH_PERCENTILE}th percentile of the training texts' token "
                     f"counts, {percentile_tokens}")
        length = min(max(percentile_tokens, MIN_DEFAULT_SEQUENCE_LENGTH), longest)
        if length > percentile_tokens:
            chosen_by += f", raised to the default's minimum {length}"
        elif length < percentile_tokens:
            chosen_by += f", lowered to the default's maximum {length}"
        fill_in_setting(config, "sequence_length", length, chosen_by)
    pooling_chosen_by = "--pooling"
    if config.pooling is None and kind == "cnn":
        # On 700-word documents whose label is spread through the text, the cnn with masked
        # max pooling scored 58.5 %, with the mean 85.5 % (docs/performance.md).
        pooling_chosen_by = "the cnn's default"
        fill_in_setting(config, "pooling", "mean", pooling_chosen_by)
    elif config.pooling is None:
        # Over hundreds of steps a mean dilutes the few words that decide; on short texts the
        # mean measured best (docs/performance.md).
        long_texts = config.sequence_length > MIN_DEFAULT_SEQUENCE_LENGTH
        pooling_chosen_by = (f"sequence length {config.sequence_length}, "
                             f"{'above' if long_texts else 'at most'} "
                             f"{MIN_DEFAULT_SEQUENCE_LENGTH}")
        fill_in_setting(config, "pooling", "max" if long_texts else "mean", pooling_chosen_by)
    return {
        "sequence_length": config.sequence_length,
        "chosen_by": chosen_by,
        "pooling": config.pooling,
        "pooling_chosen_by": pooling_chosen_by,
        "percentile": LENGTH_PERCENTILE,
        "percentile_tokens": percentile_tokens,
        "bounds": [MIN_DEFAULT_SEQUENCE_LENGTH, longest],
        "truncate": config.truncate,
        **{name: {"cut": int(np.sum(c > config.sequence_length)), "texts": len(c),
                  "longest": int(c.max(initial=0))}
           for name, c in counts.items()},
    }


def truncation_line(truncation):
    """The summary line of `settle_length_and_pooling`'s report."""
    length = truncation["sequence_length"]
    kept = "last" if truncation["truncate"] == "start" else "first"
    cuts = ", ".join(f"{shown} {truncation[name]['cut']} of {truncation[name]['texts']}"
                     for name, shown in (("train", "train"), ("val", "validation"),
                                         ("test", "test"))
                     if truncation[name]["texts"])
    return (f"sequence length {length} ({truncation['chosen_by']}); longer texts cut at the "
            f"{truncation['truncate']} (their {kept} {length} tokens kept): {cuts}; "
            f"{truncation['pooling']} pooling ({truncation['pooling_chosen_by']})")


def make_model(config, vocabulary, n_classes, ngram_vocabulary=None, characters=None):
    """The (uncompiled) `TextClassifier`, `TextClassifierEnsemble` of `config.ensemble`
    members, or `AutoTextClassifier` (with `ngram_vocabulary`) of a config and its training
    split's vocabulary; `characters`: the classifier's character rules (None: its default)."""
    hyperparameters = dict(
        num_classes=n_classes, vocabulary=vocabulary, kind=neural_kind(config),
        pooling=config.pooling, sequence_length=config.sequence_length,
        truncate=config.truncate, standardize=_standardize(config), ngrams=config.ngrams,
        embedding_dim=config.embedding_dim, units=config.units, layers=config.layers,
        num_heads=config.num_heads, ff_dim=config.ff_dim, dropout=config.dropout,
        token_dropout=config.token_dropout, seed=config.seed, name=f"sentiment_{config.model}",
        **({} if characters is None else {"characters": characters}),
    )
    if config.model == "ngrams":  # settings it does not read stay unset: the model's defaults
        hyperparameters = {name: value for name, value in hyperparameters.items()
                           if value is not None}
    if config.model == "auto":
        return AutoTextClassifier(ngram_vocabulary=ngram_vocabulary, **hyperparameters)
    if config.ensemble > 1:
        return TextClassifierEnsemble(num_members=config.ensemble, **hyperparameters)
    return TextClassifier(**hyperparameters)


# Scripts written without spaces between words (Hiragana, Katakana and CJK ideographs, Thai,
# Lao, Myanmar, Khmer): a run of UNSPACED_RUN of their characters is a phrase or a sentence
# read as one word. Said where at least 1 / UNSPACED_SHARE of the training texts hold one (a
# Chinese training set scored at chance, 53 %, without a word: the same texts with spaces
# between their words, 100 %).
UNSPACED_RUN, UNSPACED_SHARE = 8, 5
UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\u0e00-\u0eff\u1000-\u109f"
                      "\u1780-\u17ff]{%d,}" % UNSPACED_RUN)


def unspaced_texts(texts):
    """How many of `texts` hold a run of `UNSPACED_RUN` characters of a script written
    without spaces (`UNSPACED`)."""
    return sum(1 for text in texts if UNSPACED.search(text))


def read_embeddings(config, vocabulary, texts):
    """The `PretrainedEmbeddings` of `--embeddings` for the vocabulary (None without), their
    coverage counted on the tokens of the whole training `texts` (standardised as the model
    does); an unset `--embedding-dim` becomes the vectors' dimension."""
    if config.embeddings is None:
        return None
    vectorizer = text_vectorizer(neural_kind(config), vocabulary, sequence_length=None,
                                 standardize=_standardize(config))
    token_ids = vectorizer(tf.constant(list(texts), dtype=tf.string)).numpy()
    embeddings = pretrained_embeddings(
        config.embeddings, vocabulary, np.bincount(token_ids.ravel(), minlength=len(vocabulary)),
        first_word_id=2, dimension=config.embedding_dim, setting="--embedding-dim",
    )
    if config.embedding_dim is None:
        fill_in_setting(config, "embedding_dim", embeddings.dimension,
                        f"the dimension of {embeddings.path}")
    return embeddings


# ---------------------------------------------------------------------------------------------
# --model auto


def candidate_name(model, candidate):
    """A candidate of `AUTO_CHOICES` as tables show it: ngrams, the neural kind, average."""
    return model.neural.kind if candidate == "neural" else candidate


def model_label(config, model):
    """The model's name in tables: its kind, or "auto: <candidate kept>"."""
    if isinstance(model, AutoTextClassifier):
        return f"auto: {candidate_name(model, model.choice or 'average')}"
    return config.model


def choose_candidate(model, splits, ids):
    """Makes an `AutoTextClassifier` choose on the validation split (the training split when
    there is none); returns which split decided and the candidates' figures on it."""
    split = "val" if len(splits["val"]) else "train"
    figures = model.choose(splits[split].texts, ids[split])
    if split == "val":
        return "validation split", figures
    return "training split, as there is no validation split", figures


def auto_report(model, chosen_on, decided_figures, test_texts, test_ids, best_epochs=None):
    """What `--model auto` kept and every candidate's accuracy and cross-entropy on the split
    that decided and on the test split (metrics.json key `auto`)."""
    test_figures = candidate_figures(model.candidate_probabilities(test_texts), test_ids)
    decided = "validation" if chosen_on.startswith("validation") else "training"
    report = {"chosen": candidate_name(model, model.choice), "chosen_on": chosen_on,
              "members": {}}
    for candidate in AUTO_CHOICES:
        figures = {f"{decided}_accuracy": decided_figures[candidate]["accuracy"],
                   f"{decided}_loss": decided_figures[candidate]["loss"],
                   "test_accuracy": test_figures[candidate]["accuracy"],
                   "test_loss": test_figures[candidate]["loss"]}
        if best_epochs is not None and candidate != "average":
            figures["best_epoch"] = best_epochs[0 if candidate == "ngrams" else 1]
        report["members"][candidate_name(model, candidate)] = figures
    return report


def describe_choice(report):
    """One summary line about `auto_report`'s figures."""
    members, chosen = report["members"], report["chosen"]
    neural = next(name for name in members if name not in AUTO_CHOICES)
    order = [chosen, *(name for name in members if name != chosen)]
    decided = "validation" if report["chosen_on"].startswith("validation") else "training"

    def accuracies(split):
        return ", ".join(f"{name} {_percent(members[name][f'{split}_accuracy'])}"
                         for name in order)

    return (f"model auto: kept {chosen}, chosen on the {report['chosen_on']} by accuracy "
            f"({decided}: {accuracies(decided)}; test: {accuracies('test')}); average: the "
            f"mean of the ngrams and {neural} probabilities")


def _percent(value):
    return "n/a" if value is None else f"{100 * value:.1f} %"


# ---------------------------------------------------------------------------------------------
# Predictions and the SavedModel


def predict_probabilities(model, texts):
    """`float32[len(texts), n_classes]` probabilities of raw texts, and each ensemble member's
    (`[]` for one model)."""
    if isinstance(model, TextClassifierEnsemble):
        return model.predict_probabilities(texts, return_members=True)
    return model.predict_probabilities(texts), []


def export_saved_model(model, classes, path):
    """Writes a SavedModel whose `serving_default` classifies raw strings.

    `serving_default(text: string[None]) -> {"probabilities": float32[None, n_classes],
    "label": string[None]}`; the label is the class of highest probability. A text that is not
    UTF-8 is refused (`InvalidArgumentError`), as predict refuses such a file. Written to a
    temporary directory, then renamed.
    """
    class_names = tf.constant(list(classes), dtype=tf.string)

    def serve(text):
        # Checked in the graph: the loaded signature checks no shapes itself.
        text = checked_utf8(checked_rank(text, "text", "a vector [batch] of strings", 1), "text")
        probabilities = model(text, training=False)
        label = tf.gather(class_names, tf.argmax(probabilities, axis=-1))
        return {"probabilities": probabilities, "label": label}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serving_default", serve, input_signature=[tf.TensorSpec([None], tf.string, name="text")]
    )
    return write_export_archive(archive, Path(path))


# ---------------------------------------------------------------------------------------------
# The task


@dataclasses.dataclass
class PreparedTexts:
    """What `train` works from: the data, its splits, classes and vocabulary."""

    data: LabelledData
    splits: dict
    report: dict
    classes: list
    ids: dict
    vocabulary: list
    member_stopping: MemberEarlyStopping | None = None
    embeddings: PretrainedEmbeddings | None = None
    truncation: dict | None = None
    ngram_vocabulary: list | None = None  # --model auto's n-gram member
    choice: tuple | None = None  # --model auto: `choose_candidate`'s split and figures
    vocabulary_left_out: int = 0  # distinct training tokens beyond the vocabulary's cap


def checked_classes(classes, path):
    """The class names a run's `classes.json` holds, checked: distinct, non-empty strings.

    Raises:
        UsageError: anything else there (a hand-edited or damaged file), naming it.
    """
    if (not isinstance(classes, list) or len(classes) < 2
            or not all(isinstance(name, str) and name for name in classes)
            or len(set(classes)) != len(classes)):
        raise UsageError(f"{path}: expected a list of at least two distinct, non-empty class "
                         f"names (strings), as train wrote it; found "
                         f"{json.dumps(classes)[:80]}. The file was edited or damaged")
    return classes


def _words_among(entries, ngrams):
    """The texts' words among a vocabulary's `entries`: padding and [UNK] are none (ngrams:
    [UNK] alone)."""
    return entries - (1 if ngrams else 2)


def vocabulary_words(entries, ngrams):
    """'1,304 n-grams' (or 'tokens') of a vocabulary of `entries` (`_words_among`: 'vocabulary
    3 tokens' was said of `--vocabulary-size 3`, which keeps one)."""
    return f"{_words_among(entries, ngrams):,} {'n-grams' if ngrams else 'tokens'}"


def vocabulary_cap_line(data, ngrams):
    """The summary's line of a vocabulary cut to `--vocabulary-size`, whose entries count
    padding and [UNK] (ngrams: [UNK] alone) beside the tokens kept."""
    kept = _words_among(data["vocabulary_size"], ngrams)
    left_out = data["vocabulary_left_out"]
    what = "n-grams" if ngrams else "tokens"
    return (f"vocabulary: the {kept:,} most frequent of the {kept + left_out:,} distinct "
            f"training {what} ({data['vocabulary_size']:,} entries with "
            f"{'[UNK]' if ngrams else 'padding and [UNK]'}); the other {left_out:,} read as "
            "[UNK] (--vocabulary-size keeps more)")


class SentimentPipeline(Pipeline):
    """Text classification on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = CARD.name
    config_class = SentimentConfig
    model_class = (TextClassifier, TextClassifierEnsemble, AutoTextClassifier)
    data_paths = ("data", "test_data")
    model_files = ("vocabulary.txt", "ngram_vocabulary.txt", "classes.json")
    vocabulary_files = ("vocabulary.txt", "ngram_vocabulary.txt")
    description = CARD.description
    examples = CARD.examples
    predict_options = PredictOptions
    # seqlab 0.1.0 cut long texts at the end (Keras's TextVectorization).
    legacy_settings = {"truncate": "end"}

    def monitored(self, config):
        return config.monitor, "min" if config.monitor == "loss" else "max"

    def prepare(self, config, distribution):
        data = load_data(config)
        splits, report = make_splits(data, config.test_fraction, config.val_fraction,
                                     config.seed)
        classes = sorted(splits["train"].class_counts())
        max_tokens = config.vocabulary_size
        if max_tokens is None and config.model != "ngrams":
            max_tokens = DEFAULT_WORD_VOCABULARY
        # Adapted whole, then cut to the most frequent `max_tokens` (as Keras cuts it), so that
        # the summary can say how many distinct training tokens the cap leaves out.
        vocabulary = adapt_vocabulary(splits["train"].texts, neural_kind(config), None,
                                      _standardize(config), config.ngrams)
        distinct = len(vocabulary)
        if distinct <= (1 if neural_kind(config) == "ngrams" else 2):  # "" and [UNK] only
            raise DataError(
                f"no training text holds a word after --standardize {config.standardize} (the "
                f"{len(splits['train'].texts)} training texts, such as "
                f"{splits['train'].texts[0][:60]!r}, have no token); expected texts of words",
                path=config.data or "the embedded sample")
        if max_tokens is not None:
            vocabulary = vocabulary[:max_tokens]
        # auto's n-gram member keeps every n-gram of the training split, as --model ngrams.
        ngram_vocabulary = None if config.model != "auto" else adapt_vocabulary(
            splits["train"].texts, "ngrams", None, _standardize(config), config.ngrams)
        truncation = settle_length_and_pooling(config, splits)
        ids = {name: label_ids(examples, classes) for name, examples in splits.items()}
        embeddings = read_embeddings(config, vocabulary, splits["train"].texts)
        return PreparedTexts(data, splits, report, classes, ids, vocabulary,
                             embeddings=embeddings, truncation=truncation,
                             ngram_vocabulary=ngram_vocabulary,
                             vocabulary_left_out=distinct - len(vocabulary))

    def least_parameters(self, config):
        kind = neural_kind(config)
        if kind not in ("gru", "lstm", "bilstm"):
            return None
        members = f" --ensemble {config.ensemble}" if config.ensemble > 1 else ""
        return (config.ensemble * recurrent_parameters(
                    kind.removeprefix("bi"), config.embedding_dim or 1, config.units,
                    config.layers, kind == "bilstm"),
                f"--model {kind} --units {config.units} --layers {config.layers}{members}")

    def build_model(self, config, prepared):
        model = make_model(config, prepared.vocabulary, len(prepared.classes),
                           prepared.ngram_vocabulary)
        if prepared.embeddings is not None:
            # Before fit: a resumed run's BackupAndRestore then puts its own weights over them.
            classifiers = ([model.neural] if isinstance(model, AutoTextClassifier)
                           else getattr(model, "members", [model]))
            for classifier in classifiers:
                prepared.embeddings.copy_into(classifier.embedding, config.freeze_embeddings)
        optimizer = keras.optimizers.Adam(config.learning_rate, clipnorm=config.clipnorm)
        if isinstance(model, (TextClassifierEnsemble, AutoTextClassifier)):
            model.compile(optimizer)  # its loss: each member's own cross-entropy
        else:
            model.compile(optimizer, "sparse_categorical_crossentropy", metrics=["accuracy"])
        return model

    def datasets(self, config, prepared, batch_size):
        splits, ids = prepared.splits, prepared.ids
        train = make_dataset(splits["train"].texts, ids["train"], batch_size, config.seed)
        if not len(splits["val"]):
            return train, None
        return train, make_dataset(splits["val"].texts, ids["val"], 256)

    def callbacks(self, config, prepared, monitor):
        if config.ensemble == 1 and config.model != "auto":
            return super().callbacks(config, prepared, monitor)
        # Each member stops at its own best epoch, as if it had been trained alone.
        prepared.member_stopping = MemberEarlyStopping(
            config.monitor, config.patience, prefix="val_" if monitor.startswith("val_") else ""
        )
        return [prepared.member_stopping]

    def after_fit(self, config, prepared, model):
        if isinstance(model, AutoTextClassifier):
            prepared.choice = choose_candidate(model, prepared.splits, prepared.ids)

    def score(self, config, model, prepared):
        probabilities, members = predict_probabilities(model, prepared.splits["test"].texts)
        metrics = score_classification(probabilities, prepared.ids["test"], prepared.classes,
                                       prepared.report["class_counts"]["train"], members)
        stopping = prepared.member_stopping
        if stopping is not None:
            for figures, member_best in zip(metrics.get("members", []), stopping.best_epochs):
                figures["best_epoch"] = member_best
            if stopping.best_epoch is not None:
                metrics["best_epoch"] = stopping.best_epoch
        metrics["model_kind"] = model_label(config, model)
        if isinstance(model, AutoTextClassifier):
            metrics["auto"] = auto_report(
                model, *prepared.choice, prepared.splits["test"].texts, prepared.ids["test"],
                stopping.best_epochs if stopping is not None else None)
        data = prepared.data
        metrics.update(
            split="test",
            classes=prepared.classes,
            data={
                "source": data.train.source,
                "test_source": data.test.source if data.test is not None else None,
                "layout": data.layout,
                "split": prepared.report,
                "vocabulary_size": len(prepared.vocabulary),
                "vocabulary_left_out": prepared.vocabulary_left_out,
                **({"ngram_vocabulary_size": len(prepared.ngram_vocabulary)}
                   if prepared.ngram_vocabulary is not None else {}),
                "skipped": data.train.skipped + (data.test.skipped if data.test else []),
            },
            truncation=prepared.truncation,
        )
        if prepared.embeddings is not None:
            metrics["embeddings"] = prepared.embeddings.report(config.freeze_embeddings)
        return metrics

    def artifacts(self, config, prepared):
        return {"vocabulary": prepared.vocabulary, "classes": prepared.classes,
                "ngram_vocabulary": prepared.ngram_vocabulary}

    def write_artifacts(self, run, artifacts):
        for name in ("vocabulary", "ngram_vocabulary"):
            if artifacts[name] is not None:
                run.write_text(f"{name}.txt", "".join(f"{token}\n" for token in artifacts[name]))
        run.write_json("classes.json", artifacts["classes"])

    def read_artifacts(self, path, config):
        def lines(name):
            return decode_utf8((path / name).read_bytes(), path / name).split("\n")[:-1]

        return {"vocabulary": lines("vocabulary.txt"),
                "classes": checked_classes(read_json(path / "classes.json"), path / "classes.json"),
                "ngram_vocabulary": (lines("ngram_vocabulary.txt") if config.model == "auto"
                                     else None)}

    def model_for_run(self, config, artifacts):
        # The target of a 0.1.0 run's weights (a functional model, whose TextVectorization
        # read texts with Keras's own rules): it reads them as that run was trained, not with
        # the default's Unicode and HTML rules ("superb.<br />" was "superbbr").
        return make_model(config, artifacts["vocabulary"], len(artifacts["classes"]),
                          artifacts["ngram_vocabulary"], characters="ascii")

    def save_plots(self, run, config, prepared, model, metrics, history):
        save_confusion_plot(run.path("plots", "confusion.png"), metrics,
                            title=f"{metrics['model_kind']}: test split")

    def summary_lines(self, config, prepared, metrics):
        counts, data = prepared.report["examples"], metrics["data"]
        unspaced = unspaced_texts(prepared.splits["train"].texts)
        overlap = prepared.report["also_in_training"]
        untested = [c for c in prepared.classes
                    if prepared.report["class_counts"]["test"].get(c, 0) == 0]
        return [
            f"{TASK_NAME}: {data['source']}, {len(prepared.classes)} classes, "
            f"{prepared.report['method']} split (train {counts['train']}, validation "
            f"{counts['val']}, test {counts['test']}), vocabulary "
            f"{vocabulary_words(data['vocabulary_size'], config.model == 'ngrams')}"
            + (f" and {vocabulary_words(data['ngram_vocabulary_size'], True)}"
               if "ngram_vocabulary_size" in data else ""),
            *([vocabulary_cap_line(data, config.model == "ngrams")]
              if data.get("vocabulary_left_out") else []),
            *([truncation_line(prepared.truncation)] if prepared.truncation else []),
            *([prepared.embeddings.summary_line(config.freeze_embeddings)]
              if prepared.embeddings is not None else []),
            *([describe_choice(metrics["auto"])] if "auto" in metrics else []),
            classification_tables(metrics, metrics["model_kind"]),
            *([no_better_line(metrics, counts["train"])]
              if no_better_than_majority(metrics) else []),
            *([f"skipped: {'; '.join(data['skipped'])}"] if data["skipped"] else []),
            *([overlap_line(overlap["test"], counts["test"], overlap["val"], counts["val"],
                            "texts")] if overlap["test"] else []),
            *([f"classes without test examples: {', '.join(untested)}"] if untested else []),
            *([f"note: the embedded sample ({counts['train']} training sentences) is too "
               "small to learn sentiment from: it is a smoke test of the commands, its figures "
               "and predictions measure nothing; train on real labelled texts with --data"]
              if data["source"] == SAMPLE_SOURCE else []),
            *([f"note: {unspaced} of the {counts['train']} training texts hold runs of "
               f"{UNSPACED_RUN} or more characters of a script written without spaces "
               "(Chinese, Japanese, Thai, ...), each run read as one word, as words are "
               "parted at white space: segment such texts into words first (jieba, MeCab, "
               "PyThaiNLP, ...), separated by spaces"]
              if unspaced * UNSPACED_SHARE >= counts["train"] > 0 else []),
        ]

    def export_model(self, model, config, artifacts, path):
        classes = artifacts["classes"]
        export_saved_model(model, classes, path)
        return (
            f"serving_default(text: string[None]) -> {{'probabilities': float32[None, "
            f"{len(classes)}], 'label': string[None]}} (classes: {', '.join(classes)})"
        )

    def evaluate(self, run, data=None, output=None):
        """Scores a trained run on its test split (`data` None: the figures of metrics.json),
        or on labelled texts in any layout `train` reads, with the run's columns and classes
        (a folder with `train/` and `test/`: on `test/`); writes the figures as JSON to
        `output` if given.

        Raises:
            DataError: unreadable data, or a label the run's model does not know.
        """
        loaded = self.load_run(run)
        config, classes = loaded.config, loaded.artifacts["classes"]
        train_counts = loaded.figure(
            "data", "split", "class_counts", "train", kind=dict,
            check=lambda counts: all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                     for n in counts.values()),
            expected="an object of class counts")
        if data is None:
            splits, _ = make_splits(load_data(config), config.test_fraction,
                                    config.val_fraction, config.seed)
            examples, split = splits["test"], "test split"
        else:
            examples, split = read_scored_examples(data, config.text_column,
                                                   config.label_column, config.classes)
        true_ids = label_ids(examples, classes)
        probabilities, members = predict_probabilities(loaded.model, examples.texts)
        metrics = score_classification(probabilities, true_ids, classes, train_counts, members)
        metrics.update(split=split, source=examples.source, classes=classes,
                       model_kind=model_label(config, loaded.model))
        summary = [
            f"{TASK_NAME}: {examples.source}, {split}, {len(examples)} examples",
            classification_tables(metrics, metrics["model_kind"]),
        ]
        return evaluation_result(summary, metrics, output)

    def predict(self, run, data=None, output=None, **options):
        """Classifies `texts`, the lines of the file `input` (blank ones too, so that output rows
        match input lines) and the texts of `data` (any layout `train` reads; `test/` of a
        folder with `train/` and `test/`) into a CSV (default: `<run>/predictions.csv`):
        label, probability, every class's probability, text.

        Raises:
            UsageError: nothing to classify.
            DataError: an unreadable file.
        """
        options = make_config(PredictOptions, flag_values=options)
        loaded = self.load_run(run)
        config, classes = loaded.config, loaded.artifacts["classes"]
        texts = list(options.texts)
        if options.input is not None:
            texts += read_lines(options.input)
        if data is not None:
            texts += read_scored_examples(data, config.text_column, config.label_column)[0].texts
        if not texts:
            raise UsageError(
                "nothing to classify: give texts after the options, --input FILE (one text per "
                "line) or --data FILE"
            )
        probabilities = loaded.model.predict_probabilities(texts)
        rows = [
            {"label": classes[k], "probability": round(float(p[k]), 6),
             **{f"p_{name}": round(float(p[i]), 6) for i, name in enumerate(classes)},
             "text": text}
            for text, p, k in zip(texts, probabilities, np.argmax(probabilities, axis=-1))
        ]
        path = Path(output) if output else loaded.file("predictions.csv")
        write_text_atomic(path, rows_to_csv(rows))
        shown = [[r["label"], r["probability"], _clip(r["text"])]
                 for r in rows[:PRINTED_PREDICTIONS]]
        more = len(rows) - len(shown)
        summary = [format_table(["label", "probability", "text"], shown),
                   *([f"... and {more} more"] if more > 0 else []), f"written to {path}"]
        return ActionResult(summary="\n".join(summary), path=path)


def no_better_than_majority(metrics):
    """Whether the model's test accuracy is at most the majority class's (below 1)."""
    majority = metrics["majority_class"]["accuracy"]
    return metrics["model"]["accuracy"] <= majority < 1


def no_better_line(metrics, train_texts):
    """The summary's warning for a model no better than always answering the majority class."""
    majority = metrics["majority_class"]
    return (f"warning: the model is no better than always answering the majority class "
            f"({majority['class']}, accuracy {majority['accuracy']:.4f}): it has learned "
            f"nothing the test split shows; {train_texts} training texts may be too few to "
            "learn from (give more labelled texts with --data)")


def _clip(text, width=70):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


PIPELINE = SentimentPipeline()
TASK = PIPELINE.task()
# The actions as functions, for use from Python: `train(SentimentConfig(...))`.
train, evaluate, predict, export = TASK.train, TASK.evaluate, TASK.predict, TASK.export
