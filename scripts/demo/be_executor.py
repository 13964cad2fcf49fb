"""A BE "Spark executor": touches some memory, then keeps one CPU busy until killed.

usage: be_executor.py [--mem-mib N] [--tag RUN_DIR]
"""
import argparse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mem-mib", type=int, default=64)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    block = bytearray(args.mem_mib << 20)
    for i in range(0, len(block), 4096):  # fault every page in, so it is charged
        block[i] = 1
    n = 0
    while True:  # CPU-hungry "task"
        n = (n * 1103515245 + 12345) & 0x7FFFFFFF


if __name__ == "__main__":
    main()
