/*
 * sparseety_tui._idtable: the probing loops of core/idindex.py's hash table, in C.
 *
 * The table is an array('i') of row numbers (-1 = empty slot), linear probing, indexed
 * by hash & mask; the hashes are Python's hash(str) of each id, kept in an array('q').
 * numpy can vectorise these loops only with several sorts per block; here a block of
 * ids costs about one cache miss each. Without a C compiler idindex.py does the same
 * with numpy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>

#define EMPTY (-1)

static int writable_int32(PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) return 0;
    if (view->itemsize != 4) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "the table must hold 4-byte ints");
        return 0;
    }
    return 1;
}

static int int64_items(Py_buffer *view) {
    if (view->len % 8 != 0) {
        PyErr_SetString(PyExc_TypeError, "hashes must be 8-byte ints");
        return 0;
    }
    return 1;
}

/* The table has mask + 1 slots and mask >= 0 (so hash & mask is a slot); else ValueError. */
static int mask_fits(Py_ssize_t mask, Py_ssize_t table_bytes) {
    if (mask < 0 || table_bytes / 4 != mask + 1) {
        PyErr_SetString(PyExc_ValueError, "mask does not match the table size");
        return 0;
    }
    return 1;
}

PyDoc_STRVAR(place_rows_doc,
"place_rows(table, mask, hashes, first_row)\n\n"
"Insert rows first_row, first_row + 1, ... (one per hash in ``hashes``) into ``table``.\n"
"The caller keeps the table at most half full, so every probe ends soon; a table with no\n"
"free slot left raises ValueError (the rows placed before stay).");

static PyObject *place_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *table_obj;
    Py_buffer hashes;
    Py_ssize_t mask, first_row;
    if (!PyArg_ParseTuple(args, "Ony*n:place_rows", &table_obj, &mask, &hashes, &first_row))
        return NULL;
    Py_buffer table;
    if (!int64_items(&hashes) || !writable_int32(table_obj, &table)) {
        PyBuffer_Release(&hashes);
        return NULL;
    }
    if (!mask_fits(mask, table.len)) {
        PyBuffer_Release(&table);
        PyBuffer_Release(&hashes);
        return NULL;
    }
    int32_t *slots = table.buf;
    const int64_t *h = hashes.buf;
    Py_ssize_t n = hashes.len / 8;
    int full = 0;
    for (Py_ssize_t i = 0; i < n && !full; i++) {
        Py_ssize_t slot = (Py_ssize_t)((uint64_t)h[i] & (uint64_t)mask);
        /* At most one lap: a table without a free slot (the caller keeps it half empty,
         * so only a broken caller) is an error, not an endless loop. */
        Py_ssize_t probes = 0;
        while (slots[slot] != EMPTY && ++probes <= mask) slot = (slot + 1) & mask;
        if (slots[slot] != EMPTY) full = 1;
        else slots[slot] = (int32_t)(first_row + i);
    }
    PyBuffer_Release(&table);
    PyBuffer_Release(&hashes);
    if (full) {
        PyErr_SetString(PyExc_ValueError, "the table has no free slot");
        return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(all_new_doc,
"all_new(table, mask, stored_hashes, hashes) -> bool\n\n"
"True when no hash in ``hashes`` equals the hash of a row in the table, nor another hash\n"
"in ``hashes``. Equal hashes of different ids make it False too: the caller then takes\n"
"the exact, slower way.");

static PyObject *all_new(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer table, stored, hashes;
    Py_ssize_t mask;
    if (!PyArg_ParseTuple(args, "y*ny*y*:all_new", &table, &mask, &stored, &hashes))
        return NULL;
    PyObject *result = NULL;
    int64_t *seen = NULL;
    if (!int64_items(&stored) || !int64_items(&hashes)) goto done;
    if (!mask_fits(mask, table.len)) goto done;
    const int32_t *slots = table.buf;
    const int64_t *known = stored.buf;
    const int64_t *h = hashes.buf;
    Py_ssize_t n = hashes.len / 8, n_known = stored.len / 8;
    int fresh = 1;
    for (Py_ssize_t i = 0; i < n && fresh; i++) {
        Py_ssize_t slot = (Py_ssize_t)((uint64_t)h[i] & (uint64_t)mask);
        /* At most one lap (a full table ends the probe too); a row that is no row of
         * ``stored`` (only a broken caller writes one) matches nothing. */
        Py_ssize_t probes = 0;
        for (int32_t row; (row = slots[slot]) != EMPTY && probes <= mask;
             slot = (slot + 1) & mask, probes++) {
            if (row >= 0 && row < n_known && known[row] == h[i]) {
                fresh = 0;
                break;
            }
        }
    }
    /* Repeats within the block: a small table of its own hashes, at most half full. */
    Py_ssize_t size = 16;
    while (size < 2 * n) size *= 2;
    if (fresh && n > 1) {
        seen = malloc((size_t)size * sizeof(int64_t));
        char *used = calloc((size_t)size, 1);
        if (seen == NULL || used == NULL) {
            free(used);
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n && fresh; i++) {
            Py_ssize_t slot = (Py_ssize_t)((uint64_t)h[i] & (uint64_t)(size - 1));
            for (; used[slot]; slot = (slot + 1) & (size - 1)) {
                if (seen[slot] == h[i]) {
                    fresh = 0;
                    break;
                }
            }
            used[slot] = 1;
            seen[slot] = h[i];
        }
        free(used);
    }
    result = PyBool_FromLong(fresh);
done:
    free(seen);
    PyBuffer_Release(&table);
    PyBuffer_Release(&stored);
    PyBuffer_Release(&hashes);
    return result;
}

static PyMethodDef methods[] = {
    {"place_rows", place_rows, METH_VARARGS, place_rows_doc},
    {"all_new", all_new, METH_VARARGS, all_new_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "sparseety_tui._idtable",
    .m_doc = "The probing loops of core/store/'s id table.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__idtable(void) { return PyModule_Create(&module); }
