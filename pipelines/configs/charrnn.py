"""The settings of `seqlab charrnn` and its command-line card (no TensorFlow: see `configs`)."""

import dataclasses

from seqlab.pipelines.settings import (
    TaskCard,
    TrainConfig,
    check_at_least,
    check_rate,
    data_help,
    option,
)

TASK_NAME = "charrnn"
# The choices of models/char_lm.py (`RECURRENT_LAYERS`) and data/text.py (those import
# TensorFlow); the tests check that they agree.
RECURRENT_KINDS = ("gru", "lstm")
UNSEEN_POLICIES = ("unknown", "error")
# The largest temperature: float32's largest number (the sampler divides float32 logits by it).
MAX_TEMPERATURE = 3.4028234663852886e38


@dataclasses.dataclass
class CharRNNConfig(TrainConfig):
    """Every setting of a char-RNN run; the defaults suit the embedded text on a CPU."""

    data: str | None = option(
        None, data_help(TASK_NAME, "UTF-8 text file or folder of text files",
                        "the source code of the standard library's email package")
    )
    epochs: int = option(10, "maximum number of epochs (early stopping may end sooner)")
    batch_size: int = option(64, "windows per batch (--stateful: the number of streams)")
    window: int = option(100, "characters per training window (steps of backpropagation)")
    stateful: bool = option(
        False, "carry the state from batch to batch over contiguous streams (reset every epoch)"
    )
    model: str = option("gru", "recurrent layer kind", RECURRENT_KINDS)
    units: int = option(256, "units per recurrent layer")
    layers: int = option(1, "stacked recurrent layers")
    embedding_dim: int = option(64, "character embedding size; 0 feeds one-hot vectors")
    dropout: float = option(0.0, "dropout rate of each recurrent layer's inputs")
    val_fraction: float = option(0.1, "share of the text for validation (its last part)")
    max_train_chars: int | None = option(
        None, "use only the first N characters of the training part (default: all)"
    )
    unseen_chars: str = option(
        "unknown", "validation characters missing from the training text: read as [UNK] or "
        "refuse the data", UNSEEN_POLICIES
    )
    learning_rate: float = option(2e-3, "Adam learning rate")
    clipnorm: float | None = option(1.0, "gradient norm clipping of Adam")
    patience: int = option(3, "early-stopping patience in epochs (best weights restored)")
    sample_prompt: str | None = option(
        None, "prompt of the samples in metrics.json (default: the first line of the "
        "validation text that is not blank, at most 40 characters; an empty prompt is read as "
        "a line break)"
    )
    sample_chars: int = option(200, "characters per sample in metrics.json")

    def __post_init__(self):
        super().__post_init__()
        check_at_least(self, 1, "window", "units", "layers", "patience")
        check_at_least(self, 0, "embedding_dim", "sample_chars")
        check_at_least(self, 2, "max_train_chars")
        check_rate(self, "dropout")
        check_rate(self, "val_fraction", zero_allowed=False)
        if self.stateful and self.distribute != "none":
            raise ValueError(
                "stateful training runs on one device: each state row belongs to one stream of "
                f"the batch. Received: stateful=True, distribute={self.distribute!r}"
            )


@dataclasses.dataclass
class GenerateOptions:
    """The settings of `seqlab charrnn generate` (`predict`) besides --run, --data, --output."""

    prompt: str | None = option(None, "the text to continue (default: the run's sample prompt)")
    num_chars: int = option(300, "characters to generate", metavar="N")
    temperature: float = option(1.0, "sampling temperature; 0 is greedy", metavar="T")
    top_k: int | None = option(
        None, "sample among the K most probable characters only", metavar="K"
    )
    seed: int = option(0, "sampling seed: the same seed gives the same text")

    def __post_init__(self):
        check_at_least(self, 0, "num_chars")
        check_at_least(self, 1, "top_k")
        if not 0 <= self.temperature <= MAX_TEMPERATURE:
            raise ValueError(
                f"temperature must be 0 (greedy) or a positive number up to {MAX_TEMPERATURE:.4g}"
                f" (float32's largest). "
                f"Received: temperature={self.temperature}"
            )
        if not 0 <= self.seed < 2**31:
            raise ValueError(f"seed must lie in [0, 2**31). Received: seed={self.seed}")


CARD = TaskCard(
    name=TASK_NAME,
    description=(
        "Train a character-level language model (embedding, stacked GRU or LSTM from seqlab's "
        "layers, dense logits) stateless on shuffled windows or --stateful on contiguous "
        "streams, and generate text from a prompt with temperature and top-k sampling. Scored "
        "in nats and bits per character on the last --val-fraction of the text. Without --data "
        "it trains on the source code of the standard library's email package."
    ),
    examples={
        "train": [
            "seqlab charrnn train",
            "seqlab charrnn train --data input.txt --epochs 20 --out runs/shakespeare",
            "seqlab charrnn train --data books/ --stateful --batch-size 32 --model lstm "
            "--layers 2 --units 512",
        ],
        "evaluate": [
            "seqlab charrnn evaluate --run runs/shakespeare",
            "seqlab charrnn evaluate --run runs/shakespeare --data other.txt --output eval.json",
        ],
        "predict": [
            'seqlab charrnn generate --run runs/shakespeare --prompt "ROMEO:" --num-chars 300 '
            "--temperature 0.8",
            "seqlab charrnn predict --run runs/shakespeare --data prompt.txt --top-k 5 --seed 7 "
            "--output sample.txt",
        ],
        "export": ["seqlab charrnn export --run runs/shakespeare --out serving/shakespeare/1"],
    },
    config_class=CharRNNConfig,
    options={"predict": GenerateOptions},
    aliases={"predict": ["generate"]},
)
