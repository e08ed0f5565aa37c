"""Reports: the human summary of a run (more formats come with `schedsim compare`)."""

from .summary import format_value, print_summary

__all__ = ["format_value", "print_summary"]
