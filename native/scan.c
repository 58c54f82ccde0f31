/*
 * sparseety_tui._scan: request-level JSONL records straight into columns.
 *
 * The batch commands spend most of their time on big request logs turning one JSON
 * object per line into rows. This module does that in one pass over a chunk of whole
 * lines, for the *simple* records only: an object whose keys are all request-level
 * fields the core keeps (formats/_trace_native.py makes them a batch), with plain values
 * (ASCII strings without escapes, numbers, true/false/null). It stops at the first line
 * that is anything else and says where, so the caller hands that line to the ordinary
 * per-line parser: this module never decides what an odd line means, and a line it accepts gets the values
 * the per-line path would give it (tests/unit/test_native_scan.py holds the two equal).
 *
 * Values come back raw (counts, seconds, names as indexes into per-call name tables);
 * the rules that combine fields (state, start = finish - latency, ...) stay in Python,
 * in formats/_trace_block.py, shared with the pure-Python block path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "scan_args.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Fields, in the order of the bits of the per-record "present" mask. */
enum field {
    F_REQUEST_ID, F_TS, F_MODEL, F_PROMPT_TOKENS, F_COMPLETION_TOKENS, F_CACHED_TOKENS,
    F_LATENCY_S, F_TTFT_S, F_SPARSE, F_STATE, F_RECEIVED_TS, F_FINISHED_TS, F_CACHE_HIT,
    F_FINISH_REASON,
    /* inside "sparse" */
    F_TOPK_EXPERTS, F_TOTAL_EXPERTS, F_SKIPPED_HEADS, F_TOTAL_HEADS, F_KV_KEPT, F_KV_TOTAL,
    F_KV_SKIP, F_KV_POLICY,
    N_FIELDS
};

enum kind { K_ID, K_TIME, K_NAME, K_COUNT, K_SECONDS, K_OBJECT, K_FLAG, K_IGNORED };

typedef struct {
    const char *key;
    Py_ssize_t key_len;
    enum field field;
    enum kind kind;
    int column; /* index into the count, seconds/time or name columns */
} field_spec;

#define SPEC(k, f, kind, col) {k, sizeof(k) - 1, f, kind, col}

/* Count columns: the order of sparseety_tui/batch.py RECORD_COUNT_COLUMNS. */
enum { C_PROMPT, C_COMPLETION, C_CACHED, C_TOPK, C_TOTAL_EXPERTS, C_SKIPPED_HEADS,
       C_TOTAL_HEADS, C_KV_KEPT, C_KV_TOTAL, N_COUNTS };
/* Float columns: the order formats/_trace_native.py reads them in. */
enum { D_LATENCY, D_TTFT, D_TS, D_RECEIVED, D_FINISHED, N_FLOATS };
/* Name columns: the order formats/_trace_native.py reads them in. */
enum { N_MODEL, N_STATE, N_KV_SKIP, N_NAMES };

static const field_spec TOP_FIELDS[] = {
    SPEC("request_id", F_REQUEST_ID, K_ID, 0),
    SPEC("ts", F_TS, K_TIME, D_TS),
    SPEC("model", F_MODEL, K_NAME, N_MODEL),
    SPEC("prompt_tokens", F_PROMPT_TOKENS, K_COUNT, C_PROMPT),
    SPEC("completion_tokens", F_COMPLETION_TOKENS, K_COUNT, C_COMPLETION),
    SPEC("cached_tokens", F_CACHED_TOKENS, K_COUNT, C_CACHED),
    SPEC("latency_s", F_LATENCY_S, K_SECONDS, D_LATENCY),
    SPEC("ttft_s", F_TTFT_S, K_SECONDS, D_TTFT),
    SPEC("sparse", F_SPARSE, K_OBJECT, 0),
    SPEC("state", F_STATE, K_NAME, N_STATE),
    SPEC("received_ts", F_RECEIVED_TS, K_TIME, D_RECEIVED),
    SPEC("finished_ts", F_FINISHED_TS, K_TIME, D_FINISHED),
    SPEC("cache_hit", F_CACHE_HIT, K_FLAG, 0),
    SPEC("finish_reason", F_FINISH_REASON, K_IGNORED, 0),
};

static const field_spec SPARSE_FIELDS[] = {
    SPEC("topk_experts", F_TOPK_EXPERTS, K_COUNT, C_TOPK),
    SPEC("total_experts", F_TOTAL_EXPERTS, K_COUNT, C_TOTAL_EXPERTS),
    SPEC("skipped_attention_heads", F_SKIPPED_HEADS, K_COUNT, C_SKIPPED_HEADS),
    SPEC("total_attention_heads", F_TOTAL_HEADS, K_COUNT, C_TOTAL_HEADS),
    SPEC("kv_kept", F_KV_KEPT, K_COUNT, C_KV_KEPT),
    SPEC("kv_total", F_KV_TOTAL, K_COUNT, C_KV_TOTAL),
    SPEC("kv_skip", F_KV_SKIP, K_NAME, N_KV_SKIP),
    SPEC("kv_policy", F_KV_POLICY, K_IGNORED, 0),
};

#define N_TOP (sizeof(TOP_FIELDS) / sizeof(TOP_FIELDS[0]))
#define N_SPARSE (sizeof(SPARSE_FIELDS) / sizeof(SPARSE_FIELDS[0]))

/* Why a scan stopped. */
enum { STOP_END = 0, STOP_NOT_SIMPLE = 1, STOP_FULL = 2 };

/* A name table holds at most this many distinct names per call (codes are uint8). */
#define MAX_NAMES 255
#define TWO_POW_53 9007199254740992ULL
/* Key positions whose key is remembered for the next record (more is allowed). */
#define MAX_KEYS 16

typedef struct {
    const char *ptr[MAX_NAMES];
    Py_ssize_t len[MAX_NAMES];
    int count;
} name_table;

typedef struct {
    Py_ssize_t capacity, n;
    int64_t *offsets;   /* line start, relative to the buffer */
    uint32_t *lengths;  /* bytes the line occupies, ending included */
    int32_t *counts[N_COUNTS];
    double *floats[N_FLOATS];
    uint8_t *names[N_NAMES];
    uint8_t *cache_hit;
    uint32_t *present;
    int64_t *id_ends;
    int64_t *id_hashes;
    char *id_blob;
    Py_ssize_t id_blob_len, id_blob_cap;
    name_table tables[N_NAMES];
    int top_guesses[MAX_KEYS];  /* spec index of the key last seen at each position */
    int sparse_guesses[MAX_KEYS];
} scan_out;

/* -- JSON pieces ---------------------------------------------------------------------- */

/* JSON whitespace inside one line: '\n' is where the line (and the record) ends. */
static inline const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    return p;
}

/* Bytes that may stand inside a plain string: printable ASCII but '"' and '\\'. */
static unsigned char PLAIN[256];

static void init_plain(void) {
    for (int c = 0x20; c <= 0x7e; c++) PLAIN[c] = c != '"' && c != '\\';
}

/* A string of printable ASCII without escapes (anything else: not simple). */
static const char *plain_string(const char *p, const char *end, const char **s, Py_ssize_t *len) {
    if (p >= end || *p != '"') return NULL;
    const char *start = ++p;
    while (p < end && PLAIN[(unsigned char)*p]) p++;
    if (p >= end || *p != '"') return NULL;  /* an escape, a control or non-ASCII byte */
    *s = start;
    *len = p - start;
    return p + 1;
}

typedef struct {
    int negative, is_integer, digits_overflow;
    uint64_t mantissa;   /* significant digits, while they fit */
    int exponent10;      /* value = mantissa * 10^exponent10 (when digits_overflow is 0) */
    const char *text;
    Py_ssize_t text_len;
} number;

/* A number, by the JSON grammar exactly (orjson rejects "01", "1.", ".5", "+1"). */
static const char *json_number(const char *p, const char *end, number *out) {
    const char *start = p;
    memset(out, 0, sizeof(*out));
    out->is_integer = 1;
    if (p < end && *p == '-') {
        out->negative = 1;
        p++;
    }
    if (p >= end) return NULL;
    int significant = 0;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') {
            if (significant < 19) {
                out->mantissa = out->mantissa * 10 + (uint64_t)(*p - '0');
                significant++;
            } else {
                out->digits_overflow = 1;
            }
            p++;
        }
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        out->is_integer = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') {
            if (significant == 0 && *p == '0') {
                out->exponent10--;  /* a leading zero of the fraction */
            } else if (significant < 19) {
                out->mantissa = out->mantissa * 10 + (uint64_t)(*p - '0');
                out->exponent10--;
                significant++;
            } else {
                out->digits_overflow = 1;
            }
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        out->is_integer = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
        out->digits_overflow = 1;  /* exponents go through the general converter */
    }
    out->text = start;
    out->text_len = p - start;
    return p;
}

static const double POW10[] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* The double a JSON number denotes, correctly rounded; 0 if it cannot be had exactly. */
static int number_to_double(const number *num, double *out) {
    if (!num->digits_overflow && num->mantissa < TWO_POW_53 && num->exponent10 >= -22 &&
        num->exponent10 <= 22) {
        /* Both operands exact: one IEEE operation rounds correctly (Clinger's fast path). */
        double m = (double)num->mantissa;
        double v = num->exponent10 < 0 ? m / POW10[-num->exponent10] : m * POW10[num->exponent10];
        *out = num->negative ? -v : v;
        return 1;
    }
    char buffer[64];
    if (num->text_len >= (Py_ssize_t)sizeof(buffer)) return 0;
    memcpy(buffer, num->text, (size_t)num->text_len);
    buffer[num->text_len] = '\0';
    char *parsed_end = NULL;
    double v = PyOS_string_to_double(buffer, &parsed_end, NULL);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (parsed_end != buffer + num->text_len || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

/* Skip one value the core ignores: a plain string, a number or a literal. */
static const char *ignored_value(const char *p, const char *end) {
    if (p >= end) return NULL;
    if (*p == '"') {
        const char *s;
        Py_ssize_t len;
        return plain_string(p, end, &s, &len);
    }
    if (*p == 't') return (end - p >= 4 && memcmp(p, "true", 4) == 0) ? p + 4 : NULL;
    if (*p == 'f') return (end - p >= 5 && memcmp(p, "false", 5) == 0) ? p + 5 : NULL;
    if (*p == 'n') return (end - p >= 4 && memcmp(p, "null", 4) == 0) ? p + 4 : NULL;
    number num;
    return json_number(p, end, &num);
}

static inline int is_null(const char *p, const char *end) {
    return end - p >= 4 && memcmp(p, "null", 4) == 0;
}

/* -- timestamps ----------------------------------------------------------------------- */

/* The epoch rule of sparseety_tui/formats/_timestamps.py (module constants, held equal by
 * tests/unit/test_native_scan.py): a number's unit is told by its size, and a time that
 * is no date (before 1970, or from the year 10000 on) goes to the per-line path, which
 * counts it as ignored. */
#define EPOCH_SECONDS_BELOW 1e11
#define EPOCH_MILLIS_BELOW 1e14
#define EPOCH_MICROS_BELOW 1e17
#define TIME_END 253402300800.0

/* Unix seconds from an epoch number in s, ms, us or ns; 0 when out of range. The same
 * IEEE operations, in the same order, as epoch_seconds() in Python. */
static int epoch_seconds(double value, double *out) {
    if (!(value >= 0.0)) return 0;  /* negative or NaN */
    if (value >= EPOCH_SECONDS_BELOW) {
        if (value < EPOCH_MILLIS_BELOW)
            value /= 1e3;
        else if (value < EPOCH_MICROS_BELOW)
            value /= 1e6;
        else
            value /= 1e9;
    }
    if (!(value < TIME_END)) return 0;
    *out = value;
    return 1;
}

static inline int digits_at(const char *s, int pos, int n, int *value) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = s[pos + i];
        if (c < '0' || c > '9') return 0;
        v = v * 10 + (c - '0');
    }
    *value = v;
    return 1;
}

/* "YYYY-MM-DD[T ]HH:MM:SS[.fff|.ffffff][Z]" -> unix seconds, UTC when naive: the value
 * datetime.fromisoformat gives (formats/_trace_block.py _iso_fixed does the same in numpy). */
static int iso_timestamp(const char *s, Py_ssize_t len, double *out) {
    int zulu = len > 0 && s[len - 1] == 'Z';
    Py_ssize_t body = len - zulu;
    if (body != 19 && body != 23 && body != 26) return 0;
    if (s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':') return 0;
    if (s[10] != 'T' && s[10] != ' ') return 0;
    int year, month, day, hour, minute, second, fraction = 0;
    if (!digits_at(s, 0, 4, &year) || !digits_at(s, 5, 2, &month) || !digits_at(s, 8, 2, &day) ||
        !digits_at(s, 11, 2, &hour) || !digits_at(s, 14, 2, &minute) ||
        !digits_at(s, 17, 2, &second))
        return 0;
    int64_t micros = 0;
    if (body > 19) {
        if (s[19] != '.' || !digits_at(s, 20, (int)body - 20, &fraction)) return 0;
        micros = body == 23 ? (int64_t)fraction * 1000 : fraction;
    }
    static const int MONTH_DAYS[] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (year < 1 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59)
        return 0;
    if (day > MONTH_DAYS[month] + (month == 2 && leap)) return 0;
    /* Days from the civil date (H. Hinnant's algorithm), proleptic Gregorian. */
    int64_t y = year - (month <= 2);
    int64_t era = y / 400;  /* y >= 0 */
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second;
    int64_t total = seconds * 1000000 + micros;
    /* Python divides the exact integer; so do we, while it converts to double exactly
     * (until the year 2255). Later dates go to the per-line path. */
    if (total > (int64_t)TWO_POW_53 || total < 0) return 0;  /* < 0: before 1970, no date */
    *out = (double)total / 1e6;
    return 1;
}

/* -- one value of a known field ------------------------------------------------------- */

static const char *name_value(const char *p, const char *end, name_table *table, uint8_t *code) {
    if (is_null(p, end)) {
        *code = 0;
        return p + 4;
    }
    const char *s;
    Py_ssize_t len;
    p = plain_string(p, end, &s, &len);
    if (p == NULL) return NULL;
    for (int i = 0; i < table->count; i++) {
        if (table->len[i] == len && memcmp(table->ptr[i], s, (size_t)len) == 0) {
            *code = (uint8_t)(i + 1);
            return p;
        }
    }
    if (table->count == MAX_NAMES) return NULL;  /* the caller sees STOP_FULL */
    table->ptr[table->count] = s;
    table->len[table->count] = len;
    *code = (uint8_t)++table->count;
    return p;
}

static const char *count_value(const char *p, const char *end, int32_t *value) {
    if (is_null(p, end)) {
        *value = -1;
        return p + 4;
    }
    number num;
    p = json_number(p, end, &num);
    if (p == NULL || !num.is_integer || num.digits_overflow) return NULL;
    if (num.negative) {
        *value = num.mantissa ? -1 : 0;  /* a negative count is unknown; -0 is 0 */
    } else {
        if (num.mantissa > INT32_MAX) return NULL;  /* rare: left to the per-line path */
        *value = (int32_t)num.mantissa;
    }
    return p;
}

/* A JSON number as the float Python makes of it: an int as float(int) does (so "-0" is
 * 0.0), a float correctly rounded. An integer of up to 19 digits fits a uint64, and IEEE
 * conversion of a uint64 rounds to nearest, ties to even, as float(int) does: nanosecond
 * timestamps (1.7e18, beyond 2^53) are taken too. Longer ones go to the per-line path. */
static const char *double_value(const char *p, const char *end, double *value) {
    number num;
    p = json_number(p, end, &num);
    if (p == NULL) return NULL;
    if (num.is_integer) {
        if (num.digits_overflow) return NULL;
        *value = (num.negative && num.mantissa) ? -(double)num.mantissa : (double)num.mantissa;
        return p;
    }
    return number_to_double(&num, value) ? p : NULL;
}

/* A duration: negative is unknown (NaN); -0.0 stays -0.0, as in Python. */
static const char *seconds_value(const char *p, const char *end, double *value) {
    if (is_null(p, end)) {
        *value = NAN;
        return p + 4;
    }
    p = double_value(p, end, value);
    if (p != NULL && *value < 0) *value = NAN;
    return p;
}

/* A time: unix seconds, or an ISO string of the fixed shapes. */
static const char *time_value(const char *p, const char *end, double *value) {
    if (is_null(p, end)) {
        *value = NAN;
        return p + 4;
    }
    if (p < end && *p == '"') {
        const char *s;
        Py_ssize_t len;
        p = plain_string(p, end, &s, &len);
        return (p != NULL && iso_timestamp(s, len, value)) ? p : NULL;
    }
    double number;
    p = double_value(p, end, &number);
    return (p != NULL && epoch_seconds(number, value)) ? p : NULL;
}

/* -- id hashes ------------------------------------------------------------------------ */

/* core/store/ files ids under Python's hash(str). For an ASCII str that is the hash
 * of its bytes, which CPython exports; module init checks the two agree, and if they do
 * not (another interpreter) every id is hashed through a str object instead. */
#if PY_VERSION_HEX >= 0x030E0000
#define HASH_BYTES(p, n) Py_HashBuffer((p), (n))
#else
#define HASH_BYTES(p, n) _Py_HashBytes((p), (n))
#endif

static int hash_bytes_is_str_hash = 0;

static Py_hash_t ascii_str_hash(const char *s, Py_ssize_t len) {
    if (hash_bytes_is_str_hash) return HASH_BYTES(s, len);
    PyObject *id = PyUnicode_FromStringAndSize(s, len);
    if (id == NULL) return -1;
    Py_hash_t hash = PyObject_Hash(id);
    Py_DECREF(id);
    return hash;
}

static int check_hash_bytes(void) {
    static const char probe[] = "sparseety-request-0001";
    PyObject *str = PyUnicode_FromString(probe);
    if (str == NULL) return -1;
    Py_hash_t expected = PyObject_Hash(str);
    Py_DECREF(str);
    if (expected == -1 && PyErr_Occurred()) return -1;
    hash_bytes_is_str_hash = HASH_BYTES(probe, (Py_ssize_t)strlen(probe)) == expected;
    return 0;
}

/* -- records -------------------------------------------------------------------------- */

static const field_spec *find_field(const field_spec *specs, size_t n, const char *key,
                                    Py_ssize_t len) {
    for (size_t i = 0; i < n; i++) {
        if (specs[i].key_len == len && memcmp(specs[i].key, key, (size_t)len) == 0)
            return &specs[i];
    }
    return NULL;
}

typedef struct {
    const char *id;
    Py_ssize_t id_len;
    uint32_t present;
} record_state;

static const char *object_fields(const char *p, const char *end, scan_out *out, Py_ssize_t row,
                                 const field_spec *specs, size_t n_specs, int *guesses,
                                 record_state *rec, int *full);

static const char *field_value(const char *p, const char *end, scan_out *out, Py_ssize_t row,
                               const field_spec *spec, record_state *rec, int *full) {
    switch (spec->kind) {
    case K_ID: {
        const char *s;
        Py_ssize_t len;
        p = plain_string(p, end, &s, &len);
        if (p == NULL || len == 0) return NULL;
        rec->id = s;
        rec->id_len = len;
        return p;
    }
    case K_TIME:
        return time_value(p, end, &out->floats[spec->column][row]);
    case K_SECONDS:
        return seconds_value(p, end, &out->floats[spec->column][row]);
    case K_COUNT:
        return count_value(p, end, &out->counts[spec->column][row]);
    case K_NAME: {
        name_table *table = &out->tables[spec->column];
        const char *next = name_value(p, end, table, &out->names[spec->column][row]);
        if (next == NULL && table->count == MAX_NAMES) *full = 1;
        return next;
    }
    case K_FLAG:
        if (end - p >= 4 && memcmp(p, "true", 4) == 0) {
            out->cache_hit[row] = 2;
            return p + 4;
        }
        if (end - p >= 5 && memcmp(p, "false", 5) == 0) {
            out->cache_hit[row] = 1;
            return p + 5;
        }
        if (is_null(p, end)) {
            out->cache_hit[row] = 0;
            return p + 4;
        }
        return NULL;
    case K_OBJECT:
        return object_fields(p, end, out, row, SPARSE_FIELDS, N_SPARSE, out->sparse_guesses, rec,
                             full);
    case K_IGNORED:
        return ignored_value(p, end);
    }
    return NULL;
}

/* "{" (key ":" value ("," key ":" value)*)? "}" with keys from specs, each at most once. */
static const char *object_fields(const char *p, const char *end, scan_out *out, Py_ssize_t row,
                                 const field_spec *specs, size_t n_specs, int *guesses,
                                 record_state *rec, int *full) {
    if (p >= end || *p != '{') return NULL;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') return p + 1;
    for (int position = 0;; position++) {
        /* Records of one log list their keys in one order: try the key seen at this
         * position last time before searching (a quoted key is compared whole). */
        const field_spec *spec = NULL;
        int *guess = position < MAX_KEYS ? &guesses[position] : NULL;
        if (guess != NULL && *guess >= 0) {
            const field_spec *g = &specs[*guess];
            if (end - p > g->key_len + 1 && p[0] == '"' && p[g->key_len + 1] == '"' &&
                memcmp(p + 1, g->key, (size_t)g->key_len) == 0) {
                spec = g;
                p += g->key_len + 2;
            }
        }
        if (spec == NULL) {
            const char *key;
            Py_ssize_t key_len;
            p = plain_string(p, end, &key, &key_len);
            if (p == NULL) return NULL;
            spec = find_field(specs, n_specs, key, key_len);
            if (spec == NULL) return NULL;
            if (guess != NULL) *guess = (int)(spec - specs);
        }
        uint32_t bit = 1u << spec->field;
        if (rec->present & bit) return NULL;  /* a repeated key */
        rec->present |= bit;
        p = skip_ws(p, end);
        if (p >= end || *p != ':') return NULL;
        p = skip_ws(p + 1, end);
        p = field_value(p, end, out, row, spec, rec, full);
        if (p == NULL) return NULL;
        p = skip_ws(p, end);
        if (p >= end) return NULL;
        if (*p == '}') return p + 1;
        if (*p != ',') return NULL;
        p = skip_ws(p + 1, end);
    }
}

static void reset_row(scan_out *out, Py_ssize_t row) {
    for (int c = 0; c < N_COUNTS; c++) out->counts[c][row] = -1;
    for (int c = 0; c < N_FLOATS; c++) out->floats[c][row] = NAN;
    for (int c = 0; c < N_NAMES; c++) out->names[c][row] = 0;
    out->cache_hit[row] = 0;
}

/* Parse the line at ``p`` into row ``out->n``. Returns where the next line starts (the
 * row is kept), NULL if the line is not a simple record (nothing kept), or ``error``. */
static const char *scan_line(const char *line, const char *end, Py_ssize_t max_line_bytes,
                             scan_out *out, int *full, const char *error) {
    Py_ssize_t row = out->n;
    int table_counts[N_NAMES];
    for (int c = 0; c < N_NAMES; c++) table_counts[c] = out->tables[c].count;
    record_state rec = {NULL, 0, 0};
    reset_row(out, row);
    const char *p = skip_ws(line, end);
    p = object_fields(p, end, out, row, TOP_FIELDS, N_TOP, out->top_guesses, &rec, full);
    if (p != NULL) p = skip_ws(p, end);
    /* Then the line must end; its body (ending excluded) within the reader's cap. */
    if (p == NULL || (p < end && *p != '\n') || rec.id == NULL ||
        p - line - (p > line && p[-1] == '\r' && p < end) > max_line_bytes) {
        /* Not simple: forget the names this line added, so codes stay in line order. */
        for (int c = 0; c < N_NAMES; c++) out->tables[c].count = table_counts[c];
        return NULL;
    }
    Py_hash_t hash = ascii_str_hash(rec.id, rec.id_len);
    if (hash == -1 && PyErr_Occurred()) return error;
    if (out->id_blob_len + rec.id_len > out->id_blob_cap) {
        Py_ssize_t cap = (out->id_blob_cap + rec.id_len) * 2;
        char *grown = realloc(out->id_blob, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return error;
        }
        out->id_blob = grown;
        out->id_blob_cap = cap;
    }
    memcpy(out->id_blob + out->id_blob_len, rec.id, (size_t)rec.id_len);
    out->id_blob_len += rec.id_len;
    out->id_ends[row] = out->id_blob_len;
    out->id_hashes[row] = hash;
    out->present[row] = rec.present;
    out->n++;
    return p < end ? p + 1 : end;
}

/* -- the module function -------------------------------------------------------------- */

/* Rows are written to one scratch area, reused by every call (the GIL is held
 * throughout a scan) and grown by doubling: no allocation per call in the steady state. */
static scan_out scratch;

#define GROW(field, n)                                                    \
    do {                                                                  \
        void *grown = realloc((field), (n) * sizeof(*(field)));           \
        if (grown == NULL) return 0;                                      \
        (field) = grown;                                                  \
    } while (0)

static int grow_columns(scan_out *out, Py_ssize_t capacity) {
    size_t n = (size_t)capacity;
    GROW(out->offsets, n);
    GROW(out->lengths, n);
    for (int c = 0; c < N_COUNTS; c++) GROW(out->counts[c], n);
    for (int c = 0; c < N_FLOATS; c++) GROW(out->floats[c], n);
    for (int c = 0; c < N_NAMES; c++) GROW(out->names[c], n);
    GROW(out->cache_hit, n);
    GROW(out->present, n);
    GROW(out->id_ends, n);
    GROW(out->id_hashes, n);
    out->capacity = capacity;
    return 1;
}

static int grow(scan_out *out, Py_ssize_t capacity) {
    if (!grow_columns(out, capacity)) {
        PyErr_NoMemory();
        return 0;
    }
    return 1;
}

/* Start a scan: no rows, empty name tables, no key order learnt yet. */
static void reset_scratch(scan_out *out) {
    out->n = 0;
    out->id_blob_len = 0;
    for (int c = 0; c < N_NAMES; c++) out->tables[c].count = 0;
    for (int i = 0; i < MAX_KEYS; i++) out->top_guesses[i] = out->sparse_guesses[i] = -1;
}

/* bytes of the first n items of each of k columns, laid end to end */
static PyObject *columns_bytes(void **columns, int k, Py_ssize_t n, size_t item) {
    PyObject *result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(k * n * (Py_ssize_t)item));
    if (result == NULL) return NULL;
    char *dst = PyBytes_AS_STRING(result);
    for (int c = 0; c < k; c++) memcpy(dst + (size_t)c * (size_t)n * item, columns[c], (size_t)n * item);
    return result;
}

static PyObject *tables_list(const scan_out *out) {
    PyObject *tables = PyList_New(N_NAMES);
    if (tables == NULL) return NULL;
    for (int c = 0; c < N_NAMES; c++) {
        const name_table *table = &out->tables[c];
        PyObject *names = PyList_New(table->count);
        if (names == NULL) {
            Py_DECREF(tables);
            return NULL;
        }
        for (int i = 0; i < table->count; i++) {
            PyObject *name = PyUnicode_FromStringAndSize(table->ptr[i], table->len[i]);
            if (name == NULL) {
                Py_DECREF(names);
                Py_DECREF(tables);
                return NULL;
            }
            PyList_SET_ITEM(names, i, name);
        }
        PyList_SET_ITEM(tables, c, names);
    }
    return tables;
}

PyDoc_STRVAR(scan_requests_doc,
"scan_requests(data, start, max_records, max_line_bytes) -> tuple\n\n"
"Scan the simple request records among the lines of ``data`` from byte ``start``.\n"
"Returns (n, end, reason, next_end, offsets, lengths, counts, floats, names, cache_hit,\n"
"present, id_blob, id_ends, id_hashes, name_tables): n records in [start, end); reason\n"
"0 = the data ended, 1 = the line at ``end`` (ending at ``next_end``) is not simple,\n"
"2 = a limit was reached. Columns are bytes, laid out as formats/_trace_native.py reads them.");

static PyObject *scan_requests(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, max_records, max_line_bytes;
    if (!scan_args(args, "y*nnn:scan_requests", &view, &start, &max_records, &max_line_bytes))
        return NULL;
    const char *data = view.buf;
    Py_ssize_t size = view.len;
    scan_out *out = &scratch;
    reset_scratch(out);
    Py_ssize_t pos = start, next_end = start;
    int reason = STOP_END;
    while (pos < size) {
        const char *line = data + pos;
        if (out->n == max_records || (out->n == out->capacity && !grow(out, 2 * out->capacity + 1024))) {
            if (PyErr_Occurred()) {
                PyBuffer_Release(&view);
                return NULL;
            }
            reason = STOP_FULL;
            break;
        }
        int full = 0;
        const char *next = scan_line(line, data + size, max_line_bytes, out, &full, data);
        if (next == data) {
            PyBuffer_Release(&view);
            return NULL;
        }
        if (next == NULL) {
            reason = full ? STOP_FULL : STOP_NOT_SIMPLE;
            break;
        }
        out->offsets[out->n - 1] = pos;
        out->lengths[out->n - 1] = (uint32_t)(next - line);
        pos = next - data;
    }
    next_end = pos;
    if (pos < size) {  /* where the line the scan stopped at ends */
        const char *nl = memchr(data + pos, '\n', (size_t)(size - pos));
        next_end = nl ? (nl - data) + 1 : size;
    }
    Py_ssize_t n = out->n;
    PyObject *offsets = PyBytes_FromStringAndSize((char *)out->offsets, n * 8);
    PyObject *lengths = PyBytes_FromStringAndSize((char *)out->lengths, n * 4);
    PyObject *counts = columns_bytes((void **)out->counts, N_COUNTS, n, sizeof(int32_t));
    PyObject *floats = columns_bytes((void **)out->floats, N_FLOATS, n, sizeof(double));
    PyObject *names = columns_bytes((void **)out->names, N_NAMES, n, 1);
    PyObject *cache_hit = PyBytes_FromStringAndSize((char *)out->cache_hit, n);
    PyObject *present = PyBytes_FromStringAndSize((char *)out->present, n * 4);
    PyObject *id_blob = PyBytes_FromStringAndSize(out->id_blob, out->id_blob_len);
    PyObject *id_ends = PyBytes_FromStringAndSize((char *)out->id_ends, n * 8);
    PyObject *id_hashes = PyBytes_FromStringAndSize((char *)out->id_hashes, n * 8);
    PyObject *tables = tables_list(out);
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (offsets && lengths && counts && floats && names && cache_hit && present && id_blob &&
        id_ends && id_hashes && tables) {
        result = Py_BuildValue("nninOOOOOOOOOOO", n, pos, reason, next_end, offsets, lengths,
                               counts, floats, names, cache_hit, present, id_blob, id_ends,
                               id_hashes, tables);
    }
    Py_XDECREF(offsets);
    Py_XDECREF(lengths);
    Py_XDECREF(counts);
    Py_XDECREF(floats);
    Py_XDECREF(names);
    Py_XDECREF(cache_hit);
    Py_XDECREF(present);
    Py_XDECREF(id_blob);
    Py_XDECREF(id_ends);
    Py_XDECREF(id_hashes);
    Py_XDECREF(tables);
    return result;
}

static PyMethodDef methods[] = {
    {"scan_requests", scan_requests, METH_VARARGS, scan_requests_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "sparseety_tui._scan",
    .m_doc = "Simple request-level JSONL records straight into columns (see formats/_trace_native.py).",
    .m_size = -1,
    .m_methods = methods,
};

/* The key names of a spec table, as a tuple (tests hold them equal to trace.py's). */
static PyObject *key_names(const field_spec *specs, size_t n) {
    PyObject *names = PyTuple_New((Py_ssize_t)n);
    if (names == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *name = PyUnicode_FromStringAndSize(specs[i].key, specs[i].key_len);
        if (name == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, (Py_ssize_t)i, name);
    }
    return names;
}

PyMODINIT_FUNC PyInit__scan(void) {
    init_plain();
    if (check_hash_bytes() < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "STOP_END", STOP_END) < 0 ||
        PyModule_AddIntConstant(m, "STOP_NOT_SIMPLE", STOP_NOT_SIMPLE) < 0 ||
        PyModule_AddIntConstant(m, "STOP_FULL", STOP_FULL) < 0 ||
        PyModule_AddIntConstant(m, "FIELD_COMPLETION_TOKENS", F_COMPLETION_TOKENS) < 0 ||
        PyModule_AddIntConstant(m, "FIELD_LATENCY_S", F_LATENCY_S) < 0 ||
        PyModule_AddObject(m, "EPOCH_SECONDS_BELOW", PyFloat_FromDouble(EPOCH_SECONDS_BELOW)) < 0 ||
        PyModule_AddObject(m, "EPOCH_MILLIS_BELOW", PyFloat_FromDouble(EPOCH_MILLIS_BELOW)) < 0 ||
        PyModule_AddObject(m, "EPOCH_MICROS_BELOW", PyFloat_FromDouble(EPOCH_MICROS_BELOW)) < 0 ||
        PyModule_AddObject(m, "TIME_END", PyFloat_FromDouble(TIME_END)) < 0 ||
        PyModule_AddObject(m, "TOP_KEYS", key_names(TOP_FIELDS, N_TOP)) < 0 ||
        PyModule_AddObject(m, "SPARSE_KEYS", key_names(SPARSE_FIELDS, N_SPARSE)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
