"""The probe's version: the one place it is written (pyproject.toml reads it
from here, the stream header carries it)."""
__version__ = "1.1"
