"""The sequence tagger: one tag per token from word and character features, softmax or CRF.

    word embedding (+) character encoder (BiLSTM or CNN over each word's characters)
      -> dropout -> BiLSTM -> dropout -> per-token softmax, or potentials -> CRF

(Lample et al., 2016; Ma and Hovy, 2016), with padding (token id 0) masked from the embedding on.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from seqlab.layers import CRF, LSTM, CharacterEncoder
from seqlab.layers._checks import check_positive_int, check_rate
from seqlab.layers._frozen import KeepsFrozenLayers
from seqlab.layers.char_encoder import CHAR_ENCODERS
from seqlab.layers.registry import bidirectional
from seqlab.models._training import RestoresItsCompile, TracesTrainingOnce


def bio_transition_constraints(tags):
    """`(forbidden_transitions, forbidden_start_tags)` of a BIO tag list, as `CRF` takes them.

    I-X may only follow B-X or I-X, so O -> I-X, B-Y -> I-X and I-Y -> I-X (Y != X) are
    forbidden, and so is a sequence starting with I-X.

    Args:
        tags: the tag names, id = index (e.g. `["O", "B-PER", "I-PER"]`).

    Returns:
        A list of `[from_id, to_id]` pairs and a list of tag ids.
    """
    ids = {tag: i for i, tag in enumerate(tags)}
    forbidden, starts = [], []
    for tag, to_id in ids.items():
        if not tag.startswith("I-"):
            continue
        starts.append(to_id)
        kind = tag[2:]
        forbidden += [[from_id, to_id] for previous, from_id in ids.items()
                      if previous not in (f"B-{kind}", f"I-{kind}")]
    return forbidden, starts


def _derived_seed(seed, offset):
    """A distinct seed per initializer, so that same-shaped weights start different."""
    return None if seed is None else seed + offset


@keras.saving.register_keras_serializable(package="seqlab")
class SequenceTagger(KeepsFrozenLayers, TracesTrainingOnce, RestoresItsCompile, keras.Model):
    """A BiLSTM tagger over word embeddings and character features, softmax or CRF output.

    Each token's features are its word embedding concatenated with a vector computed from its
    characters (`CharacterEncoder`: a BiLSTM's last states, or a CNN max-pooled over the
    characters); a bidirectional LSTM reads the sentence's features, with dropout before and
    after it, and a dense layer scores every tag at every token. With `use_crf=False` the
    scores are softmax probabilities, trained by cross-entropy averaged over the real tokens;
    with `use_crf=True` they are the potentials of a linear-chain `CRF`, trained by the
    negative log-likelihood of the gold tag sequence averaged over the sentences, and decoded
    by Viterbi (optionally with forbidden transitions, e.g. `bio_transition_constraints`).

    Padding is token id 0 (and char id 0); a padded position changes no output at a real
    position, no loss and no decoded tag.

    The sublayers carry the names of seqlab 0.1.0's functional tagger (`word_embedding`,
    `char_encoder`, `word_bilstm`, `tag_probabilities` or `potentials`, `crf`), so weights
    copy from a 0.1.0 `model.keras` layer by layer by name.

    Args:
        word_vocabulary_size: number of word ids (padding 0 and unknown included).
        char_vocabulary_size: number of character ids (padding 0 and unknown included).
        num_tags: number of tags.
        word_dim: word embedding size.
        char_dim: character embedding size.
        char_units: character BiLSTM units per direction, or CNN filters.
        char_encoder_kind: "lstm" or "cnn".
        char_kernel_size: CNN kernel width in characters.
        units: units per direction of the word BiLSTM.
        dropout: dropout rate before and after the word BiLSTM.
        use_crf: decode with a CRF instead of a per-token softmax.
        forbidden_transitions: with `use_crf`, pairs `[from_id, to_id]` the CRF never
            decodes.
        forbidden_start_tags: with `use_crf`, tag ids that may not start a sentence.
        seed: seed of the initializers and dropout (None: unseeded).

    Call arguments:
        inputs: `(token_ids, char_ids)`, int `[batch, time]` and `[batch, time, chars]`.
        training: whether dropout is active.

    Returns:
        float `[batch, time, num_tags]`: tag probabilities (softmax) or CRF potentials, with
        the padding mask attached. `decode` gives the tag ids, `predict_tag_ids` each
        sentence's without its padding.

    Example:

    ```python
    tags = ["O", "B-PER", "I-PER"]
    forbidden, starts = bio_transition_constraints(tags)
    model = SequenceTagger(word_vocabulary_size=100, char_vocabulary_size=30,
                           num_tags=len(tags), use_crf=True,
                           forbidden_transitions=forbidden, forbidden_start_tags=starts)
    model.compile(keras.optimizers.Adam(1e-3))  # the loss follows from use_crf
    model.fit(dataset, epochs=5)  # ((token_ids, char_ids), tag_ids) batches
    model.decode((token_ids, char_ids))  # int32 [batch, time], 0 at padding
    ```
    """

    def __init__(
        self,
        word_vocabulary_size,
        char_vocabulary_size,
        num_tags,
        word_dim=100,
        char_dim=25,
        char_units=25,
        char_encoder_kind="lstm",
        char_kernel_size=3,
        units=100,
        dropout=0.5,
        use_crf=False,
        forbidden_transitions=None,
        forbidden_start_tags=None,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (("word_vocabulary_size", word_vocabulary_size),
                            ("char_vocabulary_size", char_vocabulary_size),
                            ("num_tags", num_tags), ("word_dim", word_dim),
                            ("char_dim", char_dim), ("char_units", char_units),
                            ("char_kernel_size", char_kernel_size), ("units", units)):
            check_positive_int(name, value)
        check_rate("dropout", dropout)
        if char_encoder_kind not in CHAR_ENCODERS:
            raise ValueError(f"char_encoder_kind must be one of {', '.join(CHAR_ENCODERS)}. "
                             f"Received: char_encoder_kind={char_encoder_kind!r}")
        if not use_crf and (forbidden_transitions or forbidden_start_tags):
            raise ValueError(
                "Forbidden transitions need use_crf=True. Received: use_crf=False, "
                f"forbidden_transitions={forbidden_transitions!r}, "
                f"forbidden_start_tags={forbidden_start_tags!r}"
            )
        self.word_vocabulary_size = word_vocabulary_size
        self.char_vocabulary_size = char_vocabulary_size
        self.num_tags = num_tags
        self.word_dim = word_dim
        self.char_dim = char_dim
        self.char_units = char_units
        self.char_encoder_kind = char_encoder_kind
        self.char_kernel_size = char_kernel_size
        self.units = units
        self.dropout = dropout
        self.use_crf = use_crf
        self.seed = seed

        self.word_embedding = keras.layers.Embedding(
            word_vocabulary_size, word_dim, mask_zero=True, name="word_embedding",
            embeddings_initializer=keras.initializers.RandomUniform(-0.1, 0.1, seed=seed),
        )
        self.char_encoder = CharacterEncoder(
            char_vocabulary_size, char_dim, char_units, kind=char_encoder_kind,
            kernel_size=char_kernel_size, seed=_derived_seed(seed, 1), name="char_encoder",
        )
        self.input_dropout = keras.layers.Dropout(dropout, seed=seed, name="input_dropout")
        self.word_bilstm = bidirectional(
            LSTM(units, return_sequences=True, seed=_derived_seed(seed, 2),
                 kernel_initializer=keras.initializers.GlorotUniform(
                     seed=_derived_seed(seed, 2))),
            name="word_bilstm",
        )
        self.output_dropout = keras.layers.Dropout(
            dropout, seed=_derived_seed(seed, 3), name="output_dropout"
        )
        self.tag_scores = keras.layers.Dense(
            num_tags, activation=None if use_crf else "softmax",
            kernel_initializer=keras.initializers.GlorotUniform(seed=_derived_seed(seed, 4)),
            name="potentials" if use_crf else "tag_probabilities",
            dtype="float32",  # scores in float32 under a mixed-precision policy too
        )
        self.crf = CRF(
            num_tags, forbidden_transitions=forbidden_transitions,
            forbidden_start_tags=forbidden_start_tags, name="crf", dtype="float32",
        ) if use_crf else None
        # Every weight's shape follows from the constructor arguments: built now, the model
        # takes weights (set_weights, BackupAndRestore, a 0.1.0 run's) before its first call.
        self.build()

    def build(self, input_shape=None):
        if self.built:
            return
        self.word_embedding.build((None, None))
        self.char_encoder.build((None, None, None))
        self.word_bilstm.build((None, None, self.word_dim + self.char_encoder.output_dim))
        self.tag_scores.build((None, None, 2 * self.units))
        if self.crf is not None:
            self.crf.build((None, None, self.num_tags))
        self.built = True

    def call(self, inputs, training=False):
        token_ids, char_ids = inputs
        ranks = (len(token_ids.shape), len(char_ids.shape))
        if ranks != (2, 3):  # the character encoder failed with an IndexError of its own
            raise ValueError(f"SequenceTagger reads (token_ids [batch, time], char_ids [batch, "
                             f"time, chars]). Received: shapes {tuple(token_ids.shape)} and "
                             f"{tuple(char_ids.shape)}")
        mask = ops.not_equal(token_ids, 0)
        features = ops.concatenate(
            [self.word_embedding(token_ids), self.char_encoder(char_ids)], axis=-1
        )
        hidden = self.input_dropout(features, training=training)
        hidden = self.word_bilstm(hidden, mask=mask, training=training)
        hidden = self.output_dropout(hidden, training=training)
        # The scores carry the word BiLSTM's mask, so Keras's compiled losses skip the padding.
        return self.tag_scores(hidden)

    def decode(self, inputs):
        """The tag ids: the most probable tag per token (softmax) or the Viterbi path (CRF).

        Args:
            inputs: `(token_ids, char_ids)` as for `call`.

        Returns:
            int32 `[batch, time]`, 0 at padded positions.
        """
        mask = ops.not_equal(inputs[0], 0)
        scores = self(inputs, training=False)
        if self.crf is not None:
            return self.crf(scores, mask=mask)
        tag_ids = ops.cast(ops.argmax(scores, axis=-1), "int32")
        return ops.where(mask, tag_ids, ops.zeros_like(tag_ids))

    def make_decode_function(self):
        """`decode` as a `tf.function` traced once for int32 ids of every batch and length:
        `(token_ids [batch, time], char_ids [batch, time, chars]) -> tag ids int32 [batch, time]`.

        Calling `decode` eagerly runs it op by op; this function runs it as one graph. Make one
        and reuse it (`predict_tag_ids` takes it), or call it from a SavedModel endpoint.
        """
        return tf.function(
            lambda token_ids, char_ids: self.decode((token_ids, char_ids)),
            input_signature=[
                tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None, None], tf.int32)
            ],
        )

    def predict_tag_ids(self, batches, decode_function=None):
        """The decoded tag ids of every sentence of `batches`, without its padding.

        Args:
            batches: an iterable of `(token_ids, char_ids, ...)` batches, int32 with id 0 at
                padding (e.g. `seqlab.data.conll.make_tagging_dataset`'s; whatever follows
                the char ids is ignored).
            decode_function: a `make_decode_function()` to reuse (default: a new one).

        Returns:
            One list of tag ids per sentence, in order, as long as the sentence.
        """
        decode_function = decode_function or self.make_decode_function()
        tag_ids = []
        for token_ids, char_ids, *_ in batches:
            decoded = decode_function(token_ids, char_ids).numpy()
            lengths = np.sum(np.asarray(token_ids) != 0, axis=1)
            tag_ids += [row[:n].tolist() for row, n in zip(decoded, lengths)]
        return tag_ids

    def compile(self, optimizer="adam", loss="auto", **kwargs):
        """Configures training; `loss="auto"` chooses the tagger's own loss.

        Args:
            optimizer: as for `keras.Model.compile`.
            loss: "auto" (the default): sparse cross-entropy for the softmax tagger, the CRF
                negative log-likelihood for the CRF tagger (which takes no other loss).
            **kwargs: the other arguments of `keras.Model.compile`.
        """
        if self.use_crf:
            if loss not in ("auto", None):
                raise ValueError(
                    "A CRF tagger trains on its own negative log-likelihood; compile it "
                    f"with loss='auto'. Received: loss={loss!r}"
                )
            loss = None
        elif loss == "auto":
            loss = "sparse_categorical_crossentropy"
        super().compile(optimizer=optimizer, loss=loss, **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self.crf is None:
            return super().compute_loss(x, y, y_pred, sample_weight, training=training)
        mask = ops.not_equal(x[0], 0)
        per_sentence = -self.crf.log_likelihood(y_pred, y, mask)
        if sample_weight is not None:
            per_sentence *= ops.cast(ops.reshape(sample_weight, (-1,)), per_sentence.dtype)
        # Keras's own losses are divided by the replicas in sync, whose gradients are summed;
        # its train_step multiplies the reported loss back.
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        loss = ops.mean(per_sentence) / replicas
        for extra in self.losses:
            loss += ops.sum(ops.cast(extra, loss.dtype))
        return loss

    def get_config(self):
        config = super().get_config()
        config.update(
            word_vocabulary_size=self.word_vocabulary_size,
            char_vocabulary_size=self.char_vocabulary_size,
            num_tags=self.num_tags,
            word_dim=self.word_dim,
            char_dim=self.char_dim,
            char_units=self.char_units,
            char_encoder_kind=self.char_encoder_kind,
            char_kernel_size=self.char_kernel_size,
            units=self.units,
            dropout=self.dropout,
            use_crf=self.use_crf,
            forbidden_transitions=self.crf.forbidden_transitions if self.crf else None,
            forbidden_start_tags=self.crf.forbidden_start_tags if self.crf else None,
            seed=self.seed,
        )
        return config
