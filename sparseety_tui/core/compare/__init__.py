"""Compare two runs: a baseline and a candidate (``sparseety-tui compare``).

Each side is what ``summary`` reads (a log, several, a directory, or one time window of a
log); its figures are taken from that side's ``summary_document`` (``figures.side_figures``)
so a side's numbers equal ``summary --json`` on it by construction. Requests are matched by
id, else by prompt (a hash of the text or token ids, never shown), else not at all (the
workloads are compared as a whole); matched pairs give paired deltas with a seeded
bootstrap interval (``bootstrap``) and the regressions list (``document``).

Pure: no I/O here (the prompts of a side are read by the caller, ``requests.prompt_keys``).
"""
