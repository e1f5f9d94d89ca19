"""The error for settings and commands the user can correct (kept free of heavy imports)."""


class UsageError(ValueError):
    """A setting or a command the user can correct (exit status 2 on the command line).

    Bad input data is a `data.DataError` instead.
    """
