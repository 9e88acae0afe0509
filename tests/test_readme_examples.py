"""README's runnable examples say what they print: each ```python block that opens with
``# NAME.py`` is run as that script, and every line of the block after it (the report it shows)
must appear in what the script writes (runs of spaces, which align columns, count as one)."""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n# (\w+\.py)[^\n]*\n(.*?)```\n```\n(.*?)```",
                    (ROOT / "README.md").read_text(), re.S)


def test_the_readme_has_its_examples():
    assert {name for name, _, _ in BLOCKS} >= {"my_job.py", "dp_job.py"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,code,shown", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_an_example_prints_the_report_it_shows(tmp_path, name, code, shown):
    (tmp_path / name).write_text(code)
    out = subprocess.run([sys.executable, name], cwd=tmp_path, capture_output=True, text=True,
                         timeout=100)
    printed = squeeze(out.stdout + out.stderr)
    assert out.returncode == 1, printed[-2000:]             # the report is the exit
    for line in shown.strip().splitlines():
        assert squeeze(line) in printed, (line, printed[-2000:])


def squeeze(text: str) -> str:
    return re.sub(r"[ ]+", " ", text.strip())
