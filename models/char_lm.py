"""`CharLanguageModel`: char ids in, next-char logits out, and generation with carried state;
`TextGenerator`: the same generation from strings to strings, in the graph."""

import numbers
import random

import keras
import numpy as np
import tensorflow as tf

from seqlab.layers import GRU, LSTM, reset_states
from seqlab.layers._frozen import KeepsFrozenLayers
from seqlab.models._training import TracesTrainingOnce
from seqlab.models.samplers import BeamSampler, get_sampler
from seqlab.models.serving import checked_ids, checked_utf8, dynamic_shape

RECURRENT_LAYERS = {"gru": GRU, "lstm": LSTM}
# The ids a `keras.layers.StringLookup` with a mask token and one OOV token gives them.
PADDING_ID, UNKNOWN_ID = 0, 1
# The prompt an empty prompt is read as: the model needs one character to start from.
EMPTY_PROMPT = "\n"
# Added to the logits of the ids that generation must never choose. Finite, so that servers
# can put the logits in JSON.
NEVER = -1e9
# The most characters one prompt of the exported `generate` signature may ask for: a larger
# `num_chars` is refused inside the graph (a request must not run without bound).
MAX_NUM_CHARS = 100_000
# The most character steps one request of `generate` may run: prompts x the largest num_chars.
# Every prompt steps until the longest continuation ends, so this, not the sum of num_chars, is
# the work: 1,000 prompts x 5,000 characters (5,000,000) took 28 s on 2 CPU cores, so a request
# stays within seconds; one prompt of MAX_NUM_CHARS fits, and so do 1,000 prompts of 1,000.
MAX_REQUEST_STEPS = 1_000_000
# The most prompt characters one request of `generate` may hold: prompts x the longest prompt
# (the padded matrix the model reads, keeping the states and logits of every character).
MAX_PROMPT_CHARS = 100_000


def suppress_ids(logits, ids):
    """`logits [..., vocab]` with `NEVER` added at `ids` (Python ints): no sampler picks them."""
    if not ids:
        return logits
    bias = np.zeros(logits.shape[-1], np.float32)
    bias[list(ids)] = NEVER
    return logits + bias


@keras.saving.register_keras_serializable(package="seqlab")
class CharLanguageModel(KeepsFrozenLayers, TracesTrainingOnce, keras.Model):
    """A character language model: embedding, stacked seqlab GRU or LSTM layers, dense logits.

    `char_ids [batch, time] -> logits [batch, time, vocabulary_size]`: at every position the
    scores of the next character. The model works on ids (the character vocabulary, with id 0
    for padding, is the caller's); `call` reads every id as a character, which suits training
    windows (they hold no padding).

    Generation never re-reads the text: `call_with_states` reads a prompt from explicit states
    (id 0 is padding there: masked, the state carried over), `step` feeds one id per row, and
    `generate` runs a sampler (`seqlab.models.samplers`) over `step` in one `tf.while_loop`.
    These three use the recurrent layers' cells and time loop directly, so they work the same
    on a stateful model (any batch size, its stored states untouched).

    With `stateful=True` the recurrent layers carry their states from batch to batch (Keras's
    stateful RNNs): every batch must hold `batch_size` rows, and the states are reset where the
    streams start again (`ResetStatesAtEpochStart` in `fit`, or `seqlab.layers.reset_states`).

    The sublayers' names (`embedding`, `gru_0` or `lstm_0` ..., `logits`) are those of seqlab
    0.1.0's functional char-RNN, so the weights of runs it wrote copy over by name.

    Args:
        vocabulary_size: number of ids, padding included.
        kind: "gru" or "lstm".
        units: units per recurrent layer.
        layers: stacked recurrent layers.
        embedding_dim: size of the character embedding; 0 feeds one-hot vectors (a fixed
            identity embedding of size `vocabulary_size`).
        dropout: dropout rate of each recurrent layer's inputs (training only).
        stateful: carry the recurrent states from batch to batch.
        batch_size: rows per batch; required with `stateful=True`, ignored otherwise.
        seed: seed of the dropout masks (layer i uses `seed + i`).

    Example:

    ```python
    model = CharLanguageModel(vocabulary_size=40, units=64)
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(dataset, epochs=2)  # (ids[:, :-1], ids[:, 1:]) windows, int32
    tokens = model.generate([[5, 9, 12]], num_steps=20, sampler="greedy")  # int32 [1, 20]
    ```
    """

    def __init__(self, vocabulary_size, kind="gru", units=256, layers=1, embedding_dim=64,
                 dropout=0.0, stateful=False, batch_size=None, seed=None, **kwargs):
        if kind not in RECURRENT_LAYERS:
            raise ValueError(
                f"kind must be one of {', '.join(RECURRENT_LAYERS)}. Received: kind={kind!r}"
            )
        for name, value, least in (("vocabulary_size", vocabulary_size, 2), ("units", units, 1),
                                   ("layers", layers, 1), ("embedding_dim", embedding_dim, 0)):
            if value < least:
                raise ValueError(f"{name} must be at least {least}. Received: {name}={value}")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must lie in [0, 1). Received: dropout={dropout}")
        if stateful and (batch_size is None or batch_size < 1):
            raise ValueError(
                "a stateful model needs its batch size (at least 1). Received: "
                f"batch_size={batch_size}"
            )
        kwargs.setdefault("name", f"charrnn_{kind}")
        super().__init__(**kwargs)
        self.vocabulary_size, self.kind, self.units = vocabulary_size, kind, units
        self.num_layers, self.embedding_dim, self.dropout = layers, embedding_dim, dropout
        self.stateful, self.batch_size, self.seed = stateful, batch_size, seed
        if embedding_dim == 0:
            # One-hot inputs, as in the seeds: a fixed identity embedding.
            self.embedding = keras.layers.Embedding(
                vocabulary_size, vocabulary_size, embeddings_initializer="identity",
                trainable=False, name="embedding",
            )
        else:
            self.embedding = keras.layers.Embedding(vocabulary_size, embedding_dim,
                                                    name="embedding")
        self.recurrent = [
            RECURRENT_LAYERS[kind](
                units,
                return_sequences=True,
                dropout=dropout,
                stateful=stateful,
                seed=None if seed is None else seed + index,
                name=f"{kind}_{index}",
            )
            for index in range(layers)
        ]
        # Logits in float32 under a mixed-precision policy too (sampling reads them).
        self.head = keras.layers.Dense(vocabulary_size, name="logits", dtype="float32")

    def build(self, input_shape=None):
        # Built explicitly (not by a call), so that a stateful model's stored states are not
        # advanced by building it.
        batch = self.batch_size if self.stateful else None
        self.embedding.build((batch, None))
        width = self.embedding.output_dim
        for layer in self.recurrent:
            layer.build((batch, None, width))
            width = self.units
        self.head.build((batch, None, self.units))

    def call(self, char_ids, training=False):
        hidden = self.embedding(char_ids)
        for layer in self.recurrent:
            hidden = layer(hidden, training=training)
        return self.head(hidden)

    # Generation. The states are a flat list, layer by layer: [h] per GRU, [h, c] per LSTM.

    @property
    def state_names(self):
        """The names of the states, layer by layer: `gru_0_h`, or `lstm_0_h, lstm_0_c`."""
        suffixes = ("h", "c") if self.kind == "lstm" else ("h",)
        return [f"{layer.name}_{suffix}" for layer in self.recurrent for suffix in suffixes]

    def initial_states(self, batch_size):
        """Zero states for `batch_size` rows: a list of float32 `[batch_size, units]`."""
        return [tf.zeros([batch_size, self.units]) for _ in self.state_names]

    def call_with_states(self, char_ids, states):
        """Reads `char_ids` from `states`; id 0 is padding (masked: the state carried over).

        Args:
            char_ids: int `[batch, time]`.
            states: the list of `initial_states`' structure.

        Returns:
            `(logits [batch, time, vocabulary_size], new states)`.
        """
        self._build_once()
        char_ids = tf.convert_to_tensor(char_ids, tf.int32)
        mask = tf.not_equal(char_ids, PADDING_ID)
        hidden = self.embedding(char_ids)
        new_states, used = [], 0
        for layer in self.recurrent:
            count = self._state_count(layer)
            # The layer's own loop without `RNN.__call__`, which would write the states of a
            # stateful layer.
            _, hidden, layer_states = layer.inner_loop(
                hidden, list(states[used:used + count]), mask, training=False,
                final_states=True,
            )
            new_states.extend(layer_states)
            used += count
        return self.head(hidden), new_states

    def step(self, char_ids, states):
        """Feeds one id per row: `char_ids` int `[batch]` -> `(logits [batch, vocab], states)`.

        The same function as `call_with_states` on one time step, computed by the cells
        directly (no time loop, no mask).
        """
        self._build_once()
        hidden = self.embedding(tf.convert_to_tensor(char_ids, tf.int32))
        new_states, used = [], 0
        for layer in self.recurrent:
            count = self._state_count(layer)
            hidden, layer_states = layer.cell(hidden, list(states[used:used + count]),
                                              training=False)
            new_states.extend(layer_states)
            used += count
        return self.head(hidden), new_states

    def generate(self, prompt_ids, num_steps, sampler="greedy", suppressed_ids=(PADDING_ID,)):
        """Reads each prompt once, then chooses `num_steps` ids per row with `sampler`.

        Works eagerly and inside a `tf.function` or SavedModel alike.

        Args:
            prompt_ids: the prompts: a list of lists of ids, a `tf.RaggedTensor`, or an int
                `[batch, time]` array right-padded with 0. Every prompt needs at least one id.
            num_steps: ids to choose per row (int or scalar int32 tensor).
            sampler: a `seqlab.models.samplers.Sampler` or a name for `get_sampler`; not
                a `BeamSampler` (it returns hypotheses, not one sequence per prompt).
            suppressed_ids: ids never chosen (padding by default; a vocabulary may add its
                unknown-character id), each in `[0, vocabulary_size)`.

        Returns:
            int32 `[batch, num_steps]`, the chosen ids.

        Raises:
            ValueError: a `BeamSampler`, ids that are not integers or not `[batch, time]`, a
                suppressed id outside the vocabulary. Ids outside the vocabulary and an empty
                prompt are an `InvalidArgumentError` when the graph runs.
        """
        if isinstance(sampler, str):
            sampler = get_sampler(sampler)
        if isinstance(sampler, BeamSampler):
            raise ValueError("generate chooses one sequence per prompt; BeamSampler returns "
                             "hypotheses. Received: sampler=" + repr(sampler))
        for index in suppressed_ids:
            # numpy would take -1 as the last id and refuse 500 with an IndexError.
            if (isinstance(index, bool) or not isinstance(index, numbers.Integral)
                    or not 0 <= index < self.vocabulary_size):
                raise ValueError(f"suppressed_ids must be ids in [0, vocabulary_size="
                                 f"{self.vocabulary_size}). Received: {index!r}")
        if isinstance(prompt_ids, (list, tuple)):
            # Without a dtype: float ids stay floats, refused below rather than truncated.
            prompt_ids = tf.ragged.constant(prompt_ids)
        if isinstance(prompt_ids, tf.RaggedTensor):
            prompt_ids = prompt_ids.to_tensor(PADDING_ID)
        prompt_ids = checked_ids(prompt_ids, "prompt_ids", self.vocabulary_size,
                                 "vocabulary_size")
        lengths = tf.reduce_sum(tf.cast(tf.not_equal(prompt_ids, PADDING_ID), tf.int32), axis=1)
        tf.debugging.assert_positive(lengths, message="every prompt needs at least one id")
        logits, states = self.call_with_states(
            prompt_ids, self.initial_states(tf.shape(prompt_ids)[0])
        )
        last = tf.gather(suppress_ids(logits, suppressed_ids), lengths - 1, batch_dims=1)

        def step_fn(char_ids, states):
            logits, states = self.step(char_ids, states)
            return suppress_ids(logits, suppressed_ids), states

        tokens, _, _ = sampler(step_fn, last, states, num_steps)
        return tokens

    def _build_once(self):
        if not self.built:
            self.build()

    @staticmethod
    def _state_count(layer):
        sizes = layer.cell.state_size
        return len(sizes) if isinstance(sizes, (list, tuple)) else 1

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "kind": self.kind,
            "units": self.units,
            "layers": self.num_layers,
            "embedding_dim": self.embedding_dim,
            "dropout": self.dropout,
            "stateful": self.stateful,
            "batch_size": self.batch_size,
            "seed": self.seed,
        }


# The input signature of `TextGenerator.generate_strings` as a graph (and of the SavedModel
# signature `generate` of `seqlab charrnn`): one value of each per prompt.
GENERATE_SIGNATURE = [
    tf.TensorSpec([None], tf.string, name="prompt"),
    tf.TensorSpec([None], tf.int32, name="num_chars"),
    tf.TensorSpec([None], tf.float32, name="temperature"),
    tf.TensorSpec([None], tf.int32, name="seed"),
]


class TextGenerator:
    """Text in, text out: a `CharLanguageModel` with the lookup layers of its characters.

    Strings become ids with `lookup`, `CharLanguageModel.generate` continues them with a
    random / top-k sampler (temperature 0 is greedy), and `inverse` turns the ids back into
    characters; all of it TensorFlow ops, so `generate_strings` also serves in a SavedModel.

    Args:
        model: a `CharLanguageModel`.
        lookup: a `keras.layers.StringLookup` from characters to the model's ids.
        inverse: the inverse `StringLookup` (`invert=True`), ids to characters.
        suppressed_ids: ids never generated: padding and the unknown character by default
            (ids 0 and 1 of a `StringLookup` with `mask_token=""` and one OOV token).

    Example:

    ```python
    vocabulary = seqlab.data.text.CharVocabulary(chars)
    generator = TextGenerator(model, vocabulary.lookup, vocabulary.inverse)
    generator.generate("ROMEO:", 100, temperature=0.8, seed=1)  # "ROMEO:" + 100 characters
    ```
    """

    def __init__(self, model, lookup, inverse, suppressed_ids=(PADDING_ID, UNKNOWN_ID)):
        self.model, self.lookup, self.inverse = model, lookup, inverse
        self.suppressed_ids = tuple(suppressed_ids)
        self._compiled = {}  # generate_strings as a tf.function, per top_k

    def generate_strings(self, prompt, num_chars, temperature, seed, top_k=None):
        """Prompts and their continuations, in TensorFlow ops.

        Args:
            prompt: string `[batch]`; an empty prompt is read as a line break.
            num_chars: int32 `[batch]`, characters to add to each prompt (negative: 0).
            temperature: float32 `[batch]`; 0 is greedy (argmax).
            seed: int32 `[batch]`, the sampling seed of each row.
            top_k: optional Python int: sample among the k most probable characters.

        Returns:
            string `[batch]`: each prompt followed by its continuation.
        """
        read = tf.where(tf.strings.length(prompt) > 0, prompt, EMPTY_PROMPT)
        ids = tf.cast(self.lookup(tf.strings.unicode_split(read, "UTF-8")), tf.int32)
        num_chars = tf.maximum(tf.cast(num_chars, tf.int32), 0)
        num_steps = tf.maximum(tf.reduce_max(num_chars), 0)
        sampler = get_sampler("random", temperature=temperature, top_k=top_k, seed=seed)
        tokens = self.model.generate(ids, num_steps, sampler, suppressed_ids=self.suppressed_ids)
        kept = tf.RaggedTensor.from_tensor(tokens, lengths=tf.minimum(num_chars, num_steps))
        continuation = tf.strings.reduce_join(self.inverse(tf.cast(kept, tf.int64)), axis=-1)
        return prompt + continuation

    def serve_strings(self, prompt, num_chars, temperature, seed):
        """`generate_strings` for the SavedModel signature `generate`: the inputs checked
        inside the graph first, and an empty batch answered with an empty batch.

        Refused with `tf.errors.InvalidArgumentError` naming the argument: an input that is not
        a vector (rank 1), inputs of different lengths, a prompt that is not UTF-8, `num_chars`
        outside `[0, MAX_NUM_CHARS]`, a `temperature` that is negative, NaN or infinite, a
        negative `seed` (as `--seed`); and, before any work, a request of more than
        `MAX_REQUEST_STEPS` steps (prompts x the largest `num_chars`) or `MAX_PROMPT_CHARS`
        prompt characters (prompts x the longest prompt).
        """
        shapes = {name: dynamic_shape(value) for name, value in (
            ("prompt", prompt), ("num_chars", num_chars), ("temperature", temperature),
            ("seed", seed))}
        ranks = [
            tf.debugging.assert_equal(
                tf.size(shape), 1, message=f"{name} must be a vector [batch] (rank 1)")
            for name, shape in shapes.items()
        ]
        with tf.control_dependencies(ranks):
            batch = shapes["prompt"][0]
            checks = [
                tf.debugging.assert_equal(
                    shape[0], batch,
                    message=f"{name} must have one value per prompt (the length of prompt)")
                for name, shape in shapes.items() if name != "prompt"
            ]
        with tf.control_dependencies(checks):
            # Its bytes come back in the text: a prompt that is not UTF-8 made an answer that
            # the client's decode refused.
            prompt = checked_utf8(prompt, "prompt")
            checks = [
                tf.debugging.assert_greater_equal(
                    num_chars, 0,
                    message=f"num_chars must lie in [0, MAX_NUM_CHARS={MAX_NUM_CHARS}]"),
                tf.debugging.assert_less_equal(
                    num_chars, MAX_NUM_CHARS,
                    message=f"num_chars must lie in [0, MAX_NUM_CHARS={MAX_NUM_CHARS}]"),
                tf.debugging.assert_greater_equal(
                    temperature, 0.0, message="temperature must be finite and >= 0"),
                tf.debugging.assert_less(
                    temperature, float("inf"), message="temperature must be finite and >= 0"),
                # As `seqlab charrnn predict --seed` refuses it: a negative seed was answered.
                tf.debugging.assert_non_negative(
                    seed, message=f"seed must lie in [0, {2**31 - 1}]"),
            ]
            # The work of the whole request: every row runs as many steps as the longest
            # continuation, and reads as many characters as the longest prompt (an empty prompt
            # is read as one). In int64: rows x steps may pass 2**31.
            rows = tf.cast(batch, tf.int64)
            longest = tf.reduce_max(tf.concat([tf.cast(num_chars, tf.int64), [0]], axis=0))
            prompt_chars = tf.reduce_max(tf.concat(
                [tf.cast(tf.strings.length(prompt, unit="UTF8_CHAR"), tf.int64), [1]], axis=0))
            checks += [
                tf.debugging.assert_less_equal(
                    rows * longest, tf.constant(MAX_REQUEST_STEPS, tf.int64),
                    message=f"num_chars must keep prompts x the largest num_chars at most "
                            f"MAX_REQUEST_STEPS={MAX_REQUEST_STEPS} (every prompt runs as many "
                            "steps as the longest; send fewer prompts per request)"),
                tf.debugging.assert_less_equal(
                    rows * prompt_chars, tf.constant(MAX_PROMPT_CHARS, tf.int64),
                    message=f"prompt must keep prompts x the longest prompt at most "
                            f"MAX_PROMPT_CHARS={MAX_PROMPT_CHARS} characters (send fewer or "
                            "shorter prompts per request)"),
            ]
        with tf.control_dependencies(checks):
            prompt = tf.identity(prompt)
        return tf.cond(
            tf.size(prompt) > 0,
            lambda: self.generate_strings(prompt, num_chars, temperature, seed),
            lambda: tf.zeros([0], tf.string),
        )

    def generate(self, prompt, num_chars, temperature=1.0, seed=0, top_k=None):
        """`generate_strings` from Python, as one compiled graph: the prompt (a string or a
        list of them) followed by its continuation (a list for a list of prompts)."""
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        if seed is None:  # as RandomSampler takes it: a fresh seed
            seed = random.SystemRandom().randrange(2**31)
        # The signature's int32: 2**40 failed binding the inputs, 1.7 was read as 1; and a
        # negative seed, which the SavedModel and --seed refuse, was taken here.
        if (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)
                or not 0 <= seed < 2**31):
            raise ValueError(f"seed must be a whole number in [0, 2147483647] (as the "
                             f"SavedModel's), or None for a fresh one. Received: seed={seed!r}")
        # As the SavedModel refuses it: -1 was read as 0 and 2.9 as 2, without a word.
        if (isinstance(num_chars, bool) or not isinstance(num_chars, numbers.Integral)
                or not 0 <= num_chars <= MAX_NUM_CHARS):
            raise ValueError(f"num_chars must be a whole number in [0, MAX_NUM_CHARS="
                             f"{MAX_NUM_CHARS}]. Received: num_chars={num_chars!r}")
        if not 0 <= temperature <= float(np.finfo(np.float32).max):
            raise ValueError(f"temperature must be 0 (greedy) or a positive float32 number. "
                             f"Received: temperature={temperature}")
        if top_k not in self._compiled:
            self._compiled[top_k] = tf.function(
                lambda *inputs: self.generate_strings(*inputs, top_k=top_k),
                input_signature=GENERATE_SIGNATURE, autograph=False,
            )
        batch = len(prompts)
        if not batch:  # no prompt, no text (a graph cannot stack an empty list of strings)
            return []
        texts = self._compiled[top_k](
            tf.constant(prompts, tf.string),
            tf.fill([batch], int(num_chars)),
            tf.fill([batch], float(temperature)),
            tf.fill([batch], int(seed)),
        )
        texts = [text.decode("utf-8") for text in texts.numpy()]
        return texts[0] if isinstance(prompt, str) else texts


class ResetStatesAtEpochStart(keras.callbacks.Callback):
    """Zeroes a stateful model's states when an epoch starts and before each validation.

    Each epoch then reads every stream from its beginning, and validation streams do not
    inherit the state of the training streams.
    """

    def on_epoch_begin(self, epoch, logs=None):
        reset_states(self.model)

    def on_test_begin(self, logs=None):
        reset_states(self.model)
