# Stub of the native scanner built from native/sglang_scan.c (see formats/sglang/_native.py).
from collections.abc import Callable

KIND_PREFILL: int
KIND_DECODE: int
SUM_FIELDS: tuple[tuple[str, int, int], ...]

def accumulate(
    kinds: bytes,
    ranks: bytes,
    ints: bytes,
    floats: bytes,
    minutes: bytes,
    secs: bytes,
    bases: object,
    rank: int,
    sums: object,
    own: Callable[[int], object],
) -> tuple[int, int, int]: ...
def scan(
    data: bytes, start: int, max_line_bytes: int, max_lines: int
) -> tuple[
    int,
    int,
    int,
    int,
    int,
    int,
    bytes,
    bytes,
    bytes,
    bytes,
    bytes,
    bytes,
    list[bytes],
    list[int],
    list[bytes],
    tuple[int, int, int],
]: ...
