"""The extraction core, by job, each subpackage behind its face (its ``__init__``):

    text, tokens  literal text rules; tokenizers and token counts
    store         RequestStore, EngineSeries, ErrorLog, FileState, frozen copies, views
    extraction    Extractor (lines and fast-path batches -> store), request details
    figures       totals, per-row figures, cost model, splits, trends, running totals
    query         filter and sort, time windows, selections, id prefixes
    report        the summary and extract documents
    compare, redact

Lower jobs never import higher ones (an import contract); modules named ``_x`` are private
to their package. Plain synchronous Python (plus numpy): no Textual, no threads of its own.
"""
