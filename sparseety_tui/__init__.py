"""sparseety-tui: see what a sparse LLM serving system really computed."""

__version__ = "0.1.0"
