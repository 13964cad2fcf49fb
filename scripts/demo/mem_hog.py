"""A memory-holding process of the demo's memory phase: an LS cache that holds a fixed size,
or a BE "Spark executor" whose memory grows at a steady rate up to a cap. Every page is
faulted in (so the kernel charges it to the process's cgroup) by one mmap with MAP_POPULATE
a step: the kernel's own fault loop, a fraction of the CPU a page-by-page touch from Python
costs, so that the memory still grows while the BE tier is held near its CPU floor. Sleeps
between steps (no CPU).

usage: mem_hog.py --start-mib N [--grow-mib-per-s R] [--max-mib M] [--tag RUN_DIR]
"""
import argparse
import mmap
import time

STEP_S = 0.1


def hold(mib):
    """`mib` MiB of anonymous memory, every page faulted in and charged."""
    size = int(mib * (1 << 20))
    populate = getattr(mmap, "MAP_POPULATE", 0)
    block = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    if not populate:
        for i in range(0, size, mmap.PAGESIZE):
            block[i] = 1
    return block


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--start-mib", type=int, default=64)
    parser.add_argument("--grow-mib-per-s", type=float, default=0.0)
    parser.add_argument("--max-mib", type=int, default=0)
    parser.add_argument("--tag", default="")  # the demo's run dir, so leftovers are findable
    args = parser.parse_args()
    blocks = [hold(args.start_mib)]
    held = float(args.start_mib)
    limit = max(args.max_mib, args.start_mib)
    next_step = time.monotonic()
    while True:
        next_step += STEP_S
        time.sleep(max(0.0, next_step - time.monotonic()))
        if args.grow_mib_per_s <= 0 or held >= limit:
            continue
        grow = min(args.grow_mib_per_s * STEP_S, limit - held)
        blocks.append(hold(grow))
        held += grow


if __name__ == "__main__":
    main()
