"""Errors shown to users: one line, naming the thing that is wrong and what is allowed."""


class ConfigError(ValueError):
    """A bad configuration value (machine, workload, duration, option...).

    The CLI prints it on one line to stderr and exits with status 2.
    """


class CoreUnavailableError(RuntimeError):
    """The compiled extension `schedsim._core` is missing (run `make build`)."""
