#!/usr/bin/python3
"""Runs ctest tests over and over, round robin, until one fails or the time is up, and
counts the runs: a failure it finds is a bug to trace to its cause (docs/testing.md).

    test/soak.py --build-dir build --until 13:45 [--jobs 2] [--every 6:fleet_real_node_e2e] \
        spark_emulator spark_real_node agent_real_node_e2e ...

Each test runs as ctest would run it (its command, working directory, timeout and skip
code, read from `ctest --show-only=json-v1`), in --jobs workers side by side; a RUN_SERIAL
test runs alone, the others beside each other, as `ctest -j` schedules them. `--every
K:NAME` adds NAME to every K-th round of a worker (a slow test run less often). The first
failure stops every worker; its output is kept (--log-dir) and named. At the end: each
test's passes, skips and failures."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import threading
import time


class SerialLock:
    """Many holders of the shared side, or one of the exclusive side (a RUN_SERIAL test);
    a waiting exclusive holder goes before new shared ones."""

    def __init__(self):
        self.cond = threading.Condition()
        self.shared = 0
        self.exclusive = False
        self.waiting = 0

    def acquire(self, exclusive):
        with self.cond:
            if exclusive:
                self.waiting += 1
                self.cond.wait_for(lambda: not self.exclusive and self.shared == 0)
                self.waiting -= 1
                self.exclusive = True
            else:
                self.cond.wait_for(lambda: not self.exclusive and self.waiting == 0)
                self.shared += 1

    def release(self, exclusive):
        with self.cond:
            if exclusive:
                self.exclusive = False
            else:
                self.shared -= 1
            self.cond.notify_all()


def ctest_tests(build_dir, names):
    out = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    found = {}
    for t in json.loads(out)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        found[t["name"]] = {"command": t["command"], "cwd": props.get("WORKING_DIRECTORY"),
                            "timeout": props.get("TIMEOUT", 1500),
                            "skip": props.get("SKIP_RETURN_CODE"),
                            "serial": bool(props.get("RUN_SERIAL"))}
    missing = [n for n in names if n not in found]
    if missing:
        sys.exit("soak.py: no ctest test named %s in %s" % (", ".join(missing), build_dir))
    return {n: found[n] for n in names}


class Soak:
    def __init__(self, tests, deadline, log_dir):
        self.tests, self.deadline, self.log_dir = tests, deadline, log_dir
        self.lock = SerialLock()
        self.failed = threading.Event()
        self.counts = {n: {"passed": 0, "skipped": 0, "failed": 0} for n in tests}
        self.count_lock = threading.Lock()

    def run_one(self, name):
        t = self.tests[name]
        self.lock.acquire(t["serial"])
        try:
            began = time.monotonic()
            try:
                p = subprocess.run(t["command"], cwd=t["cwd"], capture_output=True,
                                   timeout=t["timeout"], stdin=subprocess.DEVNULL)
                rc, output = p.returncode, p.stdout + p.stderr
            except subprocess.TimeoutExpired as e:
                rc, output = "timeout", (e.stdout or b"") + (e.stderr or b"")
        finally:
            self.lock.release(t["serial"])
        outcome = ("passed" if rc == 0 else "skipped" if rc == t["skip"] else "failed")
        with self.count_lock:
            self.counts[name][outcome] += 1
        if outcome == "failed" and not self.failed.is_set():
            self.failed.set()
            path = os.path.join(self.log_dir, "soak-%s-failed.log" % name)
            where = "in " + path
            try:
                with open(path, "wb") as f:
                    f.write(output)
            except OSError as e:
                # The failure's output is what the soak exists to find: never lose it.
                print("cannot keep %s's output in %s (%s); here it is:" % (name, path, e),
                      flush=True)
                sys.stdout.buffer.write(output)
                sys.stdout.flush()
                where = "printed above"
            print("%s FAILED (exit %s after %.0f s, %s): output %s" % (
                name, rc, time.monotonic() - began, datetime.datetime.now().strftime(
                    "%H:%M:%S"), where), flush=True)
        return outcome != "failed"

    def worker(self, index, names, every):
        rounds = 0
        while time.time() < self.deadline and not self.failed.is_set():
            rounds += 1
            extra = [n for k, n in every if rounds % k == 0]
            for name in names + extra:
                if self.failed.is_set() or not self.run_one(name):
                    return
            print("worker %d: round %d passed at %s" % (
                index, rounds, datetime.datetime.now().strftime("%H:%M:%S")), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--until", required=True,
                        help="HH:MM: no round starts after (the next time the clock shows it)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--every", action="append", default=[], metavar="K:NAME")
    parser.add_argument("--log-dir", default=".")
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    every = []
    for spec in args.every:
        k, _, name = spec.partition(":")
        if not k.isdigit() or int(k) < 1 or not name:
            parser.error("--every takes K:NAME, K a positive number: %r" % spec)
        every.append((int(k), name))
    try:
        until = datetime.datetime.combine(datetime.date.today(), datetime.time.fromisoformat(
            args.until))
    except ValueError:
        parser.error("--until takes HH:MM: %r" % args.until)
    if until <= datetime.datetime.now():
        until += datetime.timedelta(days=1)  # a soak started at 23:40 --until 00:30
    # Made (and checked writable) before the first run, not at the first failure.
    try:
        os.makedirs(args.log_dir, exist_ok=True)
    except OSError as e:
        parser.error("--log-dir %s cannot be made: %s" % (args.log_dir, e))
    if not os.access(args.log_dir, os.W_OK):
        parser.error("--log-dir %s is not writable" % args.log_dir)
    tests = ctest_tests(args.build_dir, args.names + [n for _, n in every])
    soak = Soak(tests, until.timestamp(), args.log_dir)
    workers = []
    for i in range(args.jobs):
        # Each worker starts at another place in the list: the workers overlap differently.
        shift = i * len(args.names) // args.jobs
        names = args.names[shift:] + args.names[:shift]
        w = threading.Thread(target=soak.worker, args=(i + 1, names, every if i == args.jobs - 1
                                                       else []))
        w.start()
        workers.append(w)
    for w in workers:
        w.join()
    print("%-28s %8s %8s %8s" % ("test", "passed", "skipped", "failed"))
    for name, c in soak.counts.items():
        print("%-28s %8d %8d %8d" % (name, c["passed"], c["skipped"], c["failed"]))
    return 1 if soak.failed.is_set() else 0


if __name__ == "__main__":
    sys.exit(main())
