"""Ingest-only CPU of a vLLM log: the per-line path vs the native scanner, in one process.

Usage: PYTHONPATH=. python bench/vllm_ingest_ab.py /tmp/perf/vllm.log
"""

from __future__ import annotations

import gc
import sys
import time

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.formats import vllm
from sparseety_tui.ingest.batch import ingest_file


def main() -> None:
    path = sys.argv[1]
    for native in (False, True):
        saved = vllm.VllmFamily.scan_server
        if not native:
            vllm.VllmFamily.scan_server = None
        extractor = Extractor()
        start = time.process_time()
        ingest_file(extractor, path)
        cpu = time.process_time() - start
        vllm.VllmFamily.scan_server = saved
        name = "native" if native else "per-line"
        print(f"{name} ingest cpu {cpu:.2f} s, rows {len(extractor.store)}", flush=True)
        del extractor
        gc.collect()


if __name__ == "__main__":
    main()
