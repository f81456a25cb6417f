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


# -- counts -------------------------------------------------------------------------
# A page may name how many of something the code has only if the number is derived
# from the code here, so the page fails the tests when the code changes ("five
# modes" stayed in a page long after a sixth mode was tested beside it).  Nouns
# mapped to None have no single true count (aliases, extras): name them instead.
NUMBER_WORDS = "one two three four five six seven eight nine ten eleven twelve".split()
COUNT_PHRASE = re.compile(
    r"\b(about |around |over )?(" + "|".join(NUMBER_WORDS) + r"|\d[\d,]*) "
    r"((?:[a-z-]+ ){0,2}?)(modes|ops|operations|exercises|stubs|lines of code)\b",
    re.I,
)


def _code_lines(package):
    """Non-blank lines of ``package``'s .py files that are neither comments nor docstrings."""
    import ast

    total = 0
    for path in sorted((ROOT / package).glob("*.py")):
        src = path.read_text()
        doc = set()
        for node in ast.walk(ast.parse(src)):
            body = getattr(node, "body", None)
            if (
                isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                doc.update(range(body[0].lineno, body[0].end_lineno + 1))
        total += sum(
            1
            for i, line in enumerate(src.splitlines(), 1)
            if line.strip() and not line.strip().startswith("#") and i not in doc
        )
    return total


def true_counts():
    n_exercises = len(list((ROOT / "exercises" / "solutions").glob("ex*.py")))
    return {
        "exercises": n_exercises,
        "stubs": n_exercises,
        "lines of code": _code_lines("sandbox/autograd"),  # the engine, as page 01 counts it
        "modes": None,
        "ops": None,
        "operations": None,
    }


def prose(text):
    """``text`` without fenced blocks (program output may name any count)."""
    return FENCE.sub("", text)


COUNTED_PAGES = DOCS + [ROOT / "README.md", ROOT / "exercises" / "README.md"]


def wrong_counts(text):
    """Messages for each count phrase in ``text``'s prose that the code does not bear out."""
    truth = true_counts()
    out = []
    for m in COUNT_PHRASE.finditer(prose(text)):
        about, number, _, noun = m.groups()
        noun = noun.lower()
        number = number.lower().replace(",", "")
        n = NUMBER_WORDS.index(number) + 1 if number in NUMBER_WORDS else int(number)
        want = truth[noun]
        if want is None:
            out.append(
                f"{m.group(0)!r} names a count of {noun}, which has no single true number in "
                "the code; name them instead (or derive the count in true_counts())"
            )
        elif (abs(n - want) > 0.1 * want) if about else (n != want):
            out.append(f"{m.group(0)!r}, but the code has {want}")
    return out


@pytest.mark.parametrize("page", COUNTED_PAGES, ids=lambda p: p.name)
def test_counts_named_in_pages_match_the_code(page):
    problems = wrong_counts(page.read_text())
    assert not problems, f"{page.name}: " + "; ".join(problems)


def test_count_check_catches_stale_counts():
    n = true_counts()["exercises"]
    assert wrong_counts("The engine is about 12 lines of code.") != []
    stale = f"It has {NUMBER_WORDS[n]} exercises and the five burn modes.\n```text\n2 ops\n```\n"
    problems = wrong_counts(stale)
    assert len(problems) == 2, problems
    assert "exercises" in problems[0] and "modes" in problems[1]
    assert wrong_counts(f"All {NUMBER_WORDS[n - 1]} exercises.") == []
