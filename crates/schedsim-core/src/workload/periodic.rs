//! `periodic`: rt-app-like periodic tasks (LISA's `PeriodicWload`): each activation runs
//! `duty_pct` % of `period_ms` worth of work — calibrated, as rt-app's `run`, on the fastest CPU
//! at its highest frequency — then sleeps until the next absolute activation.
//!
//! Metrics per activation, as rt-app logs them: the run time (`c_duration` actually taken), the
//! slack to the next activation (on the task's own activation clock, which re-bases when an
//! activation ends late, as rt-app's relative-mode timer does), missed activations, and the
//! wakeup latency.

use std::collections::BTreeMap;

use super::spec::{CustomWorkload, OpSpec, TaskSpec};
use super::{mean_or_no_data, Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo, NO_DATA};
use crate::config::MachineSpec;
use crate::engine::Sim;
use crate::hw::topology::Topology;

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| Ok(Box::new(Periodic::new(ctx.params, ctx.machine, ctx.topo)?)),
    }
}

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "periodic",
        description: "rt-app-like periodic tasks: run duty_pct % of period_ms (work calibrated on the fastest CPU at max frequency), then sleep to the next period.",
        params: vec![
            ParamInfo { name: "tasks", default: 1.into(), description: "number of periodic tasks" },
            ParamInfo { name: "period_ms", default: 16.0.into(), description: "activation period (ms)" },
            ParamInfo { name: "duty_pct", default: 50.0.into(), description: "work per activation, % of the period on the fastest CPU at max frequency" },
            ParamInfo { name: "nice", default: 0.into(), description: "nice level of every task" },
        ],
        metrics: vec!["activations", "run_us_mean", "slack_us_mean", "missed_pct", "wakeup_latency_us_mean", "wakeup_latency_us_max"],
        primary: "run_us_mean",
        higher_is_better: false,
        open_ended: true,
    }
}

/// Parameters of the generator.
#[derive(Clone, Debug)]
pub struct Periodic {
    pub tasks: u32,
    pub period_ns: u64,
    pub duty_pct: f64,
    pub nice: i32,
    pub cycles: f64,
}

impl Periodic {
    pub fn new(
        params: &BTreeMap<String, serde_json::Value>,
        machine: &MachineSpec,
        topo: &Topology,
    ) -> Result<Self, String> {
        let p = Params::new("periodic", params, &info())?;
        let tasks = p.int("tasks", 1, 1, 100_000)? as u32;
        let period_ms = p.f64("period_ms", 16.0, 0.01, 100_000.0)?;
        let duty_pct = p.f64("duty_pct", 50.0, 0.0, 100.0)?;
        let nice = p.int("nice", 0, -20, 19)? as i32;
        let period_ns = (period_ms * 1e6).round() as u64;
        let cycles = super::ref_cycles(machine, topo, period_ns as f64 * duty_pct / 100.0);
        Ok(Periodic {
            tasks,
            period_ns,
            duty_pct,
            nice,
            cycles,
        })
    }

    fn workload(&self) -> CustomWorkload {
        let body = vec![
            OpSpec::Mark { name: "act".into() },
            OpSpec::Run {
                cycles: self.cycles,
                stall_ns: 0.0,
            },
            OpSpec::Mark {
                name: "done".into(),
            },
            OpSpec::Timer {
                period_ns: self.period_ns,
            },
        ];
        CustomWorkload {
            tasks: vec![TaskSpec {
                instances: self.tasks,
                nice: self.nice,
                ..TaskSpec::new("periodic", vec![OpSpec::Loop { count: -1, body }])
            }],
            channels: vec![],
        }
    }
}

impl Model for Periodic {
    fn build(&self) -> Result<CustomWorkload, String> {
        Ok(self.workload())
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let act = sim.compiled.marks.iter().position(|m| m == "act");
        let done = sim.compiled.marks.iter().position(|m| m == "done");
        let mut last_act: BTreeMap<usize, u64> = BTreeMap::new();
        // Each task's activation clock, as its `timer` op keeps it: the release of the
        // activation under way (the task's start, then the previous expiry, re-based to the
        // completion when that was late).
        let mut release: BTreeMap<usize, u64> = BTreeMap::new();
        let (mut n, mut run_sum, mut slack_sum, mut missed) = (0u64, 0f64, 0f64, 0u64);
        for &(t_ns, task, id) in &sim.marks {
            if Some(id) == act {
                last_act.insert(task, t_ns);
            } else if Some(id) == done {
                let Some(&a) = last_act.get(&task) else {
                    continue;
                };
                let r = release
                    .entry(task)
                    .or_insert(sim.tasks[task].stats.start_ns);
                let deadline = *r + self.period_ns;
                *r = deadline.max(t_ns);
                n += 1;
                run_sum += (t_ns - a) as f64;
                let slack = deadline as f64 - t_ns as f64;
                slack_sum += slack;
                if slack < 0.0 {
                    missed += 1;
                }
            }
        }
        let (mut lat_sum, mut lat_n, mut lat_max) = (0u64, 0u64, 0u64);
        for t in &sim.tasks {
            lat_sum += t.stats.wakeup_latency_sum_ns;
            lat_n += t.stats.wakeup_latency_count;
            lat_max = lat_max.max(t.stats.wakeup_latency_max_ns);
        }
        let mut values = BTreeMap::new();
        values.insert("activations".into(), n as f64);
        values.insert("run_us_mean".into(), mean_or_no_data(run_sum, n) * 1e-3);
        values.insert("slack_us_mean".into(), mean_or_no_data(slack_sum, n) * 1e-3);
        values.insert(
            "missed_pct".into(),
            mean_or_no_data(100.0 * missed as f64, n),
        );
        values.insert(
            "wakeup_latency_us_mean".into(),
            mean_or_no_data(lat_sum as f64, lat_n) * 1e-3,
        );
        values.insert(
            "wakeup_latency_us_max".into(),
            if lat_n > 0 {
                lat_max as f64 * 1e-3
            } else {
                NO_DATA
            },
        );
        Metrics {
            values,
            primary: "run_us_mean".into(),
            higher_is_better: false,
        }
    }
}
