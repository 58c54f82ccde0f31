"""The service manager's lines about the server's own unit (systemd, read through journald).

A server run as a systemd service has its crashes and restarts told by systemd, not by
the server: in ``journalctl`` output they sit between the server's lines, and an on-call
engineer needs "the process died" counted as an error. Real samples (tests/data/real_logs/
vllm_0.15.1_journald_*, after the journald wrapper is taken off):

- ``vllm-assistant.service: Main process exited, code=exited, status=1/FAILURE``: the
  server died, an error (also ``code=killed, status=9/KILL`` and ``code=dumped``);
- ``vllm-assistant.service: Failed with result 'exit-code'.``, ``vllm-assistant.service:
  Consumed 38.244s CPU time.``, ``vllm-assistant.service: Scheduled restart job, restart
  counter is at 1.``: the same failure told again, and the unit's bookkeeping;
- ``Started vllm-assistant.service - vLLM OpenAI Server (assistant).``, ``Stopping ...``:
  the unit's start and stop.

The failure is one error however many of these lines tell it: only the ``Main process
exited`` line with a failing status is one.
"""

from __future__ import annotations

from sparseety_tui.formats.shapes import SERVICE

#: A line systemd logs about a unit: ``<unit>.service: ...`` or ``Started <unit>.service``,
#: and its ``Main process exited, code=..., status=...`` (``shapes.lines.SERVICE``).
UNIT_LINE_RE = SERVICE.bytes_regex("unit")
EXITED_RE = SERVICE.bytes_regex("exited")


def unit_line(line: bytes) -> tuple[bool, str] | None:
    """(whether it reports a failure, its text) for a systemd line about a unit; None for
    any other line."""
    if b".s" not in line or UNIT_LINE_RE.match(line) is None:
        return None
    exited = EXITED_RE.search(line)
    failed = exited is not None and (exited.group(1) != b"exited" or exited.group(2) != b"0")
    return failed, line.decode("utf-8", "replace").strip()
