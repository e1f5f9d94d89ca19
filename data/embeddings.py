"""Pretrained word vectors (GloVe, word2vec text, fastText `.vec`) for a model's vocabulary.

Three text layouts are read, plain or gzip-compressed (recognised by their first bytes, whatever
the name):

- GloVe: one vector per line, `word v1 ... vd`; the first row gives the dimension d.
- word2vec text and fastText `.vec`: a header line `count d`, then `count` rows as above.

`read_vectors` streams the file line by line and keeps only the vectors of the words asked for,
so a file of several GB needs the memory of the vocabulary's vectors, not of the file. Every row
is checked for the dimension (a row of another length is a `DataError` naming the file and the
line); the rows that are kept are also checked for non-numeric and non-finite values.

`pretrained_embeddings` matches a model's vocabulary against a file (by name through the data
set registry, `seqlab.data.datasets`, or by path) and reports the coverage: the share of the
vocabulary and the share of the training tokens that get a pretrained vector. Its
`PretrainedEmbeddings.copy_into` puts the vectors into a Keras `Embedding` layer: row 0
(padding) becomes zeros, the rows of words the file lacks keep the layer's own initialisation.

Matching a word: the exact word first; with `case_fallback`, else the file's lower-cased form of
it, else the first word of the file equal to it up to case (files list frequent words first). So
a lower-cased vocabulary (seqlab's tagger) finds "Paris" in a cased file, and a cased one
(translation tokens) finds "the" for "The" in lower-cased GloVe.
"""

import dataclasses
import gzip
import itertools
import zlib
from pathlib import Path

import numpy as np

from seqlab.data.datasets import resolve_path
from seqlab.data.errors import DataError, not_a_file

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
FORMATS = {"glove": "GloVe text", "word2vec": "word2vec/fastText text"}
# How a vocabulary word matched a file word: the word itself, the file's lower-cased form of it,
# or another case variant. Lower ranks win.
EXACT, LOWER_CASE, OTHER_CASE = 0, 1, 2


@dataclasses.dataclass
class VectorFile:
    """What `read_vectors` found in a vector file.

    Attributes:
        path: the file.
        file_format: "glove" (no header) or "word2vec" (header `count dimension`; also fastText).
        dimension: the vectors' size.
        rows: the number of vectors in the file.
        vectors: `{word asked for: float32 [dimension]}` of the words found.
        case_matched: the words found only through a case variant.
    """

    path: Path
    file_format: str
    dimension: int
    rows: int
    vectors: dict
    case_matched: set


def resolve_vector_file(value):
    """The local vector file that `value` names: an existing file, or a name registered in
    `seqlab.data.datasets` (e.g. "glove.6B.100d"), downloaded into its cache if needed.

    Raises:
        DataError: a folder, a path that does not exist, or a name that cannot be downloaded.
    """
    path = Path(resolve_path(value))
    if path.is_dir():
        raise DataError("is a folder; expected a vector file (GloVe, word2vec or fastText text)",
                        path=path)
    if path.exists() and not path.is_file():  # a pipe, device or socket
        raise not_a_file(path)
    if not path.is_file():
        raise DataError("file not found; expected a vector file, or a registered name such as "
                        "glove.6B.100d (seqlab datasets list)", path=path)
    return path.resolve()


def read_vectors(path, words, dimension=None, setting="--embedding-dim", case_fallback=True):
    """Streams a GloVe, word2vec or fastText text file (gzip too), keeping the vectors of `words`.

    Args:
        path: the file.
        words: the words whose vectors to keep (any iterable of str).
        dimension: the size the vectors must have, or None to take the file's.
        setting: the name of the setting `dimension` comes from, for the error message.
        case_fallback: also match case variants (see the module's docstring).

    Returns:
        A `VectorFile`.

    Raises:
        DataError: an empty or unreadable file, a header that is not two whole numbers, a row
            with another number of values than the first row or the header says (naming the
            line), a non-numeric or non-finite value in a kept row, a word that is not UTF-8,
            a header count other than the rows, or vectors of another size than `dimension`.
    """
    path = Path(path)
    wanted = {}  # the lookup form of a file word -> the words asked for that it can match
    for word in words:
        wanted.setdefault(word.lower() if case_fallback else word, []).append(word)
    best = {}  # word asked for -> (rank, vector)
    try:
        with _open(path) as handle:
            lines = enumerate(handle, start=1)
            file_format, announced, file_dimension, first_rows = _read_head(path, lines)
            if dimension is not None and dimension != file_dimension:
                raise DataError(
                    f"{file_dimension}-dimensional vectors, but {setting} is {dimension}; leave "
                    f"{setting} out to take the file's dimension, or set it to {file_dimension}",
                    path=path, line=1,
                )
            origin = "the header's" if file_format == "word2vec" else "line 1's"
            rows = 0
            for number, raw in itertools.chain(first_rows, lines):
                fields = raw.split()
                if len(fields) != file_dimension + 1:
                    if _is_binary(raw):
                        raise DataError(BINARY, path=path, line=number)
                    found = f"{len(fields) - 1} values" if fields else "an empty line"
                    raise DataError(
                        f"{found}; expected a word and {file_dimension} values ({origin} "
                        "dimension)", path=path, line=number,
                    )
                rows += 1
                word = _decode_word(fields[0], path, number)
                candidates = wanted.get(word.lower() if case_fallback else word)
                if candidates:
                    _keep(best, word, candidates, fields, path, number)
    except (OSError, EOFError, zlib.error) as error:
        raise DataError(f"cannot be read ({type(error).__name__}: {error}); expected a vector "
                        "file, plain or gzip", path=path) from None
    if rows == 0:
        raise DataError("no vectors, only a header; expected word vectors after it", path=path)
    if announced is not None and rows != announced:
        raise DataError(f"the header announces {announced} vectors, but the file holds {rows} "
                        "(truncated?)", path=path, line=1)
    return VectorFile(
        path=path, file_format=file_format, dimension=file_dimension, rows=rows,
        vectors={word: vector for word, (_, vector) in best.items()},
        case_matched={word for word, (rank, _) in best.items() if rank != EXACT},
    )


BINARY = ("binary data: binary word2vec files are not read; convert the file to the text "
          "format (gensim: KeyedVectors.load_word2vec_format(path, binary=True)"
          ".save_word2vec_format(out, binary=False))")
# The first bytes of files that are no vector file, though a user may take them for one: the
# archive GloVe is distributed in, and text in UTF-16 (its byte-order mark, either order).
_UTF16 = "UTF-16 text; expected UTF-8 (iconv -f UTF-16 -t UTF-8 converts it)"
NOT_READ = {
    b"PK\x03\x04": "a zip archive; expected a vector file, plain or gzip: extract the vector "
                    "file from it (unzip)",
    b"\xff\xfe": _UTF16,
    b"\xfe\xff": _UTF16,
}


def _open(path):
    if not path.is_file():
        raise not_a_file(path)
    with open(path, "rb") as probe:
        start = probe.read(4)
    for magic, what in NOT_READ.items():
        if start.startswith(magic):
            raise DataError(what, path=path)
    return gzip.open(path, "rb") if start[:2] == GZIP_MAGIC else open(path, "rb")


def _is_binary(raw):
    """Whether the bytes of a line are no text: not UTF-8, or holding a NUL byte (a binary
    word2vec row: the word, then the vector's float32 bytes)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return b"\x00" in raw


def _read_head(path, lines):
    """`(format, announced rows or None, dimension, rows to read again)` from line 1."""
    first = next(lines, None)
    if first is None:
        raise DataError("empty file; expected word vectors (GloVe, word2vec or fastText text)",
                        path=path)
    first = (first[0], first[1].removeprefix(UTF8_BOM))
    if b"\r" in first[1].rstrip(b"\r\n"):  # no word holds one: a row's split drops it
        raise DataError("its lines end in a carriage return alone (the line end of old Mac "
                        "files); expected lines that end in a line feed (tr converts it: "
                        "tr '\\r' '\\n')", path=path, line=1)
    fields = first[1].split()
    if len(fields) == 2 and all(field.isdigit() for field in fields):
        count, dimension = (int(field) for field in fields)
        if dimension < 1:
            raise DataError("the header gives dimension 0; expected 'count dimension' with a "
                            "dimension of at least 1", path=path, line=1)
        return "word2vec", count, dimension, []
    if len(fields) < 2:
        raise DataError("expected a header 'count dimension' (word2vec, fastText) or a row "
                        "'word v1 ... vd' (GloVe)", path=path, line=1)
    return "glove", None, len(fields) - 1, [first]


def _decode_word(raw, path, line):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"the word {raw[:40]!r} is not UTF-8 text; expected a text vector file "
                        "(a binary word2vec file must be converted to text)",
                        path=path, line=line) from None


def _keep(best, word, candidates, fields, path, line):
    """Records the row's vector for each word asked for that it matches better than before."""
    vector = None
    for candidate in candidates:
        if word == candidate:
            rank = EXACT
        elif word == candidate.lower():
            rank = LOWER_CASE
        else:
            rank = OTHER_CASE
        if candidate in best and best[candidate][0] <= rank:
            continue
        if vector is None:
            vector = _parse_values(fields[1:], path, line)
        best[candidate] = (rank, vector)


def _parse_values(fields, path, line):
    try:
        vector = np.array(fields, dtype=np.float32)
    except ValueError:
        vector = None
    if vector is None or not np.all(np.isfinite(vector)):
        if _is_binary(b" ".join(fields)):
            raise DataError(BINARY, path=path, line=line)
        index = next(i for i, field in enumerate(fields) if not _is_finite_number(field))
        raise DataError(
            f"value {index + 1} ({fields[index].decode('utf-8', 'replace')!r}) is not a finite "
            "number", path=path, line=line,
        )
    return vector


def _is_finite_number(field):
    try:
        return np.isfinite(np.float32(float(field)))
    except ValueError:
        return False


@dataclasses.dataclass
class PretrainedEmbeddings:
    """The pretrained vectors of a vocabulary's words, and how much of it they cover.

    Attributes:
        path: the vector file.
        file_format: "glove" or "word2vec" (header line; also fastText `.vec`).
        dimension: the vectors' size.
        dimension_from: where the embedding size came from: "the vector file" or the setting's
            name.
        file_rows: the number of vectors in the file.
        ids: int64 `[found]`, the vocabulary ids that have a vector.
        vectors: float32 `[found, dimension]`, their vectors.
        case_matched: how many of them were found through a case variant.
        coverage: `{"vocabulary": {...}, "training_tokens": {...}}` (see `embedding_coverage`).
    """

    path: Path
    file_format: str
    dimension: int
    dimension_from: str
    file_rows: int
    ids: np.ndarray
    vectors: np.ndarray
    case_matched: int
    coverage: dict

    def matrix(self, initial):
        """The embedding matrix: `initial` (float `[vocabulary, dimension]`, the layer's own
        initialisation) with row 0 (padding) zero and each found id's row its vector."""
        matrix = np.array(initial, dtype=np.float32, copy=True)
        if matrix.shape[1] != self.dimension or matrix.shape[0] <= max(self.ids, default=0):
            raise ValueError(
                f"the embedding matrix has shape {matrix.shape}; the vectors need "
                f"{self.dimension} columns and a row for id {max(self.ids, default=0)}"
            )
        matrix[0] = 0.0
        matrix[self.ids] = self.vectors
        return matrix

    def copy_into(self, layer, freeze=False):
        """Copies the vectors into an embedding layer; with `freeze`, it is not trained further.

        Args:
            layer: a `keras.layers.Embedding`, or a layer holding one as `token_embedding`
                (seqlab's `TokenAndPositionEmbedding`: the position encoding is left alone).
            freeze: set the embedding layer's `trainable` to False.
        """
        embedding = getattr(layer, "token_embedding", layer)
        variable = embedding.embeddings
        variable.assign(self.matrix(variable.numpy()).astype(variable.dtype))
        if freeze:
            embedding.trainable = False

    def report(self, frozen=False):
        """The figures of metrics.json's "embeddings"."""
        return {
            "file": str(self.path),
            "format": FORMATS[self.file_format],
            "file_vectors": self.file_rows,
            "dimension": self.dimension,
            "dimension_from": self.dimension_from,
            **self.coverage,
            "found_by_case_fallback": self.case_matched,
            "frozen": frozen,
        }

    def summary_line(self, frozen=False):
        """One line for the terminal summary of a run."""
        vocabulary, tokens = self.coverage["vocabulary"], self.coverage["training_tokens"]
        return (
            f"pretrained vectors: {self.path.name} ({FORMATS[self.file_format]}, "
            f"{self.dimension} dimensions from {self.dimension_from}): {vocabulary['found']} of "
            f"{vocabulary['words']} vocabulary words ({vocabulary['share']:.1%}; "
            f"{self.case_matched} by case fallback), {tokens['share']:.1%} of the "
            f"{tokens['tokens']} training tokens; {'frozen' if frozen else 'trained further'}"
        )


def embedding_coverage(found_ids, vocabulary_size, first_word_id, id_counts):
    """The share of a vocabulary, and of the training tokens, that have pretrained vectors.

    Args:
        found_ids: the ids that have a vector.
        vocabulary_size: the number of ids.
        first_word_id: the first id of a word (ids below it are padding and special tokens such
            as [UNK], which have no vector).
        id_counts: how often each id occurs in the training tokens, `[vocabulary_size]` (id 0,
            padding, is not counted).

    Returns:
        `{"vocabulary": {"words", "found", "share"}, "training_tokens": {"tokens", "found",
        "share"}}`: words are the ids from `first_word_id` on; tokens are every non-padding
        training token, [UNK] (a word outside the vocabulary) included, so the token share is
        that of the running text that gets a pretrained vector.
    """
    counts = np.asarray(id_counts, dtype=np.int64)
    if counts.shape != (vocabulary_size,):
        raise ValueError(f"id_counts must have one count per id ({vocabulary_size}). "
                         f"Received: shape {counts.shape}")
    found = np.asarray(found_ids, dtype=np.int64)
    words = vocabulary_size - first_word_id
    tokens, found_tokens = int(counts[1:].sum()), int(counts[found].sum())
    return {
        "vocabulary": {"words": words, "found": len(found),
                       "share": len(found) / words if words else 0.0},
        "training_tokens": {"tokens": tokens, "found": found_tokens,
                            "share": found_tokens / tokens if tokens else 0.0},
    }


def pretrained_embeddings(value, vocabulary, id_counts, first_word_id, dimension=None,
                          setting="--embedding-dim", case_fallback=True):
    """The vectors of a vocabulary from the vector file `value` names, and their coverage.

    Args:
        value: a vector file, or a registered name (`resolve_vector_file`).
        vocabulary: the lookup key of each id (id = index); ids below `first_word_id` are
            not looked up.
        id_counts: how often each id occurs in the training tokens (`embedding_coverage`).
        first_word_id: the first id of a word.
        dimension: the embedding size the model will have, or None: the file's.
        setting: the setting `dimension` comes from, for messages and the report.
        case_fallback: match case variants too (see the module's docstring).

    Returns:
        A `PretrainedEmbeddings`.

    Raises:
        DataError: a missing or bad file (`read_vectors`), or vectors of another size than
            `dimension`.
    """
    path = resolve_vector_file(value)
    keys = list(vocabulary)
    table = read_vectors(path, {key for key in keys[first_word_id:] if key}, dimension,
                         setting, case_fallback)
    ids = [i for i in range(first_word_id, len(keys)) if keys[i] in table.vectors]
    words = len(keys) - first_word_id
    if not ids and words:  # the model would start as without the file, silently
        raise DataError(f"none of the vocabulary's {words:,} words has a vector among the "
                        f"file's {table.rows:,}; expected vectors of the data's words (of its "
                        "language); leave --embeddings out to train the embedding from scratch",
                        path=path)
    vectors = (np.stack([table.vectors[keys[i]] for i in ids]) if ids
               else np.zeros((0, table.dimension), np.float32))
    return PretrainedEmbeddings(
        path=path, file_format=table.file_format, dimension=table.dimension,
        dimension_from="the vector file" if dimension is None else setting,
        file_rows=table.rows, ids=np.asarray(ids, dtype=np.int64), vectors=vectors,
        case_matched=sum(keys[i] in table.case_matched for i in ids),
        coverage=embedding_coverage(ids, len(keys), first_word_id, id_counts),
    )
