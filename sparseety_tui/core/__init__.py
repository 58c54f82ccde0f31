"""The extraction core: the request store, the Extractor that fills it from format events,
totals, figures, the cost model, queries, request details, and frozen copies for readers on
other threads. Plain Python (plus numpy), no I/O beyond re-reading lines, no Textual."""
