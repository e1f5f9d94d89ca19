"""The error type that every reader in `data/` raises for bad input."""


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
