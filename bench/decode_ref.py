"""The reference for the speed rows (bench/speed.py): decode every line of FILE with orjson and
nothing else — the speed of the JSON parser. ``python bench/decode_ref.py FILE``; prints the
count of lines decoded on stderr."""

import sys

import orjson


def main(path: str) -> int:
    n = 0
    with open(path, "rb") as fh:
        for line in fh:
            try:
                orjson.loads(line)
                n += 1
            except orjson.JSONDecodeError:
                pass
    return n


if __name__ == "__main__":
    print(main(sys.argv[1]), file=sys.stderr)
