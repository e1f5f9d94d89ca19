"""The settings of `seqlab ner` and its command-line card (no TensorFlow: see `configs`)."""

import dataclasses
import typing

from seqlab.pipelines.settings import (
    TaskCard,
    TrainConfig,
    check_at_least,
    check_embedding_settings,
    check_rate,
    check_split_fractions,
    data_help,
    option,
)

TASK_NAME = "ner"
# Word embedding size when neither --word-dim nor --embeddings gives one.
DEFAULT_WORD_DIM = 100
# The choices of data/conll.py and layers/char_encoder.py (those import TensorFlow); the tests
# check that they agree.
SCHEMES = ("bio", "iob1", "iobes")
INPUT_FORMATS = ("auto", "conll", "lines")
CHAR_ENCODERS = ("lstm", "cnn")


@dataclasses.dataclass
class NerConfig(TrainConfig):
    """Every setting of a tagging run; the defaults suit the embedded sample and WNUT-17."""

    # Settings only some choices read (`settings.refuse_unread_settings`).
    READ_ONLY_WITH: typing.ClassVar[dict] = {
        "char_kernel": ("char_encoder", ("cnn",)),
        "crf_constraints": ("crf", (True,)),
    }

    data: str | None = option(None, data_help(
        TASK_NAME, "directory of CoNLL files (names with train / valid or dev / test), or the "
        "training file", "the smoke-test sample shipped with seqlab"))
    validation_data: str | None = option(None, "validation CoNLL file (default: the --data "
                                         "directory's, else --val-fraction of the training "
                                         "sentences)")
    test_data: str | None = option(None, "test CoNLL file (default: the --data directory's, "
                                   "else --test-fraction of the training sentences)")
    epochs: int = option(
        40, "maximum number of epochs (early stopping on validation F1 usually ends sooner)"
    )
    batch_size: int = option(32, "sentences per batch")
    token_column: int = option(0, "column of the tokens (0-based; negative counts from the end)")
    tag_column: int = option(-1, "column of the tags (default: -1, the last)")
    scheme: str = option(
        "auto", "tag scheme of the files, converted to BIO (default: auto, detected)",
        ("auto",) + SCHEMES,
    )
    strict_tags: bool = option(
        False, "refuse a file with an invalid tag sequence (an I-X that continues no X entity, "
        "an IOBES entity not closed by E-X) instead of reading it as conlleval and seqeval do "
        "(the I-X starts an entity) and counting it in the summary and metrics.json"
    )
    repair: bool = option(
        False, "accepted for command lines and runs of seqlab 0.1.0, which refused invalid tag "
        "sequences unless --repair; reading them as conlleval does is now the default and "
        "--strict-tags refuses them"
    )
    min_count: int = option(2, "minimum count of a training word to get its own id")
    max_word_chars: int | None = option(
        None, "characters of each word the character encoder sees; default: enough for 999 "
              "in 1,000 training words, at least 20 and at most 64 (longer words are cut, and "
              "counted)")
    word_dim: int | None = option(
        None, f"word embedding size (default: {DEFAULT_WORD_DIM}, or the dimension of "
        "--embeddings)"
    )
    embeddings: str | None = option(
        None, "pretrained word vectors copied into the word embedding before training (a word "
        "is looked up as it is, then in other case): a GloVe, word2vec or fastText text file "
        "(.gz too) or a registered name such as glove.6B.100d"
    )
    freeze_embeddings: bool = option(
        False, "keep the pretrained vectors of --embeddings fixed while training"
    )
    char_encoder: str = option("lstm", "character encoder: BiLSTM or CNN", CHAR_ENCODERS)
    char_dim: int = option(25, "character embedding size")
    char_units: int = option(25, "units per direction of the character BiLSTM, or filters of "
                             "the character CNN")
    char_kernel: int = option(3, "CNN kernel width in characters")
    units: int = option(100, "units per direction of the word BiLSTM")
    dropout: float = option(0.5, "dropout rate before and after the word BiLSTM")
    crf: bool = option(False, "decode with a CRF trained on the sentence log-likelihood "
                       "(default: softmax)")
    crf_constraints: bool = option(True, "with --crf, forbid the transitions that make invalid "
                                   "BIO (O -> I-X, B-X or I-X -> I-Y, a sentence starting with "
                                   "I-X), so every decoded sequence is valid")
    learning_rate: float = option(1e-3, "Adam learning rate")
    clipnorm: float | None = option(5.0, "gradient norm clipping of Adam")
    patience: int = option(
        5, "epochs without a better validation entity F1 or loss before stopping; the weights "
        "of the epoch with the best F1 are restored"
    )
    val_fraction: float = option(0.1, "share of training sentences held out for validation "
                                 "when there is no such file")
    test_fraction: float = option(0.1, "share of training sentences held out for test when "
                                  "there is no such file")

    def __post_init__(self):
        super().__post_init__()
        check_embedding_settings(self, "word_dim", DEFAULT_WORD_DIM)
        check_at_least(self, 1, "min_count", "max_word_chars", "word_dim", "char_dim",
                       "char_units", "char_kernel", "units", "patience")
        check_rate(self, "dropout")
        check_split_fractions(self, validation_may_be_zero=False)
        if self.token_column == self.tag_column:
            raise ValueError(
                "token_column and tag_column must be different columns. Received: "
                f"token_column={self.token_column}, tag_column={self.tag_column}"
            )
        if self.repair and self.strict_tags:
            raise ValueError(
                "repair reads invalid tag sequences and strict_tags refuses them: give one. "
                "Received: repair=True, strict_tags=True"
            )


@dataclasses.dataclass
class PredictOptions:
    """The settings of `seqlab ner predict` besides --run, --data and --output."""

    sentence: list[str] = option([], "a sentence to tag, split at whitespace", positional=True,
                                 metavar="WORD")
    input: str | None = option(None, "a file to tag: CoNLL, or one sentence per line",
                               metavar="FILE")
    input_format: str = option("auto", "format of --input", INPUT_FORMATS)


CARD = TaskCard(
    name=TASK_NAME,
    description=(
        "Tag named entities in tokenised text with a BiLSTM over word embeddings and "
        "character features (BiLSTM or CNN over characters), decoded per token (softmax) or "
        "by a CRF (--crf). Reads CoNLL column files (BIO, IOB1 or IOBES, converted to BIO; "
        "invalid tag sequences read as conlleval reads them and counted, or refused with "
        "--strict-tags) and scores entity-level precision, recall and F1 per type (seqeval, "
        "strict IOB2). Without --data it trains on a small smoke-test sample shipped with "
        "seqlab."
    ),
    examples={
        "train": [
            "seqlab ner train",
            "seqlab ner train --data wnut17 --crf --out runs/wnut-crf",
            "seqlab ner train --data train.conll --validation-data dev.conll --test-data "
            "test.conll --scheme iob1 --char-encoder cnn",
        ],
        "evaluate": [
            "seqlab ner evaluate --run runs/wnut-crf",
            "seqlab ner evaluate --run runs/wnut-crf --data other.conll --output eval.json",
        ],
        "predict": [
            'seqlab ner predict --run runs/wnut-crf "Einstein was born in Ulm"',
            "seqlab ner predict --run runs/wnut-crf --input tweets.txt --output tagged.conll",
        ],
        "export": ["seqlab ner export --run runs/wnut-crf --out serving/ner/1"],
    },
    config_class=NerConfig,
    options={"predict": PredictOptions},
)
