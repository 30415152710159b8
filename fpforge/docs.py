"""The docs' port tables, generated from ``spec.ports()``.

A block in a Markdown file::

    <!-- fpforge ports --unit mul --format fp8e4m3 --stages 2 -->
    ...table...
    <!-- end -->

holds what ``fpforge ports`` prints for those options. tests/fpforge/test_docs.py checks that
every block is current; ``python -m fpforge.docs FILE...`` rewrites the blocks that are not.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

__all__ = ["refresh", "BLOCK"]

BLOCK = re.compile(r"(<!-- fpforge ports (?P<args>[^>]*?) -->\n)(?P<body>.*?)(<!-- end -->)",
                   re.DOTALL)


def _table(args: str) -> str:
    from fpforge.rtl.kinds import make_spec

    from .cli import parser
    from .cli.common import spec_values
    from .cli.export import port_table
    parsed = parser().parse_args(["ports", *shlex.split(args)])
    return port_table(make_spec(parsed.unit, **spec_values(parsed))) + "\n"


def refresh(text: str) -> str:
    """``text`` with every port-table block regenerated."""
    return BLOCK.sub(lambda m: m.group(1) + _table(m.group("args")) + m.group(4), text)


def main(paths) -> int:
    for path in map(Path, paths):
        text = path.read_text()
        new = refresh(text)
        if new != text:
            path.write_text(new)
            print(f"refreshed {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
