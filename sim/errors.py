"""The error of a design that cannot be verified as described: its own module, so the front end,
the port binding and the design can all raise it without importing each other."""

from fpforge.rtl.options import OptionError

__all__ = ["DesignError"]


class DesignError(OptionError):
    """A design that cannot be verified as described (unreadable source, missing port, width
    mismatch, ...): exit 2 on the command line."""
