"""A Ctrl-C (or SIGTERM) that the command line does not lose.

Python delivers a Ctrl-C as a `KeyboardInterrupt` raised wherever the main thread happens to be.
Where that is a weakref callback or an object's `__del__` (Keras and TensorFlow free graph
objects through both), Python prints "Exception ignored in ..." and drops it: a `train` then
went on to its last epoch and ended with status 0, once in 22 interrupts in a session's trial.
While `watching` is on, a Ctrl-C also sets a flag, and `check` raises it again at the next
place that asks (a batch's start or an epoch's end through `StopOnInterrupt`, and before a run
is called finished), so a lost interrupt stops the command there instead.

A SIGTERM (`kill`, `timeout`, a job scheduler's stop) is raised as `Terminated`, a
`KeyboardInterrupt`, so that it stops a command as a Ctrl-C does: a train's finished epochs
kept and the command to resume them said (it ended the process at once, without a word, and a
default `--out` named after the time could not be found again by rerunning the command).

From a `fit`'s second epoch on (`deferred`), a first Ctrl-C or SIGTERM is only remembered, and
`check` raises it at the next batch's start or epoch's end: in Python code between batches, not
wherever the main thread happens to be (a Keras callback half done, an object's `__del__`,
Python code that TensorFlow's C++ called). A batch's C++ work cannot be interrupted either
way, so the command stops about as soon as before (a callback that works for seconds at an
epoch's end delays it by as much). The first epoch is not deferred: it traces the model's
functions, Python work that can take minutes, and a job scheduler's SIGTERM must stop it
before the SIGKILL that follows. A second signal always raises at once.

Imports nothing heavy: the command line installs it before TensorFlow loads.
"""

import contextlib
import signal
import threading

_requested = None  # the signal that asked, while `watching`
_deferring = 0  # how many `deferred` blocks are open


class Terminated(KeyboardInterrupt):
    """A SIGTERM, raised where Python would raise a Ctrl-C's `KeyboardInterrupt`."""


def _raise(signum):
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def _on_signal(signum, frame):
    global _requested
    again = _requested is not None
    _requested = signum
    if again or not _deferring:
        _raise(signum)


class Deferral:
    """What `deferred` yields: its `start` turns the deferring on (once)."""

    def __init__(self):
        self.on = False

    def start(self):
        global _deferring
        if not self.on:
            self.on = True
            _deferring += 1


@contextlib.contextmanager
def deferred(started=True):
    """Within it, once started (at once, or by the `Deferral` it yields: a `fit`'s
    `StopOnInterrupt` starts it after the first epoch), a first Ctrl-C or SIGTERM is only
    remembered for `check`; a second one raises at once. One that came in it and was not
    raised yet is raised when it ends normally."""
    global _deferring
    deferral = Deferral()
    if started:
        deferral.start()
    try:
        yield deferral
    finally:
        if deferral.on:
            _deferring -= 1
    check()


@contextlib.contextmanager
def watching():
    """Within it, a Ctrl-C raises `KeyboardInterrupt` as Python's own handler does, a SIGTERM
    `Terminated`, and either is also remembered for `check`. Installed only in the main thread
    and only over the default handlers (a program that set its own, or ignores the signal,
    keeps it; a call in another thread changes nothing); the flag is cleared on entry and exit,
    so one call of the command line never sees another's interrupt."""
    global _requested
    main = threading.current_thread() is threading.main_thread()
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    owned = [signum for signum, default in defaults.items()
             if main and signal.getsignal(signum) is default]
    _requested = None
    for signum in owned:
        signal.signal(signum, _on_signal)
    try:
        yield
    finally:
        for signum in owned:
            signal.signal(signum, defaults[signum])
        _requested = None


def check():
    """Raises `KeyboardInterrupt` (`Terminated` for a SIGTERM) if one came while `watching` was
    on: again, where Python dropped the first one."""
    if _requested is not None:
        _raise(_requested)


def terminated():
    """Whether a SIGTERM came while `watching` was on."""
    return _requested == signal.SIGTERM
