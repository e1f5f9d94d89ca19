"""Masked sentiment (text) classification: raw strings in, a class and its probability out.

`train` reads labelled texts (a CSV/TSV table, line files named by class, or class folders; see
`data/classification.py`), or the smoke-test sample shipped in the package, splits them (given
train/test, or a seeded stratified split), and fits a model whose first layer is a
`TextVectorization` adapted on the training split, so that the model and its SavedModel take raw
strings. Token id 0 is padding: the embedding masks it (`mask_zero=True`) and the mask flows
through every layer to a pooling that respects it (masked mean or maximum, or the recurrent
layer's last unmasked state), so padding changes no prediction. `ensemble` > 1 averages the
probabilities of that many such classifiers trained side by side (`build_model`). The `ngrams`
model is the baseline beside them: a logistic regression on which word n-grams occur. Scored on
the test split beside the majority-class baseline. `evaluate`, `predict` and `export` work from the
run directory.

The run directory holds, besides the common files (pipelines/common.py): `vocabulary.txt` (one
token per line; line n is token id n - 1, line 1 is the empty padding token, line 2 `[UNK]`;
ngrams model: one n-gram per line, line 1 `[UNK]`),
`classes.json` (class names in the order of the model's outputs), `plots/loss.png`,
`plots/confusion.png`, and `saved_model/` with `serving_default(text: string[None]) ->
{"probabilities": float32[None, n_classes], "label": string[None]}`. `model.keras` loads with
`keras.saving.load_model` once `layers` is imported.
"""

import dataclasses
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from keras import ops

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
from seqlab.layers import GRU, LSTM, MaskedMaxPooling, MaskedMeanPooling, TokenDropout
from seqlab.pipelines.common import (
    ActionResult,
    Task,
    TrainConfig,
    UsageError,
    format_table,
    open_run,
    option,
    progress_verbosity,
    pyplot,
    read_json,
    rows_to_csv,
    save_history_plot,
    training_callbacks,
    write_export_archive,
    write_json_atomic,
    write_text_atomic,
)
from seqlab.pipelines.distribute import begin_run, start_run

TASK_NAME = "sentiment"
MODEL_KINDS = ("gru", "lstm", "bilstm", "transformer", "ngrams")
POOLINGS = ("mean", "max", "last")
MONITORED = ("loss", "accuracy")
STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation", "none")
RECURRENT_LAYERS = {"gru": GRU, "lstm": LSTM, "bilstm": LSTM}
# Vocabulary of the word-sequence models when --vocabulary-size is not given (the ngrams model
# then keeps every n-gram of the training split).
DEFAULT_WORD_VOCABULARY = 20000
# Seed offset between ensemble members (a member's layers use seed + 0, 1, ... per layer).
MEMBER_SEED_STRIDE = 1000
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
        for name in ("sequence_length", "embedding_dim", "units", "layers", "num_heads",
                     "ff_dim", "patience", "ensemble", "ngrams"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name} must be at least 1. Received: {name}={value}")
        if self.vocabulary_size is not None and self.vocabulary_size < 3:
            raise ValueError(
                "vocabulary_size must be at least 3 (padding, [UNK] and one token). "
                f"Received: vocabulary_size={self.vocabulary_size}"
            )
        for name in ("dropout", "token_dropout"):
            value = getattr(self, name)
            if not 0 <= value < 1:
                raise ValueError(f"{name} must lie in [0, 1). Received: {name}={value}")
        if not 0 < self.test_fraction < 1 or not 0 <= self.val_fraction < 1:
            raise ValueError(
                "test_fraction must lie in (0, 1) and val_fraction in [0, 1). Received: "
                f"test_fraction={self.test_fraction}, val_fraction={self.val_fraction}"
            )
        if self.clipnorm is not None and self.clipnorm <= 0:
            raise ValueError(f"clipnorm must be positive. Received: clipnorm={self.clipnorm}")
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
# Data


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


def make_vectorizer(config):
    """The `TextVectorization` layer (not yet adapted), splitting on whitespace.

    Word-sequence models: token ids `int64[B, sequence_length]`, padded with id 0, at most
    `vocabulary_size` ids (default `DEFAULT_WORD_VOCABULARY`). The ngrams model: which of the
    kept 1..`ngrams`-grams occur in each text, `float32[B, n-grams]` of 0/1 as a sparse tensor
    (column 0: any n-gram outside the vocabulary), all n-grams of the training split unless
    `vocabulary_size` caps them.
    """
    standardize = None if config.standardize == "none" else config.standardize
    if config.model == "ngrams":
        return keras.layers.TextVectorization(
            max_tokens=config.vocabulary_size,
            standardize=standardize,
            split="whitespace",
            ngrams=config.ngrams,
            output_mode="multi_hot",
            sparse=True,
            name="vectorizer",
        )
    return keras.layers.TextVectorization(
        max_tokens=config.vocabulary_size or DEFAULT_WORD_VOCABULARY,
        standardize=standardize,
        split="whitespace",
        output_mode="int",
        output_sequence_length=config.sequence_length,
        name="vectorizer",
    )


# ---------------------------------------------------------------------------------------------
# Model


def build_classifier(config, vocabulary_size, n_classes, name="classifier"):
    """The model from the vectorizer's output to class probabilities `float32[B, n_classes]`.

    Word-sequence models take token ids `int64[B, T]`: id 0 is padding and is masked from the
    embedding on; `T` may be any length (up to `sequence_length` for the transformer's
    positions). `config.seed` seeds the dropout layers. The ngrams model takes the sparse
    `float32[B, vocabulary_size]` presence of each n-gram and is a logistic regression on it
    (`softmax(x W + b)`, starting from zero weights; early stopping regularises it).
    """
    if config.model == "ngrams":
        present = keras.Input((vocabulary_size,), sparse=True, name="ngram_presence")
        probabilities = keras.layers.Dense(
            n_classes, activation="softmax", kernel_initializer="zeros", name="probabilities"
        )(present)
        return keras.Model(present, probabilities, name=name)
    ids = keras.Input((None,), dtype="int64", name="token_ids")
    tokens = ids
    if config.token_dropout > 0:
        tokens = TokenDropout(config.token_dropout, seed=config.seed, name="token_dropout")(ids)
    if config.model == "transformer":
        # Imported here: the Transformer layers are only needed by this model kind.
        from seqlab.layers import TokenAndPositionEmbedding, TransformerEncoderLayer

        hidden = TokenAndPositionEmbedding(
            vocabulary_size, config.sequence_length, config.embedding_dim, mask_zero=True,
            name="embedding",
        )(tokens)
        hidden = keras.layers.Dropout(config.dropout, seed=config.seed, name="embedding_dropout")(
            hidden
        )
        for index in range(config.layers):
            hidden = TransformerEncoderLayer(
                num_heads=config.num_heads, ff_dim=config.ff_dim, dropout=config.dropout,
                name=f"encoder_{index}",
            )(hidden)
    else:
        hidden = keras.layers.Embedding(
            vocabulary_size, config.embedding_dim, mask_zero=True, name="embedding"
        )(tokens)
        hidden = keras.layers.Dropout(config.dropout, seed=config.seed, name="embedding_dropout")(
            hidden
        )
        recurrent_layer = RECURRENT_LAYERS[config.model]
        for index in range(config.layers):
            last = index == config.layers - 1
            layer = recurrent_layer(
                config.units,
                return_sequences=not (last and config.pooling == "last"),
                seed=config.seed + index,
                name=f"{config.model}_{index}",
            )
            if config.model == "bilstm":
                layer = keras.layers.Bidirectional(layer, name=f"bidirectional_{index}")
            hidden = layer(hidden)
    if config.pooling == "mean":
        hidden = MaskedMeanPooling(name="masked_mean")(hidden)
    elif config.pooling == "max":
        hidden = MaskedMaxPooling(name="masked_max")(hidden)
    hidden = keras.layers.Dropout(config.dropout, seed=config.seed + 1, name="pooled_dropout")(
        hidden
    )
    probabilities = keras.layers.Dense(n_classes, activation="softmax", name="probabilities")(
        hidden
    )
    return keras.Model(ids, probabilities, name=name)


def build_model(config, vectorizer, n_classes):
    """The model from raw strings to class probabilities, and the model that trains it.

    Returns `(model, training_model)`. `model` maps `string[B] -> float32[B, n_classes]`: the
    adapted `vectorizer` (its vocabulary sizes the embedding, or the ngrams model's weights)
    followed by the classifier from its output to probabilities (reachable as
    `model.get_layer("classifier")`). With one member the classifier is `build_classifier`'s
    model and `training_model` is `model`, compiled. With `config.ensemble` = N > 1 the
    classifier averages the probabilities of N members (`classifier.get_layer("member_k")`)
    built alike with other seeds, and `training_model` shares their layers but outputs every
    member's probabilities `[B, N, n_classes]`; it is compiled with the members' mean
    cross-entropy, so that each member learns on its own (training the average instead would
    fit the members to each other), and an `accuracy` of their average. This is the one place
    that creates the models and the optimizer, so that a distribution strategy's `scope()` can
    wrap it.
    """
    text = keras.Input((), dtype="string", name="text")
    ids = vectorizer(text)
    vocabulary_size = vectorizer.vocabulary_size()
    optimizer = keras.optimizers.Adam(config.learning_rate, clipnorm=config.clipnorm)
    name = f"sentiment_{config.model}"
    if config.ensemble == 1:
        model = keras.Model(text, build_classifier(config, vocabulary_size, n_classes)(ids),
                            name=name)
        model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"])
        return model, model
    members = [
        build_classifier(dataclasses.replace(config, seed=config.seed + MEMBER_SEED_STRIDE * k),
                         vocabulary_size, n_classes, name=f"member_{k}")
        for k in range(config.ensemble)
    ]
    member_ids = keras.Input((None,), dtype="int64", name="token_ids")
    classifier = keras.Model(
        member_ids,
        keras.layers.Average(name="average")([member(member_ids) for member in members]),
        name="classifier",
    )
    model = keras.Model(text, classifier(ids), name=name)
    stacked = keras.layers.Concatenate(axis=1, name="members")(
        [keras.layers.Reshape((1, n_classes))(member(ids)) for member in members]
    )
    training_model = keras.Model(text, stacked, name=f"{name}_members")
    training_model.compile(
        optimizer=optimizer,
        loss=member_crossentropy,
        metrics=[
            keras.metrics.MeanMetricWrapper(averaged_accuracy, name="accuracy"),
            *(member_metric(k, config.monitor) for k in range(config.ensemble)),
        ],
    )
    return model, training_model


def member_crossentropy(labels, probabilities):
    """The mean over members of each one's cross-entropy: `[B], [B, N, C] -> [B]`."""
    labels = ops.reshape(ops.cast(labels, "int32"), (-1, 1))
    labels = ops.repeat(labels, ops.shape(probabilities)[1], axis=1)
    losses = keras.losses.sparse_categorical_crossentropy(labels, probabilities)
    return ops.mean(losses, axis=-1)


def averaged_accuracy(labels, probabilities):
    """Whether the members' average probability picks the label: `[B], [B, N, C] -> [B]`."""
    predicted = ops.argmax(ops.mean(probabilities, axis=1), axis=-1)
    labels = ops.reshape(ops.cast(labels, predicted.dtype), (-1,))
    return ops.cast(ops.equal(labels, predicted), "float32")


def member_metric(k, figure):
    """Member k's own `loss` (cross-entropy) or `accuracy`, logged as `member_<k>_<figure>`."""

    def member_figure(labels, probabilities):
        probabilities = probabilities[:, k]
        if figure == "loss":
            return keras.losses.sparse_categorical_crossentropy(labels, probabilities)
        return keras.metrics.sparse_categorical_accuracy(labels, probabilities)

    return keras.metrics.MeanMetricWrapper(member_figure, name=f"member_{k}_{figure}")


class MemberEarlyStopping(keras.callbacks.Callback):
    """Early stopping for every ensemble member on its own figure, as if trained alone.

    After each epoch, a member whose `<prefix>member_<k>_<figure>` improved keeps a copy of its
    weights; training stops when no member has improved for `patience` epochs, and each member
    gets back the weights of its own best epoch.

    Args:
        members: the member models, in order.
        figure: "loss" (lower is better) or "accuracy".
        patience: epochs without improvement before a member is done.
        prefix: "val_" to watch the validation figures, "" for the training ones.
    """

    def __init__(self, members, figure, patience, prefix="val_"):
        super().__init__()
        self.members = list(members)
        self.keys = [f"{prefix}member_{k}_{figure}" for k in range(len(self.members))]
        self.lower_is_better = figure == "loss"
        self.patience = patience
        self.best = [None] * len(self.members)
        self.best_epochs = [None] * len(self.members)
        self.best_weights = [None] * len(self.members)
        self.waits = [0] * len(self.members)

    def on_epoch_end(self, epoch, logs=None):
        for k, (member, key) in enumerate(zip(self.members, self.keys)):
            value = float(logs[key])
            best = self.best[k]
            if best is None or (value < best if self.lower_is_better else value > best):
                self.best[k], self.best_epochs[k] = value, epoch + 1
                self.best_weights[k] = member.get_weights()
                self.waits[k] = 0
            else:
                self.waits[k] += 1
        if min(self.waits) >= self.patience:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        for member, weights in zip(self.members, self.best_weights):
            if weights is not None:
                member.set_weights(weights)


def ensemble_members(model):
    """The member models of an ensemble's classifier, in order (empty for one model)."""
    classifier = model.get_layer("classifier")
    return [layer for layer in classifier.layers if layer.name.startswith("member_")]


def member_probabilities(model, texts, batch_size=256):
    """Each ensemble member's probabilities `[N][len(texts), n_classes]` (empty for one model)."""
    members = ensemble_members(model)
    if not members or not len(texts):
        return []
    ids = model.get_layer("vectorizer")(tf.constant(list(texts), dtype=tf.string))
    return [member.predict(ids, batch_size=batch_size, verbose=0) for member in members]


def predict_probabilities(model, texts, batch_size=256):
    """Class probabilities `float32[len(texts), n_classes]` of raw texts."""
    if not len(texts):
        return np.zeros((0, model.output_shape[-1]), dtype="float32")
    return model.predict(tf.constant(list(texts), dtype=tf.string), batch_size=batch_size,
                         verbose=0)


# ---------------------------------------------------------------------------------------------
# Scoring


def score(probabilities, true_ids, classes, train_ids):
    """Accuracy, macro F1, per-class figures and confusion matrix, beside the majority class.

    Args:
        probabilities: `[n, n_classes]` model outputs.
        true_ids: the true class ids.
        classes: the class names, in the order of the outputs.
        train_ids: the training split's class ids (the majority-class baseline's fit).

    Returns:
        The metrics dict. Macro F1 averages over the classes that occur in the true or the
        predicted labels (scikit-learn's default); per-class figures cover every class (0 when
        undefined). The confusion matrix has true classes as rows and predictions as columns.
    """
    from sklearn.dummy import DummyClassifier
    from sklearn.metrics import (
        accuracy_score,
        confusion_matrix,
        f1_score,
        precision_recall_fscore_support,
    )

    true_ids = np.asarray(true_ids)
    predicted = np.argmax(probabilities, axis=-1)
    baseline = DummyClassifier(strategy="most_frequent")
    baseline.fit(np.zeros((len(train_ids), 1)), train_ids)
    majority = baseline.predict(np.zeros((len(true_ids), 1)))
    majority_class = classes[int(baseline.predict(np.zeros((1, 1)))[0])]
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
    metrics = score(predict_probabilities(model, texts), true_ids, classes, train_ids)
    members = member_probabilities(model, texts)
    if members:
        metrics["members"] = [
            score(probabilities, true_ids, classes, train_ids)["model"]
            for probabilities in members
        ]
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


# ---------------------------------------------------------------------------------------------
# Export


def export_saved_model(model, classes, path):
    """Writes a SavedModel whose `serving_default` classifies raw strings.

    `serving_default(text: string[None]) -> {"probabilities": float32[None, n_classes],
    "label": string[None]}`; the label is the class of highest probability. Written to a
    temporary directory, then renamed.
    """
    path = Path(path)
    class_names = tf.constant(list(classes), dtype=tf.string)

    def serve(text):
        probabilities = model(text, training=False)
        label = tf.gather(class_names, tf.argmax(probabilities, axis=-1))
        return {"probabilities": probabilities, "label": label}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serving_default",
        serve,
        input_signature=[tf.TensorSpec([None], tf.string, name="text")],
    )
    return write_export_archive(archive, path)


# ---------------------------------------------------------------------------------------------
# Actions


def train(config, overwrite=False, callbacks=()):
    """Trains a text classifier and writes its run directory.

    Args:
        config: a `SentimentConfig`.
        overwrite: replace a finished run at `config.out`.
        callbacks: extra Keras callbacks for `fit` (after the run directory's own).

    Returns:
        An `ActionResult` with the run directory and the test metrics.

    Raises:
        DataError: unreadable or unsuitable data.
        UsageError: a refused `--out`, or `--test-data` where it cannot apply.
    """
    config, distribution, run = begin_run(config, TASK_NAME, overwrite)
    data = load_data(config)
    splits, split_report = make_splits(config, data)
    classes = sorted(splits["train"].class_counts())
    ids = {name: label_ids(examples, classes) for name, examples in splits.items()}
    start_run(run, config)

    vectorizer = make_vectorizer(config)
    vectorizer.adapt(tf.constant(splits["train"].texts, dtype=tf.string), batch_size=1024)
    with distribution.scope():
        model, training_model = build_model(config, vectorizer, len(classes))
    batch_size = distribution.global_batch_size(config.batch_size)
    has_validation = len(splits["val"]) > 0
    monitor = f"val_{config.monitor}" if has_validation else config.monitor
    mode = "min" if config.monitor == "loss" else "max"
    members = ensemble_members(model)
    if members:
        # Each member stops at its own best epoch, as if it had been trained alone.
        stopping = MemberEarlyStopping(members, config.monitor, config.patience,
                                       prefix="val_" if has_validation else "")
    else:
        stopping = keras.callbacks.EarlyStopping(
            monitor=monitor, mode=mode, patience=config.patience, restore_best_weights=True
        )
    fit_callbacks = training_callbacks(run) + [stopping, *callbacks]
    started = time.perf_counter()
    training_model.fit(
        distribution.shard(
            make_dataset(splits["train"].texts, ids["train"], batch_size, config.seed)
        ),
        validation_data=(
            distribution.shard(make_dataset(splits["val"].texts, ids["val"], 256))
            if has_validation else None
        ),
        epochs=config.epochs,
        callbacks=fit_callbacks,
        shuffle=False,  # the training dataset shuffles itself, with the run's seed
        verbose=progress_verbosity(),
    )
    train_seconds = time.perf_counter() - started
    history = fit_callbacks[0].history
    model = distribution.local_model(model, run.path("model.keras"))

    metrics = score_model(model, splits["test"].texts, ids["test"], classes, ids["train"])
    best_epoch = _best_epoch(history, monitor, mode)
    if members:
        for figures, member_best in zip(metrics["members"], stopping.best_epochs):
            figures["best_epoch"] = member_best
        if None not in stopping.best_epochs:  # None: no epoch ran in this session
            best_epoch = max(stopping.best_epochs)
    source = data.train.source
    skipped = data.train.skipped + (data.test.skipped if data.test is not None else [])
    metrics.update(
        split="test",
        classes=classes,
        epochs_run=len(history),
        best_epoch=best_epoch,
        train_seconds_this_session=round(train_seconds, 2),
        distribution=distribution.report(config.batch_size),
        data={
            "source": source,
            "test_source": data.test.source if data.test is not None else None,
            "layout": data.layout,
            "split": split_report,
            "vocabulary_size": vectorizer.vocabulary_size(),
            "skipped": skipped,
        },
    )

    vocabulary = vectorizer.get_vocabulary(include_special_tokens=True)
    run.write_text("vocabulary.txt", "".join(f"{token}\n" for token in vocabulary))
    run.write_json("classes.json", classes)
    run.write_json("metrics.json", metrics)
    save_history_plot(history, run.path("plots", "loss.png"), title=f"{config.model}: loss")
    save_confusion_plot(run.path("plots", "confusion.png"), metrics,
                        title=f"{config.model}: test split")
    export_saved_model(model, classes, run.path("saved_model"))
    final = run.finish()

    counts = split_report["examples"]
    untested = [c for c in classes if split_report["class_counts"]["test"].get(c, 0) == 0]
    summary = "\n".join(
        [
            f"{TASK_NAME}: {source}, {len(classes)} classes, {split_report['method']} split "
            f"(train {counts['train']}, validation {counts['val']}, test {counts['test']}), "
            f"vocabulary {vectorizer.vocabulary_size()} "
            f"{'n-grams' if config.model == 'ngrams' else 'tokens'}",
            metrics_tables(metrics, config.model),
            *([f"{distribution.kind}: {distribution.replicas} replicas, global batch "
               f"{distribution.global_batch_size(config.batch_size)} = {config.batch_size} "
               "per replica"] if distribution.kind != "none" else []),
            *([f"skipped: {'; '.join(skipped)}"] if skipped else []),
            *([f"classes without test examples: {', '.join(untested)}"] if untested else []),
            *(["note: the embedded sample is a smoke test; its figures measure nothing"]
              if source == SAMPLE_SOURCE else []),
            f"run directory: {final}",
        ]
    )
    return ActionResult(summary=summary, path=final, metrics=metrics)


def _best_epoch(history, monitor, mode):
    """The 1-based epoch whose `monitor` was best, or None without history."""
    if not history:
        return None
    values = [row[monitor] for row in history]
    return int(np.argmin(values) if mode == "min" else np.argmax(values)) + 1


def load_run(run):
    """`(record, config, classes, model)` of the finished run directory `run`."""
    record = open_run(run, TASK_NAME)
    config = SentimentConfig(**record.settings)
    classes = read_json(record.file("classes.json"))
    model = keras.saving.load_model(record.file("model.keras"))
    return record, config, classes, model


def evaluate(run, data=None, output=None):
    """Scores a trained run: on its test split, or on all of another data set.

    Args:
        run: the run directory.
        data: labelled texts in any layout `train` reads (with the run's column names and
            classes); a folder with `train/` and `test/` is scored on `test/`. None re-scores the
            run's own test split (the figures of metrics.json).
        output: a JSON file to write the figures to (optional).

    Returns:
        An `ActionResult` with the figures.

    Raises:
        DataError: unreadable data, or a label the run's model does not know.
    """
    record, config, classes, model = load_run(run)
    train_counts = read_json(record.file("metrics.json"))["data"]["split"]["class_counts"]["train"]
    train_ids = np.repeat(
        np.arange(len(classes)), [train_counts.get(name, 0) for name in classes]
    )
    if data is None:
        splits, _ = make_splits(config, load_data(config))
        examples, split = splits["test"], "test split"
    else:
        labelled = read_labelled(data, config.text_column, config.label_column, config.classes)
        if labelled.test is not None:
            examples, split = labelled.test, "given test split"
        else:
            examples, split = labelled.train, "every example"
    true_ids = label_ids(examples, classes)
    metrics = score_model(model, examples.texts, true_ids, classes, train_ids)
    metrics.update(split=split, source=examples.source, classes=classes)
    path = None
    if output:
        path = Path(output)
        write_json_atomic(path, metrics)
    summary = "\n".join(
        [
            f"{TASK_NAME}: {examples.source}, {split}, {len(examples)} examples",
            metrics_tables(metrics, config.model),
        ]
        + ([f"figures written to {path}"] if path else [])
    )
    return ActionResult(summary=summary, path=path, metrics=metrics)


def predict(run, data=None, output=None, texts=(), input_file=None):
    """Classifies texts given on the command line, in a file (one per line), or in a data set.

    Args:
        run: the run directory.
        data: labelled texts in any layout `train` reads (a folder with `train/` and `test/`:
            the texts of `test/`); their labels are not used.
        output: the CSV to write (default: `<run>/predictions.csv`): label, probability, the
            probability of every class, and the text.
        texts: texts to classify.
        input_file: a UTF-8 file with one text per line (blank lines are classified too, so
            that output rows match input lines).

    Returns:
        An `ActionResult` whose summary prints label and probability per text.

    Raises:
        UsageError: nothing to classify.
        DataError: an unreadable file.
    """
    record, config, classes, model = load_run(run)
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
    probabilities = predict_probabilities(model, texts)
    predicted = np.argmax(probabilities, axis=-1)
    rows = [
        {"label": classes[k], "probability": round(float(p[k]), 6),
         **{f"p_{name}": round(float(p[i]), 6) for i, name in enumerate(classes)},
         "text": text}
        for text, p, k in zip(texts, probabilities, predicted)
    ]
    path = Path(output) if output else record.file("predictions.csv")
    write_text_atomic(path, rows_to_csv(rows))
    shown = [[r["label"], r["probability"], _clip(r["text"])] for r in rows[:PRINTED_PREDICTIONS]]
    more = len(rows) - len(shown)
    summary = "\n".join(
        [format_table(["label", "probability", "text"], shown)]
        + ([f"... and {more} more"] if more > 0 else [])
        + [f"written to {path}"]
    )
    return ActionResult(summary=summary, path=path)


def _clip(text, width=70):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def export(run, out=None):
    """Writes the run's SavedModel again, to `out` (default: `<run>/saved_model`)."""
    record, config, classes, model = load_run(run)
    path = export_saved_model(model, classes, Path(out) if out else record.file("saved_model"))
    summary = (
        f"SavedModel written to {path}\n"
        f"serving_default(text: string[None]) -> {{'probabilities': float32[None, "
        f"{len(classes)}], 'label': string[None]}} (classes: {', '.join(classes)})"
    )
    return ActionResult(summary=summary, path=path)


TASK = Task(
    name=TASK_NAME,
    description=(
        "Classify texts (sentiment or any other labels, two classes or more) with a GRU, LSTM, "
        "bidirectional LSTM or Transformer built from seqlab's layers, or with a logistic "
        "regression on word n-grams (--model ngrams). Text is vectorised inside the model, so "
        "runs and SavedModels take raw strings; padding is masked through every layer. Scored "
        "on the test split (given, or a seeded stratified split) beside the majority-class "
        "baseline. Without --data it trains on a 150-sentence smoke-test sample shipped with "
        "seqlab."
    ),
    examples={
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
        "export": [
            "seqlab sentiment export --run runs/polarity --out serving/polarity/1",
        ],
    },
    config_class=SentimentConfig,
    train=train,
    evaluate=evaluate,
    predict=predict,
    export=export,
    extra_arguments={
        "predict": [
            (("texts",), {"nargs": "*", "metavar": "TEXT", "help": "texts to classify"}),
            (("--input",), {"dest": "input_file", "metavar": "FILE",
                            "help": "UTF-8 file with one text per line to classify"}),
        ],
    },
)
