# Type stubs of the compiled extension (crates/schedsim-py, lib name `_core`).

def run(config_json: str) -> str:
    """Run one simulation from the JSON of SimConfig; return the result JSON.

    Raises ValueError with a clear message on a bad config."""

def check(config_json: str) -> str:
    """Check the JSON of SimConfig as the core does before a run, without running it; return
    the configured workload's primary metric as JSON: {"primary": {"name", "higher_is_better"}}.

    Raises ValueError with the core's message on a bad config."""

def workloads() -> str:
    """JSON list of the workload generators: name, description, params, metrics, primary."""

def version() -> str:
    """The core's version."""

def model_fingerprint() -> str:
    """A hash of the core's sources and data at build time."""
