# Stub of the native vLLM line scanner built from native/vllm_scan.c (see formats/vllm/_native.py).
STOP_END: int
STOP_ODD: int
STOP_FULL: int

def scan_vllm(
    data: bytes, start: int, max_lines: int, max_line_bytes: int, carry: bool = False
) -> tuple[
    int,
    int,
    int,
    int,
    bytes,
    bytes,
    bytes,
    list[str],
    bytes,
    list[bytes],
    bytes,
    bytes,
    bytes,
    bytes,
]: ...
