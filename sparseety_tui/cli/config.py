"""Config files: ``--config FILE`` (YAML or TOML, by extension) and the user's
``$XDG_CONFIG_HOME/sparseety-tui/config.toml``, as defaults of the command's options.

Precedence, highest first: the command line, ``--config FILE``, the user file, the
built-in defaults. A file's keys are checked before anything runs: an unknown key or a bad
value is one line naming the key path (with a "did you mean"), exit 2.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparseety_tui.cli.config_keys import BY_PATH, FORMAT_ALIASES, KEYS, Key
from sparseety_tui.cli.errors import CliError
from sparseety_tui.cli.redact_key import config_dir
from sparseety_tui.core.text import quote
from sparseety_tui.sources import os_reason

USER_FILE = "config.toml"
BUILT_IN = "built-in"

SECTIONS = sorted({k.path.rsplit(".", 1)[0] for k in KEYS if "." in k.path})


@dataclass(frozen=True, slots=True)
class Setting:
    value: Any
    source: str  # BUILT_IN, "user file PATH", "--config PATH"


def user_file(environ: Mapping[str, str] | None = None) -> str:
    return os.path.join(config_dir(environ), USER_FILE)


def read_document(path: str) -> dict[str, Any]:
    """The mapping in a YAML (``.yaml``/``.yml``, safe loader) or TOML file."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise CliError(f"config {quote(path)}: {os_reason(exc)}") from None
    if path.endswith((".yaml", ".yml")):
        import yaml

        try:
            document = yaml.safe_load(data.decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            reason = " ".join(str(exc).split())
            raise CliError(f"config {quote(path)}: not valid YAML: {reason}") from None
    else:
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10
            import tomli as tomllib
        try:
            document = tomllib.loads(data.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise CliError(f"config {quote(path)}: not valid TOML: {exc}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise CliError(f"config {quote(path)}: expected a mapping of sections and keys")
    return document


def flatten(document: Mapping[str, Any], path: str) -> dict[str, Any]:
    """``{key path: value}`` of a file's document, every key and value checked."""
    out: dict[str, Any] = {}
    _walk(document, "", path, out)
    return out


def _walk(node: Mapping[str, Any], prefix: str, path: str, out: dict[str, Any]) -> None:
    for name, value in node.items():
        where = f"{prefix}{name}"
        if where == "redact" and not isinstance(value, dict):  # ``redact: true`` / ``text``
            out["redact.mode"] = _check(BY_PATH["redact.mode"], _mode(value), path)
        elif where in BY_PATH:
            out[where] = _check(BY_PATH[where], value, path)
        elif where in SECTIONS and isinstance(value, dict):
            _walk(value, where + ".", path, out)
        else:
            raise CliError(f"config {quote(path)}: unknown key {where!r}{_did_you_mean(where)}")


def _mode(value: Any) -> Any:
    return {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value


def _did_you_mean(where: str) -> str:
    names = [k.path for k in KEYS] + SECTIONS
    close = difflib.get_close_matches(where, names, n=1, cutoff=0.6)
    if not close:  # a misspelt last part: compare it within its section
        head, _, last = where.rpartition(".")
        tails = [k.path.rpartition(".")[2] for k in KEYS if k.path.rpartition(".")[0] == head]
        close = [f"{head}.{t}" for t in difflib.get_close_matches(last, tails, n=1)]
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check(key: Key, value: Any, path: str) -> Any:
    def bad(expected: str) -> CliError:
        return CliError(f"config {quote(path)}: {key.path}: expected {expected}, got {value!r}")

    kind = key.kind
    if kind == "bool" and not isinstance(value, bool):
        raise bad("true or false")
    if kind == "int" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise bad("a whole number >= 0")
    if kind == "str":
        if not isinstance(value, str):
            raise bad("a string")
        value = FORMAT_ALIASES.get(value, value) if key.path == "input.format" else value
        if key.choices and value not in key.choices:
            raise bad("one of " + ", ".join(key.choices))
    if kind in ("paths", "strs"):
        value = [value] if kind == "paths" and isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad("a string or a list of strings" if kind == "paths" else "a list of strings")
    if kind == "actions" and (
        not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())
    ):
        raise bad("a table of rule = action")
    if kind == "rules":
        value = _rules(key, value, bad)
    return value


def _rules(key: Key, value: Any, bad: Any) -> list[tuple[str, str, str]]:
    if not isinstance(value, list):
        raise bad("a list of {name, pattern, action}")
    rules = []
    for item in value:
        if not isinstance(item, dict) or set(item) - {"name", "pattern", "action"}:
            raise bad("a list of {name, pattern, action}")
        name, pattern = item.get("name"), item.get("pattern")
        if not isinstance(name, str) or not isinstance(pattern, str):
            raise bad("each rule with a name and a pattern (strings)")
        rules.append((name, pattern, str(item.get("action", "mask"))))
    return rules


def load(config_path: str | None, environ: Mapping[str, str] | None = None) -> dict[str, Setting]:
    """Every key's effective value and where it came from (command line aside)."""
    settings = {k.path: Setting(k.default, BUILT_IN) for k in KEYS}
    layers = [(user_file(environ), "user file")]
    if config_path is not None:
        layers.append((config_path, "--config"))
    for path, label in layers:
        if label == "user file" and not os.path.exists(path):
            continue
        for where, value in flatten(read_document(path), path).items():
            settings[where] = Setting(value, f"{label} {quote(path)}")
    return settings


def config_arg(argv: Sequence[str]) -> str | None:
    """``--config FILE`` (or ``--config=FILE``) from the arguments, before parsing them:
    the file gives the defaults the parse then uses."""
    found = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--config" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--config="):
            found = arg.split("=", 1)[1]
    return found


def apply(
    command: str, subparser: argparse.ArgumentParser, settings: Mapping[str, Setting]
) -> None:
    """Set the options' defaults of one subcommand from the files' values."""
    dests = {action.dest for action in subparser._actions}
    defaults = {}
    for key in KEYS:
        setting = settings[key.path]
        if key.commands and command not in key.commands:
            continue
        if key.dest in dests and setting.source != BUILT_IN:
            defaults[key.dest] = setting.value
    subparser.set_defaults(**defaults)
