"""TensorFlow's C++ log kept off the terminal, for the command line and for `import seqlab`.

TensorFlow's C++ code logs to file descriptor 2: notices while its libraries load ("Could not
find cuda drivers", oneDNN's, "All log messages before absl::InitializeLog() ..."), which
ignore `TF_CPP_MIN_LOG_LEVEL`, and later INFO, WARNING and ERROR lines (`failed call to cuInit`
without a GPU, oneDNN's "supports DT_BOOL only on platforms with AVX-512"), which obey it.

`import seqlab` calls `quiet_on_import()`: unless the user set `TF_CPP_MIN_LOG_LEVEL`, it sets
it to 3 and, if TensorFlow is not loaded yet, hooks its first import so that the import runs
with file descriptor 2 sent to a temporary file (shown only if the import fails). Importing
seqlab stays cheap: nothing loads TensorFlow here. TensorFlow imported BEFORE seqlab has printed
its load notices already; import seqlab first to keep them off the terminal too.

Imports nothing heavy (the command line's `--help` and `seqlab datasets` use it).
"""

import contextlib
import importlib.abc
import importlib.util
import logging
import os
import sys
import tempfile

TF_LOG_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
# INFO, WARNING and ERROR lines hidden: TensorFlow logs notices as errors too, and a real error
# reaches the user as a Python exception.
QUIET_TF_LOG_LEVEL = "3"


@contextlib.contextmanager
def stderr_descriptor_to(file):
    """Sends whatever is written to file descriptor 2 (C++ code included) to `file` inside the
    block."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(file.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


@contextlib.contextmanager
def quiet_descriptor_2():
    """Runs the block with file descriptor 2 sent to a temporary file, which is written to
    stderr if the block raises (not when the user interrupts it: Ctrl-C while TensorFlow
    loads showed its load notices)."""
    with tempfile.TemporaryFile() as captured:
        try:
            with stderr_descriptor_to(captured):
                yield
        except KeyboardInterrupt:
            raise
        except BaseException:
            captured.seek(0)
            sys.stderr.write(captured.read().decode("utf-8", "replace"))
            raise


class _QuietLoader(importlib.abc.Loader):
    """Runs another loader's `exec_module` with file descriptor 2 captured."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self.loader  # the module keeps its own loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        with quiet_descriptor_2():
            self.loader.exec_module(module)


class _QuietTensorflowImport(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` as the other finders do, with a loader that captures descriptor 2;
    removes itself at its first use."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        remove_hook()
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


_HOOK = _QuietTensorflowImport()
# Whether TF_CPP_MIN_LOG_LEVEL holds the value seqlab set (not the user's).
_LEVEL_SET_HERE = False


def users_level():
    """The `TF_CPP_MIN_LOG_LEVEL` the user set, or None (unset, or the value seqlab set)."""
    level = os.environ.get(TF_LOG_LEVEL_VARIABLE)
    if level is None or (_LEVEL_SET_HERE and level == QUIET_TF_LOG_LEVEL):
        return None
    return level


def remove_hook():
    while _HOOK in sys.meta_path:
        sys.meta_path.remove(_HOOK)


def quiet_on_import():
    """Keeps TensorFlow's C++ log quiet, unless the user set `TF_CPP_MIN_LOG_LEVEL` (kept).

    Returns:
        True when seqlab set the level (and hooked TensorFlow's first import, if it is not
        loaded yet).
    """
    global _LEVEL_SET_HERE
    if users_level() is not None:
        return False
    os.environ[TF_LOG_LEVEL_VARIABLE] = QUIET_TF_LOG_LEVEL
    _LEVEL_SET_HERE = True
    if "tensorflow" not in sys.modules and _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)
    return True


def is_quiet():
    """Whether TensorFlow's log is kept quiet in this process (the level is seqlab's)."""
    return os.environ.get(TF_LOG_LEVEL_VARIABLE) == QUIET_TF_LOG_LEVEL


def quiet_worker(quiet):
    """The start of a worker process that may import TensorFlow (the classical fits' spawned
    workers): hooks TensorFlow's first import there when the parent is `quiet`. The worker
    inherits the parent's level, which `quiet_on_import` would take for the user's and leave
    TensorFlow's load notices on the shared terminal."""
    if quiet and "tensorflow" not in sys.modules and _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)


def leave_loud():
    """Undoes `quiet_on_import` (the command line's `--debug`): the level seqlab set is
    removed, the user's own is kept, and TensorFlow's import is not hooked."""
    global _LEVEL_SET_HERE
    remove_hook()
    if _LEVEL_SET_HERE and os.environ.get(TF_LOG_LEVEL_VARIABLE) == QUIET_TF_LOG_LEVEL:
        del os.environ[TF_LOG_LEVEL_VARIABLE]
    _LEVEL_SET_HERE = False


class RetracingFilter(logging.Filter):
    """Drops TensorFlow's Python warning "N out of the last M calls to <function> triggered
    tf.function retracing": a new model per backtest fold, and a new function per candidate
    loop the recurrent layers time, trace on purpose."""

    def filter(self, record):
        return "triggered tf.function retracing" not in record.getMessage()


_RETRACING_FILTER = RetracingFilter()


def hide_retracing_warnings():
    """Adds `RetracingFilter` to TensorFlow's Python logger (by its name: nothing imported)."""
    logging.getLogger("tensorflow").addFilter(_RETRACING_FILTER)
