"""`TextClassifier`, `TextClassifierEnsemble` and `AutoTextClassifier`: texts in, class
probabilities out.

    raw strings -> TextVectorization -> token ids -> token dropout -> embedding -> dropout
      -> recurrent or Transformer encoder layers -> masked pooling -> dropout -> softmax

Token id 0 is padding: the mask `ids != 0` reaches every layer and the pooling, so padding
changes no output. A text longer than `sequence_length` tokens is cut: at the end (its first
tokens kept, Keras's `TextVectorization` and seqlab 0.1.0) or at the start (its last tokens kept,
`truncate="start"`), inside the model, so that `.keras` files and SavedModels cut alike.

The `ngrams` kind is the baseline beside these: a logistic regression on which word n-grams
occur in a text. An ensemble averages the probabilities of classifiers built alike from
different seeds, each member trained on its own (`MemberEarlyStopping` stops each at its own
best epoch).
"""

import html
import html.entities

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from seqlab.layers import (
    GRU,
    LSTM,
    MaskedMaxPooling,
    MaskedMeanPooling,
    TokenAndPositionEmbedding,
    TokenDropout,
    TransformerEncoderLayer,
)
from seqlab.layers._checks import check_positive_int, check_rate
from seqlab.layers._frozen import KeepsFrozenLayers
from seqlab.layers.registry import bidirectional
from seqlab.models._training import (
    ForgetsItsStepsOnANewChoice,
    RestoresItsCompile,
    TracesTrainingOnce,
)

RECURRENT_LAYERS = {"gru": GRU, "lstm": LSTM, "bilstm": LSTM}
KINDS = (*RECURRENT_LAYERS, "transformer", "cnn", "ngrams")
# Width of the cnn kind's convolution window, in tokens.
CNN_KERNEL_SIZE = 5
POOLINGS = ("mean", "max", "last")
# Which end of a text longer than `sequence_length` tokens is cut off.
TRUNCATIONS = ("end", "start")
STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation", None)
# Seed offset between ensemble members (a member's layers use seed + 0, 1, ... per layer).
MEMBER_SEED_STRIDE = 1000


# Unicode's white space: TensorFlow's whitespace split parts words at ASCII's alone, so
# "good\xa0movie" (a no-break space, common in text taken from web pages) was one word, out of
# every vocabulary; U+2000-U+200A, U+2028, U+3000 and the rest likewise. The same class as the
# translation tokenizer's (`data/translation.py`).
UNICODE_SPACE = r"[\s\pZ\x0b\x1c-\x1f\x85]+"


# Punctuation as Keras's standardization strips it, for every script: Unicode's punctuation
# (« » … “ ” ’ ¡ ¿ ， 。 ؟ besides ASCII's) and the ASCII symbols Keras strips too; other
# symbols (emoji, currency signs) are kept, as Keras keeps them.
UNICODE_PUNCTUATION = r"[\pP$+<=>^`|~]"

# Which characters a classifier reads as white space, capitals and punctuation: "unicode"
# (`split_at_white_space` and `UNICODE_STANDARDIZE`), or "ascii", TensorFlow's and Keras's own
# rules, which part words at ASCII's white space, lower-case A-Z and strip ASCII's punctuation
# alone ("Отлично" and "отлично", "«good»" and "good" were different words), and with which
# a classifier saved before the setting was recorded loads, reading texts as it was trained.
# "unicode_html", the default since, is "unicode" with HTML tags (`<br />`, `<p>`, `</i>`) read
# as white space, then HTML's character references decoded (`html_as_text`): IMDB's reviews part
# paragraphs with "<br /><br />", whose brackets and slash the punctuation strip removed, gluing
# "br" to the word before ("superb.<br /><br />Was" read as "superbbr", "br", "was"), and write
# "don&#39;t" for "don't". A classifier saved with "unicode" keeps it.
CHARACTER_RULES = ("unicode_html", "unicode", "ascii")

# The names of HTML's elements (HTML 5's and the old presentational ones), in any case.
HTML_ELEMENTS = (
    "a abbr acronym address area article aside audio b base basefont bdi bdo big blink "
    "blockquote body br button canvas caption center cite code col colgroup data datalist dd "
    "del details dfn dialog dir div dl dt em embed fieldset figcaption figure font footer form "
    "frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins kbd "
    "label legend li link main map mark marquee menu meta meter nav nobr noframes noscript "
    "object ol optgroup option output p param picture pre progress q rp rt ruby s samp script "
    "search section select small source span strike strong style sub summary sup table tbody "
    "td template textarea tfoot th thead time title tr track tt u ul var video wbr"
).split()
# An attribute in a tag: a name and `=` and a value, quoted (without brackets) or not.
_HTML_ATTRIBUTE = (r"[A-Za-z_:][-A-Za-z0-9_:.]*\s*=\s*"
                   r"(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s\"'<>`]+)")
# An HTML tag, read as white space: a comment (`<!-- ... -->`), a `<!DOCTYPE ...>`, or `<` or
# `</` and the name of an HTML element, then attributes (`name=value`), and `>` or `/>`. So
# `<br />`, `<br>`, `<P>`, `</i>`, `<p class="x">`, `<a href=x>` are tags, and "x < y > z",
# "<3" and "a<b and c>d" are text. The last looks like the tag `<b>` (bold) with the bare
# attributes "and" and "c", which HTML allows (`<input disabled>`): where the name alone cannot
# tell text from a tag, the attributes do, so bare attributes are not read as a tag's (the rare
# `<td nowrap>` stays text). The element names keep "<sigh>", "<spoiler>", "List<String>" and
# "x<y>z" text; "a<b>c" is a tag.
HTML_TAG = (r"<!--(?s:.*?)-->|<!(?i:doctype)(?:\s[^<>]*)?>"
            r"|</?(?i:" + "|".join(HTML_ELEMENTS) + r")(?:\s+" + _HTML_ATTRIBUTE + r")*\s*/?>")

# HTML's character references, each ending with `;`: a name of HTML 5's (`&amp;`, `&eacute;`),
# or a code point in decimal (`&#39;`) or hexadecimal (`&#x27;`).
HTML_REFERENCE = r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{0,31});"
_NUMERIC_REFERENCE = r"&#[xX]?[0-9a-fA-F]+;"
# Of a named reference, its text (`html.unescape`'s, by `html.entities.html5`).
_NAMED_REFERENCES = {f"&{name}": text for name, text in html.entities.html5.items()
                     if name.endswith(";")}
# Of a numeric reference to a code point below 160, its text by `html.unescape` (which reads
# 128-159 as Windows-1252's characters, 0 as U+FFFD and most controls as nothing).
_LOW_CODE_POINTS = [html.unescape(f"&#{code};") for code in range(160)]
# A byte UTF-8 never holds: it marks the references in a text, to split it at them.
_REFERENCE_MARK = b"\xff"


# Invisible characters that only mark (a byte-order mark, left-to-right and right-to-left
# marks, the word joiner): dropped, or "\u200fgood\u200e" was a word of its own. The zero-width
# space parts words; the zero-width (non-)joiners, which shape Persian, Indic scripts and emoji,
# are kept.
INVISIBLE_MARKS = "[\ufeff\u200e\u200f\u2060]"


@keras.saving.register_keras_serializable(package="seqlab")
def split_at_white_space(texts):
    """`TextVectorization`'s split: words parted by any Unicode white space (`str.split()`'s
    rule) and the zero-width space, not ASCII's white space alone; `INVISIBLE_MARKS` dropped."""
    texts = tf.strings.regex_replace(texts, INVISIBLE_MARKS, "")
    return tf.strings.split(tf.strings.regex_replace(texts, UNICODE_SPACE + "|\u200b", " "))


@keras.saving.register_keras_serializable(package="seqlab")
def lower_and_strip_unicode_punctuation(texts):
    """Keras's "lower_and_strip_punctuation" for every script: capitals of any alphabet
    lower-cased (UTF-8), `UNICODE_PUNCTUATION` removed."""
    return strip_unicode_punctuation(lower_unicode(texts))


@keras.saving.register_keras_serializable(package="seqlab")
def lower_unicode(texts):
    """Keras's "lower" for every script (it lower-cases A-Z alone)."""
    return tf.strings.lower(texts, encoding="utf-8")


@keras.saving.register_keras_serializable(package="seqlab")
def strip_unicode_punctuation(texts):
    """Keras's "strip_punctuation" for every script (`UNICODE_PUNCTUATION`)."""
    return tf.strings.regex_replace(texts, UNICODE_PUNCTUATION, "")


UNICODE_STANDARDIZE = {
    "lower_and_strip_punctuation": lower_and_strip_unicode_punctuation,
    "lower": lower_unicode,
    "strip_punctuation": strip_unicode_punctuation,
    None: None,
}


@keras.saving.register_keras_serializable(package="seqlab")
def html_tags_as_spaces(texts):
    """Every `HTML_TAG` replaced by a space."""
    return tf.strings.regex_replace(texts, HTML_TAG, " ")


def _code_point_text(references):
    """The text of numeric references (`string[M]`, each `&#...;`), as `html.unescape` reads
    them: U+FFFD for a surrogate, a code point beyond U+10FFFF and 0; nothing for a
    non-character or a control; Windows-1252's characters for 128-159; else the code point."""
    digits = tf.strings.regex_replace(references, r"^&#[xX]?0*|;$", "")
    hexadecimal = tf.strings.regex_full_match(references, r"&#[xX].*")
    # Eight digits at most (up to 0xFFFFFFFF), read as 8 bytes: right-aligned, zero-padded.
    padded = tf.strings.substr(tf.strings.join(["00000000", digits]), -8, 8)
    values = tf.reshape(tf.cast(tf.io.decode_raw(padded, tf.uint8), tf.int64), [-1, 8])
    values = tf.where(values <= ord("9"), values - ord("0"), (values | 32) - ord("a") + 10)
    base = tf.where(hexadecimal, tf.constant(16, tf.int64), tf.constant(10, tf.int64))
    code = tf.reduce_sum(values * base[:, None] ** tf.range(7, -1, -1, dtype=tf.int64), axis=1)
    code = tf.where(tf.strings.length(digits) > 8, tf.constant(0x110000, tf.int64), code)
    replaced = ((code >= 0xD800) & (code <= 0xDFFF)) | (code > 0x10FFFF)
    dropped = ((code >= 0xFDD0) & (code <= 0xFDEF)) | ((code & 0xFFFE) == 0xFFFE)
    code = tf.where(replaced, tf.constant(0xFFFD, tf.int64), code)
    text = tf.strings.unicode_encode(tf.cast(code, tf.int32)[:, None], "UTF-8")
    low = tf.gather(tf.constant(_LOW_CODE_POINTS), tf.minimum(code, len(_LOW_CODE_POINTS) - 1))
    text = tf.where(code < len(_LOW_CODE_POINTS), low, text)
    return tf.where(dropped & ~replaced, "", text)


def _named_text(references):
    """The text of named references (`string[M]`, each `&name;`), or the reference itself
    where HTML 5 has no such name. Looked up by their fingerprints, sorted (comparing each
    with the 2,125 names took 10 times as long as the rest of `html_as_text`)."""
    names = tf.constant(list(_NAMED_REFERENCES))
    texts = tf.constant(list(_NAMED_REFERENCES.values()))
    fingerprints = tf.strings.to_hash_bucket_fast(names, 2**62)
    order = tf.argsort(fingerprints)
    at = tf.searchsorted(tf.gather(fingerprints, order),
                         tf.strings.to_hash_bucket_fast(references, 2**62))
    index = tf.gather(order, tf.minimum(at, len(_NAMED_REFERENCES) - 1))
    found = tf.equal(tf.gather(names, index), references)
    return tf.where(found, tf.gather(texts, index), references)


@keras.saving.register_keras_serializable(package="seqlab")
def decode_html_references(texts):
    """HTML's character references (`HTML_REFERENCE`) of the texts decoded, in one pass (so
    "&amp;lt;" reads "&lt;"), in the graph: as Python's `html.unescape` decodes each reference
    that ends with `;` ("don&#39;t" reads "don't", "&nbsp;" a no-break space). Those without
    their `;` ("&amp ", "&#39 "), which `html.unescape` also decodes, stay as they are, and so
    does "&name;" of a name HTML 5 lacks.

    `html.unescape` itself runs in Python, not in a TensorFlow graph (a classifier's
    `TextVectorization` and its SavedModel), hence this: the texts are split at their
    references (each marked by the byte 0xFF, which UTF-8 text never holds: one that a text
    that is not UTF-8 holds is dropped), which are decoded and joined with the rest."""
    texts = tf.convert_to_tensor(texts, tf.string)
    marked = tf.strings.regex_replace(tf.reshape(texts, [-1]), HTML_REFERENCE,
                                      _REFERENCE_MARK + b"\\0" + _REFERENCE_MARK)
    pieces = tf.strings.split(marked, sep=_REFERENCE_MARK)
    flat = pieces.flat_values
    where = tf.where(tf.strings.regex_full_match(flat, HTML_REFERENCE))
    references = tf.gather_nd(flat, where)
    numeric = tf.strings.regex_full_match(references, _NUMERIC_REFERENCE)
    decoded = tf.where(numeric, _code_point_text(tf.where(numeric, references, "&#0;")),
                       _named_text(references))
    flat = tf.tensor_scatter_nd_update(flat, where, decoded)
    joined = tf.strings.reduce_join(pieces.with_flat_values(flat), axis=-1)
    return tf.reshape(joined, tf.shape(texts))


@keras.saving.register_keras_serializable(package="seqlab")
def html_as_text(texts):
    """The texts as their HTML reads: every `HTML_TAG` a space (`html_tags_as_spaces`), then
    the character references decoded (`decode_html_references`): "don&#39;t<br />ok" reads
    "don't ok", and "&lt;b&gt;", written to show "<b>", reads "<b>", not a tag."""
    return decode_html_references(html_tags_as_spaces(texts))


@keras.saving.register_keras_serializable(package="seqlab")
def html_lower_and_strip_unicode_punctuation(texts):
    """`lower_and_strip_unicode_punctuation` of the texts read by `html_as_text`."""
    return lower_and_strip_unicode_punctuation(html_as_text(texts))


@keras.saving.register_keras_serializable(package="seqlab")
def html_lower_unicode(texts):
    """`lower_unicode` of the texts read by `html_as_text`."""
    return lower_unicode(html_as_text(texts))


@keras.saving.register_keras_serializable(package="seqlab")
def html_strip_unicode_punctuation(texts):
    """`strip_unicode_punctuation` of the texts read by `html_as_text`."""
    return strip_unicode_punctuation(html_as_text(texts))


# The standardization of each rule but "ascii" (Keras's own), by `standardize`'s name.
STANDARDIZE_OF_RULE = {
    "unicode": UNICODE_STANDARDIZE,
    "unicode_html": {
        "lower_and_strip_punctuation": html_lower_and_strip_unicode_punctuation,
        "lower": html_lower_unicode,
        "strip_punctuation": html_strip_unicode_punctuation,
        None: html_as_text,
    },
}


def _recorded_characters(config):
    """`config` of a classifier's `from_config`, with the character rules of a file saved
    before they were recorded (ASCII's)."""
    return {"characters": "ascii", **config}


def _check_characters(characters):
    if characters not in CHARACTER_RULES:
        raise ValueError(f"characters must be one of {', '.join(CHARACTER_RULES)}. Received: "
                         f"characters={characters!r}")
    return characters


def _derived_seed(seed, offset):
    return None if seed is None else seed + offset


def text_vectorizer(kind="bilstm", vocabulary=None, max_tokens=None, sequence_length=64,
                    standardize="lower_and_strip_punctuation", ngrams=2, truncate="end",
                    characters="unicode_html"):
    """The `TextVectorization` layer of a classifier of `kind`: `standardize` and a split at
    white space, each for the characters of every script (`characters="ascii"`: Keras's own,
    for A-Z and ASCII's white space and punctuation alone; `CHARACTER_RULES`).

    Word-sequence kinds: token ids `int64[B, sequence_length]` padded with id 0 (id 1 is
    `[UNK]`), longer texts cut at the end; with `truncate="start"`, `int64[B, T]` padded to the
    batch's longest text (T unbounded: `keep_last_tokens` cuts them). The ngrams kind: which of
    the vocabulary's 1..`ngrams`-grams occur in each text, a sparse `float32[B, len(vocabulary)]`
    of 0/1 (column 0: any n-gram outside it).

    Args:
        kind: the classifier kind (see `TextClassifier`).
        vocabulary: the tokens, as `get_vocabulary()` lists them; None for a layer to `adapt`.
        max_tokens: the most tokens `adapt` keeps (None: all).
        sequence_length: tokens per text (word-sequence kinds); longer texts are truncated.
        standardize: Keras's standardization before splitting, or None.
        ngrams: the longest n-gram of the ngrams kind.
        truncate: "end" (the layer cuts longer texts at the end) or "start" (it does not cut).
        characters: "unicode_html", "unicode" or "ascii" (`CHARACTER_RULES`).
    """
    if standardize not in STANDARDIZE:
        raise ValueError(f"standardize must be one of {', '.join(map(str, STANDARDIZE))}. "
                         f"Received: standardize={standardize!r}")
    split = "whitespace"
    if _check_characters(characters) != "ascii":
        split, standardize = split_at_white_space, STANDARDIZE_OF_RULE[characters][standardize]
    if kind == "ngrams":
        return keras.layers.TextVectorization(
            max_tokens=max_tokens, standardize=standardize, split=split, ngrams=ngrams,
            output_mode="multi_hot", sparse=True, vocabulary=vocabulary, name="vectorizer",
        )
    return keras.layers.TextVectorization(
        max_tokens=max_tokens, standardize=standardize, split=split, output_mode="int",
        output_sequence_length=sequence_length if truncate == "end" else None,
        vocabulary=vocabulary, name="vectorizer",
    )


def keep_last_tokens(ids, sequence_length):
    """The last `sequence_length` tokens of each row: `int[B, T] -> int[B, W]`.

    A row's tokens (ids != 0) come first, padding (id 0) after them; a row with L tokens keeps
    tokens `max(0, L - sequence_length) .. L - 1`, still first in the row, padded with 0. The
    width W is the batch's longest kept row, so a batch of short texts stays narrow, and at
    least 1: a batch of empty texts is one step of padding (masked), since a recurrent loop
    cannot run zero steps.
    """
    # One column of padding more, so that there is a column to gather where T is 0.
    ids = tf.pad(tf.convert_to_tensor(ids), [[0, 0], [0, 1]])
    lengths = tf.reduce_sum(tf.cast(tf.not_equal(ids, 0), tf.int32), axis=1, keepdims=True)
    longest = tf.reduce_max(tf.concat([lengths[:, 0], [1]], axis=0))
    width = tf.minimum(longest, sequence_length)
    positions = tf.maximum(lengths - sequence_length, 0) + tf.range(width)[None, :]
    kept = tf.gather(ids, tf.minimum(positions, tf.shape(ids)[1] - 1), batch_dims=1)
    return tf.where(positions < lengths, kept, tf.zeros_like(kept))


def vectorize(vectorizer, texts, kind, sequence_length, truncate="end"):
    """What a classifier of `kind` reads of raw `texts` (`string[B]`): the output of its
    `text_vectorizer` (made with the same arguments), then, for a word-sequence kind with
    `truncate="start"`, the cut to the last `sequence_length` tokens (`string[B, 1]` is read
    as `string[B]`)."""
    texts = tf.convert_to_tensor(texts)
    if texts.shape.rank == 2 and texts.shape[-1] == 1:
        texts = tf.squeeze(texts, axis=-1)
    if texts.dtype != tf.string or texts.shape.rank not in (None, 1):
        # TextVectorization said "Cast int64 to string is not supported" of token ids.
        raise ValueError(
            f"a classifier with a vocabulary reads raw texts, string[B]. Received "
            f"{texts.dtype.name}{list(texts.shape)}; token ids or n-gram columns go to a "
            "classifier made without `vocabulary`")
    if kind == "ngrams":
        # TensorFlow's sparse n-gram count refuses an empty batch ("Must provide at least 2
        # elements for the splits argument"): one text more, sliced off again, makes any
        # batch at least one.
        counted = vectorizer(tf.concat([texts, [""]], axis=0))
        return tf.sparse.slice(counted, [0, 0], [tf.shape(texts, out_type=tf.int64)[0],
                                                 counted.dense_shape[1]])
    features = vectorizer(texts)
    if truncate == "start":
        return keep_last_tokens(features, sequence_length)
    return features


def _checked_numbers(inputs):
    """`inputs` of a classifier made without a vocabulary, refused where they are strings."""
    if tf.as_dtype(getattr(inputs, "dtype", None) or tf.float32) == tf.string:
        # Keras said "dtype='string' is not a valid dtype for Keras type promotion".
        raise ValueError(
            "a classifier made without `vocabulary` reads token ids (int[B, T]) or n-gram "
            "columns; to classify raw texts, make it with vocabulary=adapt_vocabulary(texts)")
    return inputs


def count_tokens(texts, standardize="lower_and_strip_punctuation", batch_size=1024):
    """How many tokens a word-sequence classifier with `standardize` reads in each text before
    any cut (the same with every vocabulary: a word outside it is one `[UNK]`).

    Returns:
        int64 numpy `[len(texts)]`.
    """
    # Every token is one nonzero id, known or not: a one-word vocabulary counts them all.
    vectorizer = text_vectorizer("bilstm", ["[UNK]"], sequence_length=None,
                                 standardize=standardize)
    texts = list(texts)
    counts = [
        tf.math.count_nonzero(vectorizer(tf.constant(texts[start:start + batch_size])),
                              axis=1).numpy()
        for start in range(0, len(texts), batch_size)
    ]
    return np.concatenate(counts) if counts else np.zeros(0, dtype="int64")


def adapt_vocabulary(texts, kind="bilstm", max_tokens=None,
                     standardize="lower_and_strip_punctuation", ngrams=2):
    """The vocabulary a classifier of `kind` learns from `texts`, most frequent first.

    Word-sequence kinds: `["", "[UNK]", tokens...]`; the ngrams kind: `["[UNK]", n-grams...]`.
    Pass it as `vocabulary` to `TextClassifier` (with the same `standardize` and `ngrams`).

    Args:
        texts: the training texts (a list of strings or a string tensor).
        kind: the classifier kind.
        max_tokens: the most tokens kept, padding and `[UNK]` included (None: all).
        standardize: Keras's standardization before splitting, or None.
        ngrams: the longest n-gram of the ngrams kind.
    """
    vectorizer = text_vectorizer(kind, max_tokens=max_tokens, standardize=standardize,
                                 ngrams=ngrams)
    vectorizer.adapt(ops.convert_to_tensor(list(texts), dtype="string"), batch_size=1024)
    return [str(token) for token in vectorizer.get_vocabulary(include_special_tokens=True)]


def _check_vocabulary(vocabulary, vocabulary_size):
    """The number of token ids (or n-gram columns) that `vocabulary` or `vocabulary_size` give."""
    if vocabulary is None:
        if vocabulary_size is None:
            raise ValueError(
                "Give the vocabulary (raw strings in) or vocabulary_size (token ids in). "
                "Received: vocabulary=None, vocabulary_size=None"
            )
        check_positive_int("vocabulary_size", vocabulary_size)
        return vocabulary_size
    if vocabulary_size is not None and vocabulary_size != len(vocabulary):
        raise ValueError(
            "vocabulary_size must be the vocabulary's length when both are given. Received: "
            f"vocabulary_size={vocabulary_size}, len(vocabulary)={len(vocabulary)}"
        )
    return len(vocabulary)


def _predict_probabilities(model, inputs, batch_size):
    """`model.predict` of raw strings (any sequence of them) or token ids, quietly; float32
    `[0, num_classes]` for no inputs, where `predict` fails."""
    if model.vectorizer is not None:
        inputs = _texts(inputs)
    if not len(inputs):
        return np.zeros((0, model.num_classes), dtype="float32")
    return model.predict(inputs, batch_size=batch_size, verbose=0)


def _texts(inputs):
    """Raw texts (a list or tuple of str, a numpy array or string tensor) as a tensor for
    `vectorize`, which checks its dtype and rank.

    Raises:
        ValueError: one str, which would be read as a list of its characters.
    """
    if isinstance(inputs, str):
        raise ValueError(f"expected a list of texts. Received one str ({inputs[:40]!r}): pass "
                         "[text]")
    if isinstance(inputs, (tf.Tensor, np.ndarray)):
        # A string tensor's list() is of scalar tensors, which tf.constant refused.
        return tf.convert_to_tensor(inputs)
    return tf.constant(list(inputs), dtype=tf.string)


@keras.saving.register_keras_serializable(package="seqlab")
class TextClassifier(KeepsFrozenLayers, TracesTrainingOnce, keras.Model):
    """A text classifier: recurrent or Transformer layers over masked token embeddings, or a
    logistic regression on word n-grams.

    `kind` "gru", "lstm" or "bilstm": `layers` stacked seqlab recurrent layers (bilstm: each
    bidirectional, `units` per direction) over the token embeddings; "transformer": the
    embeddings scaled by sqrt(embedding_dim) plus sinusoidal positions, then `layers`
    Transformer encoder layers; "cnn": `layers` stacked convolutions of `units` filters over
    windows of `CNN_KERNEL_SIZE` tokens (ReLU, padding as zero vectors), whose cost grows
    linearly with the text's length, so long documents can be read whole. The sequence is
    summarised by a masked mean or maximum over the real tokens, or (recurrent kinds) by the
    last layer's last unmasked state, and

        probabilities = softmax(Dropout(summary) W + b)

    While training, `token_dropout` of the real tokens become `[UNK]` (id 1) and dropout acts
    on the embeddings and the summary. Padding (id 0) is masked from the embedding on: it
    changes no output, and an empty text gets a defined one. `kind="ngrams"` is
    `softmax(x W + b)` with x the 0/1 presence of each 1..`ngrams`-gram, from zero weights.

    With `vocabulary` the model takes raw strings (`string[B]`): the `TextVectorization`
    travels inside it (and inside its `.keras` file and SavedModels), and so does the cut of
    texts longer than `sequence_length` tokens, at their end or (`truncate="start"`) at their
    start. Without, it takes token ids `int[B, T]` as given (ngrams kind: the presence vectors
    `float32[B, vocabulary_size]`).

    The sublayers carry the names of seqlab 0.1.0's functional classifier (`embedding`,
    `<kind>_<i>` or `bidirectional_<i>`, `encoder_<i>`, `probabilities`), so weights copy from
    a 0.1.0 `model.keras` layer by layer by name.

    Args:
        num_classes: the number of classes.
        vocabulary: the tokens, as `adapt_vocabulary` returns them (padding "" and `[UNK]`
            first; ngrams kind: `[UNK]` first), or None for token-id inputs.
        vocabulary_size: the number of token ids (or n-gram columns) when `vocabulary` is None.
        kind: "gru", "lstm", "bilstm", "transformer", "cnn" or "ngrams".
        pooling: "mean", "max" or "last" (recurrent kinds only).
        sequence_length: tokens per text (raw strings are padded or truncated to it); the
            transformer's longest input.
        standardize: Keras's `TextVectorization` standardization, or None.
        ngrams: the ngrams kind's longest n-gram.
        embedding_dim: the token embedding size (transformer: the model width).
        units: units per recurrent layer (bilstm: per direction); the cnn kind's filters.
        layers: stacked recurrent or encoder layers.
        num_heads: the transformer's attention heads.
        ff_dim: the transformer's feed-forward width.
        dropout: dropout rate on the embeddings and on the summary (and inside the encoder
            layers).
        token_dropout: the share of real tokens replaced by `[UNK]` while training.
        seed: seed of the dropout draws (None: unseeded).
        truncate: which end of a longer raw text is cut: "end" keeps its first
            `sequence_length` tokens (padded to `sequence_length`, as 0.1.0 did), "start" its
            last ones (padded to the batch's longest kept text: short batches run narrower).
        characters: "unicode_html": HTML tags (`<br />`, `<p>`) are read as white space,
            then as "unicode" (what a classifier saved before "unicode_html" loads with): raw
            texts are parted into words at white space of every kind (the no-break space too,
            as Python's `str.split()`), and `standardize` lower-cases the capitals of every
            alphabet and strips Unicode's punctuation; "ascii": Keras's own rules, for ASCII's
            white space, A-Z and ASCII's punctuation alone (what a classifier saved before this
            setting was recorded loads with).

    Call arguments:
        inputs: `string[B]`, or token ids `int[B, T]` padded with 0.
        training: whether the dropouts act.

    Returns:
        float32 `[B, num_classes]`, rows summing to 1.

    Example:

    ```python
    vocabulary = adapt_vocabulary(texts, max_tokens=20000)
    model = TextClassifier(num_classes=2, vocabulary=vocabulary, kind="gru", units=32)
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(tf.data.Dataset.from_tensor_slices((texts, labels)).batch(32), epochs=3)
    model.predict_probabilities(["a gripping, tender film"])  # float32 [1, 2]
    ```
    """

    def __init__(self, num_classes, vocabulary=None, vocabulary_size=None, kind="bilstm",
                 pooling="mean", sequence_length=64, standardize="lower_and_strip_punctuation",
                 ngrams=2, embedding_dim=64, units=64, layers=1, num_heads=4, ff_dim=128,
                 dropout=0.5, token_dropout=0.5, seed=None, truncate="end",
                 characters="unicode_html", **kwargs):
        size = _check_hyperparameters(
            num_classes=num_classes, vocabulary=vocabulary, vocabulary_size=vocabulary_size,
            kind=kind, pooling=pooling, sequence_length=sequence_length,
            standardize=standardize, ngrams=ngrams, embedding_dim=embedding_dim, units=units,
            layers=layers, num_heads=num_heads, ff_dim=ff_dim, dropout=dropout,
            token_dropout=token_dropout, truncate=truncate,
        )
        kwargs.setdefault("name", f"text_classifier_{kind}")
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.vocabulary = None if vocabulary is None else [str(token) for token in vocabulary]
        self.vocabulary_size = size
        self.kind, self.pooling, self.sequence_length = kind, pooling, sequence_length
        self.standardize, self.ngrams = standardize, ngrams
        self.embedding_dim, self.units, self.num_layers = embedding_dim, units, layers
        self.num_heads, self.ff_dim = num_heads, ff_dim
        self.dropout, self.token_dropout, self.seed = dropout, token_dropout, seed
        self.truncate, self.characters = truncate, _check_characters(characters)

        self.vectorizer = None if vocabulary is None else text_vectorizer(
            kind, self.vocabulary, sequence_length=sequence_length, standardize=standardize,
            ngrams=ngrams, truncate=truncate, characters=characters,
        )
        self.token_dropper = self.embedding = self.embedding_dropout = None
        self.sequence_layers, self.pooler, self.pooled_dropout = [], None, None
        if kind != "ngrams":
            self.token_dropper = TokenDropout(token_dropout, seed=seed, name="token_dropout")
            if kind == "cnn":
                self.embedding = keras.layers.Embedding(
                    size, embedding_dim, mask_zero=True, name="embedding"
                )
                self.sequence_layers = [
                    keras.layers.Conv1D(units, CNN_KERNEL_SIZE, padding="same",
                                        activation="relu", name=f"conv_{index}")
                    for index in range(layers)
                ]
            elif kind == "transformer":
                self.embedding = TokenAndPositionEmbedding(
                    size, sequence_length, embedding_dim, mask_zero=True, name="embedding"
                )
                self.sequence_layers = [
                    TransformerEncoderLayer(num_heads=num_heads, ff_dim=ff_dim, dropout=dropout,
                                            name=f"encoder_{index}")
                    for index in range(layers)
                ]
            else:
                self.embedding = keras.layers.Embedding(
                    size, embedding_dim, mask_zero=True, name="embedding"
                )
                self.sequence_layers = [self._recurrent_layer(index) for index in range(layers)]
            self.embedding_dropout = keras.layers.Dropout(
                dropout, seed=seed, name="embedding_dropout"
            )
            if pooling != "last":
                pooler = MaskedMeanPooling if pooling == "mean" else MaskedMaxPooling
                self.pooler = pooler(name=f"masked_{pooling}")
            self.pooled_dropout = keras.layers.Dropout(
                dropout, seed=_derived_seed(seed, 1), name="pooled_dropout"
            )
        # The ngrams kind starts from zero weights: the same fit from every seed (early
        # stopping regularises it).
        self.output_layer = keras.layers.Dense(
            num_classes, activation="softmax", name="probabilities",
            kernel_initializer="zeros" if kind == "ngrams" else "glorot_uniform",
            dtype="float32",  # probabilities in float32 under a mixed-precision policy too
        )
        # Every weight's shape follows from the constructor arguments: built now, the model
        # takes weights (set_weights, BackupAndRestore, a 0.1.0 run's) before its first call.
        self.build()

    def _recurrent_layer(self, index):
        last = index == self.num_layers - 1
        layer = RECURRENT_LAYERS[self.kind](
            self.units,
            return_sequences=not (last and self.pooling == "last"),
            seed=_derived_seed(self.seed, index),
            name=f"{self.kind}_{index}",
        )
        if self.kind == "bilstm":
            layer = bidirectional(layer, name=f"bidirectional_{index}")
        return layer

    def build(self, input_shape=None):
        if self.built:
            return
        if self.kind == "ngrams":
            self.output_layer.build((None, self.vocabulary_size))
            self.built = True
            return
        self.embedding.build((None, None))
        width = self.embedding_dim
        for layer in self.sequence_layers:
            layer.build((None, None, width))
            if self.kind != "transformer":
                width = self.units * (2 if self.kind == "bilstm" else 1)
        self.output_layer.build((None, width))
        self.built = True

    def call(self, inputs, training=False):
        features = self.features(inputs)
        if self.kind == "ngrams":
            return self.output_layer(features)
        if self.kind == "cnn":
            # TensorFlow's convolution gives an empty batch the wrong shape (its input's): a
            # row of padding more, sliced off again at the end.
            batch = tf.shape(features)[0]
            padding_row = tf.zeros([1, tf.shape(features)[1]], features.dtype)
            return self._classify(tf.concat([features, padding_row], axis=0), training)[:batch]
        return self._classify(features, training)

    def _classify(self, features, training):
        mask = ops.not_equal(features, 0)
        tokens = self.token_dropper(features, training=training)
        hidden = self.embedding_dropout(self.embedding(tokens), training=training)
        if self.kind == "cnn":
            # A convolution does not take a mask: padding becomes zero vectors, so that a
            # token beside it sees the same window however much padding follows.
            keep = ops.expand_dims(ops.cast(mask, hidden.dtype), -1)
            for layer in self.sequence_layers:
                hidden = layer(hidden * keep) * keep
        else:
            for layer in self.sequence_layers:
                hidden = layer(hidden, mask=mask, training=training)
        if self.pooler is not None:
            hidden = self.pooler(hidden, mask=mask)
        return self.output_layer(self.pooled_dropout(hidden, training=training))

    def features(self, inputs):
        """What the layers after the vectorizer read: token ids `int[B, T]` of raw strings,
        cut to `sequence_length` (ngrams kind: the n-gram presence), or `inputs` as given
        without a vocabulary."""
        if self.vectorizer is None:
            return _checked_numbers(inputs)
        return vectorize(self.vectorizer, inputs, self.kind, self.sequence_length,
                         self.truncate)

    def predict_probabilities(self, inputs, batch_size=256):
        """The class probabilities of many inputs, batched as `predict` batches them.

        Args:
            inputs: raw strings (a list will do), or token ids `int[n, T]` without a vocabulary.
            batch_size: inputs per batch.

        Returns:
            float32 numpy `[n, num_classes]`, also for n = 0.
        """
        return _predict_probabilities(self, inputs, batch_size)

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "vocabulary": None if self.vocabulary is None else list(self.vocabulary),
            "vocabulary_size": self.vocabulary_size,
            "kind": self.kind,
            "pooling": self.pooling,
            "sequence_length": self.sequence_length,
            "standardize": self.standardize,
            "ngrams": self.ngrams,
            "embedding_dim": self.embedding_dim,
            "units": self.units,
            "layers": self.num_layers,
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
            "token_dropout": self.token_dropout,
            "seed": self.seed,
            "truncate": self.truncate,
            "characters": self.characters,
        }

    @classmethod
    def from_config(cls, config, *args, **kwargs):
        return super().from_config(_recorded_characters(config), *args, **kwargs)


def _check_hyperparameters(num_classes, vocabulary, vocabulary_size, kind, pooling,
                           sequence_length, standardize, ngrams, embedding_dim, units, layers,
                           num_heads, ff_dim, dropout, token_dropout, truncate):
    """Raises `ValueError` for settings no classifier can have; returns the vocabulary size."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}. Received: kind={kind!r}")
    if pooling not in POOLINGS:
        raise ValueError(
            f"pooling must be one of {', '.join(POOLINGS)}. Received: pooling={pooling!r}"
        )
    if standardize not in STANDARDIZE:
        raise ValueError(
            f"standardize must be one of {', '.join(map(str, STANDARDIZE))}. Received: "
            f"standardize={standardize!r}"
        )
    if truncate not in TRUNCATIONS:
        raise ValueError(
            f"truncate must be one of {', '.join(TRUNCATIONS)}. Received: truncate={truncate!r}"
        )
    for name, value in (("num_classes", num_classes), ("sequence_length", sequence_length),
                        ("ngrams", ngrams), ("embedding_dim", embedding_dim),
                        ("units", units), ("layers", layers), ("num_heads", num_heads),
                        ("ff_dim", ff_dim)):
        check_positive_int(name, value)
    check_rate("dropout", dropout)
    check_rate("token_dropout", token_dropout)
    if kind in ("transformer", "cnn") and pooling == "last":
        raise ValueError(
            f"The {kind} kind has no last state; pool with the masked mean or max. "
            f"Received: kind={kind!r}, pooling={pooling!r}"
        )
    if kind == "transformer" and embedding_dim % num_heads:
        raise ValueError(
            "embedding_dim must be a multiple of num_heads for the transformer kind. "
            f"Received: embedding_dim={embedding_dim}, num_heads={num_heads}"
        )
    _check_vocabulary_form(vocabulary, kind)
    return _check_vocabulary(vocabulary, vocabulary_size)


def _check_vocabulary_form(vocabulary, kind):
    """Refuses a vocabulary made for the other family of kinds (Keras's lookup failed on one
    with its own internal error, or, the other way, took n-grams for words and `[UNK]`
    twice)."""
    if vocabulary is None:
        return
    tokens = [str(token) for token in vocabulary]
    remedy = f"pass adapt_vocabulary(texts, kind={kind!r})"
    first = f"{tokens[:3]}" + ("..." if len(tokens) > 3 else "")
    if kind == "ngrams":
        if "" in tokens:
            raise ValueError(
                f"the ngrams kind's vocabulary has no padding token \"\" (found at index "
                f"{tokens.index('')}: a word-sequence kind's vocabulary); {remedy}, which "
                "gives [UNK] first, then the n-grams")
        if tokens[:1] != ["[UNK]"]:
            raise ValueError(f"the ngrams kind's vocabulary starts with [UNK]. Received: "
                             f"{first}; {remedy}")
        return
    ngram = next((index for index, token in enumerate(tokens) if " " in token), None)
    if (tokens[:1] == ["[UNK]"] and "" not in tokens) or ngram is not None:
        found = (f"the n-gram {tokens[ngram]!r} at index {ngram}" if ngram is not None
                 else "[UNK] first, without the padding token \"\"")
        raise ValueError(
            f"the {kind} kind's vocabulary holds words (\"\" and [UNK] first); found {found}: "
            f"the ngrams kind's vocabulary; {remedy}")
    if tokens[:2] != ["", "[UNK]"]:
        # Keras's lookup puts them first itself: two ids more than the embedding has rows,
        # and the last words' ids were out of range when the model ran.
        raise ValueError(f"the {kind} kind's vocabulary starts with the padding token \"\" "
                         f"and [UNK]. Received: {first}; {remedy}")


class _MembersTrainedAlone(KeepsFrozenLayers, TracesTrainingOnce, RestoresItsCompile,
                           keras.Model):
    """A model of several classifiers, each trained on its own cross-entropy in one `fit`.

    A subclass sets `num_members` and defines `member_probabilities(inputs, training)`
    (float32 `[B, num_members, num_classes]`) and calls `_make_trackers()` in its constructor.
    `fit` minimises the mean of the members' cross-entropies and logs `loss`, `accuracy` (of
    the members' mean probabilities) and every member's `member_<k>_loss` and
    `member_<k>_accuracy`, which `MemberEarlyStopping` watches.
    """

    def compile(self, optimizer="adam", loss=None, **kwargs):
        """As `keras.Model.compile`, without a loss: each member trains on its own
        cross-entropy (a loss given was ignored without a word; its own name is accepted)."""
        if loss not in (None, "auto", "sparse_categorical_crossentropy"):
            raise ValueError(f"{type(self).__name__} trains each member on its own "
                             f"cross-entropy; compile it without a loss. Received: loss={loss!r}")
        super().compile(optimizer=optimizer, **kwargs)

    def _make_trackers(self):
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.accuracy_tracker = keras.metrics.SparseCategoricalAccuracy(name="accuracy")
        self.member_trackers = [
            (keras.metrics.Mean(name=f"member_{k}_loss"),
             keras.metrics.SparseCategoricalAccuracy(name=f"member_{k}_accuracy"))
            for k in range(self.num_members)
        ]

    def member_losses(self, labels, member_probabilities, sample_weight=None):
        """Each member's cross-entropy, averaged over the batch: `[B], [B, N, C] -> [N]`.

        With `sample_weight`, the sum of the weighted losses over the batch size (Keras's
        "sum_over_batch_size").
        """
        labels = ops.reshape(ops.cast(labels, "int32"), (-1, 1))
        labels = ops.repeat(labels, self.num_members, axis=1)
        losses = keras.losses.sparse_categorical_crossentropy(labels, member_probabilities)
        if sample_weight is not None:
            losses *= ops.cast(ops.reshape(sample_weight, (-1, 1)), losses.dtype)
        return ops.mean(losses, axis=0)

    def _loss_and_figures(self, data, training):
        inputs, labels, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        probabilities = self.member_probabilities(inputs, training=training)
        losses = self.member_losses(labels, probabilities, sample_weight)
        loss = ops.mean(losses)
        if self.losses:
            loss += ops.sum(self.losses)
        batch_size = ops.shape(probabilities)[0]
        self.loss_tracker.update_state(loss, sample_weight=batch_size)
        self.accuracy_tracker.update_state(labels, ops.mean(probabilities, axis=1),
                                           sample_weight=sample_weight)
        for k, (member_loss, member_accuracy) in enumerate(self.member_trackers):
            member_loss.update_state(losses[k], sample_weight=batch_size)
            member_accuracy.update_state(labels, probabilities[:, k],
                                         sample_weight=sample_weight)
        return loss

    def train_step(self, data):
        # Under a tf.distribute strategy the replicas' gradients are summed: each replica
        # contributes its share of the global mean, as Keras's own train_step does.
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        with tf.GradientTape() as tape:
            replica_share = self._loss_and_figures(data, training=True) / replicas
            # Scaled as Keras's own train_step scales it (a LossScaleOptimizer under a
            # mixed_float16 policy divided unscaled gradients by its scale, 32768).
            replica_share = self.optimizer.scale_loss(replica_share)
        gradients = tape.gradient(replica_share, self.trainable_variables)
        self.optimizer.apply(gradients, self.trainable_variables)
        return {metric.name: metric.result() for metric in self.metrics}

    def test_step(self, data):
        self._loss_and_figures(data, training=False)
        return {metric.name: metric.result() for metric in self.metrics}

    @property
    def metrics(self):
        return [self.loss_tracker, self.accuracy_tracker,
                *(tracker for pair in self.member_trackers for tracker in pair)]


@keras.saving.register_keras_serializable(package="seqlab")
class TextClassifierEnsemble(_MembersTrainedAlone):
    """The mean of the probabilities of `num_members` `TextClassifier`s built alike, each
    trained on its own.

        probabilities = (1 / N) sum_k member_k(ids)

    Member k (`members[k]`, named `member_<k>`) is a token-id `TextClassifier` with the
    ensemble's hyperparameters and seed `seed + 1000 k`; with `vocabulary`, one
    `TextVectorization` in front of them all lets the ensemble take raw strings.

    `fit` minimises the mean of the members' own cross-entropies (`member_losses`), so each
    member learns as if it were trained alone: training the averaged probabilities instead
    would fit the members to each other. Compile it with an optimizer only. It logs `loss`,
    `accuracy` (of the averaged probabilities) and every member's `member_<k>_loss` and
    `member_<k>_accuracy`, which `MemberEarlyStopping` watches.

    Args:
        num_members: the number of members.
        All others: as `TextClassifier`'s.

    Call arguments:
        inputs: `string[B]`, or token ids `int[B, T]` padded with 0.
        training: whether the members' dropouts act.

    Returns:
        float32 `[B, num_classes]`.

    Example:

    ```python
    ensemble = TextClassifierEnsemble(num_members=3, num_classes=2, vocabulary=vocabulary,
                                      kind="gru", seed=0)
    ensemble.compile(keras.optimizers.Adam(1e-3))
    ensemble.fit(dataset, validation_data=validation, epochs=10,
                 callbacks=[MemberEarlyStopping("loss", patience=2)])
    ensemble.predict_probabilities(["a gripping, tender film"], return_members=True)
    ```
    """

    def __init__(self, num_members, num_classes, vocabulary=None, vocabulary_size=None,
                 kind="bilstm", pooling="mean", sequence_length=64,
                 standardize="lower_and_strip_punctuation", ngrams=2, embedding_dim=64,
                 units=64, layers=1, num_heads=4, ff_dim=128, dropout=0.5, token_dropout=0.5,
                 seed=None, truncate="end", characters="unicode_html", **kwargs):
        check_positive_int("num_members", num_members)
        _check_vocabulary_form(vocabulary, kind)
        size = _check_vocabulary(vocabulary, vocabulary_size)
        kwargs.setdefault("name", f"text_classifier_ensemble_{kind}")
        super().__init__(**kwargs)
        self.num_members, self.num_classes = num_members, num_classes
        self.vocabulary = None if vocabulary is None else [str(token) for token in vocabulary]
        self.vocabulary_size = size
        self.seed, self.characters = seed, _check_characters(characters)
        self.member_config = dict(
            num_classes=num_classes, kind=kind, pooling=pooling,
            sequence_length=sequence_length, standardize=standardize, ngrams=ngrams,
            embedding_dim=embedding_dim, units=units, layers=layers, num_heads=num_heads,
            ff_dim=ff_dim, dropout=dropout, token_dropout=token_dropout, truncate=truncate,
        )
        self.vectorizer = None if vocabulary is None else text_vectorizer(
            kind, self.vocabulary, sequence_length=sequence_length, standardize=standardize,
            ngrams=ngrams, truncate=truncate, characters=characters,
        )
        self.members = [
            TextClassifier(vocabulary_size=size, seed=_derived_seed(seed, MEMBER_SEED_STRIDE * k),
                           name=f"member_{k}", **self.member_config)
            for k in range(num_members)
        ]
        self._make_trackers()
        self.built = True  # the members built themselves

    def member_probabilities(self, inputs, training=False):
        """Every member's probabilities, float32 `[B, num_members, num_classes]`."""
        features = self.features(inputs)
        return ops.stack([member(features, training=training) for member in self.members],
                         axis=1)

    def call(self, inputs, training=False):
        return ops.mean(self.member_probabilities(inputs, training=training), axis=1)

    def features(self, inputs):
        """What the members read (see `TextClassifier.features`)."""
        if self.vectorizer is None:
            return _checked_numbers(inputs)
        config = self.member_config
        return vectorize(self.vectorizer, inputs, config["kind"], config["sequence_length"],
                         config["truncate"])

    def predict_probabilities(self, inputs, batch_size=256, return_members=False):
        """The ensemble's class probabilities of many inputs, batched as `predict` batches them,
        and optionally every member's.

        Args:
            inputs: raw strings (a list will do), or token ids `int[n, T]` without a vocabulary.
            batch_size: inputs per batch.
            return_members: also return each member's probabilities.

        Returns:
            float32 numpy `[n, num_classes]` (also for n = 0); with `return_members`, a pair of
            it and a list of `num_members` such arrays, `members[k]`'s.
        """
        probabilities = _predict_probabilities(self, inputs, batch_size)
        if not return_members:
            return probabilities
        if not len(inputs):
            return probabilities, [probabilities] * self.num_members
        features = inputs if self.vectorizer is None else self.features(_texts(inputs))
        return probabilities, [member.predict(features, batch_size=batch_size, verbose=0)
                               for member in self.members]

    def get_config(self):
        return {
            **super().get_config(),
            "num_members": self.num_members,
            "vocabulary": None if self.vocabulary is None else list(self.vocabulary),
            "vocabulary_size": self.vocabulary_size,
            **self.member_config,
            "seed": self.seed,
            "characters": self.characters,
        }

    @classmethod
    def from_config(cls, config, *args, **kwargs):
        return super().from_config(_recorded_characters(config), *args, **kwargs)


# What `AutoTextClassifier` may classify with, in the order that breaks ties: the n-gram model
# first (the cheapest, and the baseline the default must not fall below), then the average.
AUTO_CHOICES = ("ngrams", "average", "neural")


@keras.saving.register_keras_serializable(package="seqlab")
class AutoTextClassifier(ForgetsItsStepsOnANewChoice, _MembersTrainedAlone):
    """An n-gram logistic regression and a neural classifier trained side by side; it
    classifies with whichever of them, or their averaged probabilities, did best on held-out
    texts.

        ngrams:  softmax(x W + b), x the 0/1 presence of each 1..`ngrams`-gram of
                 `ngram_vocabulary` (a `TextClassifier` of kind "ngrams")
        neural:  a `TextClassifier` of `kind` over the tokens of `vocabulary`
        average: (ngrams(text) + neural(text)) / 2

    Both members take raw strings (each vectorises them itself) and `fit` trains each on its
    own cross-entropy (see `TextClassifierEnsemble`): `MemberEarlyStopping` stops each at its
    own best epoch (member 0 is the n-gram model, member 1 the neural one). `choose(texts,
    label_ids)` then scores the three candidates by accuracy (ties: `AUTO_CHOICES` order) and
    sets `choice`; until then the model answers with the average. The choice is part of the
    config: a saved model and its SavedModel classify with the candidate it chose, and carry
    both members (the n-gram vocabulary and weights as tensors).

    Why: on short texts, and on long ones read by a model of a few thousand weights per
    token, which words and word pairs occur is often as good a guide as a network's reading;
    the validation split decides, so the default is not worse than its own n-gram model by
    more than the split's noise.

    Args:
        num_classes: the number of classes.
        vocabulary: the neural member's tokens (`adapt_vocabulary` of its kind).
        ngram_vocabulary: the n-gram member's n-grams (`adapt_vocabulary(..., "ngrams")`).
        kind: the neural member's kind (not "ngrams").
        choice: None, or one of `AUTO_CHOICES`.
        All others: as `TextClassifier`'s (`ngrams` and `standardize` are shared).

    Example:

    ```python
    model = AutoTextClassifier(num_classes=2, vocabulary=adapt_vocabulary(texts),
                               ngram_vocabulary=adapt_vocabulary(texts, "ngrams"), kind="cnn")
    model.compile(keras.optimizers.Adam(1e-3))
    model.fit(dataset, validation_data=validation, epochs=10,
              callbacks=[MemberEarlyStopping("loss", patience=2)])
    model.choose(validation_texts, validation_label_ids)  # {"ngrams": {...}, ...}
    model.predict_probabilities(["a gripping, tender film"])
    ```
    """

    def __init__(self, num_classes, vocabulary, ngram_vocabulary, kind="cnn", pooling="mean",
                 sequence_length=64, standardize="lower_and_strip_punctuation", ngrams=2,
                 embedding_dim=64, units=64, layers=1, num_heads=4, ff_dim=128, dropout=0.5,
                 token_dropout=0.5, seed=None, truncate="end", choice=None,
                 characters="unicode_html", **kwargs):
        if kind == "ngrams" or kind not in KINDS:
            raise ValueError(
                f"kind must be one of {', '.join(k for k in KINDS if k != 'ngrams')} (the "
                f"n-gram member is always there). Received: kind={kind!r}"
            )
        if choice not in (None, *AUTO_CHOICES):
            raise ValueError(f"choice must be None or one of {', '.join(AUTO_CHOICES)}. "
                             f"Received: choice={choice!r}")
        kwargs.setdefault("name", f"text_classifier_auto_{kind}")
        super().__init__(**kwargs)
        self.num_members, self.num_classes = 2, num_classes
        self.choice = choice
        self.member_config = dict(
            kind=kind, pooling=pooling, sequence_length=sequence_length,
            embedding_dim=embedding_dim, units=units, layers=layers, num_heads=num_heads,
            ff_dim=ff_dim, dropout=dropout, token_dropout=token_dropout, seed=seed,
            truncate=truncate,
        )
        shared = dict(num_classes=num_classes, standardize=standardize, ngrams=ngrams,
                      characters=characters)
        self.ngram_model = TextClassifier(vocabulary=ngram_vocabulary, kind="ngrams",
                                          name="ngrams", **shared)
        self.neural = TextClassifier(vocabulary=vocabulary, name="neural",
                                     **shared, **self.member_config)
        self.standardize, self.ngrams, self.characters = standardize, ngrams, characters
        self._make_trackers()
        self.built = True  # the members built themselves

    # Properties, not attributes: Keras's saving would file the same layers twice.
    @property
    def members(self):
        return [self.ngram_model, self.neural]

    @property
    def vectorizer(self):
        """The neural member's (the model takes raw strings)."""
        return self.neural.vectorizer

    def member_probabilities(self, inputs, training=False):
        """Both members' probabilities, float32 `[B, 2, num_classes]` (n-grams first)."""
        return ops.stack([member(inputs, training=training) for member in self.members],
                         axis=1)

    def call(self, inputs, training=False):
        if self.choice == "ngrams":
            return self.ngram_model(inputs, training=training)
        if self.choice == "neural":
            return self.neural(inputs, training=training)
        return ops.mean(self.member_probabilities(inputs, training=training), axis=1)

    def candidate_probabilities(self, texts, batch_size=256):
        """Each of `AUTO_CHOICES`' probabilities of raw `texts`: `{name: float32 [n, C]}`."""
        # Called batch by batch, not by `predict`: each member's `predict` would trace a
        # function of its own, and Keras warns about retracing after a few.
        texts = list(texts)
        both = [ops.convert_to_numpy(self.member_probabilities(
                    tf.constant(texts[start:start + batch_size], dtype=tf.string)))
                for start in range(0, len(texts), batch_size)]
        both = (np.concatenate(both) if both
                else np.zeros((0, 2, self.num_classes), dtype="float32"))
        ngrams, neural = both[:, 0], both[:, 1]
        return {"ngrams": ngrams, "average": (ngrams + neural) / 2, "neural": neural}

    def choose(self, texts, label_ids, batch_size=256):
        """Sets `choice` to the candidate of highest accuracy on `texts` (ties: `AUTO_CHOICES`
        order).

        Returns:
            `{candidate: {"accuracy": ..., "loss": ...}}` (loss: the mean cross-entropy).
        """
        figures = candidate_figures(self.candidate_probabilities(texts, batch_size), label_ids)
        best = max(figures[name]["accuracy"] for name in AUTO_CHOICES)
        self.choice = next(name for name in AUTO_CHOICES if figures[name]["accuracy"] == best)
        return figures

    def predict_probabilities(self, inputs, batch_size=256):
        """The probabilities of the chosen candidate (see `TextClassifier`'s)."""
        return _predict_probabilities(self, inputs, batch_size)

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "vocabulary": list(self.neural.vocabulary),
            "ngram_vocabulary": list(self.ngram_model.vocabulary),
            "standardize": self.standardize,
            "ngrams": self.ngrams,
            **self.member_config,
            "choice": self.choice,
            "characters": self.characters,
        }

    @classmethod
    def from_config(cls, config, *args, **kwargs):
        return super().from_config(_recorded_characters(config), *args, **kwargs)


def candidate_figures(probabilities, label_ids):
    """`{name: {"accuracy", "loss"}}` of `{name: float [n, C] probabilities}` against the true
    class indices `label_ids` (accuracy and loss None for no texts)."""
    label_ids = np.asarray(label_ids, dtype="int64")
    figures = {}
    for name, p in probabilities.items():
        if not len(label_ids):
            figures[name] = {"accuracy": None, "loss": None}
            continue
        chosen = np.clip(p[np.arange(len(label_ids)), label_ids], 1e-7, 1.0)
        figures[name] = {"accuracy": float(np.mean(np.argmax(p, axis=-1) == label_ids)),
                         "loss": float(-np.mean(np.log(chosen)))}
    return figures


class MemberEarlyStopping(keras.callbacks.Callback):
    """Early stopping for every member of a `TextClassifierEnsemble` on its own figure, as if
    each were trained alone.

    After each epoch, a member whose `<prefix>member_<k>_<figure>` improved keeps a copy of its
    weights; training stops when no member has improved for `patience` epochs, and each member
    gets back the weights of its own best epoch.

    Args:
        figure: "loss" (lower is better) or "accuracy".
        patience: epochs without improvement before a member is done.
        prefix: "val_" to watch the validation figures, "" for the training ones.

    Attributes:
        best_epochs: each member's best epoch (1-based) in this `fit`; None for a member
            before its first epoch.
        best_epoch: the latest of the members' best epochs (the last epoch whose weights the
            ensemble keeps); None while a member has none.
    """

    def __init__(self, figure, patience, prefix="val_"):
        super().__init__()
        self.figure, self.patience, self.prefix = figure, patience, prefix
        self.lower_is_better = figure == "loss"
        self.best, self.best_epochs, self.best_weights, self.waits = [], [], [], []

    @property
    def best_epoch(self):
        if not self.best_epochs or None in self.best_epochs:
            return None
        return max(self.best_epochs)

    def on_train_begin(self, logs=None):
        count = len(self.model.members)
        self.best, self.best_epochs = [None] * count, [None] * count
        self.best_weights, self.waits = [None] * count, [0] * count

    def on_epoch_end(self, epoch, logs=None):
        for k, member in enumerate(self.model.members):
            value = float(logs[f"{self.prefix}member_{k}_{self.figure}"])
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
        for member, weights in zip(self.model.members, self.best_weights):
            if weights is not None:
                member.set_weights(weights)
