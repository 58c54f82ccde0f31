"""Every native module is fuzzed: scripts/fuzz_native.py (run by .ci/run under ASan and
UBSan) has a target for each C file under native/, built as the module setup.py builds
from it. A target whose file is missing is skipped by the fuzzer, so a renamed C file
would otherwise leave its module unfuzzed without a word."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def fuzzer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fuzz_native", ROOT / "scripts" / "fuzz_native.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def built_modules() -> dict[str, str]:
    """setup.py's extensions: C file -> module name."""
    built: dict[str, str] = {}
    for node in ast.walk(ast.parse((ROOT / "setup.py").read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Extension":
            name = ast.literal_eval(node.args[0])
            sources = next(ast.literal_eval(k.value) for k in node.keywords if k.arg == "sources")
            built.update((source, name) for source in sources)
    return built


def test_every_native_module_is_a_fuzz_target() -> None:
    targets = {target.source: target.module for target in fuzzer().TARGETS.values()}
    c_files = {str(path.relative_to(ROOT)) for path in (ROOT / "native").glob("*.c")}
    assert set(targets) == c_files
    assert targets == built_modules()
