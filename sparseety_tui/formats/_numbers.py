"""Numbers read from log text: ASCII digits only, and only values that can be true.

``str.isdigit`` accepts ``¹²`` and ``int`` then rejects it; ``int`` refuses more than 4,300
digits; ``float`` reads ``1e400`` as ``inf`` and accepts ``nan``. Parsers read the numbers
of a line with these two functions, so a number the text cannot honestly give (not ASCII,
absurdly long, not finite) makes that field unknown (left out of the payload), never an
exception and never a made-up value. The store then holds what its columns can: a count
beyond int32 is unknown there too (``core.extraction``).
"""

from __future__ import annotations

import math

#: The most digits a count may have: 18 always fit an int64 (the 19th may not).
MAX_COUNT_DIGITS = 18


def count(text: bytes | str) -> int | None:
    """A non-negative integer in ASCII digits (at most ``MAX_COUNT_DIGITS``), else None."""
    if 0 < len(text) <= MAX_COUNT_DIGITS and text.isascii() and text.isdigit():
        return int(text)
    return None


def real(text: bytes | str) -> float | None:
    """A finite number in ASCII (``12``, ``-1.5``, ``2e3``), else None (``inf``, ``nan``,
    ``1e400``, ``١٢``, garbage)."""
    if not text.isascii():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
