"""stop_signal.py: a stand-in waiting for its stop ends its wait on SIGTERM, SIGINT or (when
asked) its stdin's end, keeps a signal that came before the wait, and passes over other
signals. Each case runs the waiter in a child process, as spark_emulator.py runs it.

The hang this replaced (an Event.set() in a signal handler landing while the main thread
held the Event's lock) cannot be forced from outside; what is checked here is the
contract the emulator's stop relies on."""
import os
import signal
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# Far above what a Python child takes to start and stop here.
BOUND_S = 20.0

CHILD = r"""
import os, signal, sys
sys.path.insert(0, %(here)r)
from stop_signal import StopSignal
%(before)s
stop = StopSignal(sys.stdin if %(watch_stdin)r else None)
%(after)s
print("ready", flush=True)
print("stopped by %%d" %% stop.wait(), flush=True)
"""


def start(watch_stdin=False, before="", after=""):
    code = CHILD % {"here": HERE, "watch_stdin": watch_stdin, "before": before,
                    "after": after}
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return child


def wait_ready(test, child):
    line = child.stdout.readline()
    if line != "ready\n":
        child.kill()
        test.fail("the waiter did not start: %r, %s" % (line, child.communicate()[1]))


def finish(test, child):
    if child.stdin.closed:
        child.stdin = None  # communicate() would flush it
    try:
        out, err = child.communicate(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        test.fail("the waiter did not end within %.0f s" % BOUND_S)
    test.assertEqual(child.returncode, 0, err)
    return out


class StopSignalTest(unittest.TestCase):
    def test_sigterm_and_sigint_end_the_wait(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                child = start()
                wait_ready(self, child)
                child.send_signal(sig)
                self.assertEqual(finish(self, child), "stopped by %d\n" % sig)

    def test_a_signal_before_the_wait_is_kept(self):
        child = start(after="os.kill(os.getpid(), signal.SIGTERM)")
        self.assertEqual(finish(self, child), "ready\nstopped by %d\n" % signal.SIGTERM)

    def test_stdin_end_ends_the_wait_only_when_watched(self):
        watched = start(watch_stdin=True)
        wait_ready(self, watched)
        watched.stdin.close()
        self.assertEqual(finish(self, watched), "stopped by 0\n")

        # Unwatched, a closed stdin leaves the wait on: the SIGTERM after it is what ends it.
        unwatched = start(watch_stdin=False)
        wait_ready(self, unwatched)
        unwatched.stdin.close()
        unwatched.send_signal(signal.SIGTERM)
        self.assertEqual(finish(self, unwatched), "stopped by %d\n" % signal.SIGTERM)

    def test_other_caught_signals_are_passed_over(self):
        # SIGUSR2 has a Python handler, so its number reaches the wakeup pipe too; the
        # handler says so before the SIGTERM is sent.
        child = start(before="signal.signal(signal.SIGUSR2, lambda *_: print('usr2', "
                             "flush=True))")
        wait_ready(self, child)
        child.send_signal(signal.SIGUSR2)
        self.assertEqual(child.stdout.readline(), "usr2\n")
        child.send_signal(signal.SIGTERM)
        self.assertEqual(finish(self, child), "stopped by %d\n" % signal.SIGTERM)


if __name__ == "__main__":
    unittest.main()
