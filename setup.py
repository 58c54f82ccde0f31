"""Build the optional native helpers (native/*.c -> sparseety_tui._scan, ._idtable, ...).

Everything else is in pyproject.toml. ``optional=True``: without a C compiler the
package still installs and works, on the pure-Python block path (the same results,
several times slower on big request logs).
"""

from setuptools import Extension, setup

#: The argument checks the scanners share (a header: a change rebuilds all three).
SCAN_ARGS = ["native/scan_args.h"]

setup(
    ext_modules=[
        Extension(
            "sparseety_tui._scan", sources=["native/scan.c"], depends=SCAN_ARGS, optional=True
        ),
        Extension("sparseety_tui._idtable", sources=["native/idtable.c"], optional=True),
        Extension(
            "sparseety_tui._sglscan",
            sources=["native/sglang_scan.c"],
            depends=SCAN_ARGS,
            optional=True,
        ),
        Extension(
            "sparseety_tui._vllmscan",
            sources=["native/vllm_scan.c"],
            depends=SCAN_ARGS,
            optional=True,
        ),
        Extension("sparseety_tui._idwindow", sources=["native/id_window.c"], optional=True),
    ]
)
