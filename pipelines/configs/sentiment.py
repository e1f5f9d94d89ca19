"""The settings of `seqlab sentiment` and its command-line card (no TensorFlow: see `configs`)."""

import dataclasses
import typing

from seqlab.pipelines.settings import (
    TaskCard,
    TrainConfig,
    check_at_least,
    check_embedding_settings,
    check_rate,
    data_help,
    option,
)

TASK_NAME = "sentiment"
MONITORED = ("loss", "accuracy")
STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation", "none")
# Vocabulary of the word-sequence models when --vocabulary-size is not given (the ngrams model
# then keeps every n-gram of the training split).
DEFAULT_WORD_VOCABULARY = 20000
# Token embedding size when neither --embedding-dim nor --embeddings gives one.
DEFAULT_EMBEDDING_DIM = 64
# The default --sequence-length: this percentile of the training texts' token counts, at least
# MIN_DEFAULT_SEQUENCE_LENGTH (0.1.0's fixed default: short texts are not cut, and a batch is
# only as wide as its longest text anyway) and at most MAX_DEFAULT_SEQUENCE_LENGTH (a recurrent
# layer's time per epoch grows with the length; cut at the start, a longer review still keeps
# its last 512 words, where it concludes).
LENGTH_PERCENTILE = 95
MIN_DEFAULT_SEQUENCE_LENGTH = 64
MAX_DEFAULT_SEQUENCE_LENGTH = 512
# The cnn model's cost grows linearly with the length, so its default reads whole documents of
# a few thousand words (the 95th percentile of 700-word reviews is about 1,000 tokens).
MAX_DEFAULT_CNN_SEQUENCE_LENGTH = 4096
# The neural member of --model auto: a convolutional reader with masked mean pooling, which
# reads long documents whole in reasonable time on CPU (docs/performance.md).
AUTO_NEURAL_KIND = "cnn"
# The choices of models/text_classifier.py (it imports TensorFlow); the tests check that they
# agree.
MODEL_KINDS = ("gru", "lstm", "bilstm", "transformer", "cnn", "ngrams")
# The models that read token sequences (auto: its cnn), not only which n-grams occur.
WORD_SEQUENCE_MODELS = tuple(kind for kind in ("auto", *MODEL_KINDS) if kind != "ngrams")
POOLINGS = ("mean", "max", "last")
TRUNCATIONS = ("end", "start")


@dataclasses.dataclass
class SentimentConfig(TrainConfig):
    """Every setting of a text-classification run; the defaults suit short review sentences."""

    # Settings only some kinds read (`settings.refuse_unread_settings`; auto trains ngrams).
    READ_ONLY_WITH: typing.ClassVar[dict] = {
        "ngrams": ("model", ("ngrams", "auto")),
        "num_heads": ("model", ("transformer",)),
        "ff_dim": ("model", ("transformer",)),
        # The ngrams model reads whole texts into one softmax layer from zero weights.
        **{name: ("model", WORD_SEQUENCE_MODELS)
           for name in ("sequence_length", "truncate", "pooling", "embedding_dim", "layers",
                        "dropout", "token_dropout")},
        # The transformer's width is --embedding-dim, its feed-forward size --ff-dim.
        "units": ("model", tuple(kind for kind in WORD_SEQUENCE_MODELS
                                 if kind != "transformer")),
    }

    data: str | None = option(
        None, data_help(
            TASK_NAME, "CSV/TSV file, folder of line files (rt-polarity.pos, rt-polarity.neg) "
            "or of class sub-folders (aclImdb; train/ and test/ used as given splits)",
            "the embedded 150-sentence smoke-test sample"),
    )
    test_data: str | None = option(
        None, "test split in the same layout as --data (a folder with train/ and test/: its "
        "test/) (default: a seeded stratified split)"
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
    sequence_length: int | None = option(
        None, f"tokens per text; longer texts are cut (see --truncate) (default: the "
        f"{LENGTH_PERCENTILE}th percentile of the training texts' token counts, at least "
        f"{MIN_DEFAULT_SEQUENCE_LENGTH} and at most {MAX_DEFAULT_SEQUENCE_LENGTH}; cnn and "
        f"auto: at most {MAX_DEFAULT_CNN_SEQUENCE_LENGTH})"
    )
    truncate: str = option(
        "start", "which end of a longer text is cut: start keeps its last tokens (reviews "
        "conclude at the end), end its first", TRUNCATIONS,
    )
    standardize: str = option(
        "lower_and_strip_punctuation", "text standardization before splitting on whitespace",
        STANDARDIZE,
    )
    model: str = option(
        "auto", "model kind: auto trains the ngrams model and a cnn side by side and keeps "
        "the one, or their averaged probabilities, that scores best on the validation split; "
        "recurrent layers, a Transformer encoder or convolutions (cnn) over the token "
        "embeddings; or ngrams: logistic regression on which 1..N-grams occur (a baseline)",
        ("auto", *MODEL_KINDS),
    )
    ngrams: int = option(2, "ngrams model: longest n-gram counted (1: words only)")
    pooling: str | None = option(
        None, "summary of the sequence: masked mean or maximum over the unmasked steps, or "
        "the last unmasked recurrent state (default: cnn and auto mean; others mean when "
        f"--sequence-length is at most {MIN_DEFAULT_SEQUENCE_LENGTH}, max when longer)",
        POOLINGS,
    )
    embedding_dim: int | None = option(
        None, f"token embedding size (transformer: model width) (default: "
        f"{DEFAULT_EMBEDDING_DIM}, or the dimension of --embeddings)"
    )
    embeddings: str | None = option(
        None, "pretrained word vectors copied into the token embedding before training: a "
        "GloVe, word2vec or fastText text file (.gz too) or a registered name such as "
        "glove.6B.100d (not for the ngrams model)"
    )
    freeze_embeddings: bool = option(
        False, "keep the pretrained vectors of --embeddings fixed while training"
    )
    units: int = option(
        64, "units per recurrent layer (bilstm: per direction); cnn and auto: convolution "
        "filters"
    )
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
        # The ngrams model has no embedding: its size stays unset (`READ_ONLY_WITH`).
        check_embedding_settings(self, "embedding_dim",
                                 None if self.model == "ngrams" else DEFAULT_EMBEDDING_DIM)
        check_at_least(self, 1, "sequence_length", "embedding_dim", "units", "layers",
                       "num_heads", "ff_dim", "patience", "ensemble", "ngrams")
        check_at_least(self, 3, "vocabulary_size")  # padding, [UNK] and one token
        check_rate(self, "dropout", "token_dropout", "val_fraction")
        check_rate(self, "test_fraction", zero_allowed=False)
        if self.model in ("transformer", "cnn", "auto") and self.pooling == "last":
            raise ValueError(
                f"the {self.model} model has no last state; pool with the masked mean or max. "
                f"Received: model={self.model!r}, pooling={self.pooling!r}"
            )
        if self.model == "auto" and self.ensemble > 1:
            raise ValueError(
                "--model auto trains one n-gram model and one cnn side by side; an ensemble "
                "needs a single neural kind (for example --model cnn). Received: "
                f"model='auto', ensemble={self.ensemble}"
            )
        if self.model == "ngrams" and self.ensemble > 1:
            raise ValueError(
                "the ngrams model starts from zero weights and has no dropout, so the members of "
                "an ensemble would all be the same model; train it with ensemble=1. Received: "
                f"ensemble={self.ensemble}"
            )
        if self.model == "ngrams" and self.embeddings is not None:
            raise ValueError(
                "the ngrams model has no word embedding to take pretrained vectors; use "
                f"--embeddings with {', '.join(WORD_SEQUENCE_MODELS)}. "
                f"Received: model='ngrams', embeddings={self.embeddings!r}"
            )
        if (self.model == "transformer" and self.embedding_dim is not None
                and self.embedding_dim % self.num_heads):
            raise ValueError(
                "embedding_dim must be a multiple of num_heads for the transformer. Received: "
                f"embedding_dim={self.embedding_dim}, num_heads={self.num_heads}"
            )


@dataclasses.dataclass
class PredictOptions:
    """The settings of `seqlab sentiment predict` besides --run, --data and --output."""

    texts: list[str] = option([], "texts to classify", positional=True, metavar="TEXT")
    input: str | None = option(None, "UTF-8 file with one text per line to classify",
                               metavar="FILE")


CARD = TaskCard(
    name=TASK_NAME,
    description=(
        "Classify texts (sentiment or any other labels, two classes or more) with a GRU, LSTM, "
        "bidirectional LSTM, Transformer or convolutional reader built from seqlab's layers, "
        "or with a logistic regression on word n-grams (--model ngrams); by default (--model "
        "auto) the n-gram model and a convolutional reader are trained side by side and the "
        "one, or their average, that scores best on the validation split is kept. Text is "
        "vectorised inside the model, so "
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
        "export": ["seqlab sentiment export --run runs/polarity --out serving/polarity/1"],
    },
    config_class=SentimentConfig,
    options={"predict": PredictOptions},
)
