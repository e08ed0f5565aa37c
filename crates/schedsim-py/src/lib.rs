//! `schedsim._core`: the thin PyO3 binding of schedsim-core. It converts, calls and converts
//! back; the simulation runs with the GIL released.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Run one simulation from a JSON configuration; returns the result JSON.
#[pyfunction]
fn run(py: Python<'_>, config_json: String) -> PyResult<String> {
    py.detach(|| schedsim_core::run_json(&config_json))
        .map_err(PyValueError::new_err)
}

/// Check a JSON configuration as the core does before a run, without running it; returns the
/// configured workload's primary metric as JSON.
#[pyfunction]
fn check(py: Python<'_>, config_json: String) -> PyResult<String> {
    py.detach(|| schedsim_core::check_json(&config_json))
        .map_err(PyValueError::new_err)
}

/// The workload generators and their parameters, as JSON.
#[pyfunction]
fn workloads() -> String {
    schedsim_core::workloads_json()
}

/// The core's version.
#[pyfunction]
fn version() -> &'static str {
    schedsim_core::version()
}

/// A hash of the core's sources and data at build time.
#[pyfunction]
fn model_fingerprint() -> &'static str {
    schedsim_core::model_fingerprint()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(model_fingerprint, m)?)?;
    Ok(())
}
