"""Config files: the tutorial's YAML keys, the user file, precedence, `config`, errors."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from cli_helpers import summary_json

from sparseety_tui.cli import config
from sparseety_tui.cli.config_keys import KEYS
from sparseety_tui.cli.main import main, parse, run

ROOT = Path(__file__).resolve().parents[2]
TWO = ROOT / "sample_logs" / "two_records.jsonl"
BATCH = ROOT / "sample_logs" / "count_only_500.jsonl"


def exit_code(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return int(exc.value.code or 0)


def test_extract_reads_log_path_and_writes_result_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "logs" / "sparse_log.jsonl").write_bytes(TWO.read_bytes())
    cfg = tmp_path / "config.yaml"
    cfg.write_text((ROOT / "docs" / "config.example.yaml").read_text())
    assert run(["extract", "--config", str(cfg)]) == 0
    out = tmp_path / "results" / "sparse_result.jsonl"
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [r["request_id"] for r in records] == ["req-001", "req-0007"]
    assert records[0]["prompt"] == "Hello, how are you today?"  # output.save_tokens: true
    assert records[0]["source"]["format"] == "trace"  # input.format: jsonl
    # The totals of the written records are summary's of the log.
    document = summary_json(capsys, str(tmp_path / "logs" / "sparse_log.jsonl"))
    assert sum(r["prompt_tokens"] for r in records) == document["requests"]["prompt_tokens"]


@pytest.mark.parametrize(
    ("body", "named", "suggestion"),
    [
        ("input:\n  log_pth: x.jsonl\n", "input.log_pth", "input.log_path"),
        ("ouput:\n  result_path: y\n", "ouput", "output"),
        ("extract:\n  include_skiped: true\n", "extract.include_skiped", "extract.include_skipped"),
    ],
)
def test_a_misspelt_key_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, named: str, suggestion: str
) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(body)
    assert exit_code(["extract", "--config", str(cfg), str(TWO)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"unknown key '{named}'" in err and f"did you mean '{suggestion}'" in err


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("extract:\n  max_tokens_per_request: lots\n", "extract.max_tokens_per_request"),
        ("output:\n  save_tokens: 'yes'\n", "output.save_tokens"),
        ("theme: purple\n", "theme"),
        ("redact:\n  mode: maybe\n", "redact.mode"),
        ("serve:\n  port: true\n", "serve.port"),
        ("input:\n  log_path: [1, 2]\n", "input.log_path"),
        ("- a list\n", "a mapping"),
        ("input: [unclosed\n", "not valid YAML"),
    ],
)
def test_a_bad_value_exits_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, named: str
) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(body)
    assert exit_code(["summary", "--config", str(cfg), str(TWO)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and named in err


def test_a_bad_redaction_rule_in_config_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('[redact]\nmode = "on"\n[redact.actions]\nemial = "mask"\n')
    assert exit_code(["extract", "--config", str(cfg), str(TWO)]) == 2
    assert "redact.actions.emial" in capsys.readouterr().err


def test_precedence_command_line_config_user_file_builtin(tmp_path: Path) -> None:
    user = Path(config.user_file())
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[serve]\nport = 9001\nhost = "127.0.0.2"\nworkers = 3\n')
    cfg = tmp_path / "c.toml"
    cfg.write_text("[serve]\nport = 9002\n")
    args = parse(["serve"])[1]
    assert (args.port, args.host, args.workers) == (9001, "127.0.0.2", 3)
    args = parse(["serve", "--config", str(cfg)])[1]
    assert (args.port, args.host) == (9002, "127.0.0.2")
    args = parse(["serve", "--config", str(cfg), "--port", "9003", "--worker", "4"])[1]
    assert (args.port, args.host, args.workers) == (9003, "127.0.0.2", 4)
    user.unlink()
    assert parse(["serve"])[1].port == 8765  # built-in


def test_config_command_says_where_each_value_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user = Path(config.user_file())
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('theme = "light"\n')
    cfg = tmp_path / "c.yaml"
    cfg.write_text("redact: text\nextract:\n  max_tokens_per_request: 100\n")
    assert run(["config", "--config", str(cfg)]) == 0
    lines = {line.split(" = ")[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert set(lines) == {k.path for k in KEYS}
    assert lines["theme"].startswith('theme = "light"') and "user file" in lines["theme"]
    assert '"text"' in lines["redact.mode"] and "--config" in lines["redact.mode"]
    assert "= 100" in lines["extract.max_tokens_per_request"]
    assert lines["serve.port"].startswith("serve.port = 8765") and "built-in" in lines["serve.port"]


def test_redact_in_config_turns_it_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"request_id": "a", "prompt": "mail ann@example.com", "prompt_tokens": 3}\n')
    cfg = tmp_path / "c.yaml"
    cfg.write_text("redact: true\n")
    assert run(["extract", "--text", "--config", str(cfg), str(log)]) == 0
    assert "ann@example.com" not in capsys.readouterr().out
    assert run(["extract", "--text", "--config", str(cfg), "--redact", "off", str(log)]) == 0
    assert "ann@example.com" in capsys.readouterr().out  # the command line wins


def test_the_example_files_load_and_cover_every_key() -> None:
    toml = config.flatten(config.read_document(str(ROOT / "docs" / "config.example.toml")), "t")
    yaml = config.flatten(config.read_document(str(ROOT / "docs" / "config.example.yaml")), "y")
    assert {k.path for k in KEYS} - set(toml) <= {
        "tokenizer",
        "model_config",
        "format",
        "input.log_path",
        "input.format",
        "output.result_path",
        "extract.max_tokens_per_request",
        "extract.limit",
        "serve.token_file",
        "redact.key_file",
    }  # those are there, commented out: no value suits every machine
    text = (ROOT / "docs" / "config.example.toml").read_text()
    for key in KEYS:
        assert key.path.rpartition(".")[2] in text, key.path
    assert yaml["input.format"] == "trace" and yaml["redact.mode"] == "off"
    assert toml["redact.rules"] == [("ticket", r"TICKET-\d+", "hash")]


def test_no_config_no_paths_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(["extract"]) == 2
    err = capsys.readouterr().err
    assert "no PATH given" in err and len(err.strip().splitlines()) == 1
    assert os.environ["XDG_CONFIG_HOME"] in config.user_file()


def test_section_keys_default_their_own_command_only(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"input:\n  log_path: {TWO}\noutput:\n  result_path: out.jsonl\n")
    assert parse(["extract", "--config", str(cfg)])[1].output == "out.jsonl"
    # import-routing has an --output too: the tutorial's extract output is not its.
    args = parse(["import-routing", "--config", str(cfg), "resp.json", "-o", "routing.jsonl"])[1]
    assert args.output == "routing.jsonl"
    assert parse(["serve", "--config", str(cfg)])[1].paths == [str(TWO)]


def test_only_commands_that_redact_take_redact(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["config"], ["import-routing", "r.json", "-o", "out.jsonl"]):
        with pytest.raises(SystemExit):
            parse([*command, "--redact"])
        assert "unrecognized arguments: --redact" in capsys.readouterr().err
