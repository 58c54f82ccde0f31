"""Ingest-only CPU of a vLLM log: the per-line path vs the native scanner, in one process.

Usage: PYTHONPATH=. python bench/vllm_ingest_ab.py /tmp/perf/vllm.log
"""
import sys, time, gc
from sparseety_tui.core.extractor import Extractor
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.formats import vllm
path = sys.argv[1]
for native in (False, True):
    saved = vllm.VllmFamily.scan_server
    if not native:
        vllm.VllmFamily.scan_server = property(lambda self: None)
    e = Extractor(); t = time.process_time(); ingest_file(e, path); dt = time.process_time() - t
    vllm.VllmFamily.scan_server = saved
    print(f"{'native' if native else 'per-line'} ingest cpu {dt:.2f} s, rows {len(e.store)}, lines {e.files[0].lines_total}", flush=True)
    del e; gc.collect()
