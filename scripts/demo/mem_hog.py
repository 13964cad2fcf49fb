"""A memory-holding process of the demo's memory phase: an LS cache that holds a fixed size,
or a BE "Spark executor" whose memory grows at a steady rate up to a cap. Every page is
touched, so the kernel charges it to the process's cgroup. Sleeps between steps (no CPU).

usage: mem_hog.py --start-mib N [--grow-mib-per-s R] [--max-mib M] [--tag RUN_DIR]
"""
import argparse
import time

STEP_S = 0.1


def touch(block):
    for i in range(0, len(block), 4096):
        block[i] = 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--start-mib", type=int, default=64)
    parser.add_argument("--grow-mib-per-s", type=float, default=0.0)
    parser.add_argument("--max-mib", type=int, default=0)
    parser.add_argument("--tag", default="")  # the demo's run dir, so leftovers are findable
    args = parser.parse_args()
    blocks = [bytearray(args.start_mib << 20)]
    touch(blocks[0])
    held = float(args.start_mib)
    limit = max(args.max_mib, args.start_mib)
    next_step = time.monotonic()
    while True:
        next_step += STEP_S
        time.sleep(max(0.0, next_step - time.monotonic()))
        if args.grow_mib_per_s <= 0 or held >= limit:
            continue
        grow = min(args.grow_mib_per_s * STEP_S, limit - held)
        block = bytearray(int(grow * (1 << 20)))
        touch(block)
        blocks.append(block)
        held += grow


if __name__ == "__main__":
    main()
