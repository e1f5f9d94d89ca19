"""Text-classification input: labelled texts from three layouts, seeded stratified splits, tf.data.

The layouts `read_labelled` recognises (any number of classes, at least two):

- a table, `.csv` (comma, with the usual double-quote quoting) or `.tsv` / `.tab` (tab, no
  quoting): a header line, then one example per row; the text and label columns are named by
  `text_column` and `label_column`.
- line files: a folder of files with one example per line, one file per class, the file names
  giving the class. When the files share their stem (`rt-polarity.pos`, `rt-polarity.neg`) the
  class is the suffix (`pos`, `neg`); otherwise it is the stem (`good.txt` -> `good`). Blank lines
  are skipped and counted.
- class folders: a folder with one sub-folder per class, each holding one file per example (the
  aclImdb layout). Loose files beside the sub-folders (`README`, `urls_pos.txt`) are skipped and
  reported.

A folder with `train/` and `test/` sub-folders holds given splits, each in the line-files or
class-folders layout; they are used as such. `classes` restricts any layout to the named classes
(aclImdb's `train/unsup` holds unlabelled reviews: pass `classes=["neg", "pos"]`); examples of
other classes are skipped and reported.

Every example remembers where it came from (file and line), so that a bad one, or a label a
trained model does not know, is reported as a `DataError` that names the place. Texts are decoded
as UTF-8 (a byte-order mark is allowed) with their line endings normalised as Python's text mode
reads them: "\\r\\n" and a lone "\\r" become "\\n", so a file written on Windows gives the same
texts, labels and line numbers as the same file with "\\n" endings (no label or text ends in
"\\r"). A line is what ends at "\\n", nothing else (not a form feed or a Unicode line separator).

`load_training_data` reads the data to train on (or the embedded smoke-test sample), `make_splits`
makes the train / validation / test splits (a given test split, or a seeded stratified one from
`stratified_split`), and `make_dataset` the batches `(text string[batch], label_id int32[batch])`:
the raw strings, because the models vectorise text with a `TextVectorization` layer of their own.
"""

import csv
import dataclasses
import io
import math
from importlib import resources
from pathlib import Path

import numpy as np
import tensorflow as tf

from seqlab.data.conll import TOKEN_EDGE_CHARACTERS
from seqlab.data.datasets import resolve_path
from seqlab.data.errors import (
    DataError, empty_file, listed, normalize_line_endings, quoted, read_utf8,
)

TABLE_DELIMITERS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
SAMPLE_SOURCE = "seqlab smoke-test sample (data/samples/sentiment_sample.tsv)"
SPLIT_FOLDERS = ("train", "test")

# How many offending labels or lines a message lists before it says "and N more".
_SHOWN = 5


@dataclasses.dataclass
class Examples:
    """Labelled texts and where each one came from.

    Attributes:
        texts: the example texts.
        labels: the class name of each text.
        origins: `(file, line)` of each text; `line` is None when the whole file is the example.
        source: a name for messages and reports (the file or folder read).
        skipped: what the reader left out and why, as sentences.
        excluded_labels: the labels found but left out because they are not among the chosen
            classes, sorted.
    """

    texts: list
    labels: list
    origins: list
    source: str
    skipped: list = dataclasses.field(default_factory=list)
    excluded_labels: list = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.texts)

    def subset(self, indices):
        """The examples at `indices`, in that order."""
        return Examples(
            texts=[self.texts[i] for i in indices],
            labels=[self.labels[i] for i in indices],
            origins=[self.origins[i] for i in indices],
            source=self.source,
            skipped=list(self.skipped),
            excluded_labels=list(self.excluded_labels),
        )

    def class_counts(self):
        """`{class: number of examples}`, classes sorted."""
        names, counts = np.unique(np.asarray(self.labels, dtype=object), return_counts=True)
        return {str(name): int(count) for name, count in zip(names, counts)}


@dataclasses.dataclass
class LabelledData:
    """What `read_labelled` found: the examples, and the given test split if there is one.

    Attributes:
        train: the examples to train on (all of them when `test` is None).
        test: the given test split, or None when the caller should split `train`.
        layout: "table", "line files" or "class folders".
    """

    train: Examples
    test: Examples | None
    layout: str


# ---------------------------------------------------------------------------------------------
# Reading


def read_text(path):
    """The UTF-8 text of `path` (a byte-order mark is dropped), line endings normalised to
    "\\n" ("\\r\\n" and a lone "\\r" too, as Python's text mode reads them).

    Raises:
        DataError: the file is missing or holds bytes that are not UTF-8 (the line is named).
    """
    return normalize_line_endings(read_utf8(path))


def split_lines(text):
    """The lines of a text read by `read_text`, without their "\\n" (a last line needs none)."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def read_lines(path):
    """The lines of a UTF-8 text file, without line endings, blank ones too (for `predict
    --input`)."""
    return split_lines(read_text(path))


def read_table(path, text_column="text", label_column="label", classes=None):
    """Reads a CSV or TSV file with a header line into `Examples`.

    Args:
        path: the file; `.tsv` and `.tab` are tab-separated without quoting, anything else is
            comma-separated with double-quote quoting.
        text_column: the header of the text column.
        label_column: the header of the label column.
        classes: keep only rows with these labels (the others are skipped and counted).

    Raises:
        DataError: an empty file, no data rows, a missing column, a row without a text or a
            label, a row with too few fields or more fields than the header, undecodable bytes.
    """
    path = Path(path)
    text = read_text(path)
    if not text.strip():
        raise empty_file(
            text, f"a header line naming the columns {text_column!r} and {label_column!r}, "
            "then one example per line", path)
    delimiter = TABLE_DELIMITERS.get(path.suffix.lower(), ",")
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    reader = csv.reader(
        io.StringIO(text, newline=""), delimiter=delimiter, quoting=quoting, strict=True
    )
    header = [name.strip() for name in next(_rows(reader, path), [])]
    if not any(header):
        raise DataError(
            f"the header line is empty; expected the column names, among them {text_column!r} "
            f"and {label_column!r}",
            path=path,
            line=1,
        )
    if text_column == label_column:
        raise DataError(f"the text and the label are both the column {text_column!r}; expected "
                        "two columns (--text-column and --label-column)", path=path)
    positions = {}
    for name, flag in ((text_column, "--text-column"), (label_column, "--label-column")):
        if name not in header:
            _refuse_other_format(text, path, text_column, label_column)
            raise DataError(
                f"no column {name!r} (choose it with {flag}); the columns are: "
                f"{', '.join(repr(h) for h in header)}",
                path=path,
                line=1,
            )
        fields = [k + 1 for k, h in enumerate(header) if h == name]
        if len(fields) > 1:
            raise DataError(f"the header names the column {name!r} twice (fields "
                            f"{fields[0]} and {fields[1]}); expected distinct column names",
                            path=path, line=1)
        positions[name] = fields[0] - 1
    needed = max(positions.values()) + 1
    texts, labels, origins = [], [], []
    skipped = {}
    line = reader.line_num
    for row in _rows(reader, path):
        # A quoted field may span lines: a row starts on the line after the previous row ended.
        start, line = line + 1, reader.line_num
        if not any(field.strip() for field in row):
            skipped["blank"] = skipped.get("blank", 0) + 1
            continue
        if len(row) < needed:
            raise DataError(
                f"the row has {len(row)} fields; expected at least {needed} (the header has "
                f"{len(header)})",
                path=path,
                line=start,
            )
        if len(row) > len(header):
            hint = (
                "a tab inside a text is not allowed in a tab-separated file" if delimiter == "\t"
                else "a text holding a comma must be in double quotes"
            )
            raise DataError(
                f"the row has {len(row)} fields; expected at most {len(header)} like the header "
                f"({hint})",
                path=path,
                line=start,
            )
        # White space of every kind and invisible characters (a byte-order mark, zero-width
        # spaces) at its edges: a label "\ufeffpos" was a third class shown as "pos".
        label = row[positions[label_column]].strip(TOKEN_EDGE_CHARACTERS)
        example = row[positions[text_column]]
        for name, value in ((label_column, label), (text_column, example)):
            if not value.strip():
                raise DataError(f"no value in column {name!r}", path=path, line=start)
        if classes is not None and label not in classes:
            skipped.setdefault("labels", {}).setdefault(label, 0)
            skipped["labels"][label] += 1
            continue
        texts.append(example)
        labels.append(label)
        origins.append((str(path), start))
    if not texts and "labels" not in skipped:
        raise DataError(
            "the file has a header but no data rows; expected one example per line", path=path
        )
    notes = []
    if skipped.get("blank"):
        notes.append(f"{skipped['blank']} blank rows")
    for label, count in skipped.get("labels", {}).items():
        notes.append(f"{count} rows labelled {quoted(label)} (not among the chosen classes)")
    return Examples(texts, labels, origins, source=str(path), skipped=notes,
                    excluded_labels=sorted(skipped.get("labels", {})))


def _refuse_other_format(text, path, text_column, label_column):
    """Raises `DataError` where a file without the columns is a JSON lines or fastText file
    (their first line was split as a header: "no column 'text'; the columns are: '{"stars":
    5', ...")."""
    first = text.split("\n", 1)[0].strip(TOKEN_EDGE_CHARACTERS)
    if first.startswith(("{", "[")):
        found = "JSON (a JSON lines file, one object per line?), not a table"
    elif first.startswith("__label__"):
        found = "fastText's format (__label__<class> text), not a table"
    else:
        return
    raise DataError(
        f"the file is {found}; expected a CSV or TSV file whose header line names the columns "
        f"{text_column!r} and {label_column!r}, then one example per line",
        path=path, line=1,
    )


def _rows(reader, path):
    """The rows of a `csv.reader`, whatever the length of a text (Python's `csv` refuses a
    field over 128 KiB unless told otherwise; the whole file is in memory already); its errors
    (a quote never closed) are `DataError`s that name the line where the bad row starts."""
    while True:
        start = reader.line_num + 1
        limit = csv.field_size_limit(_ANY_FIELD_SIZE)
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise DataError(
                f"not a well-formed table: {error} in the row that starts here", path=path,
                line=start,
            ) from None
        finally:
            csv.field_size_limit(limit)


# A limit no text reaches (the largest a C long holds on every platform).
_ANY_FIELD_SIZE = 2**31 - 1


def line_file_classes(paths):
    """The class each line file stands for, from the file names.

    Files that share their stem (`rt-polarity.pos`, `rt-polarity.neg`) are told apart by the
    suffix; other files by the stem (`good.txt`, `bad.txt`).

    Raises:
        DataError: two files would give the same class.
    """
    paths = [Path(p) for p in paths]
    stems = [p.stem for p in paths]
    suffixes = [p.suffix.lstrip(".") for p in paths]
    # One file alone (a class missing) is told by its suffix, unless that only says it is text
    # (`reviews.pos` is class `pos`, `good.txt` is `good`, not `txt`).
    if len(paths) == 1 and suffixes[0].lower() in ("txt", "text"):
        return {paths[0]: stems[0]}
    if len(set(stems)) == 1 and all(suffixes) and len(set(suffixes)) == len(paths):
        return dict(zip(paths, suffixes))
    if len(set(stems)) == len(paths):
        return dict(zip(paths, stems))
    names = ", ".join(p.name for p in paths)
    raise DataError(
        f"cannot tell the classes from the file names {names}: expected files that differ only "
        "in their suffix (name.pos, name.neg) or in their stem (pos.txt, neg.txt)",
        path=paths[0].parent,
    )


def read_line_files(paths, classes=None):
    """Reads files with one example per line; the file names give the classes.

    Args:
        paths: the files, one per class (see `line_file_classes`).
        classes: keep only these classes (other files are skipped and reported).

    Raises:
        DataError: an empty file, undecodable bytes, file names that do not tell the classes
            apart.
    """
    paths = sorted(Path(p) for p in paths)
    texts, labels, origins, notes, excluded = [], [], [], [], []
    for path, label in line_file_classes(paths).items():
        if classes is not None and label not in classes:
            notes.append(f"{path.name} (class {quoted(label)} is not among the chosen classes)")
            excluded.append(label)
            continue
        text = read_text(path)
        lines = split_lines(text)
        blank = 0
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                blank += 1
                continue
            texts.append(line)
            labels.append(label)
            origins.append((str(path), number))
        if blank == len(lines):
            raise empty_file(text, "one example per line", path)
        if blank:
            notes.append(f"{blank} blank lines in {path.name}")
    source = str(paths[0].parent) if paths else ""
    return Examples(texts, labels, origins, source=source, skipped=notes,
                    excluded_labels=sorted(excluded))


# The note of `read_class_folders` on files it skipped, which `check_several_classes` repeats.
LOOSE_FILES = "files beside the class folders:"


def read_class_folders(folder, classes=None):
    """Reads a folder with one sub-folder per class, each holding one file per example.

    Hidden entries (names starting with ".") are ignored; loose files beside the sub-folders,
    and sub-folders of classes not in `classes`, are skipped and reported.

    Raises:
        DataError: an empty example file, undecodable bytes.
    """
    folder = Path(folder)
    texts, labels, origins, notes = [], [], [], []
    loose, excluded = [], []
    for entry in _visible_entries(folder):
        if not entry.is_dir():
            loose.append(entry.name)
            continue
        if classes is not None and entry.name not in classes:
            notes.append(f"folder {entry.name}/ (not among the chosen classes)")
            excluded.append(entry.name)
            continue
        for path in _visible_entries(entry):
            if not path.is_file():
                notes.append(f"{entry.name}/{path.name} (not a file)")
                continue
            text = read_text(path)
            if not text.strip():
                raise empty_file(text, "the text of one example", path)
            texts.append(text.strip())
            labels.append(entry.name)
            origins.append((str(path), None))
    if loose:
        notes.append(f"{LOOSE_FILES} {_listing(loose)}")
    return Examples(texts, labels, origins, source=str(folder), skipped=notes,
                    excluded_labels=sorted(excluded))


def _visible_entries(folder):
    return sorted(p for p in Path(folder).iterdir() if not p.name.startswith("."))


def _listing(items):
    return listed(items, _SHOWN)


def _read_folder(folder, classes):
    """`(Examples, layout)` of a folder in the line-files or class-folders layout."""
    entries = _visible_entries(folder)
    if not entries:
        raise DataError(
            "the folder is empty; expected one file per class (one example per line) or one "
            "sub-folder per class",
            path=folder,
        )
    if any(entry.is_dir() for entry in entries):
        return read_class_folders(folder, classes), "class folders"
    return read_line_files(entries, classes), "line files"


def read_examples(path, text_column="text", label_column="label", classes=None):
    """`(Examples, layout)` of one table file or one folder (without given splits), or of a
    registered data-set name (`data.datasets.resolve_path`)."""
    path = resolve_path(path)
    if path.is_dir():
        return _read_folder(path, classes)
    if not path.exists():
        raise DataError("file or folder not found", path=path)
    return read_table(path, text_column, label_column, classes), "table"


def read_labelled(path, text_column="text", label_column="label", classes=None):
    """Reads labelled texts in any of the module's layouts, with the given splits if any.

    Args:
        path: a CSV/TSV file, or a folder (line files, class folders, or `train/` and `test/`
            sub-folders holding either), or a registered data-set name
            (`data.datasets.resolve_path`).
        text_column, label_column: the table columns (tables only).
        classes: keep only these classes; examples of others are skipped and reported.

    Returns:
        A `LabelledData`. Training needs at least two classes: see `check_several_classes`.

    Raises:
        DataError: unreadable or unsuitable input (see the readers).
    """
    path = resolve_path(path)
    names = {p.name for p in _visible_entries(path)} if path.is_dir() else set()
    test = None
    if set(SPLIT_FOLDERS) <= names and all((path / n).is_dir() for n in SPLIT_FOLDERS):
        train, layout = _read_folder(path / "train", classes)
        test, _ = _read_folder(path / "test", classes)
        others = sorted(names - set(SPLIT_FOLDERS))
        if others:
            train.skipped.append(f"entries beside train/ and test/: {_listing(others)}")
    else:
        train, layout = read_examples(path, text_column, label_column, classes)
    return LabelledData(train=train, test=test, layout=layout)


def check_chosen_classes(classes, parts):
    """Raises `DataError` naming the chosen `classes` that no example in `parts` (`Examples`
    read with `classes`) has, and the labels that do occur."""
    found = {label for part in parts for label in part.labels}
    missing = [name for name in classes if name not in found]
    if not missing:
        return
    occurring = sorted(found | {label for part in parts for label in part.excluded_labels})
    raise DataError(
        f"no example is labelled {', '.join(repr(m) for m in missing)} (chosen classes: "
        f"{', '.join(classes)}); the labels that occur are: "
        f"{_listing(repr(o) for o in occurring) or 'none'}",
        path=parts[0].source,
    )


def leave_out_untested_classes(data):
    """Leaves out of `data.train` the classes that its given `test/` split has no example of
    (said in `skipped`): aclImdb's `train/unsup` (50,000 unlabelled reviews) was trained as a
    third class, the majority one, that no test review has. Where fewer than two classes
    would remain, raises `DataError` naming them instead."""
    tested = set(data.test.labels)
    counts = data.train.class_counts()
    untested = [label for label in counts if label not in tested]
    if not untested:
        return data
    kept = [label for label in counts if label in tested]
    classes = ", ".join(f"{quoted(label)} ({counts[label]} example"
                        f"{'s' if counts[label] != 1 else ''})" for label in untested)
    if len(kept) < 2:
        raise DataError(
            f"train/ has the class{'es' if len(untested) > 1 else ''} {classes} that test/ has "
            "no example of; expected at least two classes in both",
            path=data.train.source,
        )
    train = data.train.subset([i for i, label in enumerate(data.train.labels)
                               if label in tested])
    train.skipped.append(f"train/ classes that test/ has no example of, left out: {classes} "
                         f"(--classes chooses the classes)")
    train.excluded_labels = sorted({*train.excluded_labels, *untested})
    return dataclasses.replace(data, train=train)


def check_several_classes(examples, label_column=None, classes=None):
    """Raises `DataError` unless `examples` hold at least two classes (`classes`: the ones
    chosen, which the message then blames)."""
    counts = examples.class_counts()
    if len(counts) >= 2:
        return
    if not counts:
        raise DataError("no examples of the chosen classes", path=examples.source)
    (only,) = counts
    lines = [line for _, line in examples.origins]
    if classes:
        raise DataError(f"--classes {' '.join(classes)} leaves one class ({quoted(only)}); "
                        "expected at least two", path=examples.source)
    if label_column is not None:
        raise DataError(
            f"the label column {label_column!r} has one class ({quoted(only)}) on every row (lines "
            f"{lines[0]}-{lines[-1]}); expected at least two classes",
            path=examples.source,
        )
    # A sub-folder beside line files (a backup, a link) makes the folder one of class folders,
    # and the files, the classes meant, were skipped: said, or the message blamed the folder.
    loose = [note for note in examples.skipped if note.startswith(LOOSE_FILES)]
    raise DataError(
        f"found one class ({quoted(only)}); expected at least two classes (one file or sub-folder "
        "per class)" + (f"; {loose[0]} (not read: a folder holding a sub-folder is read as one "
                        "sub-folder per class; move the sub-folder out to read the files as "
                        "classes)" if loose else ""),
        path=examples.source,
    )


def load_sample():
    """The labelled smoke-test sample shipped inside the package.

    About 150 short English sentences (positive and negative opinions of films, food, gadgets
    and places) written for seqlab so that `seqlab sentiment train` runs out of the box. It only
    shows that the pipeline works; it is far too small to measure a model with.
    """
    resource = resources.files(__package__).joinpath("samples", "sentiment_sample.tsv")
    with resources.as_file(resource) as path:
        examples = read_table(path)
    examples.source = SAMPLE_SOURCE
    return examples


def load_training_data(path=None, text_column="text", label_column="label", classes=None):
    """The labelled texts to train on: `read_labelled(path, ...)`, or the embedded sample
    (`load_sample`) when `path` is None, checked to hold at least two classes.

    Raises:
        DataError: unreadable or unsuitable input, a chosen class that no example has, or fewer
            than two classes.
    """
    if path is None:
        sample = load_sample()
        if classes is not None:
            keep = [i for i, label in enumerate(sample.labels) if label in classes]
            excluded = sorted(set(sample.labels) - set(classes))
            sample = sample.subset(keep)
            sample.excluded_labels = excluded
            check_chosen_classes(classes, [sample])
        check_several_classes(sample, "label", classes)
        return LabelledData(train=sample, test=None, layout="table")
    data = read_labelled(path, text_column, label_column, classes)
    if classes is not None:
        check_chosen_classes(classes, [data.train] + ([data.test] if data.test else []))
    elif data.test is not None:
        data = leave_out_untested_classes(data)
    check_several_classes(data.train, label_column if data.layout == "table" else None,
                          classes)
    return data


def read_scored_examples(path, text_column="text", label_column="label", classes=None):
    """`(Examples, split)` of labelled texts to score or classify, in any layout: the given test
    split of a folder with `train/` and `test/` (split "given test split"), or every example
    (split "every example")."""
    labelled = read_labelled(path, text_column, label_column, classes)
    if labelled.test is not None:
        return labelled.test, "given test split"
    return labelled.train, "every example"


# ---------------------------------------------------------------------------------------------
# Labels, splits and datasets


def label_ids(examples, classes):
    """The index in `classes` of each example's label.

    Raises:
        DataError: a label that is not in `classes` (unknown to a trained model), with the file
            and line of its first example.
    """
    index = {name: i for i, name in enumerate(classes)}
    unknown = [i for i, label in enumerate(examples.labels) if label not in index]
    if unknown:
        first = unknown[0]
        path, line = examples.origins[first]
        others = sorted({examples.labels[i] for i in unknown})
        raise DataError(
            f"unknown label {quoted(examples.labels[first])}; the model's classes are: "
            f"{', '.join(classes)} (unknown labels: {_listing(repr(o) for o in others)}, on "
            f"{len(unknown)} of {len(examples)} examples)",
            path=path,
            line=line,
        )
    return np.array([index[label] for label in examples.labels], dtype="int32")


def stratified_split(examples, fraction, seed, name="test"):
    """Splits off a seeded, stratified share of `examples`.

    Args:
        examples: the examples to split.
        fraction: the share held out, in (0, 1).
        seed: the random seed of the split.
        name: what the held-out share is for, for messages.

    Returns:
        `(kept, held_out)` `Examples`, each in the original order.

    Raises:
        DataError: too few examples of some class to split.
    """
    from sklearn.model_selection import train_test_split

    indices = np.arange(len(examples))
    try:
        kept, held_out = train_test_split(
            indices, test_size=fraction, random_state=seed, stratify=examples.labels
        )
    except ValueError as error:
        # Bounded: 100,000 classes made a line of a megabyte (scikit-learn lists them too).
        counts = listed((f"{k}: {v}" for k, v in examples.class_counts().items()),
                        _CLASSES_SHOWN)
        reason = _split_refusal(examples, fraction, name) or str(error)
        reason = reason if len(reason) <= 300 else reason[:297] + "..."
        raise DataError(
            f"cannot make a stratified {name} split of {len(examples)} examples ({counts}) "
            f"with fraction {fraction}: {reason}",
            path=examples.source,
        ) from None
    return examples.subset(np.sort(kept)), examples.subset(np.sort(held_out))


# Classes a message lists before "and N more".
_CLASSES_SHOWN = 10


def _split_refusal(examples, fraction, name):
    """Why scikit-learn's stratified split refuses, in this toolkit's words (its own say
    "test_size" of a validation split), or None for another reason. It holds out
    ceil(fraction x examples) and needs every class twice and each part to hold a class each."""
    counts = examples.class_counts()
    classes, total = len(counts), len(examples)
    held = math.ceil(fraction * total)
    rarest = min(counts, key=counts.get)
    if counts[rarest] < 2:
        return (f"the class {quoted(rarest)} has {counts[rarest]} example; a stratified split "
                "needs at least 2 of every class")
    for part, size in ((f"the {name} split", held), ("the rest", total - held)):
        if size < classes:
            return (f"{part} would hold {size} of them, fewer than the {classes} classes; a "
                    f"stratified split puts at least one of every class in each part (change "
                    f"the fraction or give more examples)")
    return None


def make_splits(data, test_fraction, val_fraction, seed):
    """The train, validation and test splits of `LabelledData`, and a report of them.

    A given test split (`data.test`) is used as such; otherwise a seeded stratified
    `test_fraction` of the examples is held out. Validation is a seeded stratified
    `val_fraction` of the rest (empty when 0).

    Returns:
        `({"train", "val", "test"}: Examples, report)`; the report (for metrics.json) holds the
        method ("given" or "seeded stratified"), the seed, the fractions, the number of
        examples and the class counts of each split, and how many validation and test texts
        are also training texts (`also_in_training`).

    Raises:
        DataError: too few examples of some class to split.
    """
    if data.test is not None:
        rest, test, method = data.train, data.test, "given"
    else:
        rest, test = stratified_split(data.train, test_fraction, seed)
        method = "seeded stratified"
    if val_fraction > 0:
        train, val = stratified_split(rest, val_fraction, seed, name="validation")
    else:
        train, val = rest, rest.subset([])
    splits = {"train": train, "val": val, "test": test}
    report = {
        "method": method,
        "seed": seed,
        "test_fraction": None if method == "given" else test_fraction,
        "val_fraction": val_fraction,
        "examples": {name: len(examples) for name, examples in splits.items()},
        "class_counts": {name: examples.class_counts() for name, examples in splits.items()},
        "also_in_training": {name: texts_also_in(splits[name].texts, train.texts)
                             for name in ("val", "test")},
    }
    return splits, report


def texts_also_in(texts, reference):
    """How many of `texts` are, spaces aside, also texts of `reference` (a test text seen in
    training makes the test figures overstate how the model reads new texts)."""
    seen = {" ".join(text.split()) for text in reference}
    return sum(" ".join(text.split()) in seen for text in texts)


def make_dataset(texts, labels, batch_size, shuffle_seed=None):
    """Batches `(text string[batch], label int32[batch])`, shuffled each epoch when seeded.

    Args:
        texts: the raw texts.
        labels: class ids (`label_ids`).
        batch_size: examples per batch (the last batch may be smaller).
        shuffle_seed: shuffle the whole set anew each epoch with this seed; None keeps the order.
    """
    dataset = tf.data.Dataset.from_tensor_slices(
        (tf.constant(list(texts), dtype=tf.string), tf.constant(labels, dtype=tf.int32))
    )
    if shuffle_seed is not None:
        dataset = dataset.shuffle(len(texts), seed=shuffle_seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
