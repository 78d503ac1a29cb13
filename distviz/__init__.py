"""distviz: a visual laboratory for distributional gradient boosting."""

from distviz.errors import ConfigError, DataError

__all__ = ["ConfigError", "DataError", "__version__"]
__version__ = "0.1.0"
