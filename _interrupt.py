"""A Ctrl-C that the command line does not lose.

Python delivers a Ctrl-C as a `KeyboardInterrupt` raised wherever the main thread happens to be.
Where that is a weakref callback or an object's `__del__` (Keras and TensorFlow free graph
objects through both), Python prints "Exception ignored in ..." and drops it: a `train` then
went on to its last epoch and ended with status 0, once in 22 interrupts in a session's trial.
While `watching` is on, a Ctrl-C also sets a flag, and `check` raises it again at the next
place that asks (a batch's start or an epoch's end through `StopOnInterrupt`, and before a run
is called finished), so a lost interrupt stops the command there instead.

Imports nothing heavy: the command line installs it before TensorFlow loads.
"""

import contextlib
import signal
import threading

_requested = False


def _on_interrupt(signum, frame):
    global _requested
    _requested = True
    raise KeyboardInterrupt


@contextlib.contextmanager
def watching():
    """Within it, a Ctrl-C raises `KeyboardInterrupt` as Python's own handler does and is also
    remembered for `check`. Installed only in the main thread and only over Python's default
    handler (a program that set its own, or ignores Ctrl-C, keeps it; a call in another thread
    changes nothing); the flag is cleared on entry and exit, so one call of the command line
    never sees another's interrupt."""
    global _requested
    own = (threading.current_thread() is threading.main_thread()
           and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    if not own:
        yield
        return
    _requested = False
    signal.signal(signal.SIGINT, _on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _requested = False


def check():
    """Raises `KeyboardInterrupt` if a Ctrl-C came while `watching` was on: again, where Python
    dropped the first one."""
    if _requested:
        raise KeyboardInterrupt
