//! `specpower`: one target load level of SPECpower_ssj2008's ssj workload.
//!
//! SPECpower_ssj2008 measures a server at graduated loads: calibration intervals run the ssj
//! transactions flat out to find the maximum throughput, then measurement intervals offer 100 %,
//! 90 %, …, 10 % of it, and an active-idle interval offers none. Each interval reports its
//! ssj_ops (transactions per second) and average power, and the score is Σ ssj_ops / Σ power
//! over all the intervals. Each ssj user thread (one per hardware thread by default) runs its
//! transactions in batches whose arrival times are random (exponential inter-arrival times), so
//! a thread is busy in bursts with idle gaps between them, at the rate its target asks.
//!
//! One run here is one interval: `load_pct` of the calibrated maximum, 0 for active idle. A
//! sweep over `load_pct` (an experiment) gives the whole benchmark; docs/workloads/specpower.md
//! computes the score from it.
//!
//! Simplifications:
//! - the calibrated maximum is computed from the machine, not measured: every thread busy at
//!   its core's all-core turbo (the highest frequency when the domain has no turbo table), with
//!   its SMT siblings busy too — what the calibration intervals measure when nothing else
//!   limits the machine. A power limit below the all-core turbo makes 100 % an overload, as an
//!   under-calibrated real run would be;
//! - a batch is one `run` of `batch_txns` transactions of `txn_cycles` each (data/workloads/
//!   specpower.json); the transaction mix, the JVM (garbage collection, JIT) and memory are
//!   not modelled;
//! - each thread's inter-arrival times cycle through a table drawn at build time and scaled to
//!   the exact mean, so the offered load is the target; a late batch runs at once (absolute
//!   arrival clock), as a thread behind schedule does.

use std::collections::BTreeMap;

use serde_json::Value;

use super::constants::Constants;
use super::fio::{int_or, looped, mark, run, task};
use super::spec::{CustomWorkload, OpSpec};
use super::{count_marks, GenCtx, Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;
use crate::sim::rng::RngStream;

const CONSTANTS_JSON: &str = include_str!("../../data/workloads/specpower.json");

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| Ok(Box::new(SpecPower::new(ctx)?)),
    }
}

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "specpower",
        description: "One target load level of SPECpower_ssj2008's ssj workload: one user thread per CPU runs batches of transactions arriving at exponential intervals, at load_pct of the machine's calibrated maximum (every thread busy at the all-core turbo); 0 is active idle. ssj_ops and power per level; the score is a sweep's sum of ssj_ops over its sum of power.",
        params: vec![
            ParamInfo { name: "load_pct", default: 100.0.into(), description: "target load, % of the calibrated maximum throughput (0 = active idle)" },
            ParamInfo { name: "threads", default: Value::Null, description: "ssj user threads (default: number of CPUs)" },
            ParamInfo { name: "batch_txns", default: Value::Null, description: "transactions per batch (default: data/workloads/specpower.json)" },
            ParamInfo { name: "warmup_s", default: 0.5.into(), description: "seconds left out of ssj_ops and of the power averages" },
        ],
        metrics: vec!["ssj_ops", "target_ops", "calibrated_ops", "actual_load_pct", "batches"],
        primary: "ssj_ops",
        higher_is_better: true,
        open_ended: true,
    }
}

/// The ssj model at one load level.
#[derive(Clone, Debug)]
pub struct SpecPower {
    pub load_pct: f64,
    pub threads: u32,
    pub batch_txns: u32,
    pub warmup_ns: u64,
    /// Cycles of one batch.
    pub batch_cycles: f64,
    /// Transactions per second with every thread busy (the 100 % level).
    pub calibrated_ops: f64,
    /// Per thread, its inter-arrival times (ns); empty at active idle.
    pub arrivals: Vec<Vec<u64>>,
}

/// Most ssj threads a run may have (each has its own program of arrivals).
pub const MAX_THREADS: i64 = 4096;

/// The machine's throughput in cycles per second of work with `threads` ssj threads busy:
/// each at its core's all-core turbo and IPC, slowed by its busy SMT siblings. The threads
/// fill the cores' first hardware threads, then their second ones, and so on, as the
/// scheduler spreads busy tasks over idle cores first.
pub fn calibrated_cycles_per_s(ctx: &GenCtx, threads: usize) -> f64 {
    let topo = ctx.topo;
    let speed = |c: usize| {
        let cpu = &topo.cpus[c];
        let fd = &ctx.machine.freq_domains[cpu.freq_domain];
        let khz = fd
            .turbo_khz
            .last()
            .copied()
            .or_else(|| fd.opps.last().map(|o| o.khz))
            .unwrap_or(0);
        khz as f64 * 1e3 * cpu.ipc_scale
    };
    // busy hardware threads per core, filling thread 0 of every core first
    let ncores = topo.core_cpus.len();
    let mut busy = vec![0usize; ncores];
    let mut left = threads.min(topo.nr_cpus());
    let mut level = 0;
    while left > 0 {
        for (core, cpus) in topo.core_cpus.iter().enumerate() {
            if left > 0 && cpus.len() > level {
                busy[core] += 1;
                left -= 1;
            }
        }
        level += 1;
    }
    topo.core_cpus
        .iter()
        .zip(&busy)
        .filter(|(_, &k)| k > 0)
        .map(|(cpus, &k)| {
            let share = ctx.machine.core_types[topo.cpus[cpus[0]].core_type]
                .smt_share
                .get(k - 1)
                .copied()
                .unwrap_or(1.0);
            cpus[..k].iter().map(|&c| speed(c) * share).sum::<f64>()
        })
        .sum()
}

impl SpecPower {
    pub fn new(ctx: &GenCtx) -> Result<Self, String> {
        let params = ctx.params;
        let p = Params::new("specpower", params, &info())?;
        let c = Constants::parse("specpower", CONSTANTS_JSON)?;
        let load_pct = p.f64("load_pct", 100.0, 0.0, 100.0)?;
        let ncpus = ctx.topo.nr_cpus();
        let threads = int_or(&p, params, "threads", ncpus as i64, 1, MAX_THREADS)? as u32;
        let batch_txns = int_or(
            &p,
            params,
            "batch_txns",
            c.get("batch_txns") as i64,
            1,
            1_000_000,
        )? as u32;
        let warmup_s = p.f64("warmup_s", 0.5, 0.0, 3600.0)?;
        let txn_cycles = c.get("txn_cycles");
        let batch_cycles = txn_cycles * batch_txns as f64;
        let calibrated_ops = calibrated_cycles_per_s(ctx, threads as usize) / txn_cycles;
        let mut arrivals = Vec::new();
        if load_pct > 0.0 {
            let batches_per_s = load_pct / 100.0 * calibrated_ops / batch_txns as f64;
            let mean_ns = 1e9 * threads as f64 / batches_per_s;
            let n = c.get("table_len") as usize;
            let mut rng = RngStream::new(ctx.seed, "specpower");
            for _ in 0..threads {
                let draws: Vec<f64> = (0..n).map(|_| rng.exp(1.0)).collect();
                let scale = mean_ns * n as f64 / draws.iter().sum::<f64>();
                arrivals.push(
                    draws
                        .iter()
                        .map(|d| (d * scale).round().max(1.0) as u64)
                        .collect(),
                );
            }
        }
        Ok(SpecPower {
            load_pct,
            threads,
            batch_txns,
            warmup_ns: (warmup_s * 1e9).round() as u64,
            batch_cycles,
            calibrated_ops,
            arrivals,
        })
    }

    fn ops_between(&self, sim: &Sim, t0: u64, t1: u64) -> f64 {
        if t1 <= t0 {
            return 0.0;
        }
        let batches = count_marks(sim, "batch", t0, t1) as f64;
        batches * self.batch_txns as f64 / ((t1 - t0) as f64 * 1e-9)
    }
}

impl Model for SpecPower {
    fn build(&self) -> Result<CustomWorkload, String> {
        let tasks = (0..self.threads as usize)
            .map(|i| {
                let program = match self.arrivals.get(i) {
                    // active idle: the thread waits for work that never comes
                    None => vec![OpSpec::Suspend],
                    Some(table) => {
                        let mut body = Vec::with_capacity(table.len() * 3);
                        for &gap in table {
                            body.push(OpSpec::Clock {
                                name: "arrival".into(),
                                period_ns: gap,
                                unique: true,
                                relative: false,
                                origin_ns: 0,
                            });
                            body.push(run(self.batch_cycles));
                            body.push(mark("batch"));
                        }
                        vec![looped(-1, body)]
                    }
                };
                task(format!("ssj-{i}"), 1, program)
            })
            .collect();
        Ok(CustomWorkload {
            tasks,
            channels: vec![],
        })
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let from = self.warmup_ns.min(sim.now);
        let ssj_ops = self.ops_between(sim, from, sim.now);
        let mut values = BTreeMap::new();
        values.insert("ssj_ops".into(), ssj_ops);
        values.insert(
            "target_ops".into(),
            self.load_pct / 100.0 * self.calibrated_ops,
        );
        values.insert("calibrated_ops".into(), self.calibrated_ops);
        values.insert(
            "actual_load_pct".into(),
            100.0 * ssj_ops / self.calibrated_ops.max(1e-12),
        );
        values.insert(
            "batches".into(),
            count_marks(sim, "batch", from, sim.now) as f64,
        );
        Metrics {
            values,
            primary: "ssj_ops".into(),
            higher_is_better: true,
        }
    }

    fn measured_from_ns(&self) -> u64 {
        self.warmup_ns
    }

    fn window_primary(&self, sim: &Sim, t0: u64, t1: u64) -> Option<f64> {
        Some(self.ops_between(sim, t0, t1))
    }
}
