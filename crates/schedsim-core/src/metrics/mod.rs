//! Results: the `run --json` contract of DESIGN "Interfaces" (metrics, primary, power,
//! turbostat, sched counters, per-CPU and per-task tables, samples, trace).
//!
//! Power, turbostat, the idle-state residencies and the per-CPU busy time and frequency cover
//! the workload's measured interval, the same one as its metrics (after a warm-up, when the
//! workload has one: `Model::measured_from_ns`). Counts (context switches, wakeups, migrations),
//! the per-task table and the samples cover the whole run.

use crate::config::TraceFormat;
use crate::trace::ftrace::TraceBuf;
use crate::trace::perfetto;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::Sim;
use crate::hw::freq::Counters;

/// turbostat's summary columns from counter deltas (spec/kernel.md §10.3).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Turbostat {
    pub avg_mhz: f64,
    pub busy_pct: f64,
    pub bzy_mhz: f64,
    pub tsc_mhz: f64,
}

/// `Avg_MHz = TSC_MHz·ΔAPERF/ΔTSC`, `Busy% = 100·ΔMPERF/ΔTSC`, `Bzy_MHz = TSC_MHz·ΔAPERF/ΔMPERF`,
/// averaged over CPUs as turbostat's summary row does.
pub fn turbostat_from_counters(prev: &[Counters], cur: &[Counters], tsc_khz: u64) -> Turbostat {
    let tsc_mhz = tsc_khz as f64 / 1000.0;
    let (mut a, mut m, mut t) = (0.0, 0.0, 0.0);
    for (p, c) in prev.iter().zip(cur) {
        a += c.aperf - p.aperf;
        m += c.mperf - p.mperf;
        t += c.tsc - p.tsc;
    }
    if t <= 0.0 {
        return Turbostat {
            tsc_mhz,
            ..Turbostat::default()
        };
    }
    Turbostat {
        avg_mhz: tsc_mhz * a / t,
        busy_pct: 100.0 * m / t,
        bzy_mhz: if m > 0.0 { tsc_mhz * a / m } else { 0.0 },
        tsc_mhz,
    }
}

/// The accumulators at the start of the measured interval (the run's start unless the workload
/// has a warm-up); the results report what accumulated after it.
#[derive(Clone, Debug, Default)]
pub struct MeasureBase {
    pub t_ns: u64,
    pub counters: Vec<Counters>,
    pub pkg_energy_uj: f64,
    pub pkg_core_energy_uj: f64,
    pub busy_ns: Vec<u64>,
    pub idle_ns: Vec<u64>,
    pub idle_state_ns: Vec<Vec<u64>>,
    pub pkg_cstate_ns: Vec<Vec<u64>>,
}

impl MeasureBase {
    /// The accumulators now (the caller has synced every CPU and package).
    pub fn capture(sim: &Sim) -> Self {
        MeasureBase {
            t_ns: sim.now,
            counters: sim.counters.clone(),
            pkg_energy_uj: sim.hw.pkg_energy_uj.iter().sum(),
            pkg_core_energy_uj: sim.hw.pkg_core_energy_uj.iter().sum(),
            busy_ns: sim.rqs.iter().map(|rq| rq.busy_ns).collect(),
            idle_ns: sim.rqs.iter().map(|rq| rq.idle_ns).collect(),
            idle_state_ns: sim.rqs.iter().map(|rq| rq.idle_state_ns.clone()).collect(),
            pkg_cstate_ns: sim.hw.pkg_cstate_ns.clone(),
        }
    }
}

#[derive(Serialize)]
struct WorkloadOut<'a> {
    name: &'a str,
    params: &'a BTreeMap<String, serde_json::Value>,
}

#[derive(Serialize)]
struct Primary {
    name: String,
    value: f64,
    higher_is_better: bool,
}

#[derive(Serialize)]
struct Power {
    energy_j: f64,
    core_energy_j: f64,
    avg_package_w: f64,
    avg_core_w: f64,
    perf_per_watt: f64,
}

#[derive(Serialize)]
struct TurbostatOut {
    avg_mhz: f64,
    busy_pct: f64,
    bzy_mhz: f64,
    tsc_mhz: f64,
    pkg_watt: f64,
    cor_watt: f64,
    /// Residency of each OS-requested idle state, % of CPU time (turbostat's `C1%`, `C6%`).
    cstates: BTreeMap<String, f64>,
    /// Package C-state residency, % of time (turbostat's `Pkg%pc2`...).
    pkg_cstates: BTreeMap<String, f64>,
}

#[derive(Serialize)]
struct SimOut {
    simulated_s: f64,
    /// Where the measured interval (power, turbostat, residencies, per-CPU busy) starts.
    measured_from_s: f64,
    events: u64,
    wall_s: f64,
    events_per_s: f64,
}

#[derive(Serialize)]
struct CpuOut {
    cpu: usize,
    core: usize,
    package: usize,
    capacity: u64,
    busy_ns: u64,
    idle_ns: u64,
    busy_pct: f64,
    context_switches: u64,
    avg_khz: f64,
    util_avg: u64,
    load_avg: u64,
    idle_state_pct: BTreeMap<String, f64>,
}

#[derive(Serialize)]
struct TaskOut {
    pid: u32,
    ppid: u32,
    comm: String,
    cpu: usize,
    cpu_ns: u64,
    wait_ns: u64,
    sleep_ns: u64,
    iowait_ns: u64,
    nr_switches: u64,
    nr_involuntary: u64,
    nr_migrations: u64,
    nr_wakeups: u64,
    wakeup_latency_us_mean: f64,
    wakeup_latency_us_max: f64,
    start_ns: u64,
    exit_ns: Option<u64>,
    util_avg: u64,
}

#[derive(Serialize)]
struct SampleOut {
    t_s: f64,
    avg_mhz: f64,
    busy_pct: f64,
    bzy_mhz: f64,
    pkg_watt: f64,
    cor_watt: f64,
}

#[derive(Serialize)]
struct SelectProfile {
    cpu: usize,
    hits: u64,
    avg_us: f64,
    /// Variance of the call duration (µs²), as the ftrace function profiler's `s^2`.
    var_us2: f64,
}

#[derive(Serialize)]
struct EasOut {
    enabled: bool,
    overutilized: bool,
    select_task_rq_fair: Vec<SelectProfile>,
}

#[derive(Serialize)]
struct RunResult<'a> {
    schedsim_version: &'static str,
    machine: &'a str,
    kernel: String,
    governor: &'a str,
    workload: WorkloadOut<'a>,
    seed: u64,
    metrics: BTreeMap<String, f64>,
    primary: Primary,
    /// The primary metric over each of `CONVERGENCE_WINDOWS` equal parts of the measured
    /// interval (open-ended benchmarks; empty for fixed-work ones): their spread shows whether
    /// the run is long enough for its mean.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    primary_windows: Vec<f64>,
    power: Power,
    turbostat: TurbostatOut,
    sched: &'a crate::engine::SchedCounters,
    sim: SimOut,
    features: BTreeMap<String, bool>,
    /// EAS: whether enabled, and the per-CPU profile of `select_task_rq_fair` (wakeups).
    eas: EasOut,
    cpus: Vec<CpuOut>,
    tasks: Vec<TaskOut>,
    samples: Vec<SampleOut>,
    /// `cpu.stat` of each group below the root.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    cgroups: BTreeMap<String, CpuStatOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<String>,
    /// The Perfetto protobuf trace, base64 (standard alphabet, padded).
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_perfetto: Option<String>,
    /// The Chrome JSON trace, as JSON text.
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_chrome: Option<String>,
}

/// A group's `cpu.stat` (cgroup v2 names), plus its period timer's phase.
#[derive(Serialize)]
struct CpuStatOut {
    usage_usec: u64,
    nr_periods: u64,
    nr_throttled: u64,
    throttled_usec: u64,
    nr_bursts: u64,
    burst_usec: u64,
    /// Where in each period the refill happens (µs after a multiple of the period on the
    /// monotonic clock); 0 for aligned timers.
    period_phase_us: u64,
}

fn cpu_stats(sim: &Sim) -> BTreeMap<String, CpuStatOut> {
    sim.tgs
        .iter()
        .skip(1)
        .map(|g| {
            let b = &g.cfs_b;
            // cfs_rqs still throttled at the end count up to now
            let open: u64 = g
                .rqs
                .iter()
                .filter(|r| r.throttled)
                .map(|r| sim.now - r.throttled_clock)
                .sum();
            let phase = if b.period > 0 {
                b.expires % b.period
            } else {
                0
            };
            let out = CpuStatOut {
                usage_usec: g.usage_ns / 1000,
                nr_periods: b.nr_periods,
                nr_throttled: b.nr_throttled,
                throttled_usec: (b.throttled_time + open) / 1000,
                nr_bursts: b.nr_burst,
                burst_usec: b.burst_time / 1000,
                period_phase_us: phase / 1000,
            };
            (g.path.clone(), out)
        })
        .collect()
}

/// The parts of the measured interval that `primary_windows` reports on.
pub const CONVERGENCE_WINDOWS: u64 = 5;

/// The primary metric over each of [`CONVERGENCE_WINDOWS`] equal parts of `(from, sim.now]`, or
/// nothing when the workload's primary has no meaning over a window or a window has no value
/// (a dbench window in which no loadfile pass ended).
pub fn primary_windows(sim: &Sim, from: u64) -> Vec<f64> {
    let span = sim.now.saturating_sub(from);
    if span == 0 {
        return Vec::new();
    }
    let bound =
        |k: u64| from + (u128::from(span) * u128::from(k) / u128::from(CONVERGENCE_WINDOWS)) as u64;
    (0..CONVERGENCE_WINDOWS)
        .map(|k| sim.workload.window_primary(sim, bound(k), bound(k + 1)))
        .collect::<Option<Vec<f64>>>()
        .unwrap_or_default()
}

/// The run's trace when it was recorded in `format`.
fn trace_as(sim: &Sim, format: TraceFormat) -> Option<&TraceBuf> {
    sim.trace
        .as_ref()
        .filter(|_| sim.cfg.trace_format == format)
}

fn perfetto_base64(sim: &Sim, trace: &TraceBuf) -> String {
    use base64::Engine as _;
    let machine = match sim.cfg.machine.arch.as_str() {
        "x86" => "x86_64",
        "arm64" => "aarch64",
        "power" => "ppc64le",
        other => other,
    };
    // the tasks that exist from the start; `task_newtask` introduces the forked ones
    let tasks: Vec<perfetto::TaskInfo> = sim
        .tasks
        .iter()
        .filter(|t| t.parent.is_none())
        .map(|t| perfetto::TaskInfo {
            pid: t.pid,
            comm: crate::trace::ftrace::sanitize_comm(&t.comm),
        })
        .collect();
    let bytes = perfetto::encode(trace, sim.topo.nr_cpus(), sim.prof.version, machine, &tasks);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Serialise the finished run. `wall_s` is the host time the run took (reported, never used by
/// the model).
pub fn result_json(sim: &Sim, wall_s: f64) -> String {
    let elapsed_s = sim.now as f64 * 1e-9;
    let m = sim.workload.metrics(sim);
    let primary_value = m.values.get(&m.primary).copied().unwrap_or(0.0);
    let base = &sim.measure_base;
    let window_ns = sim.now - base.t_ns;
    let window_s = window_ns as f64 * 1e-9;
    let energy_j = (sim.hw.pkg_energy_uj.iter().sum::<f64>() - base.pkg_energy_uj) * 1e-6;
    let core_energy_j =
        (sim.hw.pkg_core_energy_uj.iter().sum::<f64>() - base.pkg_core_energy_uj) * 1e-6;
    let avg_w = if window_s > 0.0 {
        energy_j / window_s
    } else {
        0.0
    };
    let avg_core_w = if window_s > 0.0 {
        core_energy_j / window_s
    } else {
        0.0
    };
    // undefined (null) without power, for a negative rate-like value (an rt-app slack), for a
    // time of zero and for a null primary (NaN fails every comparison)
    let defined = avg_w > 0.0
        && if m.higher_is_better {
            primary_value >= 0.0
        } else {
            primary_value > 0.0
        };
    let perf_per_watt = if !defined {
        crate::workload::NO_DATA
    } else if m.higher_is_better {
        primary_value / avg_w
    } else {
        1.0 / (primary_value * avg_w)
    };
    let ts = turbostat_from_counters(&base.counters, &sim.counters, sim.cfg.machine.tsc_khz);
    let n = sim.topo.nr_cpus();
    let mut cstates: BTreeMap<String, f64> = BTreeMap::new();
    let total_ns = (window_ns as f64 * n as f64).max(1.0);
    for (c, rq) in sim.rqs.iter().enumerate() {
        let ct = sim.topo.cpus[c].core_type;
        for (s, ns) in rq.idle_state_ns.iter().enumerate() {
            *cstates
                .entry(sim.idle_states[ct][s].name.clone())
                .or_insert(0.0) += 100.0 * (ns - base.idle_state_ns[c][s]) as f64 / total_ns;
        }
    }
    let npkg = sim.hw.pkg_cstate_ns.len().max(1) as f64;
    let mut pkg_cstates: BTreeMap<String, f64> = BTreeMap::new();
    for (p, per_pkg) in sim.hw.pkg_cstate_ns.iter().enumerate() {
        for (s, ns) in per_pkg.iter().enumerate() {
            let name = sim.cfg.machine.package_idle_states[s].name.clone();
            *pkg_cstates.entry(name).or_insert(0.0) +=
                100.0 * (ns - base.pkg_cstate_ns[p][s]) as f64 / (window_ns.max(1) as f64 * npkg);
        }
    }
    let cpus = (0..n)
        .map(|c| {
            let rq = &sim.rqs[c];
            let cn = &sim.counters[c];
            let cb = &base.counters[c];
            let ct = sim.topo.cpus[c].core_type;
            let busy_ns = rq.busy_ns - base.busy_ns[c];
            let idle_ns = rq.idle_ns - base.idle_ns[c];
            let span = (busy_ns + idle_ns).max(1) as f64;
            let (aperf, mperf) = (cn.aperf - cb.aperf, cn.mperf - cb.mperf);
            CpuOut {
                cpu: c,
                core: sim.topo.cpus[c].core,
                package: sim.topo.cpus[c].package,
                capacity: sim.topo.cpus[c].capacity_orig,
                busy_ns,
                idle_ns,
                busy_pct: 100.0 * busy_ns as f64 / span,
                context_switches: rq.nr_switches,
                avg_khz: if mperf > 0.0 {
                    sim.cfg.machine.tsc_khz as f64 * aperf / mperf
                } else {
                    0.0
                },
                util_avg: rq.cfs.avg.util_avg,
                load_avg: rq.cfs.avg.load_avg,
                idle_state_pct: rq
                    .idle_state_ns
                    .iter()
                    .enumerate()
                    .map(|(s, ns)| {
                        (
                            sim.idle_states[ct][s].name.clone(),
                            100.0 * (ns - base.idle_state_ns[c][s]) as f64 / span,
                        )
                    })
                    .collect(),
            }
        })
        .collect();
    let tasks = sim
        .tasks
        .iter()
        .map(|t| TaskOut {
            pid: t.pid,
            ppid: t.parent.map(|p| sim.tasks[p].pid).unwrap_or(0),
            comm: t.comm.clone(),
            cpu: t.cpu,
            cpu_ns: t.stats.cpu_ns,
            wait_ns: t.stats.wait_ns,
            sleep_ns: t.stats.sleep_ns,
            iowait_ns: t.stats.iowait_ns,
            nr_switches: t.stats.nr_switches,
            nr_involuntary: t.stats.nr_involuntary,
            nr_migrations: t.stats.nr_migrations,
            nr_wakeups: t.stats.nr_wakeups,
            // null (no data) for a task never woken
            wakeup_latency_us_mean: crate::workload::mean_or_no_data(
                t.stats.wakeup_latency_sum_ns as f64,
                t.stats.wakeup_latency_count,
            ) * 1e-3,
            wakeup_latency_us_max: if t.stats.wakeup_latency_count > 0 {
                t.stats.wakeup_latency_max_ns as f64 * 1e-3
            } else {
                crate::workload::NO_DATA
            },
            start_ns: t.stats.start_ns,
            exit_ns: t.stats.exit_ns,
            util_avg: t.se.avg.util_avg,
        })
        .collect();
    let samples = sim
        .samples
        .iter()
        .map(|s| SampleOut {
            t_s: s.t_ns as f64 * 1e-9,
            avg_mhz: s.avg_mhz,
            busy_pct: s.busy_pct,
            bzy_mhz: s.bzy_mhz,
            pkg_watt: s.pkg_watt,
            cor_watt: s.cor_watt,
        })
        .collect();
    let r = RunResult {
        schedsim_version: env!("CARGO_PKG_VERSION"),
        machine: &sim.cfg.machine.name,
        kernel: sim.prof.describe(),
        governor: &sim.cfg.cpufreq.governor,
        workload: WorkloadOut {
            name: &sim.cfg.workload.name,
            params: &sim.cfg.workload.params,
        },
        seed: sim.cfg.seed,
        metrics: m.values.clone(),
        primary: Primary {
            name: m.primary.clone(),
            value: primary_value,
            higher_is_better: m.higher_is_better,
        },
        primary_windows: primary_windows(sim, base.t_ns),
        power: Power {
            energy_j,
            core_energy_j,
            avg_package_w: avg_w,
            avg_core_w,
            perf_per_watt,
        },
        turbostat: TurbostatOut {
            avg_mhz: ts.avg_mhz,
            busy_pct: ts.busy_pct,
            bzy_mhz: ts.bzy_mhz,
            tsc_mhz: ts.tsc_mhz,
            pkg_watt: avg_w,
            cor_watt: avg_core_w,
            cstates,
            pkg_cstates,
        },
        sched: &sim.stats,
        sim: SimOut {
            simulated_s: elapsed_s,
            measured_from_s: base.t_ns as f64 * 1e-9,
            events: sim.events_popped,
            wall_s,
            events_per_s: if wall_s > 0.0 {
                sim.events_popped as f64 / wall_s
            } else {
                0.0
            },
        },
        features: sim.prof.features_map(),
        eas: EasOut {
            enabled: sim.eas.enabled,
            overutilized: sim.eas.overutilized,
            select_task_rq_fair: sim
                .eas
                .profile
                .iter()
                .enumerate()
                .map(|(cpu, p)| {
                    let n = p.hits.max(1) as f64;
                    let mean = p.sum_ns / n;
                    let var = if p.hits > 1 {
                        (p.sum_sq_ns - n * mean * mean) / (n - 1.0)
                    } else {
                        0.0
                    };
                    SelectProfile {
                        cpu,
                        hits: p.hits,
                        avg_us: mean * 1e-3,
                        var_us2: var.max(0.0) * 1e-6,
                    }
                })
                .collect(),
        },
        cpus,
        tasks,
        samples,
        cgroups: cpu_stats(sim),
        trace: trace_as(sim, TraceFormat::Ftrace).map(|t| t.to_text(n)),
        trace_perfetto: trace_as(sim, TraceFormat::Perfetto).map(|t| perfetto_base64(sim, t)),
        trace_chrome: trace_as(sim, TraceFormat::Chrome).map(|t| {
            let idle_names: Vec<Vec<String>> = (0..n)
                .map(|c| {
                    let ct = sim.topo.cpus[c].core_type;
                    sim.idle_states[ct].iter().map(|s| s.name.clone()).collect()
                })
                .collect();
            crate::trace::chrome::encode(t, n, &idle_names, sim.now, t.to_text(n))
        }),
    };
    serde_json::to_string(&r).expect("results serialise")
}
