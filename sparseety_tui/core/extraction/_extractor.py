"""The Extractor: lines in, RequestStore rows and running aggregates out.

Fed incrementally (a batch of complete lines per call) by the one ingest worker of the
TUI, or in one go by the batch commands. It owns the per-file parsers and counts, so
"every line is accounted for" is enforced in one place: each line fed gets exactly one
kind, and per file the counts by kind add up to the lines fed. The events the parsers give
are merged into the store by ``core.extraction.Merger``; readers on other threads get
``freeze()`` copies; a file read in byte ranges by several processes is put back together
with ``export_part`` / ``merge_part``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import islice
from operator import attrgetter
from typing import Generic, Protocol, TypeVar

from sparseety_tui.core.extraction._apply import apply_batch
from sparseety_tui.core.extraction._apply_lines import Target
from sparseety_tui.core.extraction._chunks import (
    BULK_BLOCK_LINES,
    BULK_MIN_LINES,
    run_chunk_scanned,
    run_chunk_server,
)
from sparseety_tui.core.extraction._merge import EventObserver, Merger
from sparseety_tui.core.extraction._parts import (
    ExtractorPart,
    export_part,
    freeze_extractor,
    merge_part,
)
from sparseety_tui.core.store import (
    SNIFF_HEAD_BYTES,
    Diagnostic,
    EngineSeries,
    ErrorLog,
    FileState,
    FrozenExtractor,
    HeatByModel,
    HeatCounts,
    RequestStore,
    merged_meta,
)
from sparseety_tui.core.tokens import FileTokenizers, TokenCounter, read_startup_meta
from sparseety_tui.events import ErrorPayload, LineKind, MetaPayload
from sparseety_tui.formats import (
    SNIFF_LINES,
    BlockDecoder,
    LineParser,
    WrappedParser,
    detect,
    failure_reason,
    fallback_for,
    family_by_name,
)
from sparseety_tui.sources import (
    Chunk,
    RawLine,
    mtime_or_none,
    split_chunk,
)

#: How many characters of an unparsed line are kept for display.
PREVIEW_CHARS = 300
#: Errors kept with their text (all are counted).
ERROR_SAMPLES = 1000


_T = TypeVar("_T")


class _FromMerger(Generic[_T]):
    """A read-only attribute of the Extractor that is its merger's (``core.extraction``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, extractor: Extractor, owner: type[Extractor] | None = None) -> _T:
        value: _T = getattr(extractor._merger, self.name)
        return value


class LineLike(Protocol):
    @property
    def offset(self) -> int: ...
    @property
    def length(self) -> int: ...
    @property
    def data(self) -> bytes: ...
    @property
    def truncated(self) -> bool: ...


_TRUNCATED = attrgetter("truncated")


class Extractor:
    def __init__(
        self,
        *,
        store: RequestStore | None = None,
        tokens: TokenCounter | None = None,
        forced_format: str | None = None,
        engine: EngineSeries | None = None,
        observer: EventObserver | None = None,
        record_lifecycle: bool = False,
    ) -> None:
        """``engine``: the series stats lines go to (a ``RecordingEngineSeries`` for a byte
        range of a file); ``observer``: told of request and error events before they are
        merged (see ``core.extraction``); ``record_lifecycle``: a byte range of a file keeps
        what merging its ended requests needs (``core.extraction``)."""
        if forced_format is not None:
            family_by_name(forced_format)  # fail early on a bad --format
        self.store = store if store is not None else RequestStore()
        self.tokens = tokens if tokens is not None else TokenCounter()
        self.file_tokens = FileTokenizers(self.tokens)
        self.forced_format = forced_format
        self.files: list[FileState] = []
        self._merger = Merger(
            self.store,
            self.file_tokens,
            engine if engine is not None else EngineSeries(),
            observer,
            record_lifecycle,
        )
        self.version = 0
        self._frozen: FrozenExtractor | None = None

    # -- the aggregates (owned by the merger) ------------------------------------------

    #: The aggregates, owned by the merger.
    engine = _FromMerger[EngineSeries]("engine")
    expert_load = _FromMerger[HeatCounts]("expert_load")
    dropped = _FromMerger[HeatCounts]("dropped")
    head_skips = _FromMerger[HeatCounts]("head_skips")
    expert_by_model = _FromMerger[HeatByModel]("expert_by_model")
    dropped_by_model = _FromMerger[HeatByModel]("dropped_by_model")
    expert_dumps = _FromMerger[HeatCounts]("expert_dumps")
    dump_by_model = _FromMerger[HeatByModel]("dump_by_model")
    errors = _FromMerger[deque[ErrorPayload]]("errors")
    error_count = _FromMerger[int]("error_count")
    error_log = _FromMerger[ErrorLog]("error_log")

    # -- files -----------------------------------------------------------------------

    def add_file(self, path: str, format_name: str | None = None) -> int:
        """Start a file; ``format_name`` (else the Extractor's forced format) skips
        detection."""
        forced = format_name or self.forced_format
        state = FileState(path=path, forced_format=forced, reference_time=mtime_or_none(path))
        if forced is not None:
            state.family = family_by_name(forced)
            state.parser = state.family.new_parser(reference_time=state.reference_time)
        self.files.append(state)
        file = len(self.files) - 1
        self._merger.lineage.append(file)
        self._merger.sources.append(path)
        # The server's start-up line, read before any request of the file: its model's
        # tokenizer counts them all, in whichever byte range they are (core.tokens).
        startup = read_startup_meta(path)
        if startup is not None:
            state.meta.update(startup)
            self.file_tokens.choose(file, startup)
        return file

    def tokens_for(self, file: int) -> TokenCounter:
        """The tokenizer that counts the text of file ``file``."""
        return self.file_tokens.for_file(file)

    def note(self, file: int, message: str) -> None:
        """A source event worth showing (rotation, truncation...)."""
        self.files[file].events.append(message)
        self._changed(file)

    def new_incarnation(self, file: int, reason: str) -> int:
        """The path of ``file`` now holds another file (rotated, replaced, truncated).

        Closes the old one (its open tracebacks end, its counts stay as they are) and
        returns a new file index for what the path holds now, so stored line locations
        never point into the wrong file.
        """
        self.finish_file(file)
        self.supersede(file, reason)
        old = self.files[file]
        new = self.add_file(old.path)
        self.files[new].meta = {**old.meta, **self.files[new].meta}
        self.file_tokens.inherit(new, file)
        self._merger.lineage[new] = self._merger.lineage[file]
        return new

    def supersede(self, file: int, reason: str) -> None:
        """The lines of ``file`` no longer live at its path: never re-read them there."""
        state = self.files[file]
        if state.superseded is None:
            state.superseded = reason
            self._changed(file)

    def finish_file(self, file: int) -> None:
        state = self.files[file]
        if state.sniff_buffer:
            self._detect(state, final=True)
        if state.wrap_held and isinstance(state.parser, WrappedParser):
            self._run_joined(state, file, state.parser)  # the file ended inside it
        self.flush(file)
        self._changed(file)

    def flush(self, file: int) -> bool:
        """End what the file's parser holds open (a traceback), as at the end of the file;
        True if that gave events. More lines may follow (a live file that was only quiet)."""
        state = self.files[file]
        if state.parser is None:
            return False
        state.parser.finish()
        if not state.parser.pending:
            return False
        self._drain_pending(state, file)
        self._changed(file)
        return True

    # -- feeding ---------------------------------------------------------------------

    def feed(self, file: int, lines: Iterable[LineLike], first_line_no: int | None = None) -> None:
        """Account for and extract a batch of complete lines of one file."""
        state = self.files[file]
        if first_line_no is not None:
            state.lines_total = first_line_no - 1
        iterator: Iterator[LineLike] = iter(lines)
        if state.parser is None or state.provisional:
            iterator = self._sniff_then(state, iterator)
        self._run(state, file, iterator)
        self._changed(file)

    def feed_chunks(self, file: int, items: Iterable[Chunk | RawLine]) -> None:
        """``feed`` for a file read in big chunks of whole lines (sources._lines.iter_chunks):
        the batch commands' reader, which splits lines in C rather than one readline each."""
        state = self.files[file]
        for item in items:
            if not isinstance(item, Chunk):  # one huge line
                huge: Iterator[LineLike] = iter([item])
                if state.parser is None or state.provisional:
                    huge = self._sniff_then(state, huge)
                self._run(state, file, huge)
                continue
            if state.parser is None or state.provisional:
                self._sniff_chunk(state, item)
            server = None if state.family is None else state.family.scan_server
            if server is not None:
                run_chunk_server(self, state, file, item, server)
                continue
            scanner = None if state.family is None else state.family.scan_requests
            if scanner is not None:
                run_chunk_scanned(self, state, file, item, scanner)
                continue
            lines = split_chunk(item)
            for first in range(0, len(lines), BULK_BLOCK_LINES):
                # Without a confident family the fallback reads the lines; the next chunk
                # is sniffed again (until SNIFF_LINES lines were seen).
                self._run_block(state, file, lines[first : first + BULK_BLOCK_LINES])
        self._changed(file)

    def _sniff_chunk(self, state: FileState, chunk: Chunk) -> None:
        """Detect the format from a chunk's first lines (as ``_sniff_then`` does for lines),
        so that even the first chunk can take the native scanner."""
        data, start = chunk.data, 0
        while len(state.sniff_buffer) < SNIFF_LINES and start < len(data):
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            state.keep_for_sniffing(data[start : min(end, start + SNIFF_HEAD_BYTES)])
            start = end + 1
        self._detect(state, final=True)

    def _sniff_then(self, state: FileState, lines: Iterator[LineLike]) -> Iterator[LineLike]:
        """Hold lines until the format is known, then replay them."""
        held: list[LineLike] = []
        for line in lines:
            held.append(line)
            state.keep_for_sniffing(line.data)
            if len(state.sniff_buffer) >= SNIFF_LINES:
                break
        # Whatever is available now is enough to decide (a live file may grow slowly).
        self._detect(state, final=True)
        yield from held
        yield from lines

    def _detect(self, state: FileState, final: bool) -> None:
        """Give the file its family, or the fallback (``FALLBACK``) while no family
        is confident; a family that becomes confident later, within the first
        ``SNIFF_LINES`` lines (a live file still growing), takes over from the fallback."""
        if state.parser is not None and not state.provisional:
            return
        family = detect(state.sniff_buffer, path=state.path) if state.sniff_buffer else None
        if family is not None:
            fallback = state.parser
            state.family = family
            state.parser = family.new_parser(reference_time=state.reference_time)
            state.provisional = False
            state.sniff_buffer.clear()
            if fallback is not None:
                # What the fallback held open (a traceback) ends here; its events are
                # merged with the new parser's next ones.
                fallback.finish()
                state.parser.pending.extend(fallback.pending)
            return
        if state.parser is None:
            state.family = fallback_for(state.sniff_buffer)
            state.parser = state.family.new_parser(reference_time=state.reference_time)
            state.provisional = True
        if final and len(state.sniff_buffer) >= SNIFF_LINES:
            state.sniff_buffer.clear()  # give up re-sniffing: the fallback reads the rest
            state.provisional = False

    def _run(self, state: FileState, file: int, lines: Iterable[LineLike]) -> None:
        iterator = iter(lines)
        while True:
            block = list(islice(iterator, BULK_BLOCK_LINES))
            if not block:
                return
            self._run_block(state, file, block)

    def _run_block(self, state: FileState, file: int, block: Sequence[LineLike]) -> None:
        if isinstance(state.parser, WrappedParser):
            self._run_wrapped(state, file, block, state.parser)
            return
        decoder = None if state.family is None else state.family.decode_simple_block
        if decoder is None or not self._run_bulk(state, file, block, decoder):
            self._run_lines(state, file, block)

    def _run_bulk(
        self, state: FileState, file: int, block: Sequence[LineLike], decoder: BlockDecoder
    ) -> bool:
        """The family's block path for a block of simple request records: one batch,
        taken only when the store allows (``core.extraction``'s applier)."""
        if len(block) < BULK_MIN_LINES or any(map(_TRUNCATED, block)):
            return False
        try:
            batch = decoder([line.data for line in block])
            return batch is not None and apply_batch(
                Target(self._merger, state, file, 0),
                replace(
                    batch,
                    offsets=[line.offset for line in block],
                    lengths=[line.length for line in block],
                ),
            )
        except Exception:  # nothing was applied (the applier): the lines go one by one
            return False

    def _run_wrapped(
        self, state: FileState, file: int, block: Sequence[LineLike], wrapped: WrappedParser
    ) -> None:
        """Lines of a wrapped file (formats/_wrapped.py): each physical line unwrapped once,
        the inner parser fed what the server wrote, at the physical line's place. Entries
        the wrapper split (Docker, over 16 KiB) are held until their last one, then read as
        one record over all their lines."""
        run: list[LineLike] = []
        for line in block:
            if line.truncated:  # its wrapper is cut: read as it is
                data, complete, piece = line.data, True, None
            else:
                data, complete, piece = wrapped.unwrapped(line.data)
            if state.wrap_held or not complete:
                if run:
                    self._run_lines(state, file, run, wrapped.inner)
                    run = []
                state.wrap_held.append((line, piece))
                if complete:
                    self._run_joined(state, file, wrapped)
                continue
            run.append(RawLine(line.offset, line.length, data, line.truncated))
        if run:
            self._run_lines(state, file, run, wrapped.inner)

    def _run_joined(self, state: FileState, file: int, wrapped: WrappedParser) -> None:
        """One record over the held physical lines (its last one came, or the file ended
        inside it): read once, located over its whole span (the detail view re-reads it
        so), and every one of its lines counted as the record's kind."""
        pieces = state.wrap_held
        first, last = pieces[0][0], pieces[-1][0]
        span = last.offset + last.length - first.offset
        data = wrapped.joined([(line.data, piece) for line, piece in pieces])
        kind = self._run_lines(
            state, file, [RawLine(first.offset, span, data, False)], wrapped.inner
        )
        more = len(pieces) - 1
        state.by_kind[kind] = state.by_kind.get(kind, 0) + more
        state.lines_total += more
        state.wrap_held = []

    def _run_lines(
        self,
        state: FileState,
        file: int,
        lines: Iterable[LineLike],
        parser: LineParser | None = None,
    ) -> str:
        """Parse, count and merge lines one by one; returns the last line's kind.
        ``parser``: the parser to feed (default: the file's)."""
        by_kind = state.by_kind
        line_no = state.lines_total
        on_event = self._merger.on_event
        meta = state.meta
        unparsed = LineKind.UNPARSED
        kind = unparsed
        if parser is None:
            parser = state.parser
        for line in lines:
            line_no += 1
            if parser is None:
                parser = state.parser  # detection happened inside the sniffing generator
            if parser is None:
                kind = unparsed
                reason = "format not recognised (no format family matched this file)"
            else:
                # One line that makes a parser or the merge raise costs that line only: it
                # is counted unparsed, with the exception as its reason, and reading goes
                # on. (A try costs nothing in CPython 3.11 while nothing raises.)
                try:
                    kind, event = parser.parse(line.data)
                except Exception as exc:
                    kind, event = unparsed, None
                    reason = failure_reason("parser error", exc)
                else:
                    reason = parser.last_reason if kind == unparsed else ""
                if event is not None:
                    try:
                        on_event(event, file, meta, line.offset, line.length, line_no)
                    except Exception as exc:  # the merge changed nothing (core.extraction)
                        kind, reason = unparsed, failure_reason("not merged", exc)
            by_kind[kind] = by_kind.get(kind, 0) + 1
            if kind == unparsed:
                self._diagnose(state, line, line_no, reason)
            if parser is not None and parser.pending:
                state.lines_total = line_no
                self._drain_pending(state, file)
        state.lines_total = line_no
        return kind

    def _diagnose(self, state: FileState, line: LineLike, line_no: int, reason: str) -> None:
        preview = line.data[: PREVIEW_CHARS * 4].decode("utf-8", errors="replace")
        if len(preview) > PREVIEW_CHARS:
            preview = preview[:PREVIEW_CHARS] + "…"
        if line.truncated:
            reason = f"{reason} (line of {line.length:,} bytes, truncated when read)"
        state.diagnostics.append(Diagnostic(line_no, line.offset, reason, preview))

    def _drain_pending(self, state: FileState, file: int) -> None:
        """Merge the events the parser completed (a traceback that ended...). One that
        cannot be merged is dropped with a diagnostic at the line that completed it (that
        line keeps its own kind: it was read)."""
        parser = state.parser
        if parser is None:
            return
        pending, parser.pending = parser.pending, []
        for event in pending:
            try:
                self._merger.on_event(event, file, state.meta, -1, 0, state.lines_total)
            except Exception as exc:
                reason = failure_reason(f"{event[0]} event completed here not merged", exc)
                state.diagnostics.append(Diagnostic(state.lines_total, -1, reason, ""))

    def _changed(self, file: int) -> None:
        self.files[file].revision += 1
        self.version += 1

    # -- readers on other threads ----------------------------------------------------

    def freeze(self) -> FrozenExtractor:
        """An immutable copy of everything read so far, for readers on other threads
        (``core.store``). Writer thread only; cheap when little changed since the last
        call: what did not change is shared with the previous copy."""
        self._frozen = freeze_extractor(self)
        return self._frozen

    # -- a file read in byte ranges ----------------------------------------------------

    def export_part(self, file: int) -> ExtractorPart:
        """What this Extractor read of ``file`` (one byte range of a bigger file, in a
        worker process), to be merged by ``merge_part`` in the reading process."""
        return export_part(self, file)

    def merge_part(
        self, file: int, part: ExtractorPart, renames: Mapping[str, str] | None = None
    ) -> None:
        """Append the next byte range of ``file`` as if its lines had been fed here: counts
        add, line numbers shift, rows merge by id (a known value wins), aggregates add, and
        the engine series is extended exactly when the part recorded what that needs."""
        merge_part(self, file, part, renames)

    def meta(self) -> MetaPayload:
        return merged_meta(self.files)
