"""Regenerate the README screenshots: the app, headless, on the bundled sample logs.

    python docs/screenshots/make_screenshots.py      # writes *.svg, and *.png if rsvg-convert exists

PNG conversion: rsvg-convert drops the non-breaking spaces Textual's SVG uses to align
columns, so they are turned into plain spaces with xml:space="preserve" first.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from pathlib import Path

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ui.app import AppConfig, SparseetyApp

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FILES = ("kv_lines.log", "moe_trace.jsonl", "token_stream.jsonl", "count_only_500.jsonl")
SHOTS = {
    # name: (size, theme, keys after settling)
    "main-160x48": ((160, 48), "dark", ()),
    "main-80x24-ansi": ((80, 24), "ansi", ()),
    "detail-160x48": ((160, 48), "dark", ("g", *"moe-05", "enter", "enter", *["n"] * 12)),
    "detail-80x24-ansi": ((80, 24), "ansi", ("g", *"moe-10", "enter", "enter", "n")),
    "diagnostics-120x36": ((120, 36), "dark", ("d",)),
}


async def shoot(name: str, size: tuple[int, int], theme: str, keys: tuple[str, ...]) -> Path:
    paths = tuple(f"sample_logs/{f}" for f in FILES if (REPO / "sample_logs" / f).exists())
    app = SparseetyApp(AppConfig(live=LiveOptions(paths=paths, track_rate=False), theme=theme))
    async with app.run_test(size=size) as pilot:
        await app.settle()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            if key == "enter":
                await app.settle()
                await pilot.pause()
                await app.workers.wait_for_complete()
                await pilot.pause()
        await pilot.pause()
        return Path(app.save_screenshot(filename=f"{name}.svg", path=str(HERE)))


def to_png(svg: Path) -> None:
    if shutil.which("rsvg-convert") is None:
        return
    text = svg.read_text(encoding="utf-8").replace("&#160;", " ")
    text = re.sub(r"<svg ", '<svg xml:space="preserve" ', text, count=1)
    fixed = svg.with_suffix(".tmp.svg")
    fixed.write_text(text, encoding="utf-8")
    subprocess.run(["rsvg-convert", str(fixed), "-o", str(svg.with_suffix(".png"))], check=True)
    fixed.unlink()


def main() -> None:
    os.chdir(REPO)
    for name, (size, theme, keys) in SHOTS.items():
        svg = asyncio.run(shoot(name, size, theme, keys))
        to_png(svg)
        print(svg.with_suffix(".png"))


if __name__ == "__main__":
    main()
