/* The arguments a scanner starts with, parsed and checked in one place: the data, the
 * byte it starts at, and two limits. Shared by scan.c and sglang_scan.c (each compiled on
 * its own: the function is static in each); vllm_scan.c uses span_ok for its own form. */
#ifndef SPARSEETY_SCAN_ARGS_H
#define SPARSEETY_SCAN_ARGS_H

#include <Python.h>

/* 1 when 0 <= start <= the data's length and ``limits_ok``; else the buffer is released,
 * ValueError set (``what`` names the arguments), and 0 returned. */
static inline int span_ok(Py_buffer *view, Py_ssize_t start, int limits_ok, const char *what) {
    if (start >= 0 && start <= view->len && limits_ok) return 1;
    PyBuffer_Release(view);
    PyErr_Format(PyExc_ValueError, "%s out of range", what);
    return 0;
}

/* (data, start, first, second) by ``format`` ("y*nnn:name"), with both limits >= 0: 1 and
 * the buffer held, or 0 with an exception set and nothing held. */
static inline int scan_args(PyObject *args, const char *format, Py_buffer *view, Py_ssize_t *start,
                            Py_ssize_t *first, Py_ssize_t *second) {
    if (!PyArg_ParseTuple(args, format, view, start, first, second)) return 0;
    return span_ok(view, *start, *first >= 0 && *second >= 0, "start or a limit");
}

#endif
