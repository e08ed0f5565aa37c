//! Workloads (DESIGN "Workloads"): task programs ([`spec`], [`program`]) and the generators
//! that build them with their parameters and the metrics they report.
pub mod constants;
pub mod dbench;
pub mod fio;
pub mod gitsource;
pub mod hackbench;
pub mod kernbench;
pub mod loadfile;
pub mod nas_omp;
pub mod netperf;
pub mod periodic;
pub mod pgbench;
pub mod program;
pub mod rtapp;
pub mod schbench;
pub mod spec;
pub mod specpower;
pub mod sqlite_insert;
pub mod stress_ng_cpu;
pub mod sync;
pub mod tbench;
pub mod tiobench;
pub mod x264;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::{MachineSpec, WorkloadSpec};
use crate::engine::Sim;
use crate::hw::topology::Topology;
use program::{Compiled, Op};
use spec::CustomWorkload;

/// One parameter of a generator.
#[derive(Clone, Debug, Serialize)]
pub struct ParamInfo {
    pub name: &'static str,
    pub default: serde_json::Value,
    pub description: &'static str,
}

/// A generator as `schedsim workloads` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub params: Vec<ParamInfo>,
    pub metrics: Vec<&'static str>,
    pub primary: &'static str,
    pub higher_is_better: bool,
    pub open_ended: bool,
}

/// A benchmark model: builds task programs and turns what happened into the benchmark's
/// metrics.
pub trait Model: std::fmt::Debug {
    /// The task programs.
    fn build(&self) -> Result<CustomWorkload, String>;
    /// The metrics the real tool reports, from marks, task statistics and the clock.
    fn metrics(&self, sim: &Sim) -> Metrics;
    /// The run's length when the workload itself sets one (rt-app's `global.duration`) and the
    /// configuration gives none.
    fn duration_ns(&self) -> Option<u64> {
        None
    }
    /// Where the measured interval starts: the end of the warm-up the metrics skip. Power,
    /// turbostat and residencies are reported over the same interval as the metrics, because
    /// the warm-up stands for a cold start that the real benchmark's long run makes negligible.
    fn measured_from_ns(&self) -> u64 {
        0
    }
    /// Where the workload's own samples start, when it drops a warm-up from its metrics but
    /// reports power over the whole run (schbench's `-w`); a run must last longer.
    fn samples_from_ns(&self) -> u64 {
        self.measured_from_ns()
    }
    /// The warm-up is the tool's own threshold, not a parameter the user chose (sqlite-insert's
    /// 2 s): a run that ends first is measured whole, as the tool's statistics then are,
    /// instead of being refused.
    fn warmup_fixed(&self) -> bool {
        false
    }
    /// The primary metric over the part `(t0, t1]` of the measured interval, for the
    /// convergence check of a run (`primary_windows` in the result): a rate or a mean of
    /// per-operation times that a window of the run estimates on its own. None for fixed-work
    /// benchmarks, whose primary (an elapsed time) belongs to the whole run.
    fn window_primary(&self, _sim: &Sim, _t0: u64, _t1: u64) -> Option<f64> {
        None
    }
}

/// How many marks named `mark` fall in `(t0, t1]`.
pub fn count_marks(sim: &Sim, mark: &str, t0: u64, t1: u64) -> u64 {
    let Some(id) = sim.compiled.marks.iter().position(|m| m == mark) else {
        return 0;
    };
    sim.marks
        .iter()
        .filter(|&&(t, _, m)| m == id && t > t0 && t <= t1)
        .count() as u64
}

/// What a generator needs to build a model.
pub struct GenCtx<'a> {
    pub params: &'a BTreeMap<String, serde_json::Value>,
    pub machine: &'a MachineSpec,
    pub topo: &'a Topology,
    /// The run seed, for generators that draw their structure (job lengths, sizes).
    pub seed: u64,
}

/// The default device time (µs) of a benchmark's fsync: the machine's storage fsync time when
/// its preset describes its storage, else the benchmark's own measured `fallback`.
pub fn fsync_us_default(ctx: &GenCtx, fallback: f64) -> f64 {
    ctx.machine
        .storage
        .as_ref()
        .map_or(fallback, |s| s.fsync_us)
}

/// A registered generator.
pub struct Generator {
    pub info: fn() -> WorkloadInfo,
    pub make: fn(&GenCtx) -> Result<Box<dyn Model>, String>,
}

/// Every generator the core knows, in listing order.
pub fn generators() -> Vec<Generator> {
    vec![
        periodic::generator(),
        stress_ng_cpu::generator(),
        nas_omp::generator(),
        fio::generator(),
        tiobench::generator(),
        sqlite_insert::generator(),
        x264::generator(),
        specpower::generator(),
        kernbench::generator(),
        gitsource::generator(),
        rtapp::generator(),
        tbench::generator(),
        dbench::generator(),
        pgbench::generator_ro(),
        pgbench::generator_rw(),
        netperf::generator(netperf::Proto::Tcp, netperf::Test::Rr),
        netperf::generator(netperf::Proto::Udp, netperf::Test::Rr),
        netperf::generator(netperf::Proto::Tcp, netperf::Test::Stream),
        netperf::generator(netperf::Proto::Udp, netperf::Test::Stream),
        hackbench::generator(),
        schbench::generator(),
    ]
}

/// Every generator's description, plus `custom`.
pub fn registry() -> Vec<WorkloadInfo> {
    let mut v: Vec<WorkloadInfo> = generators().iter().map(|g| (g.info)()).collect();
    v.push(custom_info());
    v
}

fn custom_info() -> WorkloadInfo {
    WorkloadInfo {
        name: "custom",
        description:
            "Explicit task programs and channels (the Python builder `schedsim.programs`).",
        params: vec![],
        metrics: vec!["elapsed_s", "marks_<NAME>"],
        primary: "elapsed_s",
        higher_is_better: false,
        open_ended: false,
    }
}

/// A workload instance: a generated model or explicit programs.
#[derive(Debug)]
pub enum Workload {
    Model(Box<dyn Model>),
    Custom(CustomWorkload),
}

/// A statistic with nothing behind it: the mean, percentile or extreme of no samples, or the
/// elapsed time of fixed work that a `--duration` cut short. It is reported as null (JSON) and
/// printed as `-` or `NaN`, never as a 0 that would read as a result (a time of 0 is the best
/// time there is).
pub const NO_DATA: f64 = f64::NAN;

/// `sum / n`, or [`NO_DATA`] when there are no samples.
pub fn mean_or_no_data(sum: f64, n: u64) -> f64 {
    if n > 0 {
        sum / n as f64
    } else {
        NO_DATA
    }
}

/// A metric set with its headline.
pub struct Metrics {
    pub values: BTreeMap<String, f64>,
    pub primary: String,
    pub higher_is_better: bool,
}

/// The most tasks a workload may create: the initial tasks of any workload, and the task
/// counts the hackbench and schbench generators check their parameters against.
pub const MAX_TASKS: u64 = 200_000;

/// Read typed parameters, rejecting unknown names.
pub struct Params<'a> {
    workload: &'a str,
    map: &'a BTreeMap<String, serde_json::Value>,
    allowed: Vec<&'static str>,
}

impl<'a> Params<'a> {
    pub fn new(
        workload: &'a str,
        map: &'a BTreeMap<String, serde_json::Value>,
        info: &WorkloadInfo,
    ) -> Result<Self, String> {
        let allowed: Vec<&'static str> = info.params.iter().map(|p| p.name).collect();
        for k in map.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(format!(
                    "workload '{workload}': unknown parameter '{k}'; allowed: {}",
                    allowed.join(", ")
                ));
            }
        }
        Ok(Params {
            workload,
            map,
            allowed,
        })
    }

    pub fn f64(&self, name: &str, default: f64, lo: f64, hi: f64) -> Result<f64, String> {
        debug_assert!(self.allowed.contains(&name));
        let Some(v) = self.map.get(name) else {
            return Ok(default);
        };
        let x = v
            .as_f64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .ok_or_else(|| {
                format!(
                    "workload '{}': parameter {name} = {v}: expected a number",
                    self.workload
                )
            })?;
        if !(lo..=hi).contains(&x) {
            return Err(format!(
                "workload '{}': parameter {name} = {x}: allowed range {lo}..={hi}",
                self.workload
            ));
        }
        Ok(x)
    }

    /// A parameter's value as given; `None` when absent.
    pub fn raw(&self, name: &str) -> Option<&serde_json::Value> {
        debug_assert!(self.allowed.contains(&name));
        self.map.get(name)
    }

    /// A string parameter; `None` when absent.
    pub fn string(&self, name: &str) -> Result<Option<String>, String> {
        debug_assert!(self.allowed.contains(&name));
        match self.map.get(name) {
            None => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(format!(
                "workload '{}': parameter {name} = {v}: expected a string",
                self.workload
            )),
        }
    }

    pub fn int(&self, name: &str, default: i64, lo: i64, hi: i64) -> Result<i64, String> {
        let x = self.f64(name, default as f64, lo as f64, hi as f64)?;
        if x.fract() != 0.0 {
            return Err(format!(
                "workload '{}': parameter {name} = {x}: expected an integer",
                self.workload
            ));
        }
        Ok(x as i64)
    }
}

/// Work (cycles) that takes `ns` on the fastest CPU at its highest frequency: the reference
/// rt-app calibrates `run` against.
pub fn ref_cycles(machine: &MachineSpec, topo: &Topology, ns: f64) -> f64 {
    let best = (0..topo.nr_cpus())
        .map(|c| top_speed_khz(machine, topo, c))
        .fold(0.0, f64::max);
    ns * best * 1e-6
}

/// CPU `c`'s work rate at its highest frequency: kHz of the top OPP times its IPC scale
/// (reference cycles per ms).
pub fn top_speed_khz(machine: &MachineSpec, topo: &Topology, c: usize) -> f64 {
    let cpu = &topo.cpus[c];
    machine.freq_domains[cpu.freq_domain]
        .opps
        .last()
        .map_or(0.0, |o| o.khz as f64)
        * cpu.ipc_scale
}

impl Workload {
    pub fn from_spec(
        spec: &WorkloadSpec,
        machine: &MachineSpec,
        topo: &Topology,
        seed: u64,
    ) -> Result<Self, String> {
        if spec.name == "custom" {
            if !spec.params.is_empty() {
                return Err(
                    "workload 'custom' takes no parameters (its tasks are in `custom`)".into(),
                );
            }
            return spec.custom.clone().map(Workload::Custom).ok_or_else(|| {
                "workload 'custom' needs the `custom` field with tasks and channels".into()
            });
        }
        let ctx = GenCtx {
            params: &spec.params,
            machine,
            topo,
            seed,
        };
        for g in generators() {
            if (g.info)().name == spec.name {
                return (g.make)(&ctx).map(Workload::Model);
            }
        }
        Err(format!(
            "unknown workload '{}'; available: {}",
            spec.name,
            registry()
                .iter()
                .map(|w| w.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    pub fn compile(&self) -> Result<Compiled, String> {
        match self {
            Workload::Model(m) => program::compile(&m.build()?),
            Workload::Custom(c) => program::compile(c),
        }
    }

    /// The run's length the workload sets itself, if any (used when the config gives none).
    pub fn duration_ns(&self) -> Option<u64> {
        match self {
            Workload::Model(m) => m.duration_ns(),
            Workload::Custom(_) => None,
        }
    }

    /// Where the measured interval starts (0: the whole run).
    pub fn measured_from_ns(&self) -> u64 {
        match self {
            Workload::Model(m) => m.measured_from_ns(),
            Workload::Custom(_) => 0,
        }
    }

    /// Where the workload's metrics start (see [`Model::samples_from_ns`]).
    pub fn samples_from_ns(&self) -> u64 {
        match self {
            Workload::Model(m) => m.samples_from_ns(),
            Workload::Custom(_) => 0,
        }
    }

    /// See [`Model::warmup_fixed`].
    pub fn warmup_fixed(&self) -> bool {
        match self {
            Workload::Model(m) => m.warmup_fixed(),
            Workload::Custom(_) => false,
        }
    }

    /// The primary metric over `(t0, t1]` (see [`Model::window_primary`]).
    pub fn window_primary(&self, sim: &Sim, t0: u64, t1: u64) -> Option<f64> {
        match self {
            Workload::Model(m) => m.window_primary(sim, t0, t1),
            Workload::Custom(_) => None,
        }
    }

    /// Whether some task loops forever (then a duration is required).
    pub fn open_ended(&self, c: &Compiled) -> bool {
        c.programs.iter().any(|p| {
            p.ops
                .iter()
                .any(|op| matches!(op, Op::LoopBegin { count, .. } if *count < 0))
        })
    }

    pub fn metrics(&self, sim: &Sim) -> Metrics {
        match self {
            Workload::Model(m) => m.metrics(sim),
            Workload::Custom(_) => custom_metrics(sim),
        }
    }
}

fn custom_metrics(sim: &Sim) -> Metrics {
    let mut values = BTreeMap::new();
    let end = sim
        .tasks
        .iter()
        .filter_map(|t| t.stats.exit_ns)
        .max()
        .unwrap_or(sim.now)
        .max(if sim.live_tasks > 0 { sim.now } else { 0 });
    values.insert("elapsed_s".into(), end as f64 * 1e-9);
    let mut counts = vec![0u64; sim.compiled.marks.len()];
    for &(_, _, id) in &sim.marks {
        counts[id] += 1;
    }
    for (name, n) in sim.compiled.marks.iter().zip(counts) {
        values.insert(format!("marks_{name}"), n as f64);
    }
    Metrics {
        values,
        primary: "elapsed_s".into(),
        higher_is_better: false,
    }
}
