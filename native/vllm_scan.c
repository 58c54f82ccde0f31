/*
 * sparseety_tui._vllmscan: the common lines of a vLLM server log, read in C.
 *
 * A busy vLLM log is almost all ``Received request`` / ``Added request`` lines and
 * uvicorn access lines. VllmParser (formats/vllm/_parser.py) reads them on its fast paths
 * (``_fast_request``, ``_fast_access``); this module reads the same lines, from an offset
 * in a chunk of whole lines, for as long as each line is one it is sure of, and returns
 * what they say as columns. It stops at the first line that is anything else (a stats
 * line, a traceback, a prompt with escapes, an id list that is not a plain list, an
 * unusual value in SamplingParams, a 5xx access line, ``\r`` or ``\x1b``, an over-long
 * line ...) and says where, so the caller gives that line to the parser: this module
 * never decides what an odd line means. Asked to (``carry``), it records a line it does
 * not read but that starts as an INFO or WARNING line of a server would ('I', 'W', '(')
 * as K_OTHER and goes on: the caller has the parser read it at its place, and ends the
 * run there if that line needs to (formats/vllm/_native.py). For each Added line it also
 * says which Received line of the scan, if any, had the same id last (``refs``), so that
 * the caller needs no per-line lookups. The parser's state (year clock, recent ids) and
 * the store are updated in Python (formats/vllm/_native.py, core/vllm_bulk.py);
 * tests/unit/test_native_vllm.py holds the two paths equal.
 *
 * Every check works on explicit [begin, end) ranges of the data: no byte is read past a
 * line's end, and every byte value is handled (anything unexpected is a stop).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "scan_args.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { K_RECEIVED = 0, K_ADDED = 1, K_ACCESS = 2, K_OTHER = 3, K_STOP = -1 };
/* Why a scan ended (the line at ``end`` is not read unless STOP_END). */
enum { STOP_END = 0, STOP_ODD = 1, STOP_FULL = 2 };

typedef unsigned char uchar;

typedef struct {
    Py_ssize_t id_begin, id_end;     /* the request id (absolute offsets) */
    Py_ssize_t stamp;                /* "MM-DD HH:MM:SS" start */
    Py_ssize_t prompt_begin, prompt_end; /* inside the quotes; -1 when no prompt */
    int32_t prompt_tokens, max_tokens, n;
    double temperature, top_p;
    const uchar *list_begin, *list_end; /* the prompt_token_ids list, brackets included */
} line_info;

/* -- small helpers on [p, end) ranges ------------------------------------------------- */

/* The first ``needle`` in [p, end): memchr for its byte at ``anchor`` (chosen to be rare
 * in a vLLM line, so that few candidates need a memcmp), then a compare. */
static const uchar *find_bytes(const uchar *p, const uchar *end, const char *needle,
                               size_t len, size_t anchor) {
    if (p >= end || (size_t)(end - p) < len) return NULL;
    const uchar *q = p + anchor;
    const uchar *last = end - (len - anchor); /* the last place its anchor can be */
    while (q <= last) {
        const uchar *a = memchr(q, (uchar)needle[anchor], (size_t)(last - q) + 1);
        if (a == NULL) return NULL;
        if (memcmp(a - anchor, needle, len) == 0) return a - anchor;
        q = a + 1;
    }
    return NULL;
}

static int starts(const uchar *p, const uchar *end, const char *prefix, size_t len) {
    return p <= end && (size_t)(end - p) >= len && memcmp(p, prefix, len) == 0;
}

#define STARTS(p, end, lit) starts((p), (end), (lit), sizeof(lit) - 1)
#define FIND(p, end, lit, anchor) find_bytes((p), (end), (lit), sizeof(lit) - 1, (anchor))

static int is_digit(uchar c) { return c >= '0' && c <= '9'; }

/* Python's bytes regex \s: [ \t\n\r\f\v]. */
static int is_space(uchar c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* A printable ASCII byte that is not a space: every byte of an id we take. */
static int is_graph(uchar c) { return c > 0x20 && c < 0x7f; }

/* Bytes of an id as the per-byte loops take them, by table (an id is hex and dashes: the
 * branches of a range test each byte mispredicted, and the Added id's loop was 40 % of
 * the scan's own time). ``WORD_OR_DASH``: [A-Za-z0-9_-]; ``GRAPH``: is_graph. */
static uchar WORD_OR_DASH[256], GRAPH[256];

/* ``(<name> pid=<digits>) `` as FAST_REQUEST_RE / _FAST_PROC_RE take it: the name 1-120
 * bytes without ( ) \r \n, 1-10 digits; the prefix ends at the first ')'. Returns the
 * position after the space, or NULL. */
static const uchar *proc_prefix(const uchar *p, const uchar *end) {
    if (p >= end || *p != '(') return NULL;
    const uchar *limit = p + 1 + 120 + 5 + 10 + 1;
    if (limit > end) limit = end;
    const uchar *close = memchr(p + 1, ')', (size_t)(limit - (p + 1)));
    if (close == NULL || close + 1 >= end || close[1] != ' ') return NULL;
    const uchar *d = close;
    while (d > p + 1 && is_digit(d[-1])) d--;
    Py_ssize_t digits = close - d;
    if (digits < 1 || digits > 10) return NULL;
    if (d - (p + 1) < 5 || memcmp(d - 5, " pid=", 5) != 0) return NULL;
    const uchar *name_end = d - 5;
    Py_ssize_t name_len = name_end - (p + 1);
    if (name_len < 1 || name_len > 120) return NULL;
    for (const uchar *q = p + 1; q < name_end; q++)
        if (*q == '(' || *q == ')' || *q == '\r' || *q == '\n') return NULL;
    return close + 2;
}

/* ``MM-DD HH:MM:SS`` with a month and day the year clock accepts (else its ts is None:
 * the parser's own path gives that). */
static int stamp_ok(const uchar *s, const uchar *end) {
    if (end - s < 14) return 0;
    static const char shape[] = "00-00 00:00:00";
    for (int i = 0; i < 14; i++) {
        if (shape[i] == '0') {
            if (!is_digit(s[i])) return 0;
        } else if (s[i] != (uchar)shape[i]) {
            return 0;
        }
    }
    int month = (s[0] - '0') * 10 + (s[1] - '0');
    int day = (s[3] - '0') * 10 + (s[4] - '0');
    return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

/* -- SamplingParams values (formats/vllm/_sampling.py ``_value``, numbers.count/real) --- */

#define VALUE_BYTES 32
#define COUNT_MAX 2147483647LL
#define FLOAT32_MAX 3.4028234663852886e38

/* The text of the value at ``at``: up to the first ',' within VALUE_BYTES, else the first
 * ')' within them, else empty. */
static void value_text(const uchar *at, const uchar *end, const uchar **vb, const uchar **ve) {
    const uchar *limit = at + VALUE_BYTES < end ? at + VALUE_BYTES : end;
    const uchar *stop = NULL;
    if (at < limit) {
        stop = memchr(at, ',', (size_t)(limit - at));
        if (stop == NULL) stop = memchr(at, ')', (size_t)(limit - at));
    }
    *vb = at;
    *ve = stop != NULL ? stop : at;
}

/* numbers.count then merge._count_or_unknown: -1 unknown. Never a stop. */
static int32_t count_value(const uchar *at, const uchar *end) {
    const uchar *b, *e;
    value_text(at, end, &b, &e);
    Py_ssize_t len = e - b;
    if (len < 1 || len > 18) return -1;
    long long v = 0;
    for (const uchar *q = b; q < e; q++) {
        if (!is_digit(*q)) return -1;
        v = v * 10 + (*q - '0');
    }
    return v <= COUNT_MAX ? (int32_t)v : -1;
}

/* numbers.real then merge._duration_or_nan. Returns 0 for a text this module does not
 * read exactly the way float() does (the line is left to Python). */
static int real_value(const uchar *at, const uchar *end, double *out) {
    const uchar *b, *e;
    value_text(at, end, &b, &e);
    Py_ssize_t len = e - b;
    if (len == 0 || (len == 4 && memcmp(b, "None", 4) == 0)) {
        *out = Py_NAN; /* float() refuses both: unknown */
        return 1;
    }
    /* [+-]?digits(.digits)?: float() and strtod agree (both round correctly). */
    const uchar *q = b;
    if (*q == '+' || *q == '-') q++;
    const uchar *digits = q;
    while (q < e && is_digit(*q)) q++;
    if (q == digits) return 0;
    if (q < e && *q == '.') {
        const uchar *frac = ++q;
        while (q < e && is_digit(*q)) q++;
        if (q == frac) return 0;
    }
    if (q != e) return 0;
    char buf[VALUE_BYTES + 1];
    memcpy(buf, b, (size_t)len);
    buf[len] = '\0';
    double v = strtod(buf, NULL);
    *out = (v >= 0.0 && v <= FLOAT32_MAX) ? v : Py_NAN;
    return 1;
}

/* -- the lines --------------------------------------------------------------------- */

/* Classes of the bytes of an id list: digits, ", " and anything else. */
enum { C_SPACE = 0, C_DIGIT = 1, C_COMMA = 2, C_OTHER = 4 };
static uchar ID_LIST_CLASS[256];

static void init_classes(void) {
    for (int c = 0; c < 256; c++) {
        WORD_OR_DASH[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          is_digit((uchar)c) || c == '_' || c == '-';
        GRAPH[c] = is_graph((uchar)c);
    }
    for (int c = 0; c < 256; c++) ID_LIST_CLASS[c] = C_OTHER;
    for (int c = '0'; c <= '9'; c++) ID_LIST_CLASS[c] = C_DIGIT;
    ID_LIST_CLASS[','] = C_COMMA;
    ID_LIST_CLASS[' '] = C_SPACE;
}

/* Text that sends a request line down the parser's general path (``_fast_request``):
 * searched in [p, end). */
static int refused_text(const uchar *p, const uchar *end) {
    return FIND(p, end, "Avg prompt throughput", 0) != NULL || FIND(p, end, "Traceback", 0) != NULL ||
           FIND(p, end, "File \"", 0) != NULL;
}

/* The body of a Received line (requests.py ``_received``), from ``b`` to ``end``. */
static int received_body(const uchar *data, const uchar *b, const uchar *end, line_info *info) {
    const uchar *pos = b;
    info->prompt_begin = info->prompt_end = -1;
    if (STARTS(b, end, "prompt: ")) {
        const uchar *q = b + 8;
        if (q >= end || (*q != '\'' && *q != '"')) return 0;
        const uchar *close = memchr(q + 1, *q, (size_t)(end - (q + 1)));
        if (close == NULL || memchr(q + 1, '\\', (size_t)(close - (q + 1))) != NULL) return 0;
        info->prompt_begin = q + 1 - data;
        info->prompt_end = close - data;
        pos = close + 1;
    }
    /* SamplingParams (sampling.py): only the fast shape; the rest is pylit's (Python). */
    info->max_tokens = info->n = -1;
    info->temperature = info->top_p = Py_NAN;
    const uchar *open = FIND(pos, end, "SamplingParams(", 0);
    if (open != NULL) {
        const uchar *start = open + 15;
        const uchar *at = FIND(start, end, ", max_tokens=", 4);
        if (at == NULL || memchr(start, '\'', (size_t)(at - start)) != NULL ||
            memchr(start, '"', (size_t)(at - start)) != NULL)
            return 0;
        if (STARTS(start, end, "n=")) info->n = count_value(start + 2, end);
        const uchar *t = FIND(start, at, ", temperature=", 10);
        if (t != NULL) {
            t += 14;
            if (!real_value(t, end, &info->temperature)) return 0;
            const uchar *p = FIND(t, at, ", top_p=", 3);
            if (p != NULL && !real_value(p + 8, end, &info->top_p)) return 0;
        }
        info->max_tokens = count_value(at + 13, end);
    }
    /* prompt_token_ids (requests.py _find_key, _id_list): a plain list, counted. */
    const uchar *key = FIND(pos, end, "prompt_token_ids: ", 16);
    if (key == NULL) key = FIND(pos, end, "prompt token ids: ", 16);
    if (key == NULL) return 0; /* its count would need the tokenizer: Python's */
    const uchar *list = key + 18;
    if (list >= end || *list != '[') return 0;
    const uchar *close = memchr(list, ']', (size_t)(end - list));
    if (close == NULL) return 0;
    /* The list is most of a Received line: sixteen bytes a step where SSE2 is there
     * (x86-64 always), then one table look-up a byte, no branch. */
    long long commas = 0;
    unsigned seen = 0;
    const uchar *q = list + 1;
#ifdef __SSE2__
    {
        const __m128i comma = _mm_set1_epi8(','), space = _mm_set1_epi8(' ');
        const __m128i below0 = _mm_set1_epi8('0' - 1), above9 = _mm_set1_epi8('9' + 1);
        /* Commas counted per byte lane (a compare is -1), folded into ``commas`` with
         * one SAD before a lane can reach 255: no popcount, which without -mpopcnt is a
         * libgcc call per step. */
        __m128i lanes = _mm_setzero_si128(), digits = _mm_setzero_si128();
        int steps = 0;
        for (; close - q >= 16; q += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)q);
            __m128i is_comma = _mm_cmpeq_epi8(v, comma);
            /* (signed compares: a byte >= 0x80 is negative, so never a digit) */
            __m128i is_digit = _mm_and_si128(_mm_cmpgt_epi8(v, below0), _mm_cmplt_epi8(v, above9));
            __m128i known = _mm_or_si128(_mm_or_si128(is_comma, is_digit), _mm_cmpeq_epi8(v, space));
            if (_mm_movemask_epi8(known) != 0xFFFF) return 0; /* C_OTHER */
            lanes = _mm_sub_epi8(lanes, is_comma);
            digits = _mm_or_si128(digits, is_digit);
            if (++steps == 255) {
                __m128i sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
                commas += _mm_cvtsi128_si32(sums) + _mm_extract_epi16(sums, 4);
                lanes = _mm_setzero_si128();
                steps = 0;
            }
        }
        __m128i sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
        commas += _mm_cvtsi128_si32(sums) + _mm_extract_epi16(sums, 4);
        if (commas) seen |= C_COMMA;
        if (_mm_movemask_epi8(digits)) seen |= C_DIGIT;
    }
#endif
    for (; q < close; q++) {
        uchar c = ID_LIST_CLASS[*q];
        commas += c == C_COMMA;
        seen |= c;
    }
    if (seen & C_OTHER) return 0;
    long long count = (seen & (C_COMMA | C_DIGIT)) ? commas + 1 : 0;
    if (count > COUNT_MAX) return 0;
    info->prompt_tokens = (int32_t)count;
    info->list_begin = list;
    info->list_end = close + 1;
    return 1;
}

/* A uvicorn access line after its prefix (parser.py ``_fast_access``, clean.ACCESS_RE),
 * non-5xx, in the one shape read here. */
static int access_rest(const uchar *r, const uchar *end) {
    if (!STARTS(r, end, "INFO:     ") || end[-1] == ']') return 0;
    if (FIND(r, end, "Traceback", 0) != NULL || FIND(r, end, "File \"", 0) != NULL) return 0;
    const uchar *p = r + 10;
    while (p < end && *p == ' ') p++;
    const uchar *client = p;
    while (p < end && is_graph(*p) && *p != '"') p++;
    if (p == client || !STARTS(p, end, " - \"")) return 0;
    p += 4;
    const uchar *method = p;
    while (p < end && *p >= 'A' && *p <= 'Z') p++;
    if (p == method || p >= end || *p != ' ') return 0;
    const uchar *path = ++p;
    while (p < end && is_graph(*p) && *p != '"') p++;
    if (p == path || !STARTS(p, end, " HTTP/")) return 0;
    p += 6;
    const uchar *version = p;
    while (p < end && (is_digit(*p) || *p == '.')) p++;
    if (p == version || p >= end || *p != '"') return 0;
    p++;
    if (p == end) return 1; /* no status */
    if (end - p < 4 || p[0] != ' ' || !is_digit(p[1]) || !is_digit(p[2]) || !is_digit(p[3]))
        return 0;
    if (p + 4 < end && p[4] != ' ') return 0;
    return p[1] != '5'; /* a 5xx is an error event: Python's */
}

/* The kind of the line [s, end), filling ``info`` for request lines; K_STOP if it is not
 * one this module reads. */
static int read_line(const uchar *data, const uchar *s, const uchar *end, line_info *info) {
    if (s >= end || (*s != 'I' && *s != '(')) return K_STOP;
    if (memchr(s, '\r', (size_t)(end - s)) != NULL || memchr(s, 0x1b, (size_t)(end - s)))
        return K_STOP;
    const uchar *r = s;
    if (*s == '(') {
        r = proc_prefix(s, end);
        if (r == NULL) return K_STOP;
    }
    if (STARTS(r, end, "INFO:")) return access_rest(r, end) ? K_ACCESS : K_STOP;
    if (!STARTS(r, end, "INFO ") || !stamp_ok(r + 5, end)) return K_STOP;
    info->stamp = r + 5 - data;
    const uchar *p = r + 19;
    if (!STARTS(p, end, " [")) return K_STOP;
    p += 2;
    const uchar *file = p;
    while (p < end && !is_space(*p) && *p != '[' && *p != ']' && *p != ':') p++;
    if (p == file || p - file > 300 || p >= end || *p != ':') return K_STOP;
    const uchar *lineno = ++p;
    while (p < end && is_digit(*p)) p++;
    if (p == lineno || !STARTS(p, end, "] ")) return K_STOP;
    const uchar *msg = p + 2;
    if (STARTS(msg, end, "Received request ")) {
        const uchar *id = msg + 17;
        const uchar *q = id;
        while (q < end && GRAPH[*q]) q++;
        if (q < end && !is_space(*q)) return K_STOP; /* non-ASCII ids: Python's */
        /* (\S+): takes the whole run but its last ':', which a space must follow */
        if (q - id < 2 || q[-1] != ':' || q >= end || *q != ' ') return K_STOP;
        info->id_begin = id - data;
        info->id_end = q - 1 - data;
        if (!received_body(data, q + 1, end, info)) return K_STOP;
        /* None of the refused texts can overlap the id list (digits, commas and spaces
         * between brackets, none of which they hold), so only the rest is searched. */
        if (refused_text(msg, info->list_begin) || refused_text(info->list_end, end))
            return K_STOP;
        return K_RECEIVED;
    }
    if (STARTS(msg, end, "Added request ")) {
        const uchar *id = msg + 14;
        const uchar *q = id;
        while (q < end && WORD_OR_DASH[*q]) q++;
        if (q == id || q + 1 != end || *q != '.' || refused_text(msg, end)) return K_STOP;
        info->id_begin = id - data;
        info->id_end = q - data;
        return K_ADDED;
    }
    return K_STOP;
}

/* Whether a line this module does not read is one to carry (``carry``): an INFO or
 * WARNING line of a server ('I', 'W', '(': a stats line, a 5xx access line, a warning)
 * that names no request, or only ends one ("Aborted request", "Finished request"). Any
 * other line naming a request (a Received line read otherwise) would end the caller's
 * run anyway (its event makes or changes a row), and everything scanned after it would
 * be scanned again; here the scan stops at it instead. Only a guess of what the caller
 * will do: the parser decides (formats/vllm/_native.py). */
static int carried(const uchar *s, const uchar *e) {
    if (s >= e || (*s != 'I' && *s != 'W' && *s != '(')) return 0;
    if (FIND(s, e, "equest", 0) == NULL) return 1; /* " request", "Request " */
    return FIND(s, e, "Aborted request", 0) != NULL || FIND(s, e, "Finished request", 0) != NULL;
}

/* -- the scan ---------------------------------------------------------------------- */

typedef struct {
    Py_ssize_t cap;
    uint8_t *kinds;
    int64_t *offsets;
    uint32_t *lengths;
    int32_t *seg_starts; /* request-line index where each run of one stamp starts */
    int64_t *seg_stamps; /* and the offset of its stamp */
    int32_t *ints;       /* [prompt_tokens, max_tokens, n][cap] per Received line */
    double *floats;      /* [temperature, top_p][cap] */
    int64_t *spans;      /* [prompt begin, prompt end][cap] */
    int64_t *id_begin;   /* per request line: its id's [begin, end) in the data */
    int64_t *id_end;
    int32_t *refs;       /* per request line: see ``added_refs`` */
    uint8_t *req_kinds;  /* per request line: K_RECEIVED or K_ADDED */
} buffers;

static void free_buffers(buffers *b) {
    free(b->kinds);
    free(b->offsets);
    free(b->lengths);
    free(b->seg_starts);
    free(b->seg_stamps);
    free(b->ints);
    free(b->floats);
    free(b->spans);
    free(b->id_begin);
    free(b->id_end);
    free(b->refs);
    free(b->req_kinds);
    memset(b, 0, sizeof(*b)); /* (freed again after a failed grow_buffers: a no-op) */
}

static int alloc_buffers(buffers *b, Py_ssize_t cap) {
    memset(b, 0, sizeof(*b));
    b->cap = cap;
    size_t n = (size_t)cap;
    b->kinds = malloc(n);
    b->offsets = malloc(n * sizeof(int64_t));
    b->lengths = malloc(n * sizeof(uint32_t));
    b->seg_starts = malloc(n * sizeof(int32_t));
    b->seg_stamps = malloc(n * sizeof(int64_t));
    b->ints = malloc(3 * n * sizeof(int32_t));
    b->floats = malloc(2 * n * sizeof(double));
    b->spans = malloc(2 * n * sizeof(int64_t));
    b->id_begin = malloc(n * sizeof(int64_t));
    b->id_end = malloc(n * sizeof(int64_t));
    b->refs = malloc(n * sizeof(int32_t));
    b->req_kinds = malloc(n);
    if (!b->kinds || !b->offsets || !b->lengths || !b->seg_starts || !b->ints || !b->floats ||
        !b->spans || !b->seg_stamps || !b->id_begin || !b->id_end || !b->refs || !b->req_kinds) {
        free_buffers(b);
        return 0;
    }
    return 1;
}

/* ``b`` with room for ``cap`` lines, what it holds kept (the per-Received blocks move to
 * their new strides). 0 when out of memory: ``b`` is then freed. */
static int grow_buffers(buffers *b, Py_ssize_t cap) {
    buffers g;
    if (!alloc_buffers(&g, cap)) {
        free_buffers(b);
        return 0;
    }
    size_t old = (size_t)b->cap, n = (size_t)cap;
    memcpy(g.kinds, b->kinds, old);
    memcpy(g.offsets, b->offsets, old * sizeof(int64_t));
    memcpy(g.lengths, b->lengths, old * sizeof(uint32_t));
    memcpy(g.seg_starts, b->seg_starts, old * sizeof(int32_t));
    memcpy(g.seg_stamps, b->seg_stamps, old * sizeof(int64_t));
    memcpy(g.id_begin, b->id_begin, old * sizeof(int64_t));
    memcpy(g.id_end, b->id_end, old * sizeof(int64_t));
    memcpy(g.req_kinds, b->req_kinds, old);
    for (size_t j = 0; j < 3; j++)
        memcpy(g.ints + j * n, b->ints + j * old, old * sizeof(int32_t));
    for (size_t j = 0; j < 2; j++) {
        memcpy(g.floats + j * n, b->floats + j * old, old * sizeof(double));
        memcpy(g.spans + j * n, b->spans + j * old, old * sizeof(int64_t));
    }
    free_buffers(b);
    *b = g;
    return 1;
}

#define BYTES(ptr, count) PyBytes_FromStringAndSize((const char *)(ptr), (Py_ssize_t)(count))

/* A hash of an id's bytes for added_refs' table, eight bytes a step (ids are ~40 bytes
 * of hex: a byte a step was a tenth of the scan). Equal ids are told apart by memcmp. */
static uint64_t id_hash(const uchar *p, int64_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)len;
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    for (; i < len; i++) h = (h ^ p[i]) * 0x100000001B3ULL;
    return h ^ (h >> 29);
}

/* refs[r] for each of the ``requests`` request lines: for an Added line, the index
 * (among the scan's Received lines, in order) of the last Received line before it with
 * the same id bytes, else -1; -1 for a Received line. A table of 2^k >= 2 * received
 * slots (so a probe always ends at an empty one), each 0 or a Received index + 1.
 * Returns 0 when out of memory. */
static int added_refs(const uchar *data, const buffers *b, Py_ssize_t requests,
                      Py_ssize_t received) {
    size_t cap = 2;
    while (cap < 2 * (size_t)received + 2) cap <<= 1;
    int32_t *slots = calloc(cap, sizeof(int32_t));
    int32_t *row_of = malloc(((size_t)received + 1) * sizeof(int32_t)); /* -> request line */
    if (slots == NULL || row_of == NULL) {
        free(slots);
        free(row_of);
        return 0;
    }
    Py_ssize_t seen = 0;
    for (Py_ssize_t r = 0; r < requests; r++) {
        const uchar *id = data + b->id_begin[r];
        int64_t len = b->id_end[r] - b->id_begin[r];
        size_t at = (size_t)id_hash(id, len) & (cap - 1);
        b->refs[r] = -1;
        for (;;) {
            int32_t slot = slots[at];
            if (slot == 0) break;
            Py_ssize_t other = row_of[slot - 1];
            if (b->id_end[other] - b->id_begin[other] == len &&
                memcmp(data + b->id_begin[other], id, (size_t)len) == 0)
                break;
            at = (at + 1) & (cap - 1);
        }
        if (b->req_kinds[r] == K_RECEIVED) {
            row_of[seen] = (int32_t)r;
            slots[at] = (int32_t)(++seen); /* the latest Received line of this id */
        } else if (slots[at] != 0) {
            b->refs[r] = slots[at] - 1;
        }
    }
    free(slots);
    free(row_of);
    return 1;
}

PyDoc_STRVAR(scan_vllm_doc,
"scan_vllm(data, start, max_lines, max_line_bytes, carry=0) -> (n, end, reason, next_end,\n"
"kinds, offsets, lengths, ids, seg_starts, seg_stamps, ints, floats, spans, refs,\n"
"received_ids, received_blob, received_ends, received_hashes)\n\n"
"Reads the lines of ``data`` (whole lines) from ``start`` while each is a Received,\n"
"Added or non-5xx access line of the fast shapes (or, with ``carry``, any other line of\n"
"at most ``max_line_bytes`` whose first byte is 'I', 'W' or '(', recorded as kind 3 and\n"
"not read, unless it names a request); at most ``max_lines``. n lines in [start, end); next_end: end of the line at\n"
"``end`` (ending included), ``end`` when reason is STOP_END or STOP_FULL. kinds: uint8\n"
"per line (0 Received, 1 Added, 2 access, 3 other); offsets int64 / lengths uint32 per\n"
"line (relative to data; the newline counted); ids: one str per request line;\n"
"seg_starts int32 / seg_stamps bytes: the runs of request lines with one stamp; per\n"
"Received line, ints int32 [prompt_tokens, max_tokens, n], floats float64 [temperature,\n"
"top_p] (NaN unknown), spans int64 [prompt begin, end] (-1: none), each block of k\n"
"values; refs int32 per request line: for an Added line the index among the Received\n"
"lines of the last one before it with the same id, else -1. received_ids: the Received\n"
"lines' ids (str, as in ids); received_blob: their bytes end to end, received_ends int64\n"
"the end of each in it, received_hashes int64 each str's hash().");

/* Lines the buffers have room for at first (``grow_buffers`` then doubles them). */
#define FIRST_CAP 4096

/* Where one scan ended, and how much it holds (``buffers``). */
typedef struct {
    Py_ssize_t n, end, next_end, requests, received, segs;
    int reason;
} scan_state;

/* The lines of [data, data + len) from ``start`` into ``buf`` (``max_lines`` at most;
 * ``buf`` grows as they come): plain C, no Python object made or touched, so it runs
 * without the GIL (the live tail's screen thread draws while its ingest thread scans).
 * 0: out of memory. */
static int scan_lines(const uchar *data, Py_ssize_t len, Py_ssize_t start,
                      Py_ssize_t max_line_bytes, Py_ssize_t max_lines, int carry, buffers *buf,
                      scan_state *st) {
    const uchar *data_end = data + len;
    Py_ssize_t pos = start, n = 0, requests = 0, received = 0, segs = 0;
    Py_ssize_t last_stamp = -1;
    int reason = STOP_END;
    Py_ssize_t next_end = pos;
    while (pos < len) {
        if (n >= max_lines) {
            reason = STOP_FULL;
            next_end = pos;
            break;
        }
        if (n >= buf->cap && !grow_buffers(buf, buf->cap * 2 < max_lines ? buf->cap * 2 : max_lines))
            return 0;
        const uchar *s = data + pos;
        const uchar *nl = memchr(s, '\n', (size_t)(data_end - s));
        const uchar *e = nl != NULL ? nl : data_end;
        Py_ssize_t line_end = (nl != NULL ? nl + 1 : data_end) - data;
        line_info info;
        int too_long = (e - s) > max_line_bytes;
        int kind = too_long ? K_STOP : read_line(data, s, e, &info);
        if (kind == K_STOP && carry && !too_long && carried(s, e)) kind = K_OTHER;
        if (kind == K_STOP) {
            reason = STOP_ODD;
            next_end = line_end;
            break;
        }
        if (kind == K_RECEIVED || kind == K_ADDED) {
            buf->req_kinds[requests] = (uint8_t)kind;
            buf->id_begin[requests] = info.id_begin;
            buf->id_end[requests] = info.id_end;
            if (last_stamp < 0 || memcmp(data + last_stamp, data + info.stamp, 14) != 0) {
                buf->seg_stamps[segs] = info.stamp;
                buf->seg_starts[segs++] = (int32_t)requests;
                last_stamp = info.stamp;
            }
            if (kind == K_RECEIVED) {
                buf->ints[received] = info.prompt_tokens;
                buf->ints[buf->cap + received] = info.max_tokens;
                buf->ints[2 * buf->cap + received] = info.n;
                buf->floats[received] = info.temperature;
                buf->floats[buf->cap + received] = info.top_p;
                buf->spans[received] = info.prompt_begin;
                buf->spans[buf->cap + received] = info.prompt_end;
                received++;
            }
            requests++;
        }
        buf->kinds[n] = (uint8_t)kind;
        buf->offsets[n] = pos;
        buf->lengths[n] = (uint32_t)(line_end - pos);
        n++;
        pos = line_end;
        next_end = pos;
    }
    st->n = n;
    st->end = pos;
    st->next_end = next_end;
    st->reason = reason;
    st->requests = requests;
    st->received = received;
    st->segs = segs;
    return added_refs(data, buf, requests, received);
}

/* The Python tuple of one scan (the GIL held); NULL with an exception set. */
static PyObject *scan_result(const uchar *data, const buffers *b, const scan_state *st) {
    PyObject *result = NULL;
    PyObject *ids = PyList_New(st->requests);
    PyObject *stamps = PyList_New(st->segs);
    Py_ssize_t k = st->received, cap = b->cap;
    /* The per-Received blocks, each k long (copied out of the cap-wide ones). */
    int32_t *ints = malloc((size_t)(3 * k + 1) * sizeof(int32_t));
    double *floats = malloc((size_t)(2 * k + 1) * sizeof(double));
    int64_t *spans = malloc((size_t)(2 * k + 1) * sizeof(int64_t));
    Py_ssize_t *received_at = malloc((size_t)(k + 1) * sizeof(Py_ssize_t)); /* -> request */
    /* The Received ids as the store's id table takes them (core/store/ EncodedIds):
     * their bytes end to end, the end of each, and each str's own hash. */
    PyObject *received = PyList_New(k);
    int64_t *ends = malloc((size_t)(k + 1) * sizeof(int64_t));
    int64_t *hashes = malloc((size_t)(k + 1) * sizeof(int64_t));
    PyObject *blob = NULL;
    if (ids == NULL || stamps == NULL || received == NULL) goto done;
    if (!ints || !floats || !spans || !received_at || !ends || !hashes) {
        PyErr_NoMemory();
        goto done;
    }
    /* An Added line's id is the str of the Received line it refers to (the same bytes,
     * ``refs``), not a second copy: half the ids a run makes, hashes and frees. */
    for (Py_ssize_t r = 0, seen = 0; r < st->requests; r++) {
        PyObject *id;
        int32_t ref = b->refs[r];
        if (ref >= 0) {
            id = PyList_GET_ITEM(ids, received_at[ref]);
            Py_INCREF(id);
        } else {
            id = PyUnicode_DecodeASCII((const char *)data + b->id_begin[r],
                                       b->id_end[r] - b->id_begin[r], NULL);
            if (id == NULL) goto done;
        }
        PyList_SET_ITEM(ids, r, id);
        if (b->req_kinds[r] == K_RECEIVED) {
            Py_hash_t hash = PyObject_Hash(id);
            if (hash == -1) goto done;
            Py_INCREF(id);
            PyList_SET_ITEM(received, seen, id);
            hashes[seen] = (int64_t)hash;
            ends[seen] = (seen ? ends[seen - 1] : 0) + (b->id_end[r] - b->id_begin[r]);
            received_at[seen++] = r;
        }
    }
    blob = PyBytes_FromStringAndSize(NULL, k ? (Py_ssize_t)ends[k - 1] : 0);
    if (blob == NULL) goto done;
    for (Py_ssize_t j = 0; j < k; j++) {
        Py_ssize_t r = received_at[j];
        memcpy(PyBytes_AS_STRING(blob) + (j ? ends[j - 1] : 0), data + b->id_begin[r],
               (size_t)(b->id_end[r] - b->id_begin[r]));
    }
    for (Py_ssize_t g = 0; g < st->segs; g++) {
        PyObject *stamp = BYTES(data + b->seg_stamps[g], 14);
        if (stamp == NULL) goto done;
        PyList_SET_ITEM(stamps, g, stamp);
    }
    for (int j = 0; j < 3; j++)
        memcpy(ints + j * k, b->ints + j * cap, (size_t)k * sizeof(int32_t));
    for (int j = 0; j < 2; j++) {
        memcpy(floats + j * k, b->floats + j * cap, (size_t)k * sizeof(double));
        memcpy(spans + j * k, b->spans + j * cap, (size_t)k * sizeof(int64_t));
    }
    Py_ssize_t n = st->n, segs = st->segs;
    result = Py_BuildValue("nnnnNNNONONNNNOONN", n, st->end, (Py_ssize_t)st->reason,
                           st->next_end, BYTES(b->kinds, n), BYTES(b->offsets, n * 8),
                           BYTES(b->lengths, n * 4), ids, BYTES(b->seg_starts, segs * 4), stamps,
                           BYTES(ints, k * 3 * 4), BYTES(floats, k * 2 * 8),
                           BYTES(spans, k * 2 * 8), BYTES(b->refs, st->requests * 4), received,
                           blob, BYTES(ends, k * 8), BYTES(hashes, k * 8));
done:
    Py_XDECREF(ids);
    Py_XDECREF(stamps);
    Py_XDECREF(received);
    Py_XDECREF(blob);
    free(ends);
    free(hashes);
    free(ints);
    free(floats);
    free(spans);
    free(received_at);
    return result;
}

static PyObject *scan_vllm(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t start, max_lines, max_line_bytes;
    int carry = 0;
    if (!PyArg_ParseTuple(args, "y*nnn|p", &view, &start, &max_lines, &max_line_bytes, &carry))
        return NULL;
    if (!span_ok(&view, start, max_lines >= 1 && max_line_bytes >= 0,
                 "start, max_lines or max_line_bytes"))
        return NULL;
    if (max_lines > (1 << 24)) max_lines = 1 << 24;
    /* Room for a chunk's lines (~2,500) at first, grown by doubling: a run is ~400
     * lines, and buffers for max_lines at every call were a third of the scan's time. */
    buffers buf;
    if (!alloc_buffers(&buf, max_lines < FIRST_CAP ? max_lines : FIRST_CAP)) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    const uchar *data = (const uchar *)view.buf;
    scan_state st;
    int made;
    Py_BEGIN_ALLOW_THREADS
    made = scan_lines(data, view.len, start, max_line_bytes, max_lines, carry, &buf, &st);
    Py_END_ALLOW_THREADS
    PyObject *result = made ? scan_result(data, &buf, &st) : PyErr_NoMemory();
    free_buffers(&buf);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"scan_vllm", scan_vllm, METH_VARARGS, scan_vllm_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sparseety_tui._vllmscan",
    "The common lines of a vLLM server log, read in C (formats/vllm/_native.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__vllmscan(void) {
    init_classes();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "STOP_END", STOP_END) < 0 ||
        PyModule_AddIntConstant(m, "STOP_ODD", STOP_ODD) < 0 ||
        PyModule_AddIntConstant(m, "STOP_FULL", STOP_FULL) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
