"""make bench-golden's target lines (golden/bench_golden.py ``target_lines``): the fp8e4m3 rne
cast against 20x ml_dtypes, the smallest of every other cast and mode against 10x, per wall and
per CPU second, each verdict a comparison that can fail; and its count of a call's page
faults (``timed``)."""

import mmap

from fpforge.golden.bench_golden import (CAST_TARGET, HEADLINE, HEADLINE_TARGET, target_lines,
                                         timed)

BOUNDS = {"float16": (4.4, 3.0), "bfloat16": (0.5, 0.4), "float8_e5m2": (32.0, 25.0),
          "float8_e4m3fn": (31.0, 24.0)}


def _verdicts(headline, ratios):
    return [line.split("x  ")[-1].split("  (")[0].strip()
            for line in target_lines(headline, ratios, BOUNDS)[1:]]


def test_each_target_is_met_at_its_ratio_and_missed_below_it():
    ratios = {("float16", "rtz"): (30.0, 30.0), ("bfloat16", "rne"): (CAST_TARGET, 40.0),
              ("float8_e5m2", "rup"): (50.0, 10.5)}
    at = (HEADLINE_TARGET, HEADLINE_TARGET)
    assert _verdicts(at, ratios) == ["met"] * 4
    lines = target_lines(at, ratios, BOUNDS)
    assert "(bfloat16 rne; its memory floor allows 0.5x)" in lines[3]
    assert "(float8_e5m2 rup; its memory floor allows 25.0x)" in lines[4]
    below = ratios | {("float8_e5m2", "rup"): (50.0, CAST_TARGET - 0.1)}
    assert _verdicts((HEADLINE_TARGET - 0.1, 25.0), below) == ["NOT met", "met", "met",
                                                                "NOT met"]


def test_the_headline_cast_is_judged_by_its_own_row_and_is_not_among_the_others():
    # the every-cast table's cell of the headline cast (9x) is no other cast's smallest
    ratios = {HEADLINE: (9.0, 9.0), ("float16", "rne"): (11.0, 11.0)}
    assert _verdicts((21.0, 12.0), ratios) == ["met", "NOT met", "met", "met"]
    assert "(float16 rne;" in target_lines((21.0, 12.0), ratios, BOUNDS)[3]


PAGES = 256


def _fresh_pages():
    """A fresh anonymous mapping of PAGES pages, each written once: a page fault apiece."""
    with mmap.mmap(-1, PAGES * mmap.PAGESIZE) as m:
        for i in range(PAGES):
            m[i * mmap.PAGESIZE] = 1


def test_a_call_that_writes_fresh_pages_is_counted_with_its_faults():
    fresh, reused = timed(_fresh_pages, 5), timed(lambda: None, 5)
    assert fresh.faults >= PAGES and reused.faults < PAGES / 8
    assert fresh.wall > 0 and fresh.cpu >= 0
