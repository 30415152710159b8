"""How a unit is pipelined, apart from what it computes: :class:`Pipeline` (stages and cuts).

Every spec holds one (``spec.pipeline``); ``spec.numerics()`` is the spec with ``Pipeline()``,
what the golden model computes and caches on. ``stages`` is the latency in cycles; ``cuts``
names the cut points where registers sit, among those the kind's datapath has
(``Spec.CUT_POINTS``, in dataflow order). Without cuts, ``stages`` fills the kind's default
order (``Spec.DEFAULT_CUTS``); stages beyond the cuts are output registers. Each name's initial
is unique within a kind: module names carry the cuts as initials (``_s2_dr``).

Plain Python: no Amaranth, no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import OptionError

__all__ = ["Pipeline", "parse_cuts"]


def _names(cuts) -> list:
    return [c.strip() for c in cuts.split(",")] if isinstance(cuts, str) else list(cuts)


def parse_cuts(cuts, points: tuple[str, ...], unit: str = "") -> tuple[str, ...]:
    """``"core,round"`` or a sequence of cut names -> the names in dataflow order."""
    names = _names(cuts)
    bad = [c for c in names if c not in points]
    if bad or len(set(names)) != len(names):
        where = f" of {unit}" if unit else ""
        given = ",".join(map(str, names))
        if not points:
            raise OptionError(f"{unit or 'this unit'} has no cut points (its stages are output "
                              f"registers), so no cuts, not {given!r}")
        raise OptionError(f"cuts{where} must be distinct names among {', '.join(points)} "
                          f"(comma-separated), not {given!r}")
    return tuple(c for c in points if c in names)


@dataclass(frozen=True)
class Pipeline:
    """``stages`` register stages (the latency), ``cuts`` the named cut points that hold them
    (empty: the kind's default order); at most ``stages`` cuts."""

    stages: int = 0
    cuts: tuple[str, ...] = ()

    def __post_init__(self):
        s = self.stages
        if not isinstance(s, int) or isinstance(s, bool) or s < 0:
            raise OptionError(f"stages must be a non-negative integer, not {s!r}")
        names = _names(self.cuts)
        if not all(isinstance(c, str) and c for c in names) or len(set(names)) != len(names):
            raise OptionError(f"cuts must be distinct cut-point names (comma-separated), "
                              f"not {self.cuts!r}")
        if len(names) > s:
            raise OptionError(f"{len(names)} cut(s) ({', '.join(names)}) need at least as many "
                              f"stages, not {s}")
        object.__setattr__(self, "cuts", tuple(names))

    def default_cuts(self, order: tuple[str, ...]) -> tuple[str, ...]:
        """Where ``stages`` alone puts registers: the first ones of ``order``."""
        return order[:self.stages]

    def placed(self, points: tuple[str, ...], order: tuple[str, ...],
               unit: str) -> "Pipeline":
        """This pipeline on a kind's cut ``points`` (default ``order``): its cuts checked and
        put in dataflow order; the default placement spelled by ``stages`` alone (one spec,
        one name, one export)."""
        cuts = parse_cuts(self.cuts, points, unit)
        return Pipeline(self.stages, () if cuts == self.default_cuts(order) else cuts)

    def cut_points(self, order: tuple[str, ...]) -> tuple[str, ...]:
        """Where the registers are; stages beyond them are output registers."""
        return self.cuts or self.default_cuts(order)

    def name_parts(self) -> list[str]:
        """The module name's pipeline parts: ``s2`` and the cuts' initials (``dr``)."""
        return ([f"s{self.stages}"] if self.stages else []) + \
            (["".join(c[0] for c in self.cuts)] if self.cuts else [])

    def describe(self) -> str:
        """The header's pipeline line when the cuts are not the default placement."""
        return f"pipeline    registers after {', '.join(self.cuts)}"
