"""vera: clinically grounded VERA-MH safety evaluations of mental-health chatbots."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("vera-eval")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
