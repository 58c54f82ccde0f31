"""``summary --filter`` and ``extract --filter`` keep the requests the TUI's table shows for
the same expression (issue #11 acceptance: the filter half), on real and bundled logs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest
from apphelpers import REPO, async_test, make_app, settle
from jsonschema import Draft202012Validator

from sparseety_tui.cli.main import run
from sparseety_tui.ui.widgets.request_table import RequestTable

LOGS = (
    REPO / "sample_logs" / "count_only_500.jsonl",
    REPO / "sample_logs" / "kv_lines.log",
    REPO / "tests" / "data" / "real_logs" / "sglang_docsci_20260405_native_api_latest.log",
)
EXPRESSIONS = ("qwen latency>1", "state=finished prompt>100 !deepseek", "model~mixtral ttft<300ms")


async def table_ids(expression: str) -> list[str]:
    app = make_app(paths=tuple(map(str, LOGS)))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *expression, "enter")
        await settle(pilot)
        snap = app.main_screen.query_one(RequestTable).snapshot
        assert snap.query.text == expression
        ids = app.worker.snapshot.state.store.ids
        return [ids[snap.row_at(i)] for i in range(snap.visible)]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_summary_and_extract_filters_agree_with_the_table(
    expression: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shown: list[str] = []

    @async_test
    async def read_table() -> None:
        shown.extend(await table_ids(expression))

    read_table()
    assert 0 < len(shown) < 560  # the filter keeps some requests, not all

    assert run(["extract", "--filter", expression, *map(str, LOGS)]) == 0
    records = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert Counter(r["request_id"] for r in records) == Counter(shown)

    assert run(["summary", "--json", "--filter", expression, *map(str, LOGS)]) == 0
    document = orjson.loads(capsys.readouterr().out)
    kept = {k: document["filter"][k] for k in ("expression", "requests", "of")}
    assert kept == {"expression": expression, "requests": len(shown), "of": 562}
    assert document["requests"]["count"] == len(shown)
    prompt_sum = sum(r["prompt_tokens"] for r in records if r["prompt_tokens"] is not None)
    assert document["requests"]["prompt_tokens"] == prompt_sum
    # Heat maps are counted per layer, not kept per request: the filter says they are whole.
    assert "experts" in document["filter"]["not_filtered"]
    schema = orjson.loads((REPO / "docs" / "summary.schema.json").read_bytes())
    assert list(Draft202012Validator(schema).iter_errors(document)) == []


def test_a_bad_filter_is_a_one_line_error_before_reading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "never-read.log"
    for command in ("summary", "extract"):
        with pytest.raises(SystemExit) as exited:
            from sparseety_tui.cli.main import main

            main([command, "--filter", "bogus>1", str(missing)])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert "--filter: unknown field 'bogus'" in err and "never-read" not in err
