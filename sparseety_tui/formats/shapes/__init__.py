"""Stateless line shapes as data, and the one loader that reads them.

A shape is a row: a name, a regular expression, the kind of line (or part of a line) it
recognises, the type of each of its groups, and real sample lines it matches. Rows live
in tables: the modules of this package for the lines any family reads (``lines``,
``kv``, ``prefixes``, ``startup``, ``tracebacks``, ``prometheus``), ``vllm/patterns.py``
and ``sglang/patterns.py`` for the server families; ``table`` compiles a table's rows
once, at import, and checks every row there, as lnav checks a format's samples when it
loads it:

- every group of the pattern, named or not, has a declared type, and no type is declared
  for a group the pattern lacks;
- every sample line is matched by its row, with the operation the code applies the row
  with (``match`` at the start of the text, or ``search`` anywhere), and each typed group
  it fills reads as its type (``int`` and ``float`` by formats/_numbers.py).

A table says how its rows relate (``Table.mode``): ``exclusive`` rows never both match a
sample; ``first`` rows are tried in order and a line is the first row that matches it;
``parts`` rows read different parts of one line in turn (a prefix, then a head), so a
sample may match more than its own row. tests/unit/test_line_shapes.py holds each table to
its mode and each pattern to linear time on hostile input.

What keeps state across lines (the vLLM and SGLang request state machines, the grouping of a
traceback's lines) is code, not data: a row only says what one line looks like.
"""

from sparseety_tui.formats.shapes._kv import KV, KV_FIELDS, KV_ID_KEYS
from sparseety_tui.formats.shapes._lines import (
    ACCESS,
    CI,
    ENGINE_WARNING,
    ERROR,
    NOISE,
    PY_WARNING,
    SERVICE,
)
from sparseety_tui.formats.shapes._loader import (
    TABLES,
    FieldType,
    LineShape,
    Mode,
    Op,
    Row,
    Table,
    table,
)
from sparseety_tui.formats.shapes._prefixes import ANSI, WRAPPER
from sparseety_tui.formats.shapes._prometheus import PROMETHEUS
from sparseety_tui.formats.shapes._startup import ARGS, CONFIG, NAMESPACE, SGLANG
from sparseety_tui.formats.shapes._tracebacks import TRACEBACK

__all__ = [
    "ACCESS",
    "ANSI",
    "ARGS",
    "CI",
    "CONFIG",
    "ENGINE_WARNING",
    "ERROR",
    "KV",
    "KV_FIELDS",
    "KV_ID_KEYS",
    "NAMESPACE",
    "NOISE",
    "PROMETHEUS",
    "PY_WARNING",
    "SERVICE",
    "SGLANG",
    "TABLES",
    "TRACEBACK",
    "WRAPPER",
    "FieldType",
    "LineShape",
    "Mode",
    "Op",
    "Row",
    "Table",
    "table",
]
