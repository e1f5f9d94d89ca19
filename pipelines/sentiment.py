"""Masked sentiment (text) classification: raw strings in, a class and its probability out.

`train` reads labelled texts (a CSV/TSV table, line files named by class, or class folders; see
`data/classification.py`) or the smoke-test sample shipped in the package, splits them (given
train/test, or a seeded stratified split), learns the training split's vocabulary and fits a
`seqlab.models.TextClassifier` (`--ensemble` N > 1: a `TextClassifierEnsemble`, each member
stopping at its own best epoch) that vectorises raw strings itself. Scored on the test split
beside the majority-class baseline. `evaluate`, `predict` and `export` work from the run
directory, also one written by seqlab 0.1.0.

The run directory holds, besides the common files (pipelines/common.py): `vocabulary.txt` (one
token per line; line n is token id n - 1, line 1 is the empty padding token, line 2 `[UNK]`;
ngrams model: one n-gram per line, line 1 `[UNK]`), `classes.json` (class names in the order of
the model's outputs), `plots/loss.png`, `plots/confusion.png`, and `saved_model/` with
`serving_default(text: string[None]) -> {"probabilities": float32[None, n_classes], "label":
string[None]}`. `model.keras` loads with `keras.saving.load_model` once `seqlab.models` is
imported.
"""

import dataclasses
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from seqlab.data.classification import (
    SAMPLE_SOURCE,
    LabelledData,
    check_several_classes,
    label_ids,
    load_sample,
    make_dataset,
    read_examples,
    read_labelled,
    read_lines,
    stratified_split,
)
from seqlab.models.text_classifier import KINDS as MODEL_KINDS
from seqlab.models.text_classifier import POOLINGS
from seqlab.models.text_classifier import (
    MemberEarlyStopping,
    TextClassifier,
    TextClassifierEnsemble,
    adapt_vocabulary,
)
from seqlab.pipelines.common import (
    ActionResult,
    TrainConfig,
    UsageError,
    check_at_least,
    check_positive,
    check_rate,
    format_table,
    option,
    pyplot,
    read_json,
    rows_to_csv,
    write_export_archive,
    write_text_atomic,
)
from seqlab.pipelines.lifecycle import Pipeline, write_figures

TASK_NAME = "sentiment"
MONITORED = ("loss", "accuracy")
STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation", "none")
# Vocabulary of the word-sequence models when --vocabulary-size is not given (the ngrams model
# then keeps every n-gram of the training split).
DEFAULT_WORD_VOCABULARY = 20000
# How many predictions `predict` prints; all of them go to its output file.
PRINTED_PREDICTIONS = 50


@dataclasses.dataclass
class SentimentConfig(TrainConfig):
    """Every setting of a text-classification run; the defaults suit short review sentences."""

    data: str | None = option(
        None,
        "CSV/TSV file, folder of line files (rt-polarity.pos, rt-polarity.neg) or of class "
        "sub-folders (aclImdb; train/ and test/ used as given splits) (default: the embedded "
        "150-sentence smoke-test sample)",
    )
    test_data: str | None = option(
        None, "test split in the same layout as --data (default: a seeded stratified split)"
    )
    text_column: str = option("text", "table layout: the column holding the texts")
    label_column: str = option("label", "table layout: the column holding the labels")
    classes: list[str] | None = option(
        None, "use only these classes; examples of others are skipped (default: every class)"
    )
    epochs: int = option(15, "maximum number of epochs (early stopping usually ends sooner)")
    test_fraction: float = option(0.1, "share of examples for the test split (when not given)")
    val_fraction: float = option(
        0.1, "share of the training examples for validation (early stopping); 0: none"
    )
    vocabulary_size: int | None = option(
        None, "most frequent training tokens kept, with padding and [UNK] (default: "
        f"{DEFAULT_WORD_VOCABULARY}; ngrams model: every n-gram of the training split)"
    )
    sequence_length: int = option(64, "tokens per text; longer texts are truncated")
    standardize: str = option(
        "lower_and_strip_punctuation", "text standardization before splitting on whitespace",
        STANDARDIZE,
    )
    model: str = option(
        "bilstm", "model kind: recurrent layers or a Transformer encoder over the token "
        "embeddings, or ngrams: logistic regression on which 1..N-grams occur (a baseline)",
        MODEL_KINDS,
    )
    ngrams: int = option(2, "ngrams model: longest n-gram counted (1: words only)")
    pooling: str = option(
        "mean", "summary of the sequence: masked mean or maximum over the unmasked steps, or "
        "the last unmasked recurrent state", POOLINGS,
    )
    embedding_dim: int = option(64, "token embedding size (transformer: model width)")
    units: int = option(64, "units per recurrent layer (bilstm: per direction)")
    layers: int = option(1, "stacked recurrent or Transformer layers")
    dropout: float = option(0.5, "dropout rate on the embeddings and on the pooled features")
    token_dropout: float = option(
        0.5, "training: share of tokens replaced by [UNK] (word dropout; padding untouched)"
    )
    num_heads: int = option(4, "transformer: attention heads")
    ff_dim: int = option(128, "transformer: feed-forward width")
    learning_rate: float = option(1e-3, "Adam learning rate")
    clipnorm: float | None = option(1.0, "gradient norm clipping of Adam")
    patience: int = option(2, "early-stopping patience in epochs (best weights restored)")
    monitor: str = option(
        "loss", "validation figure early stopping watches (best weights restored)",
        MONITORED,
    )
    ensemble: int = option(
        1, "members trained side by side from different initialisations and dropout draws; "
        "the model averages their probabilities"
    )

    def __post_init__(self):
        super().__post_init__()
        check_at_least(self, 1, "sequence_length", "embedding_dim", "units", "layers",
                       "num_heads", "ff_dim", "patience", "ensemble", "ngrams")
        check_at_least(self, 3, "vocabulary_size")  # padding, [UNK] and one token
        check_rate(self, "dropout", "token_dropout", "test_fraction", "val_fraction")
        check_positive(self, "test_fraction")
        if self.model == "transformer" and self.pooling == "last":
            raise ValueError(
                "the transformer model has no last state; pool with the masked mean or max. "
                f"Received: model={self.model!r}, pooling={self.pooling!r}"
            )
        if self.model == "ngrams" and self.ensemble > 1:
            raise ValueError(
                "the ngrams model starts from zero weights and has no dropout, so the members of "
                "an ensemble would all be the same model; train it with ensemble=1. Received: "
                f"ensemble={self.ensemble}"
            )
        if self.model == "transformer" and self.embedding_dim % self.num_heads:
            raise ValueError(
                "embedding_dim must be a multiple of num_heads for the transformer. Received: "
                f"embedding_dim={self.embedding_dim}, num_heads={self.num_heads}"
            )


# ---------------------------------------------------------------------------------------------
# Data and model


def load_data(config):
    """The `LabelledData` the config names: `--data` (and `--test-data`), or the sample."""
    if config.data is None:
        if config.test_data is not None:
            raise UsageError("--test-data needs --data (the embedded sample has no test file)")
        sample = load_sample()
        if config.classes is not None:
            keep = [i for i, label in enumerate(sample.labels) if label in config.classes]
            sample = sample.subset(keep)
        check_several_classes(sample, "label")
        return LabelledData(train=sample, test=None, layout="table")
    data = read_labelled(config.data, config.text_column, config.label_column, config.classes)
    check_several_classes(data.train, config.label_column if data.layout == "table" else None)
    if config.test_data is not None:
        if data.test is not None:
            raise UsageError(
                f"--test-data was given, but {config.data} holds its own test/ split"
            )
        data.test, _ = read_examples(
            config.test_data, config.text_column, config.label_column, config.classes
        )
    return data


def make_splits(config, data):
    """`({"train", "val", "test"}: Examples, split report)` as the config asks.

    A given test split is used as such; otherwise a seeded stratified `test_fraction` of the
    examples is held out. Validation is a seeded stratified `val_fraction` of the rest (empty
    when 0).
    """
    if data.test is not None:
        rest, test, method = data.train, data.test, "given"
    else:
        rest, test = stratified_split(data.train, config.test_fraction, config.seed)
        method = "seeded stratified"
    if config.val_fraction > 0:
        train, val = stratified_split(rest, config.val_fraction, config.seed, name="validation")
    else:
        train, val = rest, rest.subset([])
    splits = {"train": train, "val": val, "test": test}
    report = {
        "method": method,
        "seed": config.seed,
        "test_fraction": None if method == "given" else config.test_fraction,
        "val_fraction": config.val_fraction,
        "examples": {name: len(examples) for name, examples in splits.items()},
        "class_counts": {name: examples.class_counts() for name, examples in splits.items()},
    }
    return splits, report


def _standardize(config):
    return None if config.standardize == "none" else config.standardize


def make_model(config, vocabulary, n_classes):
    """The (uncompiled) `TextClassifier`, or `TextClassifierEnsemble` of `config.ensemble`
    members, of a config and its training split's vocabulary."""
    hyperparameters = dict(
        num_classes=n_classes, vocabulary=vocabulary, kind=config.model,
        pooling=config.pooling, sequence_length=config.sequence_length,
        standardize=_standardize(config), ngrams=config.ngrams,
        embedding_dim=config.embedding_dim, units=config.units, layers=config.layers,
        num_heads=config.num_heads, ff_dim=config.ff_dim, dropout=config.dropout,
        token_dropout=config.token_dropout, seed=config.seed, name=f"sentiment_{config.model}",
    )
    if config.ensemble > 1:
        return TextClassifierEnsemble(num_members=config.ensemble, **hyperparameters)
    return TextClassifier(**hyperparameters)


# ---------------------------------------------------------------------------------------------
# Scoring


def predict_probabilities(model, texts, batch_size=256):
    """`float32[len(texts), n_classes]` probabilities of raw texts, and each ensemble member's
    (`[]` for one model)."""
    if not len(texts):
        return np.zeros((0, model.get_config()["num_classes"]), dtype="float32"), []
    texts = tf.constant(list(texts), dtype=tf.string)
    probabilities = model.predict(texts, batch_size=batch_size, verbose=0)
    if not isinstance(model, TextClassifierEnsemble):
        return probabilities, []
    ids = model.vectorizer(texts)
    return probabilities, [member.predict(ids, batch_size=batch_size, verbose=0)
                           for member in model.members]


def score(probabilities, true_ids, classes, train_ids):
    """Accuracy, macro F1, per-class figures and the confusion matrix (rows: true classes) of
    `[n, n_classes]` probabilities, beside the training split's (`train_ids`) majority class.

    Macro F1 averages over the classes in the true or predicted labels (scikit-learn's
    default); per-class figures cover every class (0 when undefined).
    """
    from sklearn.metrics import (accuracy_score, confusion_matrix, f1_score,
                                 precision_recall_fscore_support)

    true_ids, predicted = np.asarray(true_ids), np.argmax(probabilities, axis=-1)
    # The most frequent training class; the lowest id among equals, as scikit-learn's dummy.
    majority_id = int(np.argmax(np.bincount(train_ids, minlength=len(classes))))
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

    return {
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


def score_model(model, texts, true_ids, classes, train_ids):
    """`score` of the model's predictions on `texts`; for an ensemble, with the accuracy and
    macro F1 of every member under `"members"`."""
    probabilities, members = predict_probabilities(model, texts)
    metrics = score(probabilities, true_ids, classes, train_ids)
    if members:
        metrics["members"] = [score(member, true_ids, classes, train_ids)["model"]
                              for member in members]
    return metrics


def metrics_tables(metrics, model_kind):
    """The terminal summary of `score`'s figures: overall, per class, confusion matrix."""
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
    per_class = format_table(
        ["class", "precision", "recall", "F1", "support"],
        [[name, v["precision"], v["recall"], v["f1"], v["support"]]
         for name, v in metrics["per_class"].items()],
    )
    matrix = metrics["confusion_matrix"]
    confusion = format_table(
        ["true \\ predicted", *matrix["classes"]],
        [[name, *row] for name, row in zip(matrix["classes"],
                                           matrix["rows_true_columns_predicted"])],
    )
    return "\n\n".join([overall, per_class, "confusion matrix (rows: true class)\n" + confusion])


def save_confusion_plot(path, metrics, title):
    """The confusion matrix as a heat map with the counts written in."""
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
    figure.savefig(path, dpi=100)
    plt.close(figure)


def export_saved_model(model, classes, path):
    """Writes a SavedModel whose `serving_default` classifies raw strings.

    `serving_default(text: string[None]) -> {"probabilities": float32[None, n_classes],
    "label": string[None]}`; the label is the class of highest probability. Written to a
    temporary directory, then renamed.
    """
    class_names = tf.constant(list(classes), dtype=tf.string)

    def serve(text):
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


class SentimentPipeline(Pipeline):
    """Text classification on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = TASK_NAME
    config_class = SentimentConfig
    model_class = (TextClassifier, TextClassifierEnsemble)
    data_paths = ("data", "test_data")
    description = (
        "Classify texts (sentiment or any other labels, two classes or more) with a GRU, LSTM, "
        "bidirectional LSTM or Transformer built from seqlab's layers, or with a logistic "
        "regression on word n-grams (--model ngrams). Text is vectorised inside the model, so "
        "runs and SavedModels take raw strings; padding is masked through every layer. Scored "
        "on the test split (given, or a seeded stratified split) beside the majority-class "
        "baseline. Without --data it trains on a 150-sentence smoke-test sample shipped with "
        "seqlab."
    )
    examples = {
        "train": [
            "seqlab sentiment train",
            "seqlab sentiment train --data rt-polarity/ --out runs/polarity",
            "seqlab sentiment train --data reviews.csv --text-column review --label-column "
            "stars --model gru",
            "seqlab sentiment train --data aclImdb --classes neg pos --sequence-length 256",
            "seqlab sentiment train --data rt-polarity/ --model ngrams --out runs/ngrams",
        ],
        "evaluate": [
            "seqlab sentiment evaluate --run runs/polarity",
            "seqlab sentiment evaluate --run runs/polarity --data other.tsv --output eval.json",
        ],
        "predict": [
            'seqlab sentiment predict --run runs/polarity "a gripping, tender film" "dull"',
            "seqlab sentiment predict --run runs/polarity --input sentences.txt --output out.csv",
        ],
        "export": ["seqlab sentiment export --run runs/polarity --out serving/polarity/1"],
    }
    extra_arguments = {
        "predict": [
            (("texts",), {"nargs": "*", "metavar": "TEXT", "help": "texts to classify"}),
            (("--input",), {"dest": "input_file", "metavar": "FILE",
                            "help": "UTF-8 file with one text per line to classify"}),
        ],
    }

    def prepare(self, config, distribution):
        # Early stopping and the best epoch watch the figure --monitor names.
        self.monitor_metric = config.monitor
        self.monitor_mode = "min" if config.monitor == "loss" else "max"
        data = load_data(config)
        splits, report = make_splits(config, data)
        classes = sorted(splits["train"].class_counts())
        max_tokens = config.vocabulary_size
        if max_tokens is None and config.model != "ngrams":
            max_tokens = DEFAULT_WORD_VOCABULARY
        vocabulary = adapt_vocabulary(splits["train"].texts, config.model, max_tokens,
                                      _standardize(config), config.ngrams)
        ids = {name: label_ids(examples, classes) for name, examples in splits.items()}
        return PreparedTexts(data, splits, report, classes, ids, vocabulary)

    def build_model(self, config, prepared):
        model = make_model(config, prepared.vocabulary, len(prepared.classes))
        optimizer = keras.optimizers.Adam(config.learning_rate, clipnorm=config.clipnorm)
        if isinstance(model, TextClassifierEnsemble):
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
        if config.ensemble == 1:
            return super().callbacks(config, prepared, monitor)
        # Each member stops at its own best epoch, as if it had been trained alone.
        prepared.member_stopping = MemberEarlyStopping(
            config.monitor, config.patience, prefix="val_" if monitor.startswith("val_") else ""
        )
        return [prepared.member_stopping]

    def score(self, config, model, prepared):
        metrics = score_model(model, prepared.splits["test"].texts, prepared.ids["test"],
                              prepared.classes, prepared.ids["train"])
        stopping = prepared.member_stopping
        if stopping is not None:
            for figures, member_best in zip(metrics["members"], stopping.best_epochs):
                figures["best_epoch"] = member_best
            if stopping.best_epochs and None not in stopping.best_epochs:
                metrics["best_epoch"] = max(stopping.best_epochs)
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
                "skipped": data.train.skipped + (data.test.skipped if data.test else []),
            },
        )
        return metrics

    def artifacts(self, config, prepared):
        return {"vocabulary": prepared.vocabulary, "classes": prepared.classes}

    def write_artifacts(self, run, artifacts):
        vocabulary = artifacts["vocabulary"]
        run.write_text("vocabulary.txt", "".join(f"{token}\n" for token in vocabulary))
        run.write_json("classes.json", artifacts["classes"])

    def read_artifacts(self, path, config):
        vocabulary = (path / "vocabulary.txt").read_text(encoding="utf-8").split("\n")[:-1]
        return {"vocabulary": vocabulary, "classes": read_json(path / "classes.json")}

    def model_for_run(self, config, artifacts):
        return make_model(config, artifacts["vocabulary"], len(artifacts["classes"]))

    def save_plots(self, run, config, prepared, model, metrics, history):
        save_confusion_plot(run.path("plots", "confusion.png"), metrics,
                            title=f"{config.model}: test split")

    def summary_lines(self, config, prepared, metrics):
        counts, data = prepared.report["examples"], metrics["data"]
        untested = [c for c in prepared.classes
                    if prepared.report["class_counts"]["test"].get(c, 0) == 0]
        return [
            f"{TASK_NAME}: {data['source']}, {len(prepared.classes)} classes, "
            f"{prepared.report['method']} split (train {counts['train']}, validation "
            f"{counts['val']}, test {counts['test']}), vocabulary {data['vocabulary_size']} "
            f"{'n-grams' if config.model == 'ngrams' else 'tokens'}",
            metrics_tables(metrics, config.model),
            *([f"skipped: {'; '.join(data['skipped'])}"] if data["skipped"] else []),
            *([f"classes without test examples: {', '.join(untested)}"] if untested else []),
            *(["note: the embedded sample is a smoke test; its figures measure nothing"]
              if data["source"] == SAMPLE_SOURCE else []),
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
        train_counts = loaded.metrics["data"]["split"]["class_counts"]["train"]
        train_ids = np.repeat(np.arange(len(classes)),
                              [train_counts.get(name, 0) for name in classes])
        if data is None:
            splits, _ = make_splits(config, load_data(config))
            examples, split = splits["test"], "test split"
        else:
            labelled = read_labelled(data, config.text_column, config.label_column,
                                     config.classes)
            if labelled.test is not None:
                examples, split = labelled.test, "given test split"
            else:
                examples, split = labelled.train, "every example"
        metrics = score_model(loaded.model, examples.texts, label_ids(examples, classes),
                              classes, train_ids)
        metrics.update(split=split, source=examples.source, classes=classes)
        summary = [
            f"{TASK_NAME}: {examples.source}, {split}, {len(examples)} examples",
            metrics_tables(metrics, config.model),
            *write_figures(output, metrics),
        ]
        return ActionResult(summary="\n".join(summary), path=output and Path(output),
                            metrics=metrics)

    def predict(self, run, data=None, output=None, texts=(), input_file=None):
        """Classifies `texts`, the lines of `input_file` (blank ones too, so that output rows
        match input lines) and the texts of `data` (any layout `train` reads; `test/` of a
        folder with `train/` and `test/`) into a CSV (default: `<run>/predictions.csv`):
        label, probability, every class's probability, text.

        Raises:
            UsageError: nothing to classify.
            DataError: an unreadable file.
        """
        loaded = self.load_run(run)
        config, classes = loaded.config, loaded.artifacts["classes"]
        texts = list(texts or [])
        if input_file is not None:
            texts += read_lines(input_file)
        if data is not None:
            labelled = read_labelled(data, config.text_column, config.label_column)
            texts += (labelled.test if labelled.test is not None else labelled.train).texts
        if not texts:
            raise UsageError(
                "nothing to classify: give texts after the options, --input FILE (one text per "
                "line) or --data FILE"
            )
        probabilities = loaded.model.predict(tf.constant(texts), batch_size=256, verbose=0)
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


def _clip(text, width=70):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


PIPELINE = SentimentPipeline()
TASK = PIPELINE.task()
# The actions as functions, for use from Python: `train(SentimentConfig(...))`.
train, evaluate, predict, export = TASK.train, TASK.evaluate, TASK.predict, TASK.export
