/*
 * sparseety_tui._sglscan: the common lines of an SGLang server log straight into columns.
 *
 * A big SGLang log is mostly three line shapes: dated ``Prefill batch.`` and ``Decode
 * batch.`` stats lines, and uvicorn access lines behind the same prefix. The per-line
 * parser reads them with one anchored regex each (``SglangParser._fast``, ``FAST_RE`` in
 * formats/sglang/_patterns.py) and still costs microseconds a line in Python. This module
 * reads a run of such lines in one pass and returns their numbers as columns; the caller
 * (formats/sglang/_native.py, core/sglang_bulk.py) applies the run at once.
 *
 * It reads only lines it is sure of: a line in exactly FAST_RE's stats shapes, or an
 * access line in the plain uvicorn shape with a status below 500. It stops at any other
 * line (a carriage return, an escape, a 5xx, a longer line than the caller reads whole,
 * anything odd) and says where, so the caller hands that line to the per-line parser:
 * this module never decides what an odd line means (tests/unit/test_native_sglang.py
 * holds the two paths equal).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "scan_args.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Row kinds (stats lines only; access lines are counted, not rowed). */
enum { KIND_PREFILL = 0, KIND_DECODE = 1 };
/* Integer columns: prefill's #new-seq, #new-token, #cached-token; both kinds'
 * #running-req and #queue-req. Float columns: token usage, gen throughput. */
enum { I_SEQ, I_NEW, I_CACHED, I_RUNNING, I_QUEUED, N_INTS };
enum { D_USAGE, D_GEN, N_FLOATS };

/* Lines the scan looks ahead past the line it stopped at, for more lines it would not
 * read (a traceback): they are handed to the parser together. */
#define MAX_ODD_LINES 4096
/* Distinct rank texts per call: more and the run stops (the next call goes on). */
#define MAX_RANKS 255
/* FAST_RE's bounds: at most 8 rank tokens; a count has at most 18 digits. */
#define MAX_RANK_TOKENS 8
#define MAX_DIGITS 18
#define TWO_POW_53 9007199254740992ULL
/* The prefix "[YYYY-MM-DD HH:MM:SS": 20 bytes; the minute text is its bytes 1..16. */
#define STAMP_LEN 20

typedef struct {
    Py_ssize_t cap, n;
    uint8_t *kinds;
    int32_t *minutes;  /* index into the minute entries */
    uint8_t *secs;     /* the stamp's two second digits as a number (00..99) */
    uint8_t *ranks;    /* index into the rank table */
    int64_t *ints[N_INTS];
    double *floats[N_FLOATS];
    /* minute entries: one per change of the minute text from line to line */
    Py_ssize_t m_cap, m_n;
    Py_ssize_t *m_offset;  /* offset of the entry's text (16 bytes) in the data */
    Py_ssize_t *m_line;    /* index of the first line (of all lines read) with it */
    /* rank table: distinct raw rank texts (with their leading space), in first-seen order */
    int r_n;
    Py_ssize_t r_offset[MAX_RANKS];
    Py_ssize_t r_len[MAX_RANKS];
} scan_out;

/* The one scan's buffers, grown as needed and kept (see scan). */
static scan_out scratch;

/* realloc that frees nothing on failure and checks the size product for overflow. */
static int grow_array(void **ptr, Py_ssize_t count, size_t item) {
    if (count <= 0 || (size_t)count > SIZE_MAX / item) return 0;
    void *bigger = realloc(*ptr, (size_t)count * item);
    if (bigger == NULL) return 0;
    *ptr = bigger;
    return 1;
}

static int grow_rows(scan_out *out) {
    Py_ssize_t cap = out->cap * 2 + 1024;
    int ok = grow_array((void **)&out->kinds, cap, 1) && grow_array((void **)&out->minutes, cap, 4) &&
             grow_array((void **)&out->secs, cap, 1) && grow_array((void **)&out->ranks, cap, 1);
    for (int c = 0; ok && c < N_INTS; c++) ok = grow_array((void **)&out->ints[c], cap, 8);
    for (int c = 0; ok && c < N_FLOATS; c++) ok = grow_array((void **)&out->floats[c], cap, 8);
    if (ok) out->cap = cap;
    return ok;
}

static int grow_minutes(scan_out *out) {
    Py_ssize_t cap = out->m_cap * 2 + 64;
    int ok = grow_array((void **)&out->m_offset, cap, sizeof(Py_ssize_t)) &&
             grow_array((void **)&out->m_line, cap, sizeof(Py_ssize_t));
    if (ok) out->m_cap = cap;
    return ok;
}

/* -- pieces of a line ------------------------------------------------------------------ */

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int is_upper(char c) { return c >= 'A' && c <= 'Z'; }

/* ``lit`` at p (NULL if not there, or if the line ends first). */
static inline const char *literal(const char *p, const char *end, const char *lit, size_t len) {
    if ((size_t)(end - p) < len || memcmp(p, lit, len) != 0) return NULL;
    return p + len;
}
#define LIT(p, end, s) literal((p), (end), (s), sizeof(s) - 1)

/* ``\d{1,18}`` (then not a digit: FAST_RE's next piece never starts with one): its value. */
static const char *count18(const char *p, const char *end, int64_t *value) {
    int64_t v = 0;
    int n = 0;
    while (p < end && is_digit(*p)) {
        if (++n > MAX_DIGITS) return NULL;
        v = v * 10 + (*p - '0');  /* < 10**18: no overflow */
        p++;
    }
    if (n == 0) return NULL;
    *value = v;
    return p;
}

/* ``\d+``: any number of digits, at least one (FAST_RE's ``#token``, which is not kept). */
static const char *digits(const char *p, const char *end) {
    const char *start = p;
    while (p < end && is_digit(*p)) p++;
    return p == start ? NULL : p;
}

static const double POW10[] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* ``\d{1,18}\.\d{1,18}``: the double Python's ``float(text)`` gives, correctly rounded.
 * Returns NULL if the text is not in that shape (or, never expected, the conversion
 * fails: the line then goes to Python). Needs the GIL (PyOS_string_to_double). */
static const char *decimal18(const char *p, const char *end, double *value) {
    const char *start = p;
    uint64_t mantissa = 0;
    int significant = 0, exponent10 = 0, exact = 1;
    int whole = 0, frac = 0;
    while (p < end && is_digit(*p)) {
        if (++whole > MAX_DIGITS) return NULL;
        if (significant || *p != '0') {
            if (significant < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
                significant++;
            } else {
                exact = 0;
            }
        }
        p++;
    }
    if (whole == 0 || p >= end || *p != '.') return NULL;
    p++;
    while (p < end && is_digit(*p)) {
        if (++frac > MAX_DIGITS) return NULL;
        if (significant || *p != '0') {
            if (significant < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
                significant++;
            } else {
                exact = 0;
            }
        }
        exponent10--;
        p++;
    }
    if (frac == 0) return NULL;
    if (exact && mantissa < TWO_POW_53 && exponent10 >= -22) {
        /* Both operands exact: one IEEE division rounds correctly (Clinger's fast path). */
        *value = (double)mantissa / POW10[-exponent10];
        return p;
    }
    char buffer[2 * MAX_DIGITS + 2];
    size_t len = (size_t)(p - start);  /* <= 37 by the bounds above */
    memcpy(buffer, start, len);
    buffer[len] = '\0';
    char *parsed_end = NULL;
    double v = PyOS_string_to_double(buffer, &parsed_end, NULL);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (parsed_end != buffer + len) return NULL;
    *value = v;
    return p;
}

/* ``\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d``: 20 bytes of fixed shape (spelled out: this
 * runs on every line, and a loop over a shape string cost a quarter of the scan). */
static int stamp_shape(const char *p, const char *end) {
    if (end - p < STAMP_LEN) return 0;
    return p[0] == '[' && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) &&
           is_digit(p[4]) && p[5] == '-' && is_digit(p[6]) && is_digit(p[7]) && p[8] == '-' &&
           is_digit(p[9]) && is_digit(p[10]) && p[11] == ' ' && is_digit(p[12]) &&
           is_digit(p[13]) && p[14] == ':' && is_digit(p[15]) && is_digit(p[16]) &&
           p[17] == ':' && is_digit(p[18]) && is_digit(p[19]);
}

/* ``(?: [A-Z][A-Z_]{0,10}\d{1,5}){0,8}\] ``: the end of the prefix (after "] "), or NULL. */
static const char *rank_tokens(const char *p, const char *end) {
    for (int tokens = 0;; tokens++) {
        if (p < end && *p == ']') return (end - p >= 2 && p[1] == ' ') ? p + 2 : NULL;
        if (tokens == MAX_RANK_TOKENS || p >= end || *p != ' ') return NULL;
        p++;
        if (p >= end || !is_upper(*p)) return NULL;
        p++;
        int letters = 0;
        while (p < end && (is_upper(*p) || *p == '_')) {
            if (++letters > 10) return NULL;
            p++;
        }
        int n = 0;
        while (p < end && is_digit(*p)) {
            if (++n > 5) return NULL;
            p++;
        }
        if (n == 0) return NULL;
    }
}

/* Whether ``needle`` occurs in [p, end) (memmem: a GNU extension, which Python.h turns
 * on with _GNU_SOURCE; glibc's is vectorised). */
static int contains(const char *p, const char *end, const char *needle, size_t len) {
    return memmem(p, (size_t)(end - p), needle, len) != NULL;
}

/* A byte of an access line's client, path or tail that the scan accepts: printable
 * ASCII (anything else, even if the regex would take it, goes to Python). */
static inline int graph(char c) { return c > ' ' && c < 0x7f; }
static inline int printable(char c) { return c >= ' ' && c < 0x7f; }

/* The uvicorn access line ``msg`` (after the prefix) in its plain shape, status < 500:
 *   INFO:     127.0.0.1:57479 - "POST /v1/completions HTTP/1.1" 200 OK
 * (``ACCESS_RE`` of formats/_clean.py would match it and give no event). */
static int plain_access(const char *p, const char *end) {
    const char *msg = p;
    if (!(p = LIT(p, end, "INFO:     "))) return 0;
    while (p < end && *p == ' ') p++;
    const char *client = p;
    while (p < end && graph(*p)) p++;
    if (p == client) return 0;
    if (end - p >= 2 && p[0] == ' ' && is_digit(p[1])) {  /* (?: \d+)? */
        p++;
        while (p < end && is_digit(*p)) p++;
    }
    if (!(p = LIT(p, end, " - \""))) return 0;
    const char *method = p;
    while (p < end && is_upper(*p)) p++;
    if (p == method || p >= end || *p != ' ') return 0;
    p++;
    const char *path = p;
    while (p < end && graph(*p)) p++;
    if (p == path) return 0;
    if (!(p = LIT(p, end, " HTTP/"))) return 0;
    const char *version = p;
    while (p < end && (is_digit(*p) || *p == '.')) p++;
    if (p == version || p >= end || *p != '"') return 0;
    p++;
    if (end - p < 4 || p[0] != ' ' || !is_digit(p[1]) || !is_digit(p[2]) || !is_digit(p[3]))
        return 0;
    if (p[1] == '5') return 0;  /* a 5xx is an error too: Python reads it */
    p += 4;
    if (p < end) {
        if (*p != ' ') return 0;
        for (const char *q = p; q < end; q++) {
            if (!printable(*q)) return 0;
        }
    }
    /* _fast sends these to the general path (a traceback or a batch line behind it). */
    if (contains(msg, end, " batch", 6) || contains(msg, end, "Traceback", 9)) return 0;
    return 1;
}

/* The index of the raw rank text [p, q) in the table (added if new); -1 if it is full. */
static int rank_index(scan_out *out, const char *data, const char *p, const char *q) {
    Py_ssize_t len = q - p;
    for (int i = out->r_n - 1; i >= 0; i--) {
        if (out->r_len[i] == len && memcmp(data + out->r_offset[i], p, (size_t)len) == 0) return i;
    }
    if (out->r_n == MAX_RANKS) return -1;
    out->r_offset[out->r_n] = p - data;
    out->r_len[out->r_n] = len;
    return out->r_n++;
}

/* Outcome of one line. */
enum { LINE_STOP = 0, LINE_STATS = 1, LINE_ACCESS = 2, LINE_ERROR = -1 };

/* Read the line [p, end) (its "\n" excluded). Fills row ``out->n`` for a stats line and
 * ``*minute_text``/``*sec`` for both kinds. LINE_ERROR: out of memory (exception set). */
static int scan_line(scan_out *out, const char *data, const char *p, const char *end,
                     const char **minute_text, int *sec, int probe) {
    if (!stamp_shape(p, end)) return LINE_STOP;
    const char *ranks = p + STAMP_LEN;
    const char *msg = rank_tokens(ranks, end);
    if (msg == NULL) return LINE_STOP;
    *minute_text = p + 1;
    *sec = (p[18] - '0') * 10 + (p[19] - '0');
    if (msg < end && *msg == 'I') return plain_access(msg, end) ? LINE_ACCESS : LINE_STOP;
    if (!probe && out->n == out->cap && !grow_rows(out)) {
        PyErr_NoMemory();
        return LINE_ERROR;
    }
    Py_ssize_t row = out->n;
    int64_t v[N_INTS] = {0, 0, 0, 0, 0};
    double d[N_FLOATS] = {0.0, 0.0};
    const char *q;
    uint8_t kind;
    if ((q = LIT(msg, end, "Prefill batch. #new-seq: "))) {
        kind = KIND_PREFILL;
        if (!(q = count18(q, end, &v[I_SEQ])) || !(q = LIT(q, end, ", #new-token: ")) ||
            !(q = count18(q, end, &v[I_NEW])) || !(q = LIT(q, end, ", #cached-token: ")) ||
            !(q = count18(q, end, &v[I_CACHED])) || !(q = LIT(q, end, ", token usage: ")) ||
            !(q = decimal18(q, end, &d[D_USAGE])) || !(q = LIT(q, end, ", #running-req: ")) ||
            !(q = count18(q, end, &v[I_RUNNING])) || !(q = LIT(q, end, ", #queue-req: ")) ||
            !(q = count18(q, end, &v[I_QUEUED])))
            return LINE_STOP;
    } else if ((q = LIT(msg, end, "Decode batch. #running-req: "))) {
        kind = KIND_DECODE;
        if (!(q = count18(q, end, &v[I_RUNNING])) || !(q = LIT(q, end, ", #token: ")) ||
            !(q = digits(q, end)) || !(q = LIT(q, end, ", token usage: ")) ||
            !(q = decimal18(q, end, &d[D_USAGE])) ||
            !(q = LIT(q, end, ", gen throughput (token/s): ")) ||
            !(q = decimal18(q, end, &d[D_GEN])) || !(q = LIT(q, end, ", #queue-req: ")) ||
            !(q = count18(q, end, &v[I_QUEUED])))
            return LINE_STOP;
    } else {
        return LINE_STOP;
    }
    if (q != end) return LINE_STOP;  /* FAST_RE's \Z */
    if (probe) return LINE_STATS;  /* only asked whether the line is one (no row kept) */
    int rank = rank_index(out, data, ranks, msg - 2);
    if (rank < 0) return LINE_STOP;
    out->kinds[row] = kind;
    out->ranks[row] = (uint8_t)rank;
    for (int c = 0; c < N_INTS; c++) out->ints[c][row] = v[c];
    for (int c = 0; c < N_FLOATS; c++) out->floats[c][row] = d[c];
    return LINE_STATS;
}

static PyObject *columns_bytes(void *const *columns, int k, Py_ssize_t n, size_t item) {
    PyObject *result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((size_t)k * (size_t)n * item));
    if (result == NULL) return NULL;
    char *dst = PyBytes_AS_STRING(result);
    for (int c = 0; c < k; c++) {
        if (n) memcpy(dst + (size_t)c * (size_t)n * item, columns[c], (size_t)n * item);
    }
    return result;
}

static PyObject *texts_list(const char *data, const Py_ssize_t *offsets, const Py_ssize_t *lens,
                            Py_ssize_t fixed, Py_ssize_t n) {
    PyObject *list = PyList_New(n);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *text = PyBytes_FromStringAndSize(data + offsets[i], lens ? lens[i] : fixed);
        if (text == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, text);
    }
    return list;
}

static PyObject *index_list(const Py_ssize_t *values, Py_ssize_t n) {
    PyObject *list = PyList_New(n);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyLong_FromSsize_t(values[i]);
        if (value == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, value);
    }
    return list;
}

PyDoc_STRVAR(scan_doc,
"scan(data, start, max_line_bytes, max_lines) -> tuple\n\n"
"Read the run of common SGLang lines of ``data`` (whole lines) from byte ``start``:\n"
"at most ``max_lines`` lines, none longer than ``max_line_bytes`` (its ending excluded).\n"
"Returns (lines, end, next_end, access, last_minute, last_sec, kinds, minutes, secs,\n"
"ranks, ints, floats, minute_texts, minute_lines, rank_texts, firsts): ``lines`` lines in\n"
"[start, end), of which ``access`` access lines and the rest stats rows; ``next_end`` is\n"
"where the lines from ``end`` that it would not read end (at least one, at most 4096).\n"
"Per row: kind (0 prefill, 1 decode), index of its minute text, its seconds, index of\n"
"its raw rank text; ints: 5 int64 columns (new-seq, new-token, cached-token, running-req, queue-req), floats: 2 double columns\n"
"(token usage, gen throughput), each laid end to end. ``minute_texts`` has an entry per\n"
"change of minute from line to line (``minute_lines``: the index of its first line);\n"
"``last_minute``/``last_sec`` are the last line's (-1 when no line was read); ``firsts``\n"
"the index of the first prefill, decode and access line (-1: none).");

static PyObject *scan(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, max_line_bytes, max_lines;
    if (!scan_args(args, "y*nnn:scan", &view, &start, &max_line_bytes, &max_lines)) return NULL;
    const char *data = view.buf;
    Py_ssize_t size = view.len;
    /* Buffers kept from call to call (the GIL is held): a run costs no allocation. */
    scan_out *out = &scratch;
    out->n = out->m_n = 0;
    out->r_n = 0;
    Py_ssize_t pos = start, lines = 0, access = 0;
    int32_t last_minute = -1;
    int last_sec = -1;
    Py_ssize_t first[3] = {-1, -1, -1};  /* first line of each kind: prefill, decode, access */
    while (pos < size && lines < max_lines) {
        const char *line = data + pos;
        const char *nl = memchr(line, '\n', (size_t)(size - pos));
        const char *body_end = nl ? nl : data + size;
        const char *next = nl ? nl + 1 : data + size;
        if (body_end - line > max_line_bytes) break;
        /* No accepted line holds a carriage return or an escape (the per-line path would
         * clean those first): every byte of one is matched against digits, capitals,
         * literals or printable ASCII. */
        const char *minute_text = NULL;
        int sec = 0;
        int got = scan_line(out, data, line, body_end, &minute_text, &sec, 0);
        if (got == LINE_ERROR) {
            PyBuffer_Release(&view);
            return NULL;
        }
        if (got == LINE_STOP) break;
        if (out->m_n == 0 || memcmp(data + out->m_offset[out->m_n - 1], minute_text, 16) != 0) {
            if (out->m_n == out->m_cap && !grow_minutes(out)) {
                PyBuffer_Release(&view);
                return PyErr_NoMemory();
            }
            out->m_offset[out->m_n] = minute_text - data;
            out->m_line[out->m_n] = lines;
            out->m_n++;
        }
        last_minute = (int32_t)(out->m_n - 1);
        last_sec = sec;
        int kind = got == LINE_STATS ? out->kinds[out->n] : 2;
        if (first[kind] < 0) first[kind] = lines;
        if (got == LINE_STATS) {
            out->minutes[out->n] = last_minute;
            out->secs[out->n] = (uint8_t)sec;
            out->n++;
        } else {
            access++;
        }
        lines++;
        pos = next - data;
    }
    /* The lines from ``pos`` that the scan would not read (at least the one it stopped
     * at; up to MAX_ODD_LINES): the caller's parser reads them in one go. */
    Py_ssize_t next_end = pos;
    for (int odd = 0; next_end < size && odd < MAX_ODD_LINES; odd++) {
        const char *line = data + next_end;
        const char *nl = memchr(line, '\n', (size_t)(size - next_end));
        const char *body_end = nl ? nl : data + size;
        const char *minute_text = NULL;
        int sec = 0;
        if (odd > 0 && body_end - line <= max_line_bytes &&
            scan_line(out, data, line, body_end, &minute_text, &sec, 1) != LINE_STOP)
            break;
        next_end = nl ? (nl - data) + 1 : size;
    }
    Py_ssize_t n = out->n;
    PyObject *kinds = PyBytes_FromStringAndSize((const char *)out->kinds, n);
    PyObject *minutes = PyBytes_FromStringAndSize((const char *)out->minutes, n * 4);
    PyObject *secs = PyBytes_FromStringAndSize((const char *)out->secs, n);
    PyObject *ranks = PyBytes_FromStringAndSize((const char *)out->ranks, n);
    PyObject *ints = columns_bytes((void *const *)out->ints, N_INTS, n, 8);
    PyObject *floats = columns_bytes((void *const *)out->floats, N_FLOATS, n, 8);
    PyObject *minute_texts = texts_list(data, out->m_offset, NULL, 16, out->m_n);
    PyObject *minute_lines = index_list(out->m_line, out->m_n);
    PyObject *rank_texts = texts_list(data, out->r_offset, out->r_len, 0, out->r_n);
    PyObject *result = NULL;
    if (kinds && minutes && secs && ranks && ints && floats && minute_texts && minute_lines &&
        rank_texts) {
        result = Py_BuildValue("nnnniiOOOOOOOOO(nnn)", lines, pos, next_end, access,
                               (int)last_minute, last_sec, kinds, minutes, secs, ranks, ints, floats, minute_texts,
                               minute_lines, rank_texts, first[0], first[1], first[2]);
    }
    Py_XDECREF(kinds);
    Py_XDECREF(minutes);
    Py_XDECREF(secs);
    Py_XDECREF(ranks);
    Py_XDECREF(ints);
    Py_XDECREF(floats);
    Py_XDECREF(minute_texts);
    Py_XDECREF(minute_lines);
    Py_XDECREF(rank_texts);
    PyBuffer_Release(&view);
    return result;
}

/* -- adding a run's stats rows to a label's sums (core/sglang_bulk.py) ------------------ */

/* Summed fields, in the order of the ``sums`` buffer: each with its column, whether it is
 * an int column, the kinds that have it (bit 0 prefill, bit 1 decode) and its slot in a
 * minute's [sum, n] array (core/store/ MINUTE_FIELDS; -1: not kept per minute). */
typedef struct {
    const char *name;
    int is_int, column, kinds, minute_slot;
} sum_field;

enum { N_SUMS = 7, MINUTE_DOUBLES = 18 };
static const sum_field SUM_FIELDS[N_SUMS] = {
    {"batch_requests", 1, I_SEQ, 1, -1},      /* batch_requests */
    {"new_tokens", 1, I_NEW, 1, 4},       /* new_tokens */
    {"cached_tokens", 1, I_CACHED, 1, 6},    /* cached_tokens */
    {"kv_usage", 0, D_USAGE, 3, 14},    /* kv_usage */
    {"running", 1, I_RUNNING, 3, 8},   /* running */
    {"queued", 1, I_QUEUED, 3, 12},   /* queued */
    {"generation_throughput", 0, D_GEN, 2, 2},       /* generation_throughput */
};

/* A read-only buffer of at least ``need`` bytes, or an exception. */
static int need_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t need, int writable) {
    if (PyObject_GetBuffer(obj, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) return 0;
    if (view->len < need) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "buffer too short");
        return 0;
    }
    return 1;
}

/* Python's ``x // 60.0`` for a double (Objects/floatobject.c float_floor_div), so a
 * row's minute is the one EngineSeries.add computes: int(ts // 60) * 60. */
static double python_floor_div(double vx, double wx) {
    double mod = fmod(vx, wx);
    double div = (vx - mod) / wx;
    if (mod) {
        if ((wx < 0) != (mod < 0)) div -= 1.0;
    }
    double floordiv;
    if (div) {
        floordiv = floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
        floordiv = copysign(0.0, vx / wx);
    }
    return floordiv;
}

/* Times beyond this many seconds from 1970 are refused (no mktime gives them): the
 * minute of every row accepted fits an int64. */
#define MAX_ABS_TS 1e15

PyDoc_STRVAR(accumulate_doc,
"accumulate(kinds, ranks, ints, floats, minutes, secs, bases, rank, sums, own)\n"
"    -> (prefill rows, decode rows, last row)\n\n"
"Add the rows of label ``rank`` (-1: every row) of a scan, one by one in line order, as\n"
"EngineSeries.add would: each field's value to ``sums`` (7 doubles, the order of\n"
"SUM_FIELDS) and, for a row with a time (``bases[minutes[row]] + secs[row]``; a NaN\n"
"base: none) in a minute >= 0, to the [sum, n] slots of its minute's array, which\n"
"``own(minute)`` gives (called, like LabelSeries.add does, whenever the minute changes\n"
"from the label's previous row). Every index and time is checked before anything is\n"
"written; the last row is -1 when the label has none.");

static PyObject *accumulate(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *kinds_obj, *ranks_obj, *ints_obj, *floats_obj, *minutes_obj, *secs_obj;
    PyObject *bases_obj, *sums_obj, *own;
    int rank;
    if (!PyArg_ParseTuple(args, "OOOOOOOiOO:accumulate", &kinds_obj, &ranks_obj, &ints_obj,
                          &floats_obj, &minutes_obj, &secs_obj, &bases_obj, &rank, &sums_obj,
                          &own))
        return NULL;
    Py_buffer kinds, ranks, ints, floats, minutes, secs, bases, sums, bucket;
    if (!need_buffer(kinds_obj, &kinds, 0, 0)) return NULL;
    Py_ssize_t n = kinds.len;
    int got = 0;
    got += need_buffer(ranks_obj, &ranks, n, 0);
    if (got == 1) got += need_buffer(ints_obj, &ints, n * 8 * N_INTS, 0);
    if (got == 2) got += need_buffer(floats_obj, &floats, n * 8 * N_FLOATS, 0);
    if (got == 3) got += need_buffer(minutes_obj, &minutes, n * 4, 0);
    if (got == 4) got += need_buffer(secs_obj, &secs, n, 0);
    if (got == 5) got += need_buffer(bases_obj, &bases, 0, 0);
    if (got == 6) got += need_buffer(sums_obj, &sums, 8 * N_SUMS, 1);
    PyObject *result = NULL, *bucket_obj = NULL;
    int holding = 0;
    if (got < 7) goto done;
    const uint8_t *kind = kinds.buf, *row_rank = ranks.buf, *sec = secs.buf;
    const int32_t *minute_of = minutes.buf;
    const int64_t *iv = ints.buf;
    const double *dv = floats.buf, *base = bases.buf;
    Py_ssize_t n_bases = bases.len / 8;
    double *acc = sums.buf;
    for (Py_ssize_t i = 0; i < n; i++) {  /* every index and time checked before any write */
        if (kind[i] > KIND_DECODE || minute_of[i] < 0 || minute_of[i] >= n_bases) {
            PyErr_SetString(PyExc_ValueError, "bad kind or minute index");
            goto done;
        }
        double ts = base[minute_of[i]] + sec[i];
        if (!isnan(ts) && !(fabs(ts) < MAX_ABS_TS)) {
            PyErr_SetString(PyExc_ValueError, "time out of range");
            goto done;
        }
    }
    Py_ssize_t counts[2] = {0, 0}, last = -1;
    int64_t current = -1;  /* the minute of ``bucket`` (-1: none held) */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (rank >= 0 && row_rank[i] != rank) continue;
        int bit = 1 << kind[i];
        counts[kind[i]]++;
        last = i;
        double ts = base[minute_of[i]] + sec[i];
        int64_t minute = isnan(ts) ? -1 : (int64_t)python_floor_div(ts, 60.0) * 60;
        double *slots = NULL;
        if (minute >= 0) {
            if (minute != current) {
                if (holding) {
                    PyBuffer_Release(&bucket);
                    Py_CLEAR(bucket_obj);
                    holding = 0;
                }
                bucket_obj = PyObject_CallFunction(own, "L", (long long)minute);
                if (bucket_obj == NULL || !need_buffer(bucket_obj, &bucket, 8 * MINUTE_DOUBLES, 1))
                    goto done;
                holding = 1;
                current = minute;
            }
            slots = bucket.buf;
        }
        for (int f = 0; f < N_SUMS; f++) {
            const sum_field *field = &SUM_FIELDS[f];
            if (!(field->kinds & bit)) continue;
            double value = field->is_int ? (double)iv[field->column * n + i]
                                         : dv[field->column * n + i];
            acc[f] += value;
            if (slots != NULL && field->minute_slot >= 0) {
                slots[field->minute_slot] += value;
                slots[field->minute_slot + 1] += 1.0;
            }
        }
    }
    result = Py_BuildValue("nnn", counts[0], counts[1], last);
done:
    if (holding) PyBuffer_Release(&bucket);
    Py_XDECREF(bucket_obj);
    if (got > 6) PyBuffer_Release(&sums);
    if (got > 5) PyBuffer_Release(&bases);
    if (got > 4) PyBuffer_Release(&secs);
    if (got > 3) PyBuffer_Release(&minutes);
    if (got > 2) PyBuffer_Release(&floats);
    if (got > 1) PyBuffer_Release(&ints);
    if (got > 0) PyBuffer_Release(&ranks);
    PyBuffer_Release(&kinds);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {"accumulate", accumulate, METH_VARARGS, accumulate_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sparseety_tui._sglscan",
    "The common lines of an SGLang server log straight into columns "
    "(see formats/sglang/_native.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

/* ((name, kinds bit mask, minute slot), ...) of SUM_FIELDS, for the caller and the tests. */
static PyObject *sum_fields(void) {
    PyObject *out = PyTuple_New(N_SUMS);
    if (out == NULL) return NULL;
    for (int f = 0; f < N_SUMS; f++) {
        PyObject *item = Py_BuildValue("(sii)", SUM_FIELDS[f].name, SUM_FIELDS[f].kinds,
                                       SUM_FIELDS[f].minute_slot);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, f, item);
    }
    return out;
}

PyMODINIT_FUNC PyInit__sglscan(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyObject *fields = sum_fields();
    if (fields == NULL || PyModule_AddObject(m, "SUM_FIELDS", fields) < 0) {
        Py_XDECREF(fields);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "KIND_PREFILL", KIND_PREFILL) < 0 ||
        PyModule_AddIntConstant(m, "KIND_DECODE", KIND_DECODE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
