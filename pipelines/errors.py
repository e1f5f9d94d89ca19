"""The error for settings and commands the user can correct (kept free of heavy imports)."""


class UsageError(ValueError):
    """A setting or a command the user can correct (exit status 2 on the command line).

    Bad input data is a `data.DataError` instead.
    """


def parse_failure(error):
    """What a JSON or TOML parser's `ValueError` or `RecursionError` says, for one line: a
    structure nested past Python's recursion limit, or a number of more digits than Python
    converts (4,300: `sys.int_info.str_digits_check_threshold`), without Python's advice to
    raise its limits."""
    if isinstance(error, RecursionError):
        return "nested too deeply to read"
    if "integer string conversion" in str(error):
        return "a number of thousands of digits, more than Python converts"
    return str(error)
