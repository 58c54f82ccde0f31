/*
 * sparseety_tui._idwindow: where the window of recent vLLM request ids keeps its ids
 * (formats/vllm/_recent.py ``RecentIds``), in C.
 *
 * ``Generations`` holds ``id -> serial`` for two generations of ids, the one being filled
 * and the one before it, as ``RecentIds`` asks (its pure-Python twin is ``_Dicts`` there,
 * and tests/unit/test_recent_ids.py holds the two equal). Keys are the str objects given
 * (a reference is kept), found by Python's own hash of them (cached in the str) and told
 * apart by their characters. Compared with two dicts: no int object a serial, no resize
 * of a dict growing again after every generation, and a run of ids is checked and taken
 * in one call. A big vLLM log remembers every request's id here: that was a tenth of
 * reading it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject *key; /* a str (a reference held); NULL: an empty slot */
    Py_hash_t hash;
    int64_t serial;
} slot;

/* One generation: an open-addressing table, linear probing, at most half full. */
typedef struct {
    slot *slots;
    size_t mask; /* capacity - 1 (a power of two); 0: no table yet */
    Py_ssize_t count;
} generation;

typedef struct {
    PyObject_HEAD
    generation gens[2]; /* [0]: being filled; [1]: the one before it */
} Generations;

/* Whether str ``a`` (hash ``ha``) and ``b`` are the same text. */
static int same_text(PyObject *a, Py_hash_t ha, const slot *s) {
    PyObject *b = s->key;
    if (a == b) return 1;
    if (ha != s->hash || PyUnicode_GET_LENGTH(a) != PyUnicode_GET_LENGTH(b) ||
        PyUnicode_KIND(a) != PyUnicode_KIND(b))
        return 0;
    return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b),
                  (size_t)PyUnicode_GET_LENGTH(a) * PyUnicode_KIND(a)) == 0;
}

/* The slot holding ``key``, or the empty slot where it would go. */
static slot *probe(const generation *g, PyObject *key, Py_hash_t hash) {
    size_t at = (size_t)hash & g->mask;
    for (;;) {
        slot *s = g->slots + at;
        if (s->key == NULL || same_text(key, hash, s)) return s;
        at = (at + 1) & g->mask;
    }
}

static void clear_generation(generation *g) {
    if (g->slots != NULL) {
        for (size_t i = 0; i <= g->mask; i++) Py_XDECREF(g->slots[i].key);
        PyMem_Free(g->slots);
    }
    g->slots = NULL;
    g->mask = 0;
    g->count = 0;
}

/* Room for ``more`` keys beyond those held, the table at most half full. 0: no memory. */
static int reserve(generation *g, Py_ssize_t more) {
    size_t need = 2 * (size_t)(g->count + more);
    size_t cap = g->slots == NULL ? 0 : g->mask + 1;
    if (need <= cap) return 1;
    size_t grown = cap ? cap : 64;
    while (grown < need) grown <<= 1;
    slot *slots = PyMem_Calloc(grown, sizeof(slot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    generation bigger = {slots, grown - 1, g->count};
    for (size_t i = 0; i < cap; i++) {
        slot *s = g->slots + i;
        if (s->key != NULL) *probe(&bigger, s->key, s->hash) = *s;
    }
    PyMem_Free(g->slots);
    *g = bigger;
    return 1;
}

/* Drop the key of slot ``s`` (backward-shift deletion: no tombstones). */
static void remove_slot(generation *g, slot *s) {
    Py_CLEAR(s->key);
    g->count--;
    size_t hole = (size_t)(s - g->slots);
    size_t at = (hole + 1) & g->mask;
    while (g->slots[at].key != NULL) {
        size_t home = (size_t)g->slots[at].hash & g->mask;
        /* The entry at ``at`` may move into the hole when its home is not in (hole, at]. */
        if (((at - home) & g->mask) >= ((at - hole) & g->mask)) {
            g->slots[hole] = g->slots[at];
            g->slots[at].key = NULL;
            hole = at;
        }
        at = (at + 1) & g->mask;
    }
}

static const slot *find(const generation *g, PyObject *key, Py_hash_t hash) {
    if (g->slots == NULL) return NULL;
    const slot *s = probe(g, key, hash);
    return s->key != NULL ? s : NULL;
}

/* The latest serial of ``key``, 0 when not held; -1 with an exception for a non-str. */
static int64_t serial_of(const Generations *self, PyObject *key, Py_hash_t *hash_out) {
    if (!PyUnicode_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "ids are str");
        return -1;
    }
    Py_hash_t hash = PyObject_Hash(key);
    if (hash == -1) return -1;
    if (hash_out != NULL) *hash_out = hash;
    for (int i = 0; i < 2; i++) {
        const slot *s = find(&self->gens[i], key, hash);
        if (s != NULL) return s->serial;
    }
    return 0;
}

/* ``key`` -> ``serial`` in the generation being filled (room reserved). */
static void put(generation *g, PyObject *key, Py_hash_t hash, int64_t serial) {
    slot *s = probe(g, key, hash);
    if (s->key == NULL) {
        Py_INCREF(key);
        s->key = key;
        s->hash = hash;
        g->count++;
    }
    s->serial = serial;
}

static PyObject *gens_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Generations() takes no arguments");
        return NULL;
    }
    Generations *self = (Generations *)type->tp_alloc(type, 0);
    return (PyObject *)self; /* (tp_alloc zeroes both generations) */
}

static void gens_dealloc(Generations *self) {
    clear_generation(&self->gens[0]);
    clear_generation(&self->gens[1]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *gens_serial_of(Generations *self, PyObject *key) {
    int64_t serial = serial_of(self, key, NULL);
    return serial < 0 ? NULL : PyLong_FromLongLong(serial);
}

static PyObject *gens_add(Generations *self, PyObject *args) {
    PyObject *key;
    long long serial;
    if (!PyArg_ParseTuple(args, "UL", &key, &serial)) return NULL;
    Py_hash_t hash = PyObject_Hash(key);
    if (hash == -1 || !reserve(&self->gens[0], 1)) return NULL;
    put(&self->gens[0], key, hash, serial);
    Py_RETURN_NONE;
}

/* add_run(ids, start, floor): ``RecentIds.remember_new`` after its generation check. */
static PyObject *gens_add_run(Generations *self, PyObject *args) {
    PyObject *ids;
    long long start, floor;
    if (!PyArg_ParseTuple(args, "O!LL", &PyList_Type, &ids, &start, &floor)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(ids);
    Py_hash_t *hashes = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_hash_t));
    if (hashes == NULL) return PyErr_NoMemory();
    PyObject *result = NULL;
    /* None may be in the window (held, its serial above the floor)... */
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t serial = serial_of(self, PyList_GET_ITEM(ids, i), &hashes[i]);
        if (serial < 0) goto done;
        if (serial > 0 && serial > floor) {
            result = Py_False;
            goto done;
        }
    }
    /* ... nor come twice: told by a table of the run's own ids. */
    {
        generation run = {NULL, 0, 0};
        if (!reserve(&run, n)) goto done;
        int repeats = 0;
        for (Py_ssize_t i = 0; i < n && !repeats; i++) {
            PyObject *key = PyList_GET_ITEM(ids, i);
            slot *s = probe(&run, key, hashes[i]);
            if (s->key != NULL) {
                repeats = 1;
            } else {
                s->key = key; /* (borrowed: the list holds it while this runs) */
                s->hash = hashes[i];
            }
        }
        PyMem_Free(run.slots);
        if (repeats) {
            result = Py_False;
            goto done;
        }
    }
    if (!reserve(&self->gens[0], n)) goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        put(&self->gens[0], PyList_GET_ITEM(ids, i), hashes[i], start + i);
    result = Py_True;
done:
    PyMem_Free(hashes);
    Py_XINCREF(result);
    return result;
}

/* discard(ids): each of ``ids`` out of the generation being filled. */
static PyObject *gens_discard(Generations *self, PyObject *ids) {
    if (!PyList_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "ids are a list");
        return NULL;
    }
    generation *g = &self->gens[0];
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ids); i++) {
        PyObject *key = PyList_GET_ITEM(ids, i);
        if (!PyUnicode_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "ids are str");
            return NULL;
        }
        Py_hash_t hash = PyObject_Hash(key);
        if (hash == -1) return NULL;
        if (g->slots == NULL) continue;
        slot *s = probe(g, key, hash);
        if (s->key != NULL) remove_slot(g, s);
    }
    Py_RETURN_NONE;
}

/* next_generation(size): when the generation being filled holds ``size`` ids, it becomes
 * the one before, and the one before is dropped. */
static PyObject *gens_next_generation(Generations *self, PyObject *arg) {
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred()) return NULL;
    if (self->gens[0].count >= size) {
        clear_generation(&self->gens[1]);
        self->gens[1] = self->gens[0];
        self->gens[0] = (generation){NULL, 0, 0};
    }
    Py_RETURN_NONE;
}

/* latest() -> {id: serial}: the one before, then the one being filled over it. */
static PyObject *gens_latest(Generations *self, PyObject *unused) {
    (void)unused;
    PyObject *out = PyDict_New();
    if (out == NULL) return NULL;
    for (int i = 1; i >= 0; i--) {
        const generation *g = &self->gens[i];
        for (size_t j = 0; g->slots != NULL && j <= g->mask; j++) {
            const slot *s = g->slots + j;
            if (s->key == NULL) continue;
            PyObject *serial = PyLong_FromLongLong(s->serial);
            if (serial == NULL || PyDict_SetItem(out, s->key, serial) < 0) {
                Py_XDECREF(serial);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(serial);
        }
    }
    return out;
}

static PyMethodDef gens_methods[] = {
    {"serial_of", (PyCFunction)gens_serial_of, METH_O,
     "serial_of(id) -> the latest serial it was kept with, 0 when not held"},
    {"add", (PyCFunction)gens_add, METH_VARARGS, "add(id, serial): kept in the newer one"},
    {"add_run", (PyCFunction)gens_add_run, METH_VARARGS,
     "add_run(ids, start, floor) -> bool: ids[i] -> start + i in the newer one, unless\n"
     "one is held with a serial above floor or one comes twice (then nothing changes)"},
    {"discard", (PyCFunction)gens_discard, METH_O, "discard(ids): out of the newer one"},
    {"next_generation", (PyCFunction)gens_next_generation, METH_O,
     "next_generation(size): when the newer holds size ids, it becomes the older"},
    {"latest", (PyCFunction)gens_latest, METH_NOARGS, "latest() -> {id: latest serial}"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject GenerationsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sparseety_tui._idwindow.Generations",
    .tp_doc = "id -> serial for two generations of ids (formats/vllm/_recent.py).",
    .tp_basicsize = sizeof(Generations),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = gens_new,
    .tp_dealloc = (destructor)gens_dealloc,
    .tp_methods = gens_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sparseety_tui._idwindow",
    "The ids of the vLLM parser's window of recent ids, in C (formats/vllm/_recent.py).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__idwindow(void) {
    if (PyType_Ready(&GenerationsType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&GenerationsType);
    if (PyModule_AddObject(m, "Generations", (PyObject *)&GenerationsType) < 0) {
        Py_DECREF(&GenerationsType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
