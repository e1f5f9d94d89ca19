"""Character-level text input: reading, splitting, the character vocabulary and tf.data windows.

The pieces, in the order a char-RNN run uses them:

- `read_text` / `load_default_text` / `load_corpus`: the text of a UTF-8 file or a folder of
  files, or the embedded default (the source code of a standard-library package, see
  `load_default_text`). Line endings are normalised as Python's text mode does ("\\r\\n" and a
  lone "\\r" become "\\n"), so a model never learns "\\r" as a character of a Windows file.
- `split_text`: the first part for training, the last part for validation, in text order.
- `CharVocabulary`: the characters of the training text, as a `keras.layers.StringLookup`
  (forward) and its inverse. Id 0 is padding (the empty string), id 1 is `[UNK]`, the characters
  follow from id 2 in code-point order. It is saved with a run as `vocabulary.txt`.
- `make_window_dataset`: stateless training, shuffled windows `(x[:-1], x[1:])`.
- `make_stateful_dataset`: stateful training, `batch_size` contiguous streams, so that row b of
  batch k+1 continues row b of batch k.
- `make_dataset`: the one or the other, as a stateless or stateful model reads the text;
  `scored_chars` counts the characters it scores.
- `prepare_corpus`: all of the above but the datasets: a run's text read, split and encoded
  with its training part's vocabulary, as a `TextCorpus`.

Characters the vocabulary lacks (seen in validation or new text, never in training) follow an
explicit policy, `UNSEEN_POLICIES`: `"unknown"` reads them as the `[UNK]` id and counts them in a
report; `"error"` refuses the text with a `DataError` naming the first one and its line.
"""

import collections
import dataclasses
import importlib.util
import json
import pkgutil
import re
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from seqlab.data.conll import INVISIBLE_CHARACTERS
from seqlab.data.datasets import resolve_path
from seqlab.data.errors import (
    DataError,
    decode_utf8,
    empty_file,
    listed,
    normalize_line_endings,
    not_a_file,
)

DEFAULT_TEXT_PACKAGE = "email"
UNSEEN_POLICIES = ("unknown", "error")
PADDING_ID = 0
UNKNOWN_ID = 1
UNKNOWN_TOKEN = "[UNK]"

# How many distinct unseen characters a message or report lists.
_CHARS_SHOWN = 10


# ---------------------------------------------------------------------------------------------
# Reading


# A Project Gutenberg book opens with the project's header and closes with its license, outside
# the lines "*** START OF THE PROJECT GUTENBERG EBOOK <title> ***" and "*** END OF ..." (older
# files: "THIS PROJECT", "ETEXT"): some 18,000 characters of legal English that were trained on
# and, at the text's end, were most of the validation part of a short book. Only such lines at
# the start of a line, with the `***`, count: a sentence that mentions the words does not.
GUTENBERG_START = re.compile(
    r"^\*{3} ?START OF (?:THE|THIS) PROJECT GUTENBERG E(?:BOOK|TEXT)\b[^\n]*(?:\n|$)",
    re.MULTILINE | re.IGNORECASE)
GUTENBERG_END = re.compile(r"^\*{3} ?END OF (?:THE|THIS) PROJECT GUTENBERG E(?:BOOK|TEXT)\b",
                           re.MULTILINE | re.IGNORECASE)


def without_gutenberg_frame(text):
    """`(books, left_out)`: the text of every Project Gutenberg book in `text` (several where
    books were joined one after another, as `cat` joins them), without the headers and
    licenses around them, and how many characters were left out.

    A book is the text after a START line (`GUTENBERG_START`) up to the next END line
    (`GUTENBERG_END`) or, where the END line is missing, up to the next START line; the books
    are kept in order, joined as they are (each ends with its line break). What lies before the
    first START line, and from an END line to the next START line (a license and the next
    book's header), is left out, and so is the text after the last END line; a START line
    after the last END line, with no END after it, keeps the rest of the text (a book whose
    license was cut off). `(text, 0)` where the text holds no START line followed by an END
    line, or nothing but white space inside its frames: such a text is read as it is.
    """
    starts = [(match.start(), match.end()) for match in GUTENBERG_START.finditer(text)]
    ends = [match.start() for match in GUTENBERG_END.finditer(text)]
    if not starts or not ends or ends[-1] < starts[0][1]:
        return text, 0
    books = []
    for index, (_, body_start) in enumerate(starts):
        next_start = starts[index + 1][0] if index + 1 < len(starts) else len(text)
        body_end = min([end for end in ends if body_start <= end < next_start],
                       default=next_start)
        books.append(text[body_start:body_end])
    book = "".join(books)
    if not book.strip():
        return text, 0
    return book, len(text) - len(book)


def read_text(path, left_out=None):
    """The text of a UTF-8 file, or of every file in a folder.

    A folder's files (also in subfolders; hidden files and folders are skipped) are read in the
    order of their sorted relative paths and joined; a line break is put between two files when
    the first does not end with one. Line endings are normalised as Python's text mode does:
    "\\r\\n" and a lone "\\r" become "\\n" (the files are read as bytes, so that an undecodable
    byte is named by its byte offset; its line is counted with the same line breaks).

    Args:
        path: a text file or a folder of text files, or a registered data-set name
            (`data.datasets.resolve_path`).
        left_out: None, or a dict: then each file's Project Gutenberg header and license are
            left out (`without_gutenberg_frame`) and the dict gets `{file: characters left
            out}` of each file that had them.

    Returns:
        `(text, files)`: the text and the list of files read.

    Raises:
        DataError: the path is missing, a file is not UTF-8 (naming the file, the line and the
            byte offset), or there is no text.
    """
    path = resolve_path(path)
    if path.is_dir():
        files = sorted(
            p for p in path.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
        if not files:
            raise DataError("the folder holds no files; expected text files", path=path)
    elif path.is_file():
        files = [path]
    elif path.exists():  # a pipe, device or socket
        raise not_a_file(path)
    else:
        raise DataError("file or folder not found", path=path)
    parts = []
    for file in files:
        text = normalize_line_endings(decode_utf8(file.read_bytes(), file))
        if left_out is not None:
            text, count = without_gutenberg_frame(text)
            if count:
                left_out[file] = count
        if parts and text and not parts[-1].endswith("\n"):
            parts.append("\n")
        parts.append(text)
    text = "".join(parts)
    if not text and path.is_dir():
        raise DataError("every file in the folder is empty; expected text", path=path)
    # 400 line breaks (or zero-width spaces) trained a model of one character; the other
    # tasks refuse such files.
    if not text.translate(dict.fromkeys(map(ord, INVISIBLE_CHARACTERS))).strip():
        if path.is_dir():
            raise DataError("the folder's files hold only blank lines and white space; expected "
                            "text", path=path)
        raise empty_file(text, "text", path)
    return text, files


def load_default_text(package=DEFAULT_TEXT_PACKAGE):
    """The source code of a standard-library package, the embedded default text.

    Every Python installation has it, and we cannot ship third-party text. The modules of
    `package` (`email`: about 380,000 characters of code and English docstrings in Python 3.11)
    are found with `importlib` and `pkgutil` and read through their loaders (`get_source`, which
    also works for a zipped standard library) without being executed, in sorted module-name
    order, joined by line breaks. The exact text depends on the Python version.

    Returns:
        `(text, source)`: the text and a description of it for messages and metrics.
    """
    modules = []
    pending = [package]
    while pending:
        name = pending.pop()
        spec = importlib.util.find_spec(name)
        modules.append((name, spec.loader.get_source(name) or ""))
        for module in pkgutil.iter_modules(spec.submodule_search_locations or []):
            pending.append(f"{name}.{module.name}")
    modules.sort()
    text = "\n".join(source for _, source in modules)
    source = f"Python standard library: source of the {package!r} package ({len(modules)} modules)"
    return text, source


def split_text(text, val_fraction, source=None):
    """The text split in order: the first `1 - val_fraction` for training, the rest validation.

    Raises:
        DataError: either part would be shorter than 2 characters (one input, one target).
    """
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must lie in (0, 1). Received: val_fraction={val_fraction}")
    cut = int(round(len(text) * (1 - val_fraction)))
    train, validation = text[:cut], text[cut:]
    if len(train) < 2 or len(validation) < 2:
        raise DataError(
            f"the text is too short to split: {len(text)} characters give {len(train)} for "
            f"training and {len(validation)} for validation (val_fraction={val_fraction}); each "
            "needs at least 2",
            path=source,
        )
    return train, validation


def describe_gutenberg_left_out(left_out):
    """The summary's note of `read_text`'s `left_out` ("" where nothing was)."""
    if not left_out:
        return ""
    where = (Path(next(iter(left_out))).name if len(left_out) == 1
             else f"{len(left_out)} files")
    return (f"Project Gutenberg's header and license (the text outside each book's START and "
            f"END lines) left out: {sum(left_out.values()):,} characters ({where})")


def load_corpus(path=None, left_out=None):
    """`(text, source)` of a text file or folder (`read_text`, with its `left_out`), or of the
    embedded default (`load_default_text`) when `path` is None; `source` describes the text for
    messages."""
    if path is None:
        return load_default_text()
    text, files = read_text(path, left_out=left_out)
    source = str(path) if len(files) == 1 else f"{path} ({len(files)} files)"
    return text, source


# ---------------------------------------------------------------------------------------------
# Vocabulary


def _line_of(text, offset):
    return text.count("\n", 0, offset) + 1


# Characters looked up at once by `CharVocabulary.encode`.
_ENCODE_CHARS = 1 << 20


class CharVocabulary:
    """Characters <-> ids with `keras.layers.StringLookup`, saved as `vocabulary.txt`.

    Id 0 is padding (the empty string, masked by the model), id 1 is `[UNK]` (a character the
    training text lacks), the characters follow from id 2. The lookup layers work inside a
    SavedModel's graph as well as eagerly.

    Args:
        chars: the characters, distinct, in id order (id 2 first).

    Example:

    >>> vocabulary = CharVocabulary.from_text("hello")
    >>> vocabulary.chars, vocabulary.size
    (['e', 'h', 'l', 'o'], 6)
    >>> vocabulary.encode("hole!")[0].tolist()
    [3, 5, 4, 2, 1]
    """

    def __init__(self, chars):
        chars = list(chars)
        if len(set(chars)) != len(chars) or any(len(c) != 1 for c in chars):
            raise ValueError(f"chars must be distinct single characters. Received: {chars!r}")
        self.chars = chars
        self.lookup = keras.layers.StringLookup(
            vocabulary=chars, mask_token="", oov_token=UNKNOWN_TOKEN, name="char_lookup"
        )
        self.inverse = keras.layers.StringLookup(
            vocabulary=chars, mask_token="", oov_token=UNKNOWN_TOKEN, invert=True,
            name="char_inverse",
        )
        # Built now (they have no weights to wait for), so that an export can track them.
        self.lookup.build(None)
        self.inverse.build(None)

    @classmethod
    def from_text(cls, text):
        """The vocabulary of the distinct characters of `text`, in code-point order."""
        return cls(sorted(set(text)))

    @property
    def size(self):
        """The number of ids: characters, padding and `[UNK]`."""
        return len(self.chars) + 2

    def __repr__(self):
        return f"CharVocabulary({len(self.chars)} characters, size={self.size})"

    def encode(self, text, policy="unknown", source=None, before=""):
        """The ids of the characters of `text`, and a report of those the vocabulary lacks.

        Args:
            text: a string.
            policy: `"unknown"` reads unseen characters as `[UNK]`; `"error"` refuses them.
            source: the file the text came from, for messages.
            before: the file's text before `text` (a validation part's training part), so
                that a message's offset and line count from the file's start.

        Returns:
            `(ids, unseen)`: int32 array of the ids, and a dict `{character: count}` of the
            unseen characters (empty when there are none).

        Raises:
            DataError: `policy="error"` and the text holds a character the vocabulary lacks.
            TypeError: `text` is not a string.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string (decode bytes first). Received: "
                            f"{type(text).__name__}")
        if policy not in UNSEEN_POLICIES:
            raise ValueError(
                f"policy must be one of {UNSEEN_POLICIES}. Received: policy={policy!r}"
            )
        # In pieces: one string tensor element a character of a 200 MB text took 9 GB and
        # ended in a segmentation fault inside TensorFlow.
        ids = np.concatenate([np.zeros(0, np.int32)] + [
            self.lookup(tf.strings.unicode_split(text[start:start + _ENCODE_CHARS], "UTF-8"))
            .numpy().astype(np.int32)
            for start in range(0, len(text), _ENCODE_CHARS)])
        unseen = {}
        positions = np.flatnonzero(ids == UNKNOWN_ID)
        if len(positions):
            counts = collections.Counter(text[p] for p in positions)
            unseen = dict(counts.most_common())
            if policy == "error":
                first = int(positions[0])
                raise DataError(
                    f"character {text[first]!r} (offset {len(before) + first}) is not in the "
                    f"training vocabulary; unseen in all: {describe_chars(unseen)}. Use the "
                    f"policy 'unknown' (--unseen-chars unknown) to read them as {UNKNOWN_TOKEN}",
                    path=source,
                    line=before.count("\n") + _line_of(text, first),
                )
        return ids, unseen

    def decode(self, ids):
        """The text of a sequence of ids (padding is dropped, `[UNK]` written as `[UNK]`)."""
        ids = tf.reshape(tf.convert_to_tensor(ids, tf.int64), [-1])
        return tf.strings.reduce_join(self.inverse(ids)).numpy().decode("utf-8")

    def to_text(self):
        """The contents of `vocabulary.txt`: line n holds the character of id n + 1 as a JSON
        string (so that line breaks and spaces stay visible; JSON leaves U+0085, U+2028 and
        U+2029 as they are, which many readers take for line breaks: escaped too)."""
        return "".join(json.dumps(c, ensure_ascii=c.splitlines() != [c]) + "\n"
                       for c in self.chars)

    @classmethod
    def from_file(cls, path):
        """The vocabulary saved by `to_text` in `path` (lines end at "\n" alone: a run written
        before `to_text` escaped U+2028 and its kin holds them raw)."""
        path = Path(path)
        chars, lines = [], {}
        lines_of_file = decode_utf8(path.read_bytes(), path).split("\n")
        if lines_of_file[-1] == "":  # the last line's end
            lines_of_file.pop()
        for number, line in enumerate(lines_of_file, start=1):
            try:
                char = json.loads(line)
            except json.JSONDecodeError:
                char = None
            if not (isinstance(char, str) and len(char) == 1):
                raise DataError(f"not one character as a JSON string: {line[:40]!r}; expected "
                                "one character per line", path=path, line=number)
            if char in lines:
                raise DataError(f"the character {char!r} is on line {lines[char]} too; expected "
                                "each character once", path=path, line=number)
            chars.append(char)
            lines[char] = number
        return cls(chars)


def describe_chars(counts):
    """`'é' x3, '\\t' x1 and 2 more` for a `{character: count}` dict."""
    return listed((f"{c!r} x{n}" for c, n in counts.items()), _CHARS_SHOWN)


# ---------------------------------------------------------------------------------------------
# Datasets


def _check_sizes(**sizes):
    """Each named size is a whole number of at least 1 (`ValueError` naming it, as Keras
    refuses a bad argument)."""
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer. Received: {name}={value!r}")


def _as_ids(ids):
    """`ids` as a 1-D int32 array, refused (`ValueError`) where the cast would change a value:
    a fraction, a negative id, an id beyond int32, a 2-D array, booleans or strings."""
    array = np.asarray(ids)
    if array.ndim != 1:
        raise ValueError(f"ids must be a 1-D array of character ids. Received an array of "
                         f"shape {array.shape}")
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer)
                                   or np.issubdtype(array.dtype, np.floating)):
        raise ValueError(f"ids must be integers (character ids). Received dtype {array.dtype}")
    if len(array):
        bad = np.flatnonzero(~np.isfinite(array) | (array != np.floor(array)) | (array < 0)
                             | (array > np.iinfo(np.int32).max))
        if len(bad):
            raise ValueError(
                f"ids must be whole numbers from 0 to {np.iinfo(np.int32).max}. Received "
                f"{array[bad[0]].item()!r} at position {int(bad[0])}"
                + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
    return array.astype(np.int32)


def _check_length(ids, needed, what, source):
    if len(ids) < needed:
        raise DataError(
            f"the text is too short for {what}: it has {len(ids)} characters and needs at "
            f"least {needed}",
            path=source,
        )


def make_window_dataset(ids, window, batch_size, seed=None, shuffle=True, source=None):
    """Stateless training windows: `(x[:-1], x[1:])` of consecutive, non-overlapping windows.

    The text is cut into `len(ids) // window` pieces of `window + 1` ids that overlap by one id
    (each input id is used once per epoch; the last incomplete piece is dropped), shuffled again
    every epoch with `seed`, and batched (the last batch may be smaller).

    Args:
        ids: 1-D integer array of character ids.
        window: the time steps of one training example.
        batch_size: examples per batch.
        seed: the shuffle seed.
        shuffle: whether to shuffle (evaluation keeps text order).
        source: the text's file, for messages.

    Returns:
        A `tf.data.Dataset` of `(x [batch, window], y [batch, window])` int32 pairs, where
        `y[:, t]` is the character after `x[:, t]`.

    Raises:
        DataError: the text is shorter than one window plus one character.
        ValueError: `ids` are not a 1-D array of whole numbers from 0 to 2**31 - 1.
    """
    _check_sizes(window=window, batch_size=batch_size)
    ids = _as_ids(ids)
    _check_length(ids, window + 1, f"one window of {window} steps", source)
    count = (len(ids) - 1) // window
    inputs = ids[: count * window].reshape(count, window)
    targets = ids[1 : count * window + 1].reshape(count, window)
    dataset = tf.data.Dataset.from_tensor_slices((inputs, targets))
    if shuffle:
        dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def stateful_layout(length, batch_size, window):
    """`(batches, stream_length)` of `make_stateful_dataset` for a text of `length` ids."""
    batches = (length - 1) // (batch_size * window)
    return batches, batches * window


def make_stateful_dataset(ids, batch_size, window, source=None):
    """Stateful training batches: `batch_size` contiguous streams, continued batch after batch.

    The text is split into `batch_size` streams of equal length `batches * window` (the ids left
    over at the end are dropped). Batch k holds, in row b, the k-th window of stream b, so row b
    of batch k+1 continues exactly where row b of batch k ended and a stateful model's state of
    row b carries the context of its stream. No shuffling; every batch is full
    (`drop_remainder`), as a stateful layer's fixed batch size requires. The seeds' "one window
    at a time" recipe is the special case `batch_size=1`.

    Args:
        ids: 1-D integer array of character ids.
        batch_size: the number of streams (the model's fixed batch size).
        window: the time steps of one batch.
        source: the text's file, for messages.

    Returns:
        A `tf.data.Dataset` of `(x [batch_size, window], y [batch_size, window])` int32 pairs,
        where `y[b, t]` is the character after `x[b, t]`.

    Raises:
        DataError: the text is shorter than `batch_size * window + 1` ids (one batch).
        ValueError: `ids` are not a 1-D array of whole numbers from 0 to 2**31 - 1.

    Example:

    >>> batches = list(make_stateful_dataset(np.arange(13), batch_size=2, window=3))
    >>> [x.numpy().tolist() for x, _ in batches]
    [[[0, 1, 2], [6, 7, 8]], [[3, 4, 5], [9, 10, 11]]]
    """
    _check_sizes(batch_size=batch_size, window=window)
    ids = _as_ids(ids)
    _check_length(
        ids, batch_size * window + 1,
        f"stateful batches of {batch_size} streams x {window} steps", source,
    )
    batches, stream_length = stateful_layout(len(ids), batch_size, window)
    used = batch_size * stream_length
    streams = ids[:used].reshape(batch_size, stream_length)
    shifted = ids[1 : used + 1].reshape(batch_size, stream_length)

    def windows(array):
        # [batch_size, batches, window] -> [batches, batch_size, window]
        return array.reshape(batch_size, batches, window).transpose(1, 0, 2)

    dataset = tf.data.Dataset.from_tensor_slices((windows(streams), windows(shifted)))
    return dataset.prefetch(tf.data.AUTOTUNE)


# ---------------------------------------------------------------------------------------------
# A run's corpus


@dataclasses.dataclass
class TextCorpus:
    """A text split in order and encoded with the vocabulary of its training part.

    Attributes:
        source: where the text came from, for messages and metrics.
        vocabulary: the `CharVocabulary` the parts are encoded with.
        train_ids: int32 ids of the training part.
        val_ids: int32 ids of the validation part.
        val_text: the validation part (a run's default sample prompt is its first line).
        total_chars: the length of the whole text.
        unused_train_chars: the training characters `max_train_chars` left out.
        unseen: `{character: count}` of the validation characters read as `[UNK]`.
        val_starts_a_line: whether the validation part starts a line of the text (the
            character before it is a line break), rather than inside one.
        gutenberg_left_out: `{file: characters}` of the Project Gutenberg headers and licenses
            left out (`without_gutenberg_frame`).
    """

    source: str
    vocabulary: CharVocabulary
    train_ids: np.ndarray
    val_ids: np.ndarray
    val_text: str
    total_chars: int
    unused_train_chars: int
    unseen: dict
    val_starts_a_line: bool = True
    gutenberg_left_out: dict = dataclasses.field(default_factory=dict)

    def report(self):
        """The corpus in figures: source, lengths, vocabulary size and unseen characters (a
        run's metrics.json keeps them under `data`)."""
        return {
            "source": self.source,
            "chars": self.total_chars,
            "train_chars": len(self.train_ids),
            "unused_train_chars": self.unused_train_chars,
            "val_chars": len(self.val_ids),
            "vocabulary_size": self.vocabulary.size,
            "unseen_val_chars": self.unseen,
            **({"gutenberg_left_out": {str(file): count
                                       for file, count in self.gutenberg_left_out.items()}}
               if self.gutenberg_left_out else {}),
        }


def prepare_corpus(path, val_fraction, max_train_chars=None, unseen_chars="unknown",
                   vocabulary=None, gutenberg=True):
    """Reads, splits and encodes a text; builds the vocabulary on the training part unless given.

    Args:
        path: a text file or folder; None for the embedded default text.
        val_fraction: the share of the text for validation (its last part, `split_text`).
        max_train_chars: use only the first N characters of the training part (None: all).
        unseen_chars: the policy for validation characters the vocabulary lacks
            (`UNSEEN_POLICIES`).
        vocabulary: the `CharVocabulary` to encode with (a trained run's); None builds it.
        gutenberg: whether a Project Gutenberg book's header and license are left out
            (`read_text`'s `left_out`); False reads the text whole, as a run trained before
            they were left out split it.

    Returns:
        A `TextCorpus`.

    Raises:
        DataError: unreadable or empty text, a text too short to split, or (policy `"error"`)
            a validation character the vocabulary lacks.
    """
    framed = {}
    text, source = load_corpus(path, left_out=framed if gutenberg else None)
    train_text, val_text = split_text(text, val_fraction, source=source)
    before_val = train_text  # for messages about the validation part: its place in the file
    unused = 0
    if max_train_chars is not None and len(train_text) > max_train_chars:
        unused = len(train_text) - max_train_chars
        train_text = train_text[:max_train_chars]
    vocabulary = vocabulary or CharVocabulary.from_text(train_text)
    train_ids, _ = vocabulary.encode(train_text)
    val_ids, unseen = vocabulary.encode(val_text, policy=unseen_chars, source=source,
                                        before=before_val)
    return TextCorpus(source, vocabulary, train_ids, val_ids, val_text, len(text), unused, unseen,
                      val_starts_a_line=before_val.endswith("\n"), gutenberg_left_out=framed)


def make_dataset(ids, window, batch_size, stateful=False, shuffle=False, seed=None, source=None):
    """The dataset a stateless or a stateful model reads `ids` from.

    Stateless: `make_window_dataset`, windows of `window` characters (shuffled with `seed` when
    `shuffle`) in batches of `batch_size`. Stateful: `make_stateful_dataset`, `batch_size`
    contiguous streams, batch k+1 continuing batch k (never shuffled).

    Raises:
        DataError: the text is shorter than one window (stateless) or one batch (stateful).
    """
    if stateful:
        return make_stateful_dataset(ids, batch_size, window, source=source)
    return make_window_dataset(ids, window, batch_size, seed=seed, shuffle=shuffle, source=source)


def scored_chars(length, window, batch_size, stateful=False):
    """How many of `length` ids `make_dataset` scores (it drops an incomplete remainder)."""
    if stateful:
        _, stream_length = stateful_layout(length, batch_size, window)
        return batch_size * stream_length
    return (length - 1) // window * window


__all__ = [
    "DEFAULT_TEXT_PACKAGE",
    "PADDING_ID",
    "UNKNOWN_ID",
    "UNKNOWN_TOKEN",
    "UNSEEN_POLICIES",
    "CharVocabulary",
    "TextCorpus",
    "describe_chars",
    "load_corpus",
    "load_default_text",
    "make_dataset",
    "make_stateful_dataset",
    "make_window_dataset",
    "prepare_corpus",
    "read_text",
    "scored_chars",
    "split_text",
    "stateful_layout",
]
