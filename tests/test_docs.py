"""The docs cannot rot: every ```python block in docs/*.md runs, in order, per page.

Conventions (see docs/01-engine.md):

* ```python            -- executed; all blocks of one page share one namespace and
                          run in a fresh temporary working directory;
* ```python no-run     -- illustrative only (keep these rare);
* ```python excerpt=PATH -- quoted from the source file PATH (relative to the repo):
                          each non-blank line except ``...`` must appear in PATH,
                          in order.
Images referenced as ``![...](images/NAME)`` must exist.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.S | re.M)


def blocks(path):
    """(info string, code, line number) of every fenced block in ``path``."""
    text = path.read_text()
    for m in FENCE.finditer(text):
        yield m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1


def python_pages():
    return [p for p in DOCS if any(info == "python" for info, _, _ in blocks(p))]


@pytest.mark.parametrize("page", python_pages(), ids=lambda p: p.name)
def test_python_snippets_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace = {"__name__": f"docs_{page.stem}"}
    for info, code, line in blocks(page):
        if info != "python":
            continue
        # pad with newlines so tracebacks show the line number in the .md file
        compiled = compile("\n" * line + code, str(page), "exec")
        exec(compiled, namespace)


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_fences_are_known_and_excerpts_match(page):
    for info, code, line in blocks(page):
        lang, _, rest = info.partition(" ")
        if lang != "python":
            continue
        assert rest in ("", "no-run") or rest.startswith("excerpt="), (
            f"{page.name}:{line}: unknown python fence option {rest!r}"
        )
        if not rest.startswith("excerpt="):
            continue
        source = (ROOT / rest.removeprefix("excerpt=")).read_text().splitlines()
        want = [s.rstrip() for s in code.splitlines() if s.strip() and s.strip() != "..."]
        pos = 0
        for s in want:
            try:
                pos = source.index(s, pos) + 1
            except ValueError:
                pytest.fail(
                    f"{page.name}:{line}: excerpt line not found (in order) in {rest}: {s!r}"
                )


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_images_and_links_exist(page):
    text = page.read_text()
    for target in re.findall(r"\]\(([^)#\s]+)\)", text):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


def test_no_run_blocks_are_rare():
    infos = [info for p in DOCS for info, _, _ in blocks(p)]
    assert sum(i == "python no-run" for i in infos) <= max(2, infos.count("python") // 10)
