//! `stress-ng-cpu`: `stress-ng --cpu N --cpu-ops M` (spec/workloads.md §7.2–7.3).
//!
//! The stress-ng parent forks N worker processes (`stress-ng-cpu`) and waits for them. Each
//! worker spins on the `--cpu-method all` rotation until it has done its share of the bogo ops:
//! stress-ng shares `--cpu-ops` between the instances "equally, rounding up", so each does
//! ceil(M / N). Since V0.14.02 one bogo op is normalised to 1/1484.5 s of an i5-8350U thread
//! — a fixed amount of work, here cycles at the reference clock run on the simulated core.
//! With `old_metrics` one op is one method call (0.9584 normalised ops on average). On POWER an
//! op costs `power_op_scale` times the reference cycles (the method mix runs slower there;
//! calibrated, see the data file).
//!
//! Metrics as stress-ng prints them: the run time ("successful run completed in X s") and
//! bogo ops/s (real time) = total bogo ops / the instances' mean wall time.

use std::collections::BTreeMap;

use serde_json::Value;

use super::constants::Constants;
use super::fio::{finished_s, flag, int_or, looped, mark, mark_id, run, task};
use super::spec::{CustomWorkload, OpSpec};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| {
            Ok(Box::new(StressNgCpu::new(
                ctx.params,
                ctx.topo.cpus.len(),
                &ctx.machine.arch,
            )?))
        },
    }
}

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "stress-ng-cpu",
        description: "stress-ng --cpu N --cpu-ops M: the parent forks N CPU-bound workers, each does ceil(M/N) bogo ops (one op = 1/1484.5 s of an i5-8350U thread at 3.6 GHz, as cycles), then the parent reaps them; runs to completion.",
        params: vec![
            ParamInfo { name: "instances", default: Value::Null, description: "--cpu N: worker processes (default: number of CPUs)" },
            ParamInfo { name: "cpu_ops", default: 50000.into(), description: "--cpu-ops M: bogo ops shared between the instances, each doing ceil(M/N)" },
            ParamInfo { name: "old_metrics", default: false.into(), description: "--cpu-old-metrics: one bogo op = one method call instead of normalised work" },
        ],
        metrics: vec!["elapsed_s", "bogo_ops", "bogo_ops_per_s", "ops_per_instance"],
        primary: "elapsed_s",
        higher_is_better: false,
        open_ended: false,
    }
}

/// The stress-ng --cpu model.
#[derive(Clone, Debug)]
pub struct StressNgCpu {
    pub instances: u32,
    pub cpu_ops: u64,
    pub old_metrics: bool,
    /// Bogo ops each instance does: ceil(cpu_ops / instances).
    pub ops_per_instance: u64,
    /// Cycles of one bogo op.
    pub op_cycles: f64,
}

impl StressNgCpu {
    pub fn new(params: &BTreeMap<String, Value>, ncpus: usize, arch: &str) -> Result<Self, String> {
        let p = Params::new("stress-ng-cpu", params, &info())?;
        let instances = int_or(&p, params, "instances", ncpus as i64, 1, 65536)? as u32;
        let cpu_ops = p.int("cpu_ops", 50000, 1, 100_000_000_000)? as u64;
        let old_metrics = flag("stress-ng-cpu", params, "old_metrics", false)?;
        let c = Constants::parse(
            "stress-ng-cpu",
            include_str!("../../data/workloads/stress-ng-cpu.json"),
        )?;
        let mut op_cycles = c.get("ref_clock_hz") / c.get("ref_rate_ops_per_s");
        if old_metrics {
            op_cycles *= c.get("old_metrics_call_ops");
        }
        if arch == "power" {
            op_cycles *= c.get("power_op_scale");
        }
        // stress-ng.c: "Share bogo ops between processes equally, rounding up"
        let ops_per_instance = cpu_ops.div_ceil(instances as u64);
        Ok(StressNgCpu {
            instances,
            cpu_ops,
            old_metrics,
            ops_per_instance,
            op_cycles,
        })
    }
}

impl Model for StressNgCpu {
    fn build(&self) -> Result<CustomWorkload, String> {
        let parent = task(
            "stress-ng".into(),
            1,
            vec![
                looped(
                    self.instances as i64,
                    vec![OpSpec::Fork {
                        task: "stress-ng-cpu".into(),
                    }],
                ),
                looped(self.instances as i64, vec![OpSpec::Wait]),
                OpSpec::Exit,
            ],
        );
        let mut worker = task(
            "stress-ng-cpu".into(),
            1,
            vec![
                looped(
                    self.ops_per_instance as i64,
                    vec![run(self.op_cycles), mark("op")],
                ),
                OpSpec::Exit,
            ],
        );
        worker.start = false;
        Ok(CustomWorkload {
            tasks: vec![parent, worker],
            channels: vec![],
        })
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let ops = mark_id(sim, "op")
            .map(|id| sim.marks.iter().filter(|m| m.2 == id).count())
            .unwrap_or(0) as f64;
        // the instances' wall time: fork to exit (or to now if cut short)
        let durations: Vec<f64> = sim
            .tasks
            .iter()
            .filter(|t| t.parent.is_some())
            .map(|t| (t.stats.exit_ns.unwrap_or(sim.now) - t.stats.start_ns) as f64 * 1e-9)
            .collect();
        let mean_s = super::mean_or_no_data(durations.iter().sum::<f64>(), durations.len() as u64);
        let mut values = BTreeMap::new();
        values.insert("elapsed_s".into(), finished_s(sim));
        values.insert("bogo_ops".into(), ops);
        values.insert(
            "bogo_ops_per_s".into(),
            if mean_s > 0.0 {
                ops / mean_s
            } else {
                super::NO_DATA
            },
        );
        values.insert("ops_per_instance".into(), self.ops_per_instance as f64);
        Metrics {
            values,
            primary: "elapsed_s".into(),
            higher_is_better: false,
        }
    }
}
