# Type stubs of the compiled extension (crates/schedsim-py, lib name `_core`).

def run(config_json: str) -> str:
    """Run one simulation from the JSON of SimConfig; return the result JSON.

    Raises ValueError with a clear message on a bad config."""

def workloads() -> str:
    """JSON list of the workload generators: name, description, params, metrics, primary."""

def version() -> str:
    """The core's version."""
