//! Model constants of the benchmark models, kept in data (`data/workloads/<model>.json`,
//! embedded at build time) each with its unit, source and a one-line justification:
//!
//! ```json
//! {"c_op_cycles": {"value": 40000, "unit": "cycles",
//!                  "source": "measured dbench4 on a 2-vCPU machine (spec/workloads.md §2.4)",
//!                  "justification": "14 µs per op at ~3 GHz"}}
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

/// One constant.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constant {
    pub value: f64,
    pub unit: String,
    pub source: String,
    pub justification: String,
}

/// The constants of one model.
#[derive(Clone, Debug)]
pub struct Constants {
    pub model: &'static str,
    pub map: BTreeMap<String, Constant>,
}

impl Constants {
    /// Parse embedded constants; a malformed file is a build defect caught by the tests.
    pub fn parse(model: &'static str, json: &str) -> Result<Self, String> {
        let map: BTreeMap<String, Constant> =
            serde_json::from_str(json).map_err(|e| format!("data/workloads/{model}.json: {e}"))?;
        for (k, c) in &map {
            if c.source.trim().is_empty()
                || c.justification.trim().is_empty()
                || !c.value.is_finite()
            {
                return Err(format!(
                    "data/workloads/{model}.json: constant '{k}' needs a finite value, a source and a justification"
                ));
            }
        }
        Ok(Constants { model, map })
    }

    /// A constant's value. Asking for a constant the file lacks is a programming error.
    pub fn get(&self, key: &str) -> f64 {
        match self.map.get(key) {
            Some(c) => c.value,
            None => panic!("data/workloads/{}.json has no constant '{key}'", self.model),
        }
    }
}
