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

ROOT = Path(__file__).resolve().parents[2]
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


def _code_lines(package, skip=()):
    """Non-blank lines of ``package``'s .py files (but ``skip``) that are neither comments
    nor docstrings."""
    import ast

    total = 0
    for path in sorted((ROOT / package).glob("*.py")):
        if path.name in skip:
            continue
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
        # the engine, as page 01 counts it: its modules, without the gradient checks
        "lines of code": _code_lines("sandbox/autograd", skip={"gradcheck.py"}),
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


# ---------------------------------------------------------------- drift of the numbers
TIME_CLAIM = re.compile(r"about\s+(\d+(?:-\d+)?)\s+s\s+on\s+a\s+2-core\s+machine")


def _default_run():
    """(config, parameters, samples/epoch, steps) of a plain ``sandbox train``."""
    from sandbox.cli import commands as cli
    from sandbox.cli.train_options import config_from_args
    from sandbox.data import Shapes
    from sandbox.train import build_model

    cfg = config_from_args(cli.build_parser().parse_args(["train"]))
    classes = Shapes(1).num_classes
    params = build_model(cfg, 1, classes).num_parameters()
    steps = cfg.epochs * (cfg.train_samples // cfg.batch_size)
    return cfg, params, cfg.train_samples, steps


def test_readme_transcript_is_what_sandbox_train_prints():
    from sandbox.cli import commands as cli

    text = (ROOT / "README.md").read_text()
    section = text.split("## What `sandbox train` prints", 1)[1]
    transcript = section.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    cfg, params, samples, steps = _default_run()
    assert transcript[0] == cli.train_header(cfg, params, samples, steps)
    assert f"{steps}/{steps}" in transcript[1]  # the finished progress bar
    epochs = [line for line in transcript if line.startswith("epoch ")]
    assert epochs[-1].startswith(f"epoch {cfg.epochs - 1}:")
    last_iou = re.search(r"mean IoU (\d\.\d{4})", epochs[-1]).group(1)
    done = next(line for line in transcript if line.startswith("done: "))
    assert done.startswith(f"done: {steps} steps in ") and f"val mean IoU {last_iou}," in done
    claimed = re.search(r"validation mean IoU\s+about\s+(\d\.\d+)", text).group(1)
    assert abs(float(claimed) - float(last_iou)) < 0.005 + 1e-9, (claimed, last_iou)
    out = cfg.out
    assert f"checkpoints: {out}/last.ckpt, {out}/best.ckpt; log: {out}/log.jsonl" in transcript
    assert transcript[-2:] == [f"plot: {out}/curves.png", f"plot: {out}/predictions.png"]


def test_run_time_claims_agree_with_each_other():
    from sandbox.cli import commands as cli

    pages = {
        "README.md": (ROOT / "README.md").read_text(),
        "docs/05-training-a-unet.md": (ROOT / "docs" / "05-training-a-unet.md").read_text(),
        "sandbox train --help": cli.DEFAULT_RUN_TIME,
        "examples/train_shapes.py": (ROOT / "examples" / "train_shapes.py").read_text(),
    }
    claims = {name: TIME_CLAIM.findall(text) for name, text in pages.items()}
    assert all(claims.values()), f"a page lost its run-time claim: {claims}"
    assert len({c for found in claims.values() for c in found}) == 1, claims
    for name, text in pages.items():  # no older wording left behind
        for stale in ("two minutes", "2 minutes", "80-95 s", "about 80 s"):
            assert stale not in text, (name, stale)
