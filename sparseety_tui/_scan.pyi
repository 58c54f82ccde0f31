# Stub of the native scanner built from native/scan.c (see formats/_trace_native.py).
STOP_END: int
STOP_NOT_SIMPLE: int
STOP_FULL: int
FIELD_COMPLETION_TOKENS: int
FIELD_LATENCY_S: int
EPOCH_SECONDS_BELOW: float
EPOCH_MILLIS_BELOW: float
EPOCH_MICROS_BELOW: float
TIME_END: float
TOP_KEYS: tuple[str, ...]
SPARSE_KEYS: tuple[str, ...]

def scan_requests(
    data: bytes, start: int, max_records: int, max_line_bytes: int
) -> tuple[
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
    bytes,
    bytes,
    bytes,
    bytes,
    list[list[str]],
]: ...
