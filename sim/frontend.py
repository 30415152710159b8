"""How fpforge reads a user's Verilog and SystemVerilog: the ports of a module as a front end
elaborates them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PortInfo"]


@dataclass(frozen=True)
class PortInfo:
    """One port of an elaborated module: ``direction`` ("input" or "output"), ``width`` in bits,
    and its packed dimensions ``dims`` as (msb, lsb) pairs, outermost first (``logic [2:0][15:0]
    ops`` is ((2, 0), (15, 0)); a 1-bit port is ((0, 0),)). Packed structs and enums are one
    dimension of their width."""

    direction: str
    width: int
    dims: tuple[tuple[int, int], ...]

    @property
    def is_input(self) -> bool:
        return self.direction == "input"
