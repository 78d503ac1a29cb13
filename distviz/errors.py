"""Errors a user can cause, each carrying one sentence that says what is wrong and how to fix it."""


class DistvizError(Exception):
    """Base class of the errors that pages show as a single sentence."""


class DataError(DistvizError, ValueError):
    """Bad data: a missing column, NaN, a value outside a family's support, a malformed file."""


class ConfigError(DistvizError, ValueError):
    """A parameter out of range or an unknown option name."""
