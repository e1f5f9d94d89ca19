"""The error type that every reader in `data/` raises for bad input, the UTF-8 file reading
they share (so that an undecodable file is reported alike everywhere), and the largest and
least magnitudes a series may hold."""

import os
import re
from pathlib import Path

import numpy as np

# The largest absolute value a numeric column may hold: the models compute in float32, whose
# squares (in the losses and figures) stay finite up to about 1e19.
MAX_ABS_VALUE = 1e15
# The least the largest absolute value of a numeric column may be, unless it is 0: below it a
# column's values lose their digits in float32 (under 1e-38 they are 0), and their squares
# underflow.
MIN_LARGEST_ABS_VALUE = 1e-15

# A line break as Python's text mode reads one: "\r\n", a lone "\r" or "\n".
_LINE_BREAK = re.compile(r"\r\n?|\n")
_LINE_BREAK_BYTES = re.compile(rb"\r\n?|\n")


class DataError(ValueError):
    """Bad input data, reported with where it was found and what was expected.

    Args:
        message: what is wrong and what was expected.
        path: the file (or other source) that holds the bad input.
        line: the 1-based line (or row) number, when it is known.
    """

    def __init__(self, message, path=None, line=None):
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        super().__init__(self._format())

    def _format(self):
        where = self.path or ""
        if self.line is not None:
            where = f"{where}, line {self.line}" if where else f"line {self.line}"
        return f"{where}: {self.message}" if where else self.message


# The most characters of a bad line, cell or name that an error message quotes.
QUOTED_CHARS = 80


def quoted(value, limit=QUOTED_CHARS):
    """`repr(value)`; of a string longer than `limit` characters, that of its first `limit`
    and its length: a message quotes the input it refuses without repeating a line of
    megabytes."""
    if not isinstance(value, str) or len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value):,} characters)"


def listed(items, shown):
    """The first `shown` of `items`, comma-separated, then "and N more" for the rest: a
    message's list, bounded however many there are."""
    items = list(items)
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(map(str, items[:shown])) + more


def refuse_values_lost_in_float32(values, what, path, where=""):
    """Raises `DataError` where the largest magnitude of `values` is above 0 but under
    `MIN_LARGEST_ABS_VALUE` (`what`: "column 'y'", "series 'a'"; `where`: " (lines ...)")."""
    largest = float(np.max(np.abs(np.asarray(values, dtype="float64")), initial=0.0))
    if 0 < largest < MIN_LARGEST_ABS_VALUE:
        raise DataError(
            f"{what} holds no value larger than {largest:.3g} in magnitude{where}; expected "
            f"values of at least {MIN_LARGEST_ABS_VALUE:g} (the model computes in float32, "
            "where they would lose their digits): give them in a smaller unit",
            path=path,
        )


def decode_utf8(raw, path):
    """UTF-8 text of the bytes `raw` read from `path` (a leading byte-order mark is dropped).

    Raises:
        DataError: bytes that are not UTF-8, naming the line, the byte offset and the bytes; a
            NUL character (text files hold none).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        # Lines counted as the readers count them (`normalize_line_endings`).
        line = len(_LINE_BREAK_BYTES.findall(raw, 0, error.start)) + 1
        bad = raw[error.start:error.end].hex(" ")
        raise DataError(
            f"undecodable bytes at byte offset {error.start} (0x{bad}); expected UTF-8 text",
            path=path,
            line=line,
        ) from None
    nul = raw.find(b"\x00")
    if nul >= 0:  # a binary file (NumPy's strings, and so Keras's lookups, also drop NULs)
        raise DataError(
            f"a NUL character (byte 0) at byte offset {nul}; expected text",
            path=path,
            line=len(_LINE_BREAK_BYTES.findall(raw, 0, nul)) + 1,
        )
    return text.removeprefix("\ufeff")


def normalize_line_endings(text):
    """`text` with every line break made "\\n": "\\r\\n" and a lone "\\r" become "\\n", as
    Python's text mode (universal newlines) reads them, so that a file written on Windows (or
    an old Mac) gives the same lines and characters as the same file with "\\n" endings."""
    return _LINE_BREAK.sub("\n", text)


def empty_file(text, expected, path):
    """The `DataError` for a file without content: "the file is empty" where it has no
    characters, else "the file holds only blank lines and white space (N characters)" (a file of
    9 bytes was called empty), then "; expected " and `expected`."""
    what = ("the file is empty" if not text else "the file holds only blank lines and white "
            f"space ({len(text):,} character{'s' if len(text) > 1 else ''})")
    return DataError(f"{what}; expected {expected}", path=path)


def not_a_file(path):
    """The `DataError` for a `path` that is not a regular file nor a folder: missing, or a pipe,
    device or socket (whose reading could wait forever or never end)."""
    if os.path.exists(path):
        return DataError("is not a regular file (a pipe, device or socket); expected a file "
                         "on disk", path=path)
    return DataError("file not found", path=path)


def read_utf8(path):
    """The text of the UTF-8 file `path` (a leading byte-order mark is dropped).

    Raises:
        DataError: the file is missing or a folder, or holds bytes that are not UTF-8 (see
            `decode_utf8`).
    """
    path = Path(path)
    if path.is_dir():
        raise DataError("is a folder, not a file; expected a text file", path=path)
    if not path.is_file():
        raise not_a_file(path)
    return decode_utf8(path.read_bytes(), path)
