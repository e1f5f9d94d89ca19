"""The settings of `seqlab translate` and its command-line card (no TensorFlow: see `configs`)."""

import dataclasses
import typing
from pathlib import Path

from seqlab.pipelines.errors import UsageError
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

TASK_NAME = "translate"
# Token embedding size when neither --embedding-dim nor --embeddings gives one.
DEFAULT_EMBEDDING_DIM = 128
# The model kinds of models/translator.py (it imports TensorFlow); the tests check that they
# agree.
MODEL_KINDS = ("gru-attention", "transformer")


def check_sources(data, src, tgt, error):
    """Raises `error` unless the data is given once: by --data, by --src and --tgt, or not."""
    if (src is None) != (tgt is None):
        raise error("--src and --tgt go together: give both aligned files, or neither")
    if src is not None and data is not None:
        raise error("give either --data or --src/--tgt, not both")


@dataclasses.dataclass
class TranslateConfig(TrainConfig):
    """Every setting of a translation run; the defaults suit the embedded sample."""

    # Settings only one kind reads (`settings.refuse_unread_settings`).
    READ_ONLY_WITH: typing.ClassVar[dict] = {
        "units": ("model", ("gru-attention",)),
        "layers": ("model", ("transformer",)),
        "num_heads": ("model", ("transformer",)),
        "ff_dim": ("model", ("transformer",)),
    }

    data: str | None = option(
        None,
        data_help(TASK_NAME, "a TSV of sentence pairs (source, target, other columns ignored), "
                  "or a folder of aligned split files train.<src-lang> / train.<tgt-lang>, "
                  "val.*, test*.*", "the embedded English -> German smoke-test sample"),
    )
    src: str | None = option(None, "aligned source-language file, one sentence per line")
    tgt: str | None = option(None, "aligned target-language file, line n translates --src line n")
    src_lang: str | None = option(None, "source-language suffix of the --data folder's files")
    tgt_lang: str | None = option(None, "target-language suffix of the --data folder's files")
    tsv_columns: list[int] = option([1, 2], "1-based source and target columns of a TSV")
    val_fraction: float = option(0.1, "share of pairs held out for validation when the data "
                                      "has no val split")
    test_fraction: float = option(0.1, "share of pairs held out for the test split when the "
                                       "data has no test split")
    epochs: int = option(40, "maximum number of epochs (early stopping may end sooner)")
    batch_size: int = option(64, "sentence pairs per batch (also per decoding batch)")
    model: str = option("transformer", "model kind", MODEL_KINDS)
    embedding_dim: int | None = option(
        None, f"token embedding size of both languages (transformer: the model width) "
        f"(default: {DEFAULT_EMBEDDING_DIM}, or the dimension of --embeddings)"
    )
    embeddings: str | None = option(
        None, "pretrained word vectors of the SOURCE language, copied into the encoder's token "
        "embedding before training (a token is looked up without its space mark, as it is, "
        "then in other case): a GloVe, word2vec or fastText text file (.gz too) or a "
        "registered name such as glove.6B.100d"
    )
    freeze_embeddings: bool = option(
        False, "keep the pretrained vectors of --embeddings fixed while training"
    )
    units: int = option(128, "gru-attention: GRU units per direction and attention units")
    layers: int = option(2, "transformer: encoder layers and decoder layers")
    num_heads: int = option(4, "transformer: attention heads")
    ff_dim: int = option(256, "transformer: feed-forward width")
    dropout: float = option(0.1, "dropout rate")
    max_length: int | None = option(
        None, "most tokens of a source sentence; of a target max_length - 2, as an output "
              "ends at that many tokens and [END] (longer training pairs are skipped and "
              "counted); default: the longest training pair's (a target with [START] and "
              "[END]), at least 64 and at most 256")
    min_count: int = option(1, "tokens seen fewer times in the training split become [UNK]")
    max_vocabulary: int = option(32000, "most ids per language (most frequent tokens kept)")
    learning_rate: float = option(1e-3, "peak Adam learning rate (then cosine decay to a tenth "
                                        "of it)")
    warmup_steps: int = option(0, "batches of linear learning-rate warmup from 0")
    clipnorm: float | None = option(1.0, "gradient norm clipping of Adam")
    patience: int = option(5, "early-stopping patience in epochs (best weights restored)")
    beam_width: int = option(4, "beam width of the beam-search figures and of the SavedModel")
    length_penalty: float = option(0.6, "GNMT length penalty alpha of beam search")
    attention_plots: int = option(3, "validation sentences whose attention is plotted")

    def __post_init__(self):
        super().__post_init__()
        check_embedding_settings(self, "embedding_dim", DEFAULT_EMBEDDING_DIM)
        check_at_least(self, 1, "embedding_dim", "units", "layers", "num_heads", "ff_dim",
                       "min_count", "patience", "beam_width")
        check_at_least(self, 0, "warmup_steps", "attention_plots", "length_penalty")
        if self.max_length is not None:
            check_at_least(self, 2, "max_length")
        check_at_least(self, 5, "max_vocabulary")
        check_rate(self, "dropout")
        check_split_fractions(self)
        columns = self.tsv_columns
        if len(columns) != 2 or len(set(columns)) != 2 or min(columns) < 1:
            raise ValueError(
                "tsv_columns must be two different 1-based column numbers. Received: "
                f"tsv_columns={self.tsv_columns}"
            )
        check_sources(self.data, self.src, self.tgt, ValueError)
        if (self.model == "transformer" and self.embedding_dim is not None
                and self.embedding_dim % self.num_heads):
            raise ValueError(
                "embedding_dim must be divisible by num_heads for the transformer. Received: "
                f"embedding_dim={self.embedding_dim}, num_heads={self.num_heads}"
            )

    def refuse_unread(self, given):
        """`tsv_columns` name the columns of a TSV `data`: refused (not ignored) where the
        training data has no columns; `given(name, value)` names the setting as the user gave
        it (a config file's key). Before TensorFlow loads: a registered name is judged by what
        it holds, not downloaded.

        Raises:
            UsageError: columns other than the default with aligned files, a folder or the
                sample.
        """
        if list(self.tsv_columns) == [1, 2]:
            return
        if self.src is not None:
            where = "aligned --src/--tgt files (each holds one language)"
        elif self.data is None:
            where = "the embedded sample"
        elif _is_folder(self.data):
            where = f"the folder {self.data} (its files train.<src-lang>, ... hold one language)"
        else:
            return
        raise UsageError(f"{given('tsv_columns', self.tsv_columns)} is read only with a TSV "
                         f"--data (the columns of its source and target sentences), not with "
                         f"{where}: to swap the direction, swap --src and --tgt (or --src-lang "
                         "and --tgt-lang)")


def _is_folder(data):
    """Whether `data`, a path or a registered data set's name, is a folder."""
    from seqlab.data import datasets  # the registry, no TensorFlow (see `configs`)

    if datasets.is_name(data):
        return datasets.REGISTRY[data].reader_path == "."
    return Path(data).is_dir()


@dataclasses.dataclass
class DecodingOptions:
    """Beam search settings of `evaluate` and `predict` (None: the run's)."""

    beam_width: int | None = option(None, "beam width (default: the run's beam_width)",
                                    metavar="K")
    length_penalty: float | None = option(
        None, "GNMT length penalty alpha (default: the run's)", metavar="ALPHA"
    )

    def __post_init__(self):
        check_at_least(self, 1, "beam_width")
        check_at_least(self, 0, "length_penalty")

    def settings(self, config):
        """`(beam_width, length_penalty)`, the run's `config` filling in what is None."""
        return (config.beam_width if self.beam_width is None else self.beam_width,
                config.length_penalty if self.length_penalty is None else self.length_penalty)


@dataclasses.dataclass
class EvaluateOptions(DecodingOptions):
    """The settings of `seqlab translate evaluate` besides --run, --data and --output."""

    src: str | None = option(None, "aligned source file to score", metavar="FILE")
    tgt: str | None = option(None, "aligned reference file to score", metavar="FILE")


@dataclasses.dataclass
class PredictOptions(DecodingOptions):
    """The settings of `seqlab translate predict` besides --run, --data and --output."""

    texts: list[str] = option([], "sentences to translate", positional=True, metavar="TEXT")
    input: str | None = option(None, "a file of sentences to translate, one per line",
                               metavar="FILE")
    n_best: int = option(1, "print the N best translations with their scores", metavar="N")


CARD = TaskCard(
    name=TASK_NAME,
    description=(
        "Translate sentences with a GRU encoder-decoder with additive attention "
        "(--model gru-attention) or a Transformer (--model transformer) built from seqlab's "
        "layers, trained with teacher forcing on aligned files (--src/--tgt), a folder of "
        "aligned split files (--data DIR --src-lang en --tgt-lang de) or a TSV of pairs. "
        "Scored on the test split with sacreBLEU (BLEU with its signature, and chrF), greedy "
        "and beam search. Without data it trains on a small English -> German smoke-test "
        "sample shipped with seqlab."
    ),
    examples={
        "train": [
            "seqlab translate train",
            "seqlab translate train --data multi30k --src-lang en --tgt-lang de --min-count 2 "
            "--out runs/multi30k",
            "seqlab translate train --src corpus.en --tgt corpus.de --model gru-attention",
            "seqlab translate train --data deu.txt --epochs 20     # Anki pairs: English, German",
        ],
        "evaluate": [
            "seqlab translate evaluate --run runs/multi30k",
            "seqlab translate evaluate --run runs/multi30k --src test.en --tgt test.de "
            "--beam-width 8",
        ],
        "predict": [
            'seqlab translate predict --run runs/multi30k "A man is riding a bike."',
            "seqlab translate predict --run runs/multi30k --input sentences.txt --output out.txt",
            'seqlab translate predict --run runs/multi30k --beam-width 8 --n-best 3 "Two dogs '
            'play."',
        ],
        "export": ["seqlab translate export --run runs/multi30k --out serving/translate/1"],
    },
    config_class=TranslateConfig,
    options={"evaluate": EvaluateOptions, "predict": PredictOptions},
)
