"""How a long-running stand-in (spark_emulator.py) waits for its stop: SIGTERM, SIGINT or,
when asked, the end of its stdin.

No Python code runs in the signal handlers. A Python handler runs in the main thread
between two bytecodes, so it can run while that thread holds a lock, and a handler that
takes the same lock waits on itself for ever. The emulator used to stop through a handler
calling threading.Event.set() while its main thread sat in Event.wait(1.0): a SIGTERM that
landed as wait() timed out and re-took the Event's lock hung the emulator, until its test
SIGKILLed it (faulthandler's dump showed the main thread in Event.set inside
Condition._acquire_restore; about once in 140 runs of agent_real_node_e2e).

Here the interpreter's own C-level handler writes the signal's number to a pipe
(signal.set_wakeup_fd, async-signal-safe), the Python handlers do nothing, and the main
thread reads the pipe: nothing is locked between the signal and the wait's end.
"""
import os
import signal
import threading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# What the stdin watcher writes: no signal has number 0.
STDIN_CLOSED = 0


class StopSignal:
    """Install before starting threads (signal handlers can only be set from the main
    thread); wait() from the main thread. A signal that came before wait() is not lost."""

    def __init__(self, stdin=None):
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # set_wakeup_fd needs it; the C handler never blocks
        signal.set_wakeup_fd(self._write)
        for sig in STOP_SIGNALS:
            signal.signal(sig, lambda *_: None)
        if stdin is not None:
            threading.Thread(target=self._watch, args=(stdin,), daemon=True).start()

    def _watch(self, stdin):
        stdin.read()
        os.write(self._write, bytes([STDIN_CLOSED]))

    def wait(self):
        """Blocks until a stop signal or the watched stdin's end; returns the signal's
        number, or STDIN_CLOSED. Other signals with a Python handler wake the pipe too (it
        carries every caught signal's number) and are passed over."""
        while True:
            for number in os.read(self._read, 64):
                if number == STDIN_CLOSED or number in STOP_SIGNALS:
                    return number
