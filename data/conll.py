"""Named-entity tagging input: CoNLL column files, tag schemes, vocabularies and tf.data batches.

The pieces, in the order a tagging run uses them:

- `read_conll`: sentences of (token, tag) from a CoNLL column file. One token per line, columns
  separated by tabs (or, in files without tabs, by spaces); a blank line ends a sentence;
  `-DOCSTART-` lines are document markers and end a sentence too. Line endings are normalised
  as Python's text mode does ("\\r\\n" and a lone "\\r" end a line like "\\n"; no token or
  tag keeps a "\\r"). A byte-order mark and stray invisible characters (U+FEFF, zero-width
  spaces and joiners, word joiner) at the edges of a line or a field are removed; a line
  holding nothing else is a sentence break.
- Tag schemes: BIO (IOB2), IOB1 and IOBES, detected (`detect_scheme`) or given. Everything is
  converted to BIO, the scheme the models predict and seqeval scores, reading the entities as
  conlleval and seqeval's default mode read them. Invalid sequences (in BIO, an `I-X` that
  continues no `X` entity, as in WNUT-17's dev file; in IOBES, an entity not closed by `E-X`,
  ...) are read that way too, so an `I-X` that continues no `X` starts an entity (it becomes
  `B-X`), and each is listed in `ConllFile.invalid_tags`; with `strict=True` the first one is
  a `DataError` naming the line instead.
- `read_token_lines`: one whitespace-tokenised sentence per line, for prediction;
  `read_sentences_to_tag` reads either format, and `conll_text` writes tags back as CoNLL.
- `find_split_files`: the train / validation / test files of a data directory.
- `split_files`, `load_splits`: the train / validation / test sentences of a tagging run, read
  from its files or held out from the training file with the run's seed.
- `TaggingVocabulary`: lower-cased word ids with an unknown id and a minimum count, character
  ids per word (case kept), tag ids; saved with a run as JSON, and as `StringLookup` layers
  in serving graphs.
- `make_tagging_dataset`: padded batches `(token_ids[batch, time], char_ids[batch, time,
  chars], tag_ids[batch, time])`, all int32; id 0 is padding everywhere (tag id 0 at padding
  is a placeholder that models mask out).
"""

import collections
import dataclasses
import re
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from seqlab.data.datasets import resolve_path
from seqlab.data.errors import (
    DataError, empty_file, listed, normalize_line_endings, quoted, read_utf8,
)

SCHEMES = ("bio", "iob1", "iobes")
# The smoke-test sample shipped with the package (data/samples/ner_sample.md describes it).
SAMPLE_PATH = Path(__file__).parent / "samples" / "ner_sample.conll"
SAMPLE_SOURCE = "seqlab smoke-test sample (data/samples/ner_sample.conll)"
DOCSTART = "-DOCSTART-"
# The most tokens of one sentence: a longer one is almost surely a file without its blank lines
# between sentences, and a batch padded to it would not fit in memory (the character encoder
# reads every word of every row). Exported taggers refuse longer rows too.
MAX_SENTENCE_TOKENS = 1000
# U+FEFF (byte-order mark / zero-width no-break space), zero-width space, non-joiner, joiner,
# and the word joiner: invisible, and left behind by copy-paste and editors.
INVISIBLE_CHARACTERS = "\ufeff\u200b\u200c\u200d\u2060"
# Unicode's white space as Python reads it (`str.isspace`, `str.split()`: what parts the fields
# of a line without tabs): the no-break space, U+3000, U+2028 and the rest besides " " and "\t".
WHITE_SPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
               "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
# What a token's edges lose (`_clean`; the ner SavedModel strips the same in its graph): white
# space of every kind, as a line without tabs loses it between its fields (a tab-separated
# token kept "\xa0moved", which the SavedModel then read as another word than predict's
# "moved" of a line without tabs), and the invisible characters.
TOKEN_EDGE_CHARACTERS = WHITE_SPACE + INVISIBLE_CHARACTERS
PAD, UNKNOWN = "[PAD]", "[UNK]"
OUTSIDE = "O"

_TAG_PATTERN = re.compile(r"^([BIES])-(.+)$")
_TAG_PREFIX_SPACE = re.compile(r"^([BIES]-)\s+")
# How many problems a summary lists before it says "and N more".
_SHOWN = 5
# Formats of a file to tag (`read_sentences_to_tag`).
INPUT_FORMATS = ("auto", "conll", "lines")


@dataclasses.dataclass
class Sentence:
    """One sentence of a file.

    Attributes:
        tokens: the tokens, invisible edge characters removed.
        tags: the BIO tags (None when read without a tag column).
        lines: the 1-based line number of each token.
    """

    tokens: list
    tags: list | None
    lines: list


@dataclasses.dataclass
class ConllFile:
    """The sentences of one CoNLL file, with what was done to read them.

    Attributes:
        path: the file.
        sentences: the sentences, tags in BIO.
        scheme: the scheme the tags were read as ("bio", "iob1" or "iobes").
        scheme_detected: whether the scheme was detected rather than given.
        invalid_tags: one line per tag of an invalid sequence and how it was read
            ("line 12: I-PER after O read as B-PER").
        documents: the number of `-DOCSTART-` lines.
        invisible_lines: the lines whose invisible characters were removed (a leading
            byte-order mark of the file is not counted).
    """

    path: str
    sentences: list
    scheme: str | None = None
    scheme_detected: bool = False
    invalid_tags: list = dataclasses.field(default_factory=list)
    documents: int = 0
    invisible_lines: list = dataclasses.field(default_factory=list)

    @property
    def tokens(self):
        return sum(len(s.tokens) for s in self.sentences)

    def invalid_tags_report(self):
        """`{"count", "first"}`: how many tags of invalid sequences were read as conlleval reads
        them, and the first few of them with their lines."""
        return {"count": len(self.invalid_tags), "first": self.invalid_tags[:_SHOWN]}

    def describe(self):
        """A one-line account: sentences, tokens, scheme, invalid tags, removed characters."""
        parts = [f"{len(self.sentences)} sentences", f"{self.tokens} tokens"]
        if self.scheme:
            how = "detected" if self.scheme_detected else "given"
            parts.append(f"scheme {self.scheme} ({how})")
        if self.invalid_tags:
            count = len(self.invalid_tags)
            parts.append(f"{count} invalid tag{'s' * (count != 1)} read as conlleval reads "
                         f"{'them' if count != 1 else 'it'}")
        if self.invisible_lines:
            parts.append(f"invisible characters removed on lines "
                         f"{listed(self.invisible_lines, _SHOWN)}")
        return f"{self.path}: " + ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# Reading


def _read_text_lines(path):
    """The lines of a UTF-8 text file (a leading byte-order mark removed).

    "\\r\\n", a lone "\\r" and "\\n" end a line, as in Python's text mode (the file is read
    as bytes, so that an undecodable byte is named by its byte offset; its line is counted with
    the same line breaks). Unicode line separators inside a token (U+2028, U+0085, ...) do not
    break lines, as they do not in the CoNLL tools.
    """
    text = normalize_line_endings(read_utf8(resolve_path(path)))
    if not text.strip(TOKEN_EDGE_CHARACTERS):
        raise empty_file(text, "tokens, one per line", path)
    return text.split("\n")


def _count_invisible(text):
    return sum(text.count(char) for char in INVISIBLE_CHARACTERS)


def _clean(text):
    return text.strip(TOKEN_EDGE_CHARACTERS)


def _split_fields(line):
    """Columns of a line: tab-separated if it has a tab, else separated by runs of spaces."""
    # Trailing tabs are not an empty last column; a leading tab is an empty first one.
    line = line.rstrip(" \t" + INVISIBLE_CHARACTERS).lstrip(" " + INVISIBLE_CHARACTERS)
    if "\t" in line:
        return [_clean(field) for field in line.split("\t")]
    return [_clean(field) for field in line.split()]


def _column_name(index):
    return "last" if index == -1 else f"{index} (0-based)" if index >= 0 else str(index)


def _columns_needed(token_column, tag_column):
    """The fewest columns in which the token and tag columns exist and differ."""
    columns = [c for c in (token_column, tag_column) if c is not None]
    # Column c exists in `count` columns from count = c + 1 (c >= 0) or -c (c < 0) on; beyond
    # that, a negative and a non-negative column meet at most once more.
    least = max(c + 1 if c >= 0 else -c for c in columns)
    for count in range(least, least + 3):
        indices = [c % count for c in (token_column, tag_column)
                   if c is not None and -count <= c < count]
        if len(indices) == (1 if tag_column is None else 2) and len(set(indices)) == len(indices):
            return count
    raise ValueError(
        "token_column and tag_column must be different columns. Received: "
        f"token_column={token_column}, tag_column={tag_column}"
    )


def _parse_tag(tag, path, line):
    """`(prefix, type)` of a tag: ("O", None) or ("B", "PER") and so on."""
    if tag == OUTSIDE:
        return OUTSIDE, None
    match = _TAG_PATTERN.match(tag)
    if match is None:
        raise DataError(
            f"{quoted(tag)} is not a tag; expected O or a prefix B-, I-, E- or S- and an entity "
            "type, as in B-PER",
            path=path, line=line,
        )
    return match.group(1), match.group(2)


def read_conll(path, token_column=0, tag_column=-1, scheme=None, strict=False):
    """Reads a CoNLL column file into sentences, tags converted to BIO.

    Args:
        path: the file.
        token_column: the column of the tokens (0-based; negative counts from the end).
        tag_column: the column of the tags (default: the last), or None to read tokens only.
        scheme: "bio", "iob1" or "iobes"; None detects it (`detect_scheme`).
        strict: refuse an invalid tag sequence instead of reading it as conlleval does and
            listing it in `ConllFile.invalid_tags` (see `to_bio`).

    Returns:
        A `ConllFile`.

    Raises:
        DataError: a missing, empty or undecodable file, a line with too few columns or another
            number of columns than the file's first token line, an empty token, a malformed
            tag, a tag of another scheme, or (with `strict`) an invalid tag sequence.
    """
    if scheme is not None and scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}. Received: scheme={scheme!r}")
    path = str(resolve_path(path))
    lines = _read_text_lines(path)
    needed = _columns_needed(token_column, tag_column)
    sentences, documents, invisible_lines = [], 0, []
    tokens, tags, numbers = [], [], []
    first_columns = None  # (number of columns, line) of the first token line

    def end_sentence():
        _check_sentence_length(len(tokens), numbers, path)
        if tokens:
            sentences.append(Sentence(list(tokens), list(tags) if tag_column is not None
                                      else None, list(numbers)))
        tokens.clear()
        tags.clear()
        numbers.clear()

    for number, line in enumerate(lines, start=1):
        fields = _split_fields(line)
        if _count_invisible(line) > sum(map(_count_invisible, fields)):
            invisible_lines.append(number)
        if not fields or fields == [""]:
            end_sentence()
            continue
        if fields[0] == DOCSTART:
            documents += 1
            end_sentence()
            continue
        if len(fields) < needed:
            raise DataError(
                f"expected at least {needed} columns (token column {_column_name(token_column)}"
                + (f", tag column {_column_name(tag_column)}" if tag_column is not None else "")
                + f"), found {len(fields)}: {quoted(line)}",
                path=path, line=number,
            )
        if first_columns is None:
            first_columns = (len(fields), number)
        elif len(fields) != first_columns[0]:
            raise DataError(
                f"found {len(fields)} columns, but the first token line (line "
                f"{first_columns[1]}) has {first_columns[0]}: {quoted(line)}",
                path=path, line=number,
            )
        token = fields[token_column]
        if not token:
            raise DataError(
                f"the token is empty (or only white space or invisible characters): "
                f"{quoted(line)}",
                path=path, line=number,
            )
        tokens.append(token)
        numbers.append(number)
        if tag_column is not None:
            # A tag holds no white space at its edges or after its prefix: a no-break space
            # or line separator there made "LOC\xa0" a second entity type beside "LOC".
            tag = _TAG_PREFIX_SPACE.sub(r"\1", fields[tag_column].strip())
            _parse_tag(tag, path, number)
            tags.append(tag)
    end_sentence()
    if not sentences:
        raise DataError("the file holds no sentences; expected tokens, one per line", path=path)

    result = ConllFile(path=path, sentences=sentences, documents=documents,
                       invisible_lines=invisible_lines)
    if tag_column is None:
        return result
    result.scheme_detected = scheme is None
    result.scheme = detect_scheme(sentences) if scheme is None else scheme
    for sentence in sentences:
        sentence.tags = to_bio(
            sentence.tags, result.scheme, path=path, lines=sentence.lines, strict=strict,
            invalid_tags=result.invalid_tags,
        )
    return result


def _check_sentence_length(count, lines, path):
    """Refuses a sentence of more than `MAX_SENTENCE_TOKENS` tokens (`lines`: its lines)."""
    if count > MAX_SENTENCE_TOKENS:
        where = f"lines {lines[0]}-{lines[-1]}" if lines[-1] != lines[0] else f"line {lines[0]}"
        raise DataError(f"the sentence of {where} has {count:,} tokens, more than "
                        f"MAX_SENTENCE_TOKENS={MAX_SENTENCE_TOKENS}; expected a blank line "
                        "between sentences (one sentence per line in a file of lines)",
                        path=path, line=lines[0])


def read_token_lines(path):
    """Sentences of a plain-text file: one sentence per line, tokens separated by whitespace.

    Blank lines are not sentences and are skipped; invisible edge characters are removed.

    Raises:
        DataError: a missing, empty or undecodable file.
    """
    sentences = []
    for number, line in enumerate(_read_text_lines(path), start=1):
        tokens = [t for t in (_clean(t) for t in line.split()) if t]
        _check_sentence_length(len(tokens), [number], path)
        if tokens:
            sentences.append(Sentence(tokens, None, [number] * len(tokens)))
    return ConllFile(path=str(path), sentences=sentences)


def looks_like_conll(path):
    """Whether a file for prediction is a CoNLL file rather than one sentence per line.

    CoNLL if a line holds a tab or starts with `-DOCSTART-`, or if blank lines separate groups
    of several lines.
    """
    lines = _read_text_lines(path)
    if any("\t" in line or line.startswith(DOCSTART) for line in lines):
        return True
    # Lengths of the runs of non-blank lines: CoNLL has several runs, some longer than a line.
    runs = "".join("x" if _clean(line) else " " for line in lines).split()
    return len(runs) > 1 and max(map(len, runs)) > 1


def read_sentences_to_tag(path, input_format="auto", token_column=0):
    """Sentences of a file to tag: CoNLL (token column only) or one sentence per line.

    Args:
        path: the file.
        input_format: "conll", "lines", or "auto" (`looks_like_conll` chooses).
        token_column: the column of the tokens in a CoNLL file.

    Returns:
        A `ConllFile` whose sentences have no tags.
    """
    if input_format == "auto":
        input_format = "conll" if looks_like_conll(path) else "lines"
    if input_format == "conll":
        return read_conll(path, token_column=token_column, tag_column=None)
    return read_token_lines(path)


def conll_text(sentences, *tag_columns):
    """CoNLL text: token and the given tag columns, tab-separated, a blank line per sentence.

    Args:
        sentences: `Sentence`s (only their tokens are written).
        *tag_columns: lists of tag lists, one tag list per sentence.
    """
    blocks = []
    for index, sentence in enumerate(sentences):
        blocks.append("\n".join(
            "\t".join([token, *(column[index][i] for column in tag_columns)])
            for i, token in enumerate(sentence.tokens)
        ))
    return "\n\n".join(blocks) + "\n"


# ---------------------------------------------------------------------------------------------
# Tag schemes


def _continues(previous, kind):
    """Whether a tag of type `kind` after the parsed tag `previous` continues its entity."""
    previous_prefix, previous_kind = previous
    return previous_prefix in ("B", "I") and previous_kind == kind


def detect_scheme(sentences):
    """The tag scheme of tagged sentences.

    IOBES if any tag starts with E- or S-. Otherwise, if some I-X starts an entity (after O, at
    the sentence start or after another type) and every B-X directly follows an X token, the
    IOB1 reading; else BIO (where such an I-X is an error).
    """
    inside_starts, b_after_other = False, False
    for sentence in sentences:
        previous = (OUTSIDE, None)
        for tag in sentence.tags:
            match = _TAG_PATTERN.match(tag)
            prefix, kind = (match.group(1), match.group(2)) if match else (OUTSIDE, None)
            if prefix in ("E", "S"):
                return "iobes"
            if prefix == "I" and not _continues(previous, kind):
                inside_starts = True
            if prefix == "B" and previous[1] != kind:
                b_after_other = True
            previous = (prefix, kind)
    return "iob1" if inside_starts and not b_after_other else "bio"


def to_bio(tags, scheme, path=None, lines=None, strict=False, invalid_tags=None):
    """Converts one sentence's tags from `scheme` to BIO, reading entities as conlleval does.

    The entities are those that conlleval and seqeval's default mode find in the tags: an I-X
    or E-X tag continues the entity of the token before when that token's tag is B-X or I-X;
    every other entity tag (B-X, S-X, an I-X or E-X that continues no X entity) starts an
    entity. So IOB1 reads as it should, and in an invalid sequence (BIO: an I-X that continues
    no X entity; IOBES: an I-X or E-X that continues no entity, an entity not closed by E-X)
    an I-X that continues no X becomes B-X. The tags of an invalid sequence are described in
    `invalid_tags` (IOB1's I-X may start an entity: it is no error there).

    Args:
        tags: the sentence's tags.
        scheme: "bio", "iob1" or "iobes".
        path, lines: the file and the tokens' line numbers, for messages.
        strict: raise at the first tag of an invalid sequence instead of reading it.
        invalid_tags: a list to append a description of each tag of an invalid sequence to
            ("line 12: I-PER after O read as B-PER").

    Returns:
        The BIO tags.

    Raises:
        DataError: a tag that the scheme does not have, or (with `strict`) an invalid sequence.
    """
    lines = lines or [None] * len(tags)
    invalid_tags = invalid_tags if invalid_tags is not None else []
    parsed = [_parse_tag(tag, path, line) for tag, line in zip(tags, lines)]
    if scheme != "iobes":
        for (prefix, _), tag, line in zip(parsed, tags, lines):
            if prefix in ("E", "S"):
                raise DataError(
                    f"{tag} is an IOBES tag, but the scheme is {scheme}; pass --scheme iobes "
                    "(or leave the scheme to be detected)",
                    path=path, line=line,
                )
    problems = {"bio": _bio_problems, "iobes": _iobes_problems}.get(scheme)
    for index, refusal, reading in problems(parsed, tags) if problems else []:
        if strict:
            raise DataError(refusal, path=path, line=lines[index])
        invalid_tags.append(f"line {lines[index]}: {reading}")
    bio = []
    previous = (OUTSIDE, None)
    for prefix, kind in parsed:
        if prefix == OUTSIDE:
            bio.append(OUTSIDE)
        else:
            inside = prefix in ("I", "E") and _continues(previous, kind)
            bio.append(f"{'I' if inside else 'B'}-{kind}")
        previous = (prefix, kind)
    return bio


def _tag_text(parsed):
    prefix, kind = parsed
    return OUTSIDE if prefix == OUTSIDE else f"{prefix}-{kind}"


def _bio_problems(parsed, tags):
    """`(index, refusal, reading)` of each I-X of a BIO sentence that continues no X entity:
    the message of a strict reading and the description of the conlleval reading."""
    for index, ((prefix, kind), tag) in enumerate(zip(parsed, tags)):
        previous = parsed[index - 1] if index else (OUTSIDE, None)
        if prefix != "I" or _continues(previous, kind):
            continue
        after = _tag_text(previous) if index else "the sentence start"
        expected = f"B-{kind}" if previous[0] == OUTSIDE else (
            f"B-{kind}, or I-{previous[1]} continuing the {previous[1]} entity"
        )
        yield index, (
            f"{tag} after {after}: in BIO an entity starts with B-{kind} (expected "
            f"{expected}); without --strict-tags it is read as B-{kind}, as conlleval and "
            "seqeval read it (or pass --scheme iob1 if the file is IOB1)"
        ), f"{tag} after {after} read as B-{kind}"


def _iobes_problems(parsed, tags):
    """`(index, refusal, reading)` of each tag that breaks an IOBES sentence: the message of a
    strict reading and the description of the conlleval reading.

    In IOBES, I-X and E-X continue a B-X or I-X; B-X and I-X are followed by I-X or E-X; O,
    B- and S- tags start after the end of an entity.
    """
    for index, ((prefix, kind), tag) in enumerate(zip(parsed, tags)):
        previous = parsed[index - 1] if index else (OUTSIDE, None)
        if prefix in ("I", "E"):
            if _continues(previous, kind):
                problem = None
            else:
                after = _tag_text(previous) if index else "the sentence start"
                problem = f"{tag} after {after}: in IOBES it must continue B-{kind} or I-{kind}"
                reading = f"read as B-{kind}"
        elif previous[0] in ("B", "I"):
            problem = (
                f"{tag} after {tags[index - 1]}: in IOBES an entity ends with E-{previous[1]} "
                f"(or is a single S-{previous[1]})"
            )
            reading = f"the {previous[1]} entity read as ending at {tags[index - 1]}"
        else:
            problem = None
        if problem is None and index == len(parsed) - 1 and prefix in ("B", "I"):
            problem = (
                f"{tag} ends the sentence: in IOBES an entity ends with E-{kind} (or is a "
                f"single S-{kind})"
            )
            reading = f"the {kind} entity read as ending at {tag}"
        if problem is not None:
            yield index, (
                f"{problem}; without --strict-tags the tags are read as conlleval and seqeval "
                "read them"
            ), f"{problem}; {reading}"


def entity_types(tags):
    """The sorted entity types of BIO tags."""
    return sorted({tag[2:] for tag in tags if tag != OUTSIDE})


# ---------------------------------------------------------------------------------------------
# Files of a data directory


_SPLIT_KEYWORDS = {
    "train": ("train",),
    "validation": ("valid", "dev", "testa"),
    "test": ("test",),
}
_NOT_DATA_SUFFIXES = {".md", ".json", ".py", ".yaml", ".yml", ".toml", ".cfg", ".sh", ".zip",
                      ".gz", ".tar", ".names"}


def find_split_files(directory):
    """The training, validation and test files of a data directory, by their names.

    A name containing "train" is training data; "valid", "dev" or "testa" (CoNLL-2003's
    development file) validation data; "test" (but not "testa") test data. So train.txt,
    valid.txt, dev.conll, test.conll, wnut17train.conll, emerging.dev.conll,
    emerging.test.annotated and eng.train / eng.testa / eng.testb are all found. README and
    other non-data files are ignored.

    Returns:
        A dict with the key "train" and, when present, "validation" and "test" (paths).

    Raises:
        DataError: no training file, or more than one file for a split.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError("directory not found", path=directory)
    candidates = {split: [] for split in _SPLIT_KEYWORDS}
    for path in sorted(directory.iterdir()):
        name = path.name.lower()
        if not path.is_file() or name.startswith((".", "readme", "license")) \
                or path.suffix.lower() in _NOT_DATA_SUFFIXES:
            continue
        if "train" in name:
            candidates["train"].append(path)
        elif any(keyword in name for keyword in _SPLIT_KEYWORDS["validation"]):
            candidates["validation"].append(path)
        elif "test" in name:
            candidates["test"].append(path)
    found = {}
    for split, paths in candidates.items():
        if len(paths) > 1:
            raise DataError(
                f"several {split} files: {', '.join(p.name for p in paths)}; pass the files "
                "with --data FILE --validation-data FILE --test-data FILE",
                path=directory,
            )
        if paths:
            found[split] = str(paths[0])
    if "train" not in found:
        raise DataError(
            "no training file: expected a file whose name contains 'train' (train.txt, "
            "wnut17train.conll, ...), or pass it with --data FILE",
            path=directory,
        )
    return found


# ---------------------------------------------------------------------------------------------
# The splits of a tagging run


@dataclasses.dataclass
class TaggingSplits:
    """Train / validation / test sentences (`Sentence` lists), per split the file it was read
    from or how it was held out (`sources`), and per file read its description, its invalid
    tags (`ConllFile.invalid_tags_report`) and removed characters (`files`); `held_out`: the
    splits drawn from the training file."""

    train: list
    validation: list
    test: list
    sources: dict
    files: list
    held_out: tuple = ()


def split_files(data=None, validation_data=None, test_data=None):
    """`{split: path}` of the files a run names (train always; validation, test if found).

    Args:
        data: a data directory (its files found by `find_split_files`), the training file, or
            None for the smoke-test sample (`SAMPLE_PATH`). A registered data-set name stands
            for its directory or file (`data.datasets.resolve_path`).
        validation_data, test_data: files that take the place of the directory's; a directory
            (or a data-set name) given here stands for its own file of that split.
    """
    if data is None:
        files = {"train": str(SAMPLE_PATH)}
    elif resolve_path(data).is_dir():
        files = find_split_files(resolve_path(data))
    else:
        files = {"train": data}
    for split, given in (("validation", validation_data), ("test", test_data)):
        if given is not None:
            files[split] = _split_file(given, split)
    return files


def _split_file(given, split):
    """The file of `split` that `--validation-data` / `--test-data` `given` names: the file
    itself, or a directory's (or data set's) own file of that split."""
    directory = resolve_path(given)
    if not directory.is_dir():
        return given
    found = find_split_files(directory)
    if split not in found:
        raise DataError(f"the directory has no {split} file (names containing "
                        f"{' or '.join(repr(k) for k in _SPLIT_KEYWORDS[split])})",
                        path=directory)
    return found[split]


def load_splits(files, val_fraction, test_fraction, seed, **read_options):
    """Reads a run's files; splits without a file are held out from the training file.

    The held-out sentences are drawn with the run's seed (test first, then validation from the
    rest), so evaluate sees the same test split as train.

    Args:
        files: `{split: path}` (`split_files`), with "train".
        val_fraction, test_fraction: the shares of the training sentences held out for a split
            without a file (at least one sentence).
        seed: the seed of the held-out draw.
        **read_options: `read_conll`'s `token_column`, `tag_column`, `scheme` and `strict`.

    Returns:
        A `TaggingSplits`.

    Raises:
        DataError: unreadable files, or too few training sentences to hold splits out.
    """
    read = {split: read_conll(path, **read_options) for split, path in files.items()}
    sentences = {split: conll.sentences for split, conll in read.items()}
    sources = {split: conll.path for split, conll in read.items()}
    missing = [split for split in ("test", "validation") if split not in read]
    if missing:
        train = sentences["train"]
        order = np.random.default_rng(seed).permutation(len(train))
        fractions = {"test": test_fraction, "validation": val_fraction}
        counts = {split: max(1, round(fractions[split] * len(train))) for split in missing}
        if sum(counts.values()) >= len(train):
            raise DataError(
                f"{len(train)} sentences are too few to hold out "
                + " and ".join(f"{counts[s]} {s}" for s in missing)
                + " sentences; give --validation-data / --test-data files",
                path=files["train"],
            )
        start = 0
        # The shipped sample named as the other tasks name theirs, not by its installed path.
        shown = SAMPLE_SOURCE if files["train"] == str(SAMPLE_PATH) else files["train"]
        for split in missing:
            chosen = order[start:start + counts[split]]
            sentences[split] = [train[i] for i in sorted(chosen)]
            sources[split] = f"{counts[split]} sentences held out from {shown} (seed {seed})"
            start += counts[split]
        kept = sorted(order[start:])
        sentences["train"] = [train[i] for i in kept]
        sources["train"] = f"{files['train']} ({len(kept)} of {len(train)} sentences)"
    if not any(tag != OUTSIDE for sentence in sentences["train"] for tag in sentence.tags):
        held_out = " (after the held-out sentences)" if missing else ""
        raise DataError(
            f"the {len(sentences['train'])} training sentences{held_out} hold no entity: every "
            f"tag is {OUTSIDE}; expected tags of at least one entity type (B-PER, I-PER, ...) "
            "to learn from",
            path=files["train"],
        )
    return TaggingSplits(
        sentences["train"], sentences["validation"], sentences["test"], sources,
        [{"file": c.path, "read": c.describe(), "documents": c.documents,
          "invalid_tags": c.invalid_tags_report(),
          "invisible_characters_removed_on_lines": c.invisible_lines}
         for c in read.values()],
        held_out=tuple(missing),
    )


# ---------------------------------------------------------------------------------------------
# Vocabularies and datasets


# Tags a message lists before "and N more" (10,000 entity types made a line of 170 kB).
_TAGS_SHOWN = 21


@dataclasses.dataclass
class TaggingVocabulary:
    """Word, character and tag ids of a tagging model, built from the training sentences.

    Word ids: 0 padding, 1 unknown, then the lower-cased training words seen at least
    `min_count` times, most frequent first. Character ids: 0 padding, 1 unknown, then the
    training characters (case kept: it carries the shape of names). Each word contributes its
    first `max_word_chars` characters. Tag ids: "O" first, then the BIO tags by type.

    Attributes:
        words, chars, tags: the items; an item's id is its index.
        min_count: the minimum count of a word in the training data.
        max_word_chars: the characters kept per word.
    """

    words: list
    chars: list
    tags: list
    min_count: int = 1
    max_word_chars: int = 20

    def __post_init__(self):
        self._word_ids = {word: i for i, word in enumerate(self.words)}
        self._char_ids = {char: i for i, char in enumerate(self.chars)}
        self._tag_ids = {tag: i for i, tag in enumerate(self.tags)}

    def __repr__(self):
        return (
            f"TaggingVocabulary({len(self.words)} words (min_count={self.min_count}), "
            f"{len(self.chars)} chars, tags={self.tags})"
        )

    @classmethod
    def build(cls, sentences, min_count=1, max_word_chars=20):
        """Builds the vocabularies from training sentences (with tags)."""
        if min_count < 1 or max_word_chars < 1:
            raise ValueError(
                "min_count and max_word_chars must be at least 1. "
                f"Received: min_count={min_count}, max_word_chars={max_word_chars}"
            )
        word_counts = collections.Counter(
            normalize_word(token) for s in sentences for token in s.tokens
        )
        char_counts = collections.Counter(
            char for s in sentences for token in s.tokens for char in token[:max_word_chars]
        )
        words = [w for w, n in sorted(word_counts.items(), key=lambda i: (-i[1], i[0]))
                 if n >= min_count]
        chars = [c for c, _ in sorted(char_counts.items(), key=lambda i: (-i[1], i[0]))]
        tag_set = {tag for s in sentences for tag in s.tags}
        kinds = entity_types(tag_set)
        # Both tags of every type, also an I- tag never seen in training (one-word entities).
        tags = [OUTSIDE] + [f"{prefix}-{kind}" for kind in kinds for prefix in "BI"]
        return cls([PAD, UNKNOWN] + words, [PAD, UNKNOWN] + chars, tags, min_count, max_word_chars)

    def word_ids(self, tokens):
        return [self._word_ids.get(normalize_word(t), 1) for t in tokens]

    def char_ids(self, tokens):
        return [[self._char_ids.get(c, 1) for c in t[: self.max_word_chars]] for t in tokens]

    def tag_ids(self, sentence, path=None):
        """The ids of a sentence's tags.

        Raises:
            DataError: a tag the model was not trained on (naming its line).
        """
        ids = []
        for tag, line in zip(sentence.tags, sentence.lines):
            if tag not in self._tag_ids:
                # Every known type has both tags, so an unknown one is an unknown type; the tag
                # is quoted as read in BIO (a file's I- tag that starts an entity is B- here).
                kind = tag.partition("-")[2]
                what = (f"unknown entity type {quoted(kind)} (tag {quoted(tag)} as read in BIO)"
                        if tag[:2] in ("B-", "I-") and kind else f"unknown tag {quoted(tag)}")
                raise DataError(f"{what}: the model knows {listed(self.tags, _TAGS_SHOWN)}",
                                path=path, line=line)
            ids.append(self._tag_ids[tag])
        return ids

    def lookup_layers(self):
        """`(word_lookup, char_lookup)`: built `keras.layers.StringLookup`s that give inside a
        graph the ids `word_ids` and `char_ids` give (words lower-cased first, with
        `tf.strings.lower(..., encoding="utf-8")`); the empty string (padding) is id 0."""

        def lookup(items, name):
            layer = keras.layers.StringLookup(
                vocabulary=items[2:], mask_token="", num_oov_indices=1, name=name
            )
            layer.build((None,))
            return layer

        return lookup(self.words, "word_lookup"), lookup(self.chars, "char_lookup")

    # vocabulary.json keeps the key `min_freq` of seqlab 0.1.0, so that runs of every version
    # hold the same file.
    def to_dict(self):
        return {
            "words": self.words, "chars": self.chars, "tags": self.tags,
            "min_freq": self.min_count, "max_word_chars": self.max_word_chars,
            "lowercase": True, "padding_id": 0, "unknown_id": 1,
        }

    @classmethod
    def from_dict(cls, values):
        """The vocabulary `to_dict` wrote; ValueError where a count is not a whole number of
        at least 1 (a hand-edited vocabulary.json)."""
        for key in ("min_freq", "max_word_chars"):
            value = values[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"vocabulary.json: {key} must be a whole number of at least 1; "
                                 f"got {value!r}")
        # The tags train wrote are BIO (every scheme is read as BIO), each once: an edited tag
        # was used for decoding and exported as one of the model's tags.
        tags = values["tags"]
        bad = next((tag for tag in tags if not isinstance(tag, str)
                    or not (tag == "O" or re.fullmatch(r"[BI]-\S+", tag))), None)
        if bad is not None or len(set(tags)) != len(tags):
            what = (f"the tag {bad!r} is neither O nor B-TYPE / I-TYPE" if bad is not None
                    else "a tag is listed twice")
            raise ValueError(f"vocabulary.json: {what}; the file was edited or damaged")
        return cls(values["words"], values["chars"], values["tags"], values["min_freq"],
                   values["max_word_chars"])


def normalize_word(token):
    """The word-vocabulary key of a token: lower-cased (`tf.strings.lower(..., "utf-8")` in
    exported graphs)."""
    return token.lower()


@dataclasses.dataclass
class EncodedSentences:
    """Sentences as ids, in flat arrays with row lengths (the layout of ragged tensors).

    Attributes:
        word_ids: int32 `[tokens]`; char_ids: int32 `[characters]`; tag_ids: int32 `[tokens]`
            (zeros when there are no tags); sentence_lengths: tokens per sentence; word_lengths:
            characters per token.
    """

    word_ids: np.ndarray
    char_ids: np.ndarray
    tag_ids: np.ndarray
    sentence_lengths: np.ndarray
    word_lengths: np.ndarray

    def __len__(self):
        return len(self.sentence_lengths)


def encode_sentences(sentences, vocabulary, path=None):
    """The ids of `sentences` (tag ids only if the sentences have tags).

    Raises:
        DataError: a tag the vocabulary does not know.
    """
    word_ids, char_ids, tag_ids, word_lengths = [], [], [], []
    for sentence in sentences:
        word_ids += vocabulary.word_ids(sentence.tokens)
        chars = vocabulary.char_ids(sentence.tokens)
        char_ids += [c for word in chars for c in word]
        word_lengths += [len(word) for word in chars]
        tag_ids += vocabulary.tag_ids(sentence, path) if sentence.tags is not None \
            else [0] * len(sentence.tokens)
    as_int32 = lambda values: np.asarray(values, dtype=np.int32)  # noqa: E731
    return EncodedSentences(
        as_int32(word_ids), as_int32(char_ids), as_int32(tag_ids),
        as_int32([len(s.tokens) for s in sentences]), as_int32(word_lengths),
    )


def make_tagging_dataset(encoded, batch_size, shuffle=False, seed=None):
    """Padded batches `(token_ids[batch, time], char_ids[batch, time, chars], tag_ids[batch,
    time])`, int32, id 0 at every padded position.

    Args:
        encoded: `EncodedSentences`.
        batch_size: sentences per batch; the last batch may be smaller.
        shuffle: shuffle the sentences every epoch (with `seed`).
        seed: the shuffle seed.
    """
    words = tf.RaggedTensor.from_row_lengths(encoded.word_ids, encoded.sentence_lengths)
    tags = tf.RaggedTensor.from_row_lengths(encoded.tag_ids, encoded.sentence_lengths)
    chars = tf.RaggedTensor.from_row_lengths(
        tf.RaggedTensor.from_row_lengths(encoded.char_ids, encoded.word_lengths),
        encoded.sentence_lengths,
    )
    dataset = tf.data.Dataset.from_tensor_slices((words, chars, tags))
    if shuffle:
        dataset = dataset.shuffle(len(encoded), seed=seed, reshuffle_each_iteration=True)

    def pad(words, chars, tags):
        return words.to_tensor(0), chars.to_tensor(0), tags.to_tensor(0)

    return dataset.ragged_batch(batch_size).map(pad).prefetch(tf.data.AUTOTUNE)


__all__ = [
    "ConllFile",
    "SAMPLE_PATH",
    "DOCSTART",
    "EncodedSentences",
    "INPUT_FORMATS",
    "SCHEMES",
    "Sentence",
    "TaggingSplits",
    "TaggingVocabulary",
    "conll_text",
    "detect_scheme",
    "encode_sentences",
    "entity_types",
    "find_split_files",
    "load_splits",
    "looks_like_conll",
    "make_tagging_dataset",
    "normalize_word",
    "read_conll",
    "read_sentences_to_tag",
    "read_token_lines",
    "split_files",
    "to_bio",
]
