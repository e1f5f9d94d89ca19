"""Translation input: sentence pairs from aligned files or a TSV, reversible tokens, tf.data.

Layouts `read_pairs` reads (UTF-8, a byte-order mark is allowed; line endings are normalised as
Python's text mode does, "\\r\\n" and a lone "\\r" ending a line like "\\n"):

- aligned files: two files with one sentence per line, line n of the target file translating
  line n of the source file (`--src train.en --tgt train.de`). Different line counts are a
  `DataError` that names the file and the line; a pair with an empty line on either side (many
  in Europarl's aligned files) is left out and counted, as fairseq, Marian and OpenNMT filter
  such pairs (`SentencePairs.empty_lines`), unless no pair is left.
- a folder of aligned split files (`--data DIR --src-lang en --tgt-lang de`): `train.en` /
  `train.de`, optionally `val.*` (or `valid.*`, `dev.*`) and any number of test sets
  `test*.en` / `test*.de` (`test_2016_flickr.en` ...), the Multi30k layout.
- a TSV of pairs (the Anki / Tatoeba format, no header): source in column 1 and target in column
  2 unless `columns` says otherwise; further columns (Anki's attribution) are ignored. A blank
  line, or an empty source or target, is left out and counted as in aligned files.

Tokens keep case and punctuation and record where the spaces were, so that `detokenize` gives
back the text (with runs of whitespace made single spaces) and model output can be scored by
sacrebleu against the raw references. A token that followed a space starts with the marker
U+2581 ("▁", as in SentencePiece); punctuation is split off words:

    "A man's bike."  ->  ["A", "▁man", "'", "s", "▁bike", "."]

`tokenize` and `detokenize` are TensorFlow string ops, so the same code runs in tf.data, eagerly
and inside an exported SavedModel.

Vocabularies (`Vocabulary`) are plain text, one token per line; ids 0-3 are reserved for padding,
[UNK], [START] and [END]. `make_dataset` builds the batches `((source_ids[batch, S],
target_in_ids[batch, T]), target_out_ids[batch, T])`, padded with 0, where `target_in` is
[START] + target and `target_out` is target + [END].

`load_data` reads the pairs to train on (or the embedded sample) and splits them into train /
val / test (`PreparedPairs`), whose `encode` builds the vocabularies and ids and whose
`datasets` the training batches; `read_test_pairs` reads the pairs to score a run on.
"""

import collections
import dataclasses
import re
from importlib import resources
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from seqlab.data.classification import texts_also_in
from seqlab.data.datasets import resolve_path
from seqlab.data.errors import (
    DataError, decode_utf8, empty_file, listed, normalize_line_endings, read_utf8,
)

SPACE_MARK = "\u2581"
PAD, UNK, START, END = "", "[UNK]", "[START]", "[END]"
PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3
SAMPLE_SOURCE = "seqlab smoke-test sample (data/samples/translation_sample.tsv)"
VALIDATION_STEMS = ("val", "valid", "dev")
# Training batches hold pairs whose lengths lie in the same bucket this many tokens wide.
TRAIN_BUCKET_WIDTH = 4
# How many line numbers a report or summary line lists before it says "and N more".
LINES_SHOWN = 5

# Letters, digits and combining marks make words; any other visible character is a token.
_PUNCTUATION = rf"({SPACE_MARK}?)([^\pL\pN\pM\s{SPACE_MARK}])"


# ---------------------------------------------------------------------------------------------
# Tokens


def tokenize(texts):
    """Splits texts into reversible tokens (words and punctuation; case kept), in TF ops.

    Whitespace is normalised first (runs of spaces, tabs and other separators become one space;
    leading and trailing ones are dropped; a literal "▁" counts as a space). A token that follows
    a space starts with "▁"; punctuation is a token of its own.

    Args:
        texts: string tensor `[batch]` (or a list of str).

    Returns:
        `tf.RaggedTensor` of strings `[batch, (tokens)]`.
    """
    texts = tf.strings.regex_replace(tf.convert_to_tensor(texts, tf.string), SPACE_MARK, " ")
    # Every character Python's str.isspace() counts (RE2's \s lacks \v, \x1c-\x1f, \x85), so
    # that no token holds whitespace.
    texts = tf.strings.strip(
        tf.strings.regex_replace(texts, r"[\s\pZ\x0b\x1c-\x1f\x85]+", " "))
    texts = tf.strings.regex_replace(texts, " ", " " + SPACE_MARK)
    texts = tf.strings.regex_replace(texts, _PUNCTUATION, r" \1\2 ")
    return tf.strings.split(texts)


def detokenize(tokens):
    """Joins tokens back into text: the inverse of `tokenize` (up to whitespace runs).

    [UNK] (a model's output for a word outside its vocabulary, which has lost whether a space
    preceded it) is written as a word of its own: "Ein Boston [UNK] läuft".

    Args:
        tokens: string tokens `[batch, tokens]`, ragged or padded with empty strings.

    Returns:
        string tensor `[batch]`.
    """
    joined = tf.strings.reduce_join(tokens, axis=-1)
    joined = tf.strings.regex_replace(joined, re.escape(UNK), SPACE_MARK + UNK)
    return tf.strings.strip(tf.strings.regex_replace(joined, SPACE_MARK, " "))


def token_text(token):
    """A token as a person reads it (the space marker dropped), for plots and reports."""
    return token.replace(SPACE_MARK, "")


# ---------------------------------------------------------------------------------------------
# Vocabularies


class Vocabulary:
    """The tokens of one language, by id: 0 padding, 1 [UNK], 2 [START], 3 [END], then the rest.

    Args:
        tokens: the tokens from id 4 on, most frequent first.

    Example:

    >>> vocabulary = Vocabulary.build(tokenize(["A dog.", "A cat."]))
    >>> vocabulary.tokens[4:]
    ['.', 'A', '▁cat', '▁dog']
    """

    RESERVED = (PAD, UNK, START, END)

    def __init__(self, tokens):
        tokens = list(tokens)
        reserved = [t for t in tokens if not self.can_be_token(t)]
        if reserved:
            raise ValueError(
                f"vocabulary tokens must be non-empty, without surrounding whitespace and not "
                f"{', '.join(map(repr, self.RESERVED[1:]))}. Received: {reserved[:5]}"
            )
        if len(set(tokens)) != len(tokens):
            raise ValueError("vocabulary tokens must be unique")
        self.tokens = list(self.RESERVED) + tokens

    @classmethod
    def can_be_token(cls, text):
        """Whether `text` may be a token of the vocabulary: not empty, without surrounding
        white space, not a reserved token."""
        return bool(text) and text == text.strip() and text not in cls.RESERVED

    def __len__(self):
        return len(self.tokens)

    def __repr__(self):
        return f"Vocabulary({len(self)} tokens: {self.tokens[4:9]}...)"

    @classmethod
    def build(cls, tokens, min_count=1, max_size=None):
        """The vocabulary of tokenised training text.

        Args:
            tokens: string tokens `[batch, (tokens)]` (a `tf.RaggedTensor`, as from `tokenize`).
            min_count: leave out tokens seen fewer times (they become [UNK]).
            max_size: keep at most this many ids (reserved ones included); the most frequent
                tokens win, ties in alphabetical order.
        """
        values = tokens.flat_values.numpy() if isinstance(tokens, tf.RaggedTensor) else tokens
        counts = collections.Counter(t.decode("utf-8") for t in values)
        ranked = sorted(
            (t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t)
        )
        if max_size is not None:
            ranked = ranked[: max(0, max_size - len(cls.RESERVED))]
        return cls(ranked)

    def to_text(self):
        """The tokens from id 4 on, one per line; the reserved ids are implied."""
        return "".join(t + "\n" for t in self.tokens[4:])

    def save(self, path):
        """Writes `to_text()` to `path` (UTF-8)."""
        Path(path).write_text(self.to_text(), encoding="utf-8")

    @classmethod
    def load(cls, path):
        """The vocabulary `save` wrote to `path`.

        Raises:
            DataError: a line that cannot be a token (empty, padded with white space, a reserved
                token) or a token listed twice, named with its line (the file was edited).
        """
        tokens = decode_utf8(Path(path).read_bytes(), path).splitlines()
        lines = {}
        for number, token in enumerate(tokens, start=1):
            if not cls.can_be_token(token):
                raise DataError(
                    f"{token!r} cannot be a token; expected one token per line, without "
                    f"surrounding white space and not {', '.join(map(repr, cls.RESERVED[1:]))} "
                    "(the file was edited or damaged)", path=path, line=number)
            if token in lines:
                raise DataError(f"the token {token!r} is on line {lines[token]} too; expected "
                                "each token once (the file was edited or damaged)", path=path,
                                line=number)
            lines[token] = number
        return cls(tokens)

    def lookup_layer(self, invert=False):
        """A `keras.layers.StringLookup` from tokens to ids (or back, with `invert`).

        Unknown tokens map to [UNK] (1) and the empty string (padding) to 0; inverted, id 0
        gives the empty string, so padded rows detokenise cleanly.
        """
        return keras.layers.StringLookup(
            vocabulary=self.tokens[2:], mask_token=PAD, oov_token=UNK, invert=invert
        )


# ---------------------------------------------------------------------------------------------
# Reading


@dataclasses.dataclass
class SentencePairs:
    """Source sentences, their translations, and where each pair came from.

    Attributes:
        sources: the source sentences (raw text).
        targets: the target sentences (raw text; the references BLEU is scored against).
        origins: `(file, line)` of each pair's source.
        name: a name for messages and reports (the files read).
        empty_lines: the lines of the file(s) read whose pair was left out, its source or
            target empty (white space only); not carried into a `subset`.
    """

    sources: list
    targets: list
    origins: list
    name: str
    empty_lines: list = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.sources)

    def empty_report(self):
        """`{"file", "count", "first"}`: the pairs left out for an empty side, and the first
        `LINES_SHOWN` of their lines; None when none was."""
        if not self.empty_lines:
            return None
        return {"file": self.name, "count": len(self.empty_lines),
                "first": self.empty_lines[:LINES_SHOWN]}

    def subset(self, indices, name=None):
        """The pairs at `indices`, in that order."""
        return SentencePairs(
            sources=[self.sources[i] for i in indices],
            targets=[self.targets[i] for i in indices],
            origins=[self.origins[i] for i in indices],
            name=name or self.name,
        )


def read_lines(path):
    """The lines of a UTF-8 text file (a byte-order mark is dropped), without line endings.

    "\\r\\n", a lone "\\r" and "\\n" end a line, as in Python's text mode, so no sentence keeps
    a "\\r"; other characters that `str.splitlines` would split at (U+2028, form feeds, ...) do
    not, and line numbers count the same breaks.

    Raises:
        DataError: a missing or empty file, or bytes that are not UTF-8 (the line is named).
    """
    text = normalize_line_endings(read_utf8(path))
    if not text.strip():
        raise empty_file(text, "one sentence per line", path)
    # Only line endings end a line: str.splitlines would also split at U+2028 and form feeds,
    # and so count lines differently from the aligned file.
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def read_sources(path, column=1):
    """The sentences to translate in a UTF-8 file: one per line; or, where a line holds a tab,
    the file read as a TSV of pairs (`read_tsv_pairs`' format) and its source `column` taken,
    as training and evaluation read it (a file of pairs was translated whole, its reference
    included).

    Raises:
        DataError: as `read_lines`, or, in a TSV, a line without the source column, or a line
            of text without a tab beside one with (either the tab is a sentence's or the line
            lacks its pair: "A man\tis walking." was translated as "A man" beside lines
            translated whole).
    """
    lines = read_lines(path)
    first_tab = next((number for number, line in enumerate(lines, start=1) if "\t" in line),
                     None)
    if first_tab is None:
        return lines
    untabbed = next((number for number, line in enumerate(lines, start=1)
                     if line.strip() and "\t" not in line), None)
    if untabbed is not None:
        raise DataError(
            f"the line holds no tab, but line {first_tab} does; expected a TSV of pairs (a tab "
            "between the columns of every line, the source sentence in column "
            f"{column}, the run's tsv_columns) or one sentence per line without tabs",
            path=path, line=untabbed)
    sources = []
    for number, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if len(fields) < column:
            raise DataError(
                f"the line has {len(fields)} tab-separated column(s); expected at least "
                f"{column}: the file is read as a TSV (line {first_tab} holds a tab) whose "
                f"source sentences are in column {column} (the run's tsv_columns)",
                path=path,
                line=number,
            )
        sources.append(fields[column - 1])
    return sources


def read_aligned(source_path, target_path):
    """Reads two aligned files: line n of `target_path` translates line n of `source_path`.

    A pair whose line is empty (or white space only) in either file is left out; its line is
    in `SentencePairs.empty_lines`.

    Raises:
        DataError: a missing or empty file, undecodable bytes, different line counts (the first
            line the shorter file lacks is named), or no pair left without an empty line.
    """
    sources, targets = read_lines(source_path), read_lines(target_path)
    if len(sources) != len(targets):
        longer, shorter = (
            (source_path, target_path) if len(sources) > len(targets)
            else (target_path, source_path)
        )
        raise DataError(
            f"the aligned files have different line counts ({Path(source_path).name}: "
            f"{len(sources)}, {Path(target_path).name}: {len(targets)}); this line has no "
            f"translation in {shorter}. Expected one sentence per line, line for line",
            path=longer,
            line=min(len(sources), len(targets)) + 1,
        )
    pairs = SentencePairs(
        sources=sources,
        targets=targets,
        origins=[(str(source_path), n) for n in range(1, len(sources) + 1)],
        name=f"{source_path} + {target_path}",
    )
    return _without_empty_pairs(pairs, f"an empty line in {Path(source_path).name} or "
                                       f"{Path(target_path).name}")


def _without_empty_pairs(pairs, why):
    """`pairs` without those whose source or target is empty (white space only), their lines
    recorded in `empty_lines`.

    Raises:
        DataError: no pair is left (`why` says what emptied the pairs, for the message).
    """
    kept = [index for index, pair in enumerate(zip(pairs.sources, pairs.targets))
            if all(side.strip() for side in pair)]
    if len(kept) == len(pairs):
        return pairs
    if not kept:
        raise DataError(
            f"no sentence pair is left: each of the {len(pairs)} has an empty side ({why}); "
            "expected pairs of sentences", path=pairs.name)
    empty = sorted(set(range(len(pairs))) - set(kept))
    left = pairs.subset(kept)
    left.empty_lines = [pairs.origins[index][1] for index in empty]
    return left


def read_tsv_pairs(path, columns=(1, 2)):
    """Reads a TSV of sentence pairs without header (Anki / Tatoeba format).

    Args:
        path: the file; one pair per line, fields separated by tabs (no quoting).
        columns: the 1-based columns of the source and the target; other columns are ignored.

    A blank line, or a pair whose source or target is empty (white space only), is left out;
    its line is in `SentencePairs.empty_lines`.

    Raises:
        DataError: a missing or empty file, undecodable bytes, a line with too few columns, or
            no pair left without an empty side.
    """
    source_column, target_column = columns
    needed = max(columns)
    sources, targets, origins = [], [], []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():  # an empty pair: left out below, as aligned files' are
            sources.append(line)
            targets.append(line)
            origins.append((str(path), number))
            continue
        fields = line.split("\t")
        if len(fields) < needed:
            raise DataError(
                f"the line has {len(fields)} tab-separated column(s); expected at least {needed} "
                f"(source in column {source_column}, target in column {target_column})",
                path=path,
                line=number,
            )
        sources.append(fields[source_column - 1])
        targets.append(fields[target_column - 1])
        origins.append((str(path), number))
    return _without_empty_pairs(SentencePairs(sources, targets, origins, name=str(path)),
                                "a blank line, or an empty column "
                                f"{source_column} or {target_column}")


def left_out_line(report):
    """The summary line of a `SentencePairs.empty_report`."""
    count, first = report["count"], report["first"]
    more = f" and {count - len(first)} more" if count > len(first) else ""
    return (f"left out (a side empty): {count} pair{'s' * (count != 1)} of {report['file']}, "
            f"line{'s' * (count != 1)} {listed(first, LINES_SHOWN)}{more}")


def find_split_files(folder, source_lang, target_lang, require_train=True):
    """The aligned split files of a folder: `{split name: (source file, target file)}`.

    `train` (required unless `require_train` is False), `val` (or `valid`, `dev`) and every
    `test*` stem are taken when both languages are present. Splits come in the order train,
    validation, tests (by name).

    Raises:
        DataError: no such folder, no `train.<source_lang>` / `train.<target_lang>` (when
            required), or a split present in one language only.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError("folder not found", path=folder)
    stems = {}
    for lang in (source_lang, target_lang):
        for path in folder.glob(f"*.{lang}"):
            stems.setdefault(path.name[: -len(lang) - 1], set()).add(lang)
    if require_train and stems.get("train") != {source_lang, target_lang}:
        found = ", ".join(sorted(p.name for p in folder.iterdir())[:10]) or "nothing"
        raise DataError(
            f"expected the aligned files train.{source_lang} and train.{target_lang} "
            f"(--src-lang {source_lang} --tgt-lang {target_lang}); the folder holds: {found}",
            path=folder,
        )
    wanted = [s for s in ("train",) if s in stems]
    wanted += [s for s in VALIDATION_STEMS if s in stems][:1]
    wanted += sorted(s for s in stems if s.startswith("test"))
    splits = {}
    for stem in wanted:
        if stems[stem] != {source_lang, target_lang}:
            (only,) = stems[stem]
            missing = target_lang if only == source_lang else source_lang
            raise DataError(
                f"{stem}.{only} has no aligned {stem}.{missing}", path=folder / f"{stem}.{only}"
            )
        splits[stem] = (folder / f"{stem}.{source_lang}", folder / f"{stem}.{target_lang}")
    return splits


def load_sample():
    """The English -> German smoke-test sample shipped inside the package.

    A few hundred short sentence pairs written for seqlab (see `data/samples/
    translation_sample.md`) so that `seqlab translate train` runs out of the box. It shows that
    the pipeline works end to end; it is far too small to measure a translation model with.
    """
    resource = resources.files(__package__).joinpath("samples", "translation_sample.tsv")
    with resources.as_file(resource) as path:
        pairs = read_tsv_pairs(path)
    pairs.name = SAMPLE_SOURCE
    return pairs


def read_pairs(data=None, src=None, tgt=None, split="train", languages=(None, None),
               columns=(1, 2)):
    """`({split name: SentencePairs}, source)` of aligned files, a split folder or a TSV.

    Aligned files (`src`, `tgt`) and a TSV (`data`, the 1-based `columns` of source and target)
    are one split, named `split`; a folder `data` gives its split files in the `languages`
    `(source suffix, target suffix)`, `train.*` required when `split` is "train". `source`
    names what was read.

    Raises:
        DataError: unreadable or misaligned files (see `read_aligned`, `read_tsv_pairs` and
            `find_split_files`).
    """
    if src is not None:
        return {split: read_aligned(src, tgt)}, f"{src} + {tgt}"
    resolved = resolve_path(data)  # a registered data-set name stands for its folder
    if resolved.is_dir():
        files = find_split_files(resolved, *languages, require_train=split == "train")
        return {name: read_aligned(*paths) for name, paths in files.items()}, str(data)
    return {split: read_tsv_pairs(resolved, tuple(columns))}, str(data)


def split_pairs(pairs, val_fraction, test_fraction, seed):
    """A seeded random split into `(train, val, test)` pairs (each keeps the file order).

    A fraction above 0 holds out at least one pair; a fraction of 0 gives an empty split.

    Raises:
        DataError: too few pairs to hold out the fractions and keep pairs to train on.
    """
    count = len(pairs)
    n_val, n_test = (
        max(int(round(count * fraction)), 1) if fraction > 0 else 0
        for fraction in (val_fraction, test_fraction)
    )
    if count - n_val - n_test < 1:
        raise DataError(
            f"{count} sentence pairs are too few to split off val_fraction={val_fraction} and "
            f"test_fraction={test_fraction} and keep pairs to train on",
            path=pairs.name,
        )
    order = np.random.default_rng(seed).permutation(count)
    held_val, held_test = np.sort(order[:n_val]), np.sort(order[n_val : n_val + n_test])
    train = np.sort(order[n_val + n_test :])
    return pairs.subset(train), pairs.subset(held_val), pairs.subset(held_test)


def load_data(data=None, src=None, tgt=None, languages=(None, None), columns=(1, 2),
              val_fraction=0.1, test_fraction=0.1, seed=0):
    """The pairs to train on, split into train / val / test, unencoded (`PreparedPairs`).

    Reads what `read_pairs` reads, or without `data` and `src` the embedded sample. Data without
    given splits is split at random (seeded) into train / val / test with `val_fraction` and
    `test_fraction`; a folder's missing val or test split is taken from its training pairs the
    same way. The notes say which splits were held out; `PreparedPairs.left_out_empty` which
    pairs of the files read were left out for an empty side.

    Raises:
        DataError: unreadable input, or too few pairs to split (`split_pairs`).
    """
    if src is None and data is None:
        given = {"train": load_sample()}
        source = given["train"].name
    else:
        given, source = read_pairs(data, src, tgt, "train", languages, columns)
    val = next((pairs for name, pairs in given.items() if name in VALIDATION_STEMS), None)
    tests = {name: pairs for name, pairs in given.items() if name.startswith("test")}
    val_fraction = val_fraction if val is None else 0.0
    test_fraction = test_fraction if not tests else 0.0
    train, held_val, held_test = split_pairs(given["train"], val_fraction, test_fraction, seed)
    notes = []
    if val is None:
        val = held_val
        notes.append(f"val: {len(held_val)} pairs held out of the training data "
                     f"({val_fraction:.0%}, seeded)")
    if not tests:
        tests = {"test": held_test}
        notes.append(f"test: {len(held_test)} pairs held out of the training data "
                     f"({test_fraction:.0%}, seeded)")
    left_out = {name: report for name, pairs in given.items()
                if (report := pairs.empty_report()) is not None}
    return PreparedPairs(train=train, val=val, tests=tests, source=source, notes=notes,
                         left_out_empty=left_out)


def within_max_length(pairs, max_length):
    """`(pairs whose source has at most max_length tokens, how many were left out)`.

    Raises:
        DataError: every source is longer.
    """
    if max_length is None or len(pairs) == 0:
        return pairs, 0
    lengths = tokenize(pairs.sources).row_lengths().numpy()
    keep = [index for index, length in enumerate(lengths) if length <= max_length]
    if not keep:
        raise DataError(f"every source sentence is longer than {max_length} tokens, the most "
                        "the model translates", path=pairs.name)
    if len(keep) == len(pairs):
        return pairs, 0
    return pairs.subset(keep), len(pairs) - len(keep)


def read_test_pairs(data=None, src=None, tgt=None, languages=(None, None), columns=(1, 2)):
    """`{test set name: SentencePairs}` to score a run on: aligned files or a TSV (one set,
    "test"), or the `test*` files of a folder (in the `languages`).

    Raises:
        DataError: unreadable input, or a folder without aligned `test*` files.
    """
    given, _ = read_pairs(data, src, tgt, "test", languages, columns)
    tests = {name: pairs for name, pairs in given.items() if name.startswith("test")}
    if not tests:
        source_lang, target_lang = languages
        raise DataError(f"no aligned test*.{source_lang} / test*.{target_lang} files", path=data)
    return tests


# ---------------------------------------------------------------------------------------------
# Ids and batches


@dataclasses.dataclass
class EncodedPairs:
    """Token ids of sentence pairs, ragged, with the pairs too long to train on left out.

    Attributes:
        source_ids: int32 `tf.RaggedTensor` `[pairs, (tokens)]`.
        target_ids: int32 `tf.RaggedTensor` `[pairs, (tokens)]` (without [START] / [END]).
        kept: indices (into the pairs given) of the pairs kept.
        skipped: how many pairs were too long.
    """

    source_ids: tf.RaggedTensor
    target_ids: tf.RaggedTensor
    kept: np.ndarray
    skipped: int


def encode_pairs(pairs, source_lookup, target_lookup, max_length=None):
    """Tokenises pairs and maps tokens to ids.

    Args:
        pairs: `SentencePairs`.
        source_lookup, target_lookup: `StringLookup` layers (`Vocabulary.lookup_layer()`).
        max_length: leave out pairs whose source has more tokens, or whose target has more
            than `max_length - 2`, the most a model of that `max_length` can choose (its
            decoder reads [START] and every token it chose, [END] included); None keeps every
            pair.
    """
    source_ids = tf.cast(source_lookup(tokenize(pairs.sources)), tf.int32)
    target_ids = tf.cast(target_lookup(tokenize(pairs.targets)), tf.int32)
    keep = np.ones(len(pairs), bool)
    if max_length is not None:
        keep = (source_ids.row_lengths().numpy() <= max_length) & (
            target_ids.row_lengths().numpy() <= max_length - 2
        )
    kept = np.flatnonzero(keep)
    if not keep.all():
        source_ids = tf.gather(source_ids, kept)
        target_ids = tf.gather(target_ids, kept)
    return EncodedPairs(source_ids, target_ids, kept, int((~keep).sum()))


def make_dataset(source_ids, target_ids, batch_size, shuffle_seed=None, bucket_width=None):
    """Batches `((source_ids[batch, S], target_in_ids[batch, T]), target_out_ids[batch, T])`.

    `target_in` is [START] + target and `target_out` is target + [END]; rows are padded with 0
    to the longest row of their batch.

    Args:
        source_ids, target_ids: int32 `tf.RaggedTensor`s `[pairs, (tokens)]` (`encode_pairs`).
        batch_size: pairs per batch (the last batch of a bucket may be smaller).
        shuffle_seed: reshuffle all pairs each epoch with this seed; None keeps the order.
        bucket_width: batch pairs of similar length together (buckets `bucket_width` tokens
            wide), which saves computing padding; None batches in order.
    """
    dataset = tf.data.Dataset.from_tensor_slices((source_ids, target_ids))
    if shuffle_seed is not None:
        dataset = dataset.shuffle(
            int(source_ids.nrows()), seed=shuffle_seed, reshuffle_each_iteration=True
        )

    def with_start_and_end(source, target):
        target_in = tf.concat([[START_ID], target], axis=0)
        target_out = tf.concat([target, [END_ID]], axis=0)
        return (source, target_in), target_out

    dataset = dataset.map(with_start_and_end, num_parallel_calls=tf.data.AUTOTUNE)
    shapes = (([None], [None]), [None])
    if bucket_width:
        longest = int(max(tf.reduce_max(source_ids.row_lengths()),
                          tf.reduce_max(target_ids.row_lengths()) + 1))
        boundaries = list(range(bucket_width + 1, longest + 1, bucket_width))
        dataset = dataset.bucket_by_sequence_length(
            lambda inputs, target_out: tf.maximum(tf.shape(inputs[0])[0],
                                                  tf.shape(target_out)[0]),
            bucket_boundaries=boundaries,
            bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
            padded_shapes=shapes,
        )
    else:
        dataset = dataset.padded_batch(batch_size, padded_shapes=shapes)
    return dataset.prefetch(tf.data.AUTOTUNE)


def planned_batches(lengths, batch_size):
    """Batches per epoch of `make_dataset(..., bucket_width=TRAIN_BUCKET_WIDTH)` of pairs of
    these lengths (the longer of source and target_out)."""
    boundaries = np.arange(TRAIN_BUCKET_WIDTH + 1, int(lengths.max()) + 1, TRAIN_BUCKET_WIDTH)
    per_bucket = np.bincount(np.searchsorted(boundaries, lengths, side="right"))
    return int(np.sum(np.ceil(per_bucket / batch_size)))


@dataclasses.dataclass
class PreparedPairs:
    """The splits of a training run and, after `encode`, their vocabularies and ids.

    Attributes:
        train, val: `SentencePairs`.
        tests: `{test set name: SentencePairs}`.
        source: what was read (for reports).
        notes: how the splits were made (held out, seeded), for reports.
        source_vocabulary, target_vocabulary: `Vocabulary`s of the training split.
        train_ids, val_ids: `EncodedPairs` of train and val.
        batches: training batches per epoch.
        left_out_empty: `{split read: SentencePairs.empty_report()}` of the split files (or
            the one file) whose pairs with an empty side were left out.
    """

    train: SentencePairs
    val: SentencePairs
    tests: dict
    source: str
    notes: list
    source_vocabulary: Vocabulary = None
    target_vocabulary: Vocabulary = None
    train_ids: EncodedPairs = None
    val_ids: EncodedPairs = None
    batches: int = 0
    test_skipped: dict = dataclasses.field(default_factory=dict)
    left_out_empty: dict = dataclasses.field(default_factory=dict)

    def encode(self, min_count=1, max_vocabulary=None, max_length=None, batch_size=64,
               max_test_tokens=None):
        """Builds the vocabularies of the training split (`Vocabulary.build`), the ids of train
        and val (`encode_pairs`, pairs longer than `max_length` left out and counted), leaves
        out the test pairs whose source has more than `max_test_tokens` tokens (the most the
        model translates; counted), and the number of training batches of `batch_size` per
        epoch; returns self.

        Raises:
            DataError: no validation pairs, or no training pair within `max_length`.
        """
        if len(self.val) == 0:
            raise DataError("no validation pairs: set --val-fraction above 0", path=self.source)
        self.source_vocabulary, self.target_vocabulary = (
            Vocabulary.build(tokenize(texts), min_count, max_vocabulary)
            for texts in (self.train.sources, self.train.targets)
        )
        for side, texts, vocabulary in (("source", self.train.sources, self.source_vocabulary),
                                        ("target", self.train.targets, self.target_vocabulary)):
            if len(vocabulary.tokens) == len(Vocabulary.RESERVED):  # every token [UNK]
                counts = collections.Counter(tokenize(texts).flat_values.numpy())
                token, count = counts.most_common(1)[0]
                raise DataError(
                    f"--min-count {min_count} leaves no {side} token in the vocabulary: the most "
                    f"frequent, {token.decode('utf-8')!r}, occurs {count:,} times in the "
                    f"training split; expected --min-count at most {count:,}", path=self.source)
        lookups = (self.source_vocabulary.lookup_layer(), self.target_vocabulary.lookup_layer())
        self.train_ids = encode_pairs(self.train, *lookups, max_length)
        self.val_ids = encode_pairs(self.val, *lookups, max_length)
        if self.train_ids.skipped == len(self.train):
            raise DataError(
                f"every training pair is longer than max_length={max_length} tokens",
                path=self.source,
            )
        # A test source longer than the model takes is left out too (its attention over a
        # long line would not fit in memory), and counted.
        self.test_skipped = {}
        for name, pairs in list(self.tests.items()):
            self.tests[name], self.test_skipped[name] = within_max_length(pairs,
                                                                          max_test_tokens)
        lengths = np.maximum(self.train_ids.source_ids.row_lengths().numpy(),
                             self.train_ids.target_ids.row_lengths().numpy() + 1)
        self.batches = planned_batches(lengths, batch_size)
        return self

    def datasets(self, batch_size, seed):
        """`(train, val)` batches (`make_dataset`) of the encoded pairs, `batch_size` as given
        to `encode`: train reshuffled each epoch (seeded) and bucketed by length, val in order.
        """
        train_ids = self.train_ids
        # Bucketing hides the number of batches from Keras; it is known, and asserted.
        train = make_dataset(
            train_ids.source_ids, train_ids.target_ids, batch_size, shuffle_seed=seed,
            bucket_width=TRAIN_BUCKET_WIDTH,
        ).apply(tf.data.experimental.assert_cardinality(self.batches))
        return train, self.val_dataset(batch_size)

    def val_dataset(self, batch_size):
        """The val batches (`make_dataset`), in order."""
        return make_dataset(self.val_ids.source_ids, self.val_ids.target_ids, batch_size)

    def report(self):
        """What was read, how it was split and encoded: metrics.json's "data"."""
        return {
            "source": self.source,
            "pairs": {"train": len(self.train), "val": len(self.val),
                      **{name: len(pairs) + self.test_skipped.get(name, 0)
                         for name, pairs in self.tests.items()}},
            "skipped_longer_than_max_length": {"train": self.train_ids.skipped,
                                               "val": self.val_ids.skipped,
                                               "test": sum(self.test_skipped.values())},
            "splits": self.notes,
            "left_out_empty_side": self.left_out_empty,
            # Pairs whose source sentence (spaces aside) is also a training source: a test
            # sentence seen in training makes its BLEU overstate the model on new text.
            "also_in_training": {name: texts_also_in(pairs.sources, self.train.sources)
                                 for name, pairs in (("val", self.val), *self.tests.items())},
            "vocabulary": {"source": len(self.source_vocabulary),
                           "target": len(self.target_vocabulary)},
        }


__all__ = [
    "DataError",
    "EncodedPairs",
    "PreparedPairs",
    "SentencePairs",
    "Vocabulary",
    "detokenize",
    "encode_pairs",
    "find_split_files",
    "left_out_line",
    "load_data",
    "load_sample",
    "make_dataset",
    "planned_batches",
    "read_aligned",
    "read_lines",
    "read_pairs",
    "read_test_pairs",
    "read_tsv_pairs",
    "split_pairs",
    "token_text",
    "tokenize",
    "within_max_length",
]
