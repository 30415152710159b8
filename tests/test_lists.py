"""The lists kept true: a fact written down twice drifts, so each list the repository spells out
is checked against the one it copies. Every spec option reaches the Makefile; ``fpforge
formats`` lists the P3109 family beside the catalog; prose lists of kinds are the registry's;
every repository path a source or a doc cites exists. Each check can fail (its ``_can_fail``
test feeds it a stale copy)."""

import re
import subprocess
from pathlib import Path

from fpforge.cli import main
from fpforge.rtl.formats import CATALOG
from fpforge.rtl.format_names import P3109_CONFORMANCE, resolve
from fpforge.rtl.kinds import BASIC_UNITS, KINDS, NONCOMP_UNITS, SHAPES, SPEC_OPTIONS, make_spec
from kind_examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]


def tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    return [ROOT / p for p in out if (ROOT / p).is_file()]


# ----- every spec option reaches the Makefile ----------------------------------------------------

def makefile_gaps(text: str) -> list[str]:
    """What the Makefile lacks for each spec option: its variable (``VAR ?=``), its place in
    SPEC_ARGS (a value passed as ``$(call opt,--flag,$(VAR))``, a switch as
    ``$(if $(filter V,$(VAR)),--flag)``) and its mention in ``make help``'s unit options."""
    joined = text.replace("\\\n", " ")
    spec_args = re.search(r"^SPEC_ARGS = (.*)$", joined, re.M).group(1)
    echoes = re.findall(r'^\t@echo "(.*)"$', text, re.M)
    first = next(i for i, e in enumerate(echoes) if e.startswith("any unit option:"))
    last = next(i for i, e in enumerate(echoes) if "fpforge units lists" in e)
    help_text = " ".join(echoes[first:last + 1])
    gaps = []
    for o in SPEC_OPTIONS:
        var, _, value = o.make.partition("=")
        if not re.search(rf"^{var}\s*\?=", text, re.M):
            gaps.append(f"{o.flag}: no {var} ?=")
        if o.dest == "unit":
            passed = "$(call opt,--unit,$(UNIT))" in joined and "--unit $(or $(UNIT)" in joined
        elif o.switch:
            passed = f"$(if $(filter {value},$({var})),{o.flag})" in spec_args
        else:
            passed = f"$(call opt,{o.flag},$({var}))" in spec_args
        if not passed:
            gaps.append(f"{o.flag}: not passed as {var}")
        if not re.search(rf"(?<![\w]){re.escape(o.make)}(?![\w])", help_text):
            gaps.append(f"{o.flag}: {o.make} not in make help")
    return gaps


def test_every_spec_option_reaches_the_makefile():
    assert makefile_gaps((ROOT / "Makefile").read_text()) == []


def test_makefile_check_can_fail():
    text = (ROOT / "Makefile").read_text()
    stale = text.replace(" $(call opt,--sum-group,$(SUM_GROUP))", "").replace(" SUM_GROUP ", " ")
    assert makefile_gaps(stale) == ["--sum-group: not passed as SUM_GROUP",
                                    "--sum-group: SUM_GROUP not in make help"]


# ----- fpforge formats lists the P3109 family ----------------------------------------------------

def test_formats_lists_the_p3109_family(capsys):
    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    assert "binary<K>p<P><s|u><e|f> is a --format" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("binary")}
    # the conformance set and every catalog format that is a P3109 format, code for code
    expected = list(dict.fromkeys([*P3109_CONFORMANCE, *(f.p3109_name.lower() for f in
                                                         CATALOG.values() if f.p3109_name)]))
    assert list(rows) == expected and "binary8p3se" in rows
    for name, line in rows.items():
        fmt = resolve(name)
        equal = [c for c, f in CATALOG.items() if f == fmt]
        assert line.split()[1:3] == (["=", ", ".join(equal)] if equal else ["-", fmt.name])
        assert line.endswith(fmt.describe())
    assert "= float8_e4m3fnuz" in rows["binary8p4sf"] and rows["binary8p4se"].split()[1] == "-"


# ----- the registry's kind names are the one list ------------------------------------------------

_NAMES = "|".join(KINDS)
KIND = rf"`?(?<![\w/.-])({_NAMES})(?![\w/-])`?"
# Four or more kinds in a row: "mul, add, sub and fma", "mul|add|sub|fma", "`mul`, `add`..."
_ONE = rf"`?(?<![\w/.-])(?:{_NAMES})(?![\w/-])`?"
KIND_RUN = re.compile(rf"{_ONE}(?:(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\|){_ONE}){{3,}}")


def registry_lists() -> list[set[str]]:
    """Every list of kinds the registry defines: all of them, each shape's (scalar, block),
    the default units, the non-computational ones, the kinds that take each option, that have each cut point or each
    port; each also within a shape."""
    shapes = {shape: {k for k in KINDS if KINDS[k].shape == shape} for shape in SHAPES}
    lists = [set(KINDS), set(BASIC_UNITS), set(NONCOMP_UNITS), *shapes.values()]
    lists += [{k for k in KINDS if o.dest in KINDS[k].spec.OPTIONS} for o in SPEC_OPTIONS]
    points = {p for k in KINDS for p in KINDS[k].spec.CUT_POINTS}
    lists += [{k for k in KINDS if p in KINDS[k].spec.CUT_POINTS} for p in points]
    ports = {k: {p.name for values in EXAMPLES[k] for p in make_spec(k, **values).ports()}
             for k in KINDS}
    lists += [{k for k in KINDS if name in ports[k]} for name in set().union(*ports.values())]
    return [s & shape for s in lists for shape in (set(KINDS), *shapes.values()) if s & shape]


def stale_kind_lists(text: str) -> list[tuple[int, str]]:
    """(line, kinds) of every run of four or more kinds in ``text`` that is not one of the
    registry's lists."""
    lists = registry_lists()
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        for m in KIND_RUN.finditer(line):
            named = set(re.findall(KIND, m.group(0)))
            if named not in lists:
                out.append((i, ", ".join(sorted(named))))
    return out


def test_no_doc_spells_out_a_stale_list_of_kinds():
    stale = [f"{p.relative_to(ROOT)}:{line}: {kinds}" for p in tracked("*.md")
             for line, kinds in stale_kind_lists(p.read_text())]
    assert stale == []


def test_kind_list_check_can_fail():
    text = ("The scalar kinds: mul, add, sub, fma and cvt.\n"        # fms left out
            "`--unit mul|add|sub|fma|fms|cvt|div|sqrt` and the basic mul, add, fma, cvt.\n"
            "Examples: add fp8e5m2, sub fp6e2m3, fma fp4e2m1, cvt fp16.\n"
            "make synth UNIT=mul|add|sub|fma|cvt\n")
    assert stale_kind_lists(text) == [(1, "add, cvt, fma, mul, sub"),
                                      (4, "add, cvt, fma, mul, sub")]


# ----- every cited repository path exists --------------------------------------------------------

def cited_paths(path: Path, tops: set[str]) -> list[tuple[int, str]]:
    """(line, path) of every repository-relative path ``path`` cites: a top-level folder of the
    repository followed by a path (``rtl/kinds.py``, ``docs/synth/``). Not placeholders
    (``<name>``, ``*``, ``...``) and not generated output (``build/``, not a tracked folder)."""
    pattern = re.compile(r"(?<![\w./<>{}$-])((?:%s)/[\w./-]*)" % "|".join(map(re.escape, tops)))
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        for m in pattern.finditer(line):
            cited = m.group(1).rstrip(".")
            following = line[m.end():m.end() + 1]
            if following in ("<", "*", "{") or "..." in m.group(1):
                continue
            out.append((i, cited))
    return out


def missing_paths(path: Path, tops: set[str]) -> list[tuple[int, str]]:
    """(line, path) of the cited paths that exist neither from the repository root nor beside
    ``path`` (a Markdown link relative to its file); ``fpforge/<part>/...`` is the installed
    wheel's name of the repository's ``<part>/...``."""
    missing = []
    for line, cited in cited_paths(path, tops):
        head, _, rest = cited.partition("/")
        candidates = [ROOT / cited, path.parent / cited]
        if head == "fpforge" and rest.split("/")[0] in tops:
            candidates.append(ROOT / rest)
        if not any(c.exists() for c in candidates):
            missing.append((line, cited))
    return missing


def top_folders() -> set[str]:
    """The repository's tracked top-level folders (rtl, docs, tests...): whatever they are
    when the test runs."""
    return {p.relative_to(ROOT).parts[0] for p in tracked() if len(p.relative_to(ROOT).parts) > 1
            and not p.relative_to(ROOT).parts[0].startswith(".")}


def test_every_cited_repository_path_exists():
    tops = top_folders()
    assert {"rtl", "docs", "tests"} <= tops
    # this file's own can-fail example cites missing paths on purpose, and test_layout.py's
    # can-fail examples build trees of their own under tmp_path (infra/m.py...)
    own_fixtures = {Path(__file__).resolve(), ROOT / "tests" / "test_layout.py"}
    missing = [f"{p.relative_to(ROOT)}:{line}: {cited}" for p in tracked("*.md", "*.py")
               if p not in own_fixtures for line, cited in missing_paths(p, tops)]
    assert missing == []


def test_path_check_can_fail(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("See docs/synth.md and rtl/kinds.py, [sweep](synth/sweep.md), build/x.v,\n"
                   "rtl/<name>.py, fpforge/rtl/fp_units/, golden/*.py, docs/... and docs/synth/.\n")
    assert missing_paths(doc, top_folders()) == [(1, "docs/synth.md"), (1, "synth/sweep.md")]
