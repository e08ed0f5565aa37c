//! `schbench`: Chris Mason's wakeup-latency benchmark (`masoncl/schbench`), in its two
//! shapes (spec/workloads.md §6):
//!
//! - `version=current` (the April 2023 rewrite, MMTests pins 6300b8f): `m` message threads,
//!   each with `t` workers. A worker posts its message thread and waits; the message thread
//!   wakes every queued worker (`xlist_wake_all`, one `gettimeofday` for the whole list), the
//!   worker records **wakeup latency** = run − wake time, then serves one request:
//!   `usleep(100)` and `operations` naive multiplications of its 104×104 matrices, and records
//!   the **request latency**. The main thread counts requests per second (**RPS**).
//! - `version=old` (2016–2021, 2eef447): `-m 2 -t 16`; a worker spins 30 ms (`usec_spin`, a
//!   `gettimeofday` loop: wall time) after each wakeup and records
//!   now − wake time − 30 ms; the message thread wakes its queue, waits for a post, spins
//!   30 ms and sleeps 30 ms + up to 25 % jitter.
//!
//! The message thread wakes its workers itself, from its own CPU: it is a 1:N waker, so its
//! placement and the wakees' placement decide the latencies.
//!
//! Percentiles are computed exactly as schbench does: fio's log-linear histogram
//! ([`Histogram`], `PLAT_BITS = 8`, 19 groups, bucket midpoints) over integer microseconds
//! taken as differences of `gettimeofday` readings.
//!
//! How the lock-free list of the real program maps onto the task-program operations (there
//! is no "wake whoever is queued" op, and a mutex around the list would serialise workers that
//! post together into chains of hand-off wakeups the real program does not have):
//! - current: the message thread is a relay (each post makes it wake what is queued, which
//!   in this version is the poster). A worker marks `q`, sends a post on a counting channel
//!   (the futex post that makes `fwait` return at once) and receives a wake token on a second
//!   counting channel; the message thread loops `recv post; mark mwake; send wake`. No wakeup
//!   is ever lost, whatever the timing: tokens are counted. The n-th token taken is matched
//!   with the n-th `mwake` (tokens are taken in the order they are sent), which gives each
//!   wakeup its wake time. A worker that takes a token without sleeping (it was sent before
//!   the worker waited) records the time since that mark, as `fwait` returning at once does.
//! - old: the message thread broadcasts a condition `W`, the queue, right after marking
//!   `mwake`, then waits on a condition `P` for a post; a worker marks `q`, signals `P` and
//!   waits on `W`. A post while the message thread spins or sleeps is lost, as the real
//!   `futex = FUTEX_BLOCKED` at the top of its loop erases it. A worker whose post wakes the
//!   message thread is on `W` long before that thread's next broadcast (it first spins and
//!   sleeps 60 ms), so the wake time of a worker is the first `mwake` after its `q`.

use std::collections::BTreeMap;

use super::constants::Constants;
use super::spec::{ChannelSpec, CustomWorkload, Dist, OpSpec, TaskSpec};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;
use crate::sim::rng::RngStream;

const CONSTANTS_JSON: &str = include_str!("../../data/workloads/schbench.json");

/// The model constants (`data/workloads/schbench.json`).
pub fn constants() -> Constants {
    Constants::parse("schbench", CONSTANTS_JSON).expect("data/workloads/schbench.json is valid")
}

// ------------------------------------------------------------------ fio/schbench histogram

/// Bits of linear resolution per power of two (`PLAT_BITS`).
pub const PLAT_BITS: u32 = 8;
/// Buckets per group (`PLAT_VAL`).
pub const PLAT_VAL: u32 = 1 << PLAT_BITS;
/// Groups (`PLAT_GROUP_NR`).
pub const PLAT_GROUP_NR: u32 = 19;
/// Buckets in all (`PLAT_NR`).
pub const PLAT_NR: usize = (PLAT_GROUP_NR * PLAT_VAL) as usize;

/// `plat_val_to_idx`: the bucket of a value.
pub fn plat_val_to_idx(val: u32) -> usize {
    let msb = if val == 0 {
        0
    } else {
        31 - val.leading_zeros()
    };
    // msb <= PLAT_BITS: every bit of the value is kept
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = (error_bits + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// `plat_idx_to_val`: the value a bucket stands for (the mean of its range, truncated to an
/// unsigned int as the C code's return conversion does).
pub fn plat_idx_to_val(idx: usize) -> u32 {
    assert!(idx < PLAT_NR, "idx {idx} is too large");
    if idx < (PLAT_VAL << 1) as usize {
        return idx as u32;
    }
    let error_bits = (idx as u32 >> PLAT_BITS) - 1;
    let base = 1u32 << (error_bits + PLAT_BITS);
    let k = idx as u32 % PLAT_VAL;
    (base as f64 + (k as f64 + 0.5) * (1u64 << error_bits) as f64) as u32
}

/// schbench's `struct stats`: the histogram, the sample count, min and max.
#[derive(Clone, Debug)]
pub struct Histogram {
    pub plat: Vec<u64>,
    pub nr_samples: u64,
    pub min: u32,
    pub max: u32,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            plat: vec![0; PLAT_NR],
            nr_samples: 0,
            min: 0,
            max: 0,
        }
    }
}

impl Histogram {
    /// `add_lat`.
    pub fn add(&mut self, us: u32) {
        if us > self.max {
            self.max = us;
        }
        if self.min == 0 || us < self.min {
            self.min = us;
        }
        self.plat[plat_val_to_idx(us)] += 1;
        self.nr_samples += 1;
    }

    /// `calc_percentiles`: the value of the first bucket at which the running count reaches
    /// p/100 × samples, for each p of `plist` (ascending).
    pub fn percentiles(&self, plist: &[f64]) -> Vec<u32> {
        let len = plist.len();
        let mut ovals = vec![0u32; len];
        if len == 0 {
            return ovals;
        }
        let nr = self.nr_samples as f64;
        let mut sum: u64 = 0;
        let mut j = 0;
        let mut is_last = false;
        let mut i = 0;
        while i < PLAT_NR && !is_last {
            sum += self.plat[i];
            while sum as f64 >= plist[j] / 100.0 * nr {
                ovals[j] = plat_idx_to_val(i);
                is_last = j == len - 1;
                if is_last {
                    break;
                }
                j += 1;
            }
            i += 1;
        }
        ovals
    }
}

// ------------------------------------------------------------------ the generator

/// The two versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Current,
    Old,
}

/// Percentiles printed for latencies by the current version (`PLIST_FOR_LAT`).
pub const CURRENT_LAT_PLIST: [f64; 4] = [50.0, 90.0, 99.0, 99.9];
/// Percentiles printed for RPS by the current version (`PLIST_FOR_RPS`).
pub const CURRENT_RPS_PLIST: [f64; 3] = [20.0, 50.0, 90.0];
/// Percentiles printed by the old version (`plist`).
pub const OLD_PLIST: [f64; 7] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9];

/// The message thread's sleep jitter values drawn per message thread (old version); the
/// message thread cycles through them.
pub const OLD_JITTER_VALUES: usize = 128;

/// The most tasks (message threads and workers) a run may create.
pub const MAX_TASKS: u64 = crate::workload::MAX_TASKS;

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| {
            Ok(Box::new(Schbench::new(
                ctx.params,
                ctx.topo.cpus.len(),
                ctx.seed,
            )?))
        },
    }
}

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "schbench",
        description: "schbench (masoncl/schbench): message threads each wake their queued workers (1:N, from the message thread's CPU); workers record wakeup latency (run - wake time). version=current (2023 rewrite, MMTests 6300b8f): each wakeup serves one request (usleep(100) + `operations` 104x104 matrix multiplications) with request latency and requests/s; primary request_latency_us_p99. version=old (2016-2021, 2eef447, -m 2 -t 16): workers spin 30 ms per wakeup, the message thread spins 30 ms and sleeps 30 ms + jitter; primary wakeup_latency_us_p99. Percentiles from schbench's own fio-style histogram: current reports wakeup/request p50/p90/p99/p99.9 and rps_p20/p50/p90 and the average rps; old reports wakeup p50/p75/p90/p95/p99/p99.5/p99.9 only. Open-ended: needs a duration.",
        params: vec![
            ParamInfo { name: "version", default: "current".into(), description: "current (2023 rewrite) or old (2016-2021, 2eef447)" },
            ParamInfo { name: "message_threads", default: 0.into(), description: "-m; 0 = the version's default (current 1, old 2)" },
            ParamInfo { name: "workers", default: 0.into(), description: "-t, workers per message thread; 0 = the version's default (current ceil(CPUs/m), old 16)" },
            ParamInfo { name: "operations", default: 5.into(), description: "-n, matrix multiplications per request (current only)" },
            ParamInfo { name: "footprint_kb", default: 256.into(), description: "-F, cache footprint in KB: 3 matrices of sqrt(F*1024/3/8) squared (current only)" },
            ParamInfo { name: "sleep_us", default: 100.into(), description: "-s, usleep per request in us, plus the 50 us timer slack (current only)" },
            ParamInfo { name: "cputime_us", default: 30000.into(), description: "-c, worker spin per wakeup in us (old only)" },
            ParamInfo { name: "message_cputime_us", default: 30000.into(), description: "-C, message thread spin per round in us (old only)" },
            ParamInfo { name: "sleeptime_us", default: 30000.into(), description: "-s, message thread usleep per round in us, plus up to 25 % jitter (old only)" },
            ParamInfo { name: "warmup_ms", default: (-1).into(), description: "samples before this are dropped (-w); -1 = the version's default: current 0, old 5000 (its -w 5) cut to a sixth of the run, the share 5 s has of its 30 s default" },
        ],
        metrics: vec![
            "wakeup_latency_us_p50", "wakeup_latency_us_p75", "wakeup_latency_us_p90",
            "wakeup_latency_us_p95", "wakeup_latency_us_p99", "wakeup_latency_us_p99.5",
            "wakeup_latency_us_p99.9", "wakeup_latency_us_min", "wakeup_latency_us_max", "wakeup_samples",
            "request_latency_us_p50", "request_latency_us_p90", "request_latency_us_p99",
            "request_latency_us_p99.9", "request_latency_us_min", "request_latency_us_max", "request_samples",
            "rps_p20", "rps_p50", "rps_p90", "rps",
        ],
        primary: "request_latency_us_p99",
        higher_is_better: false,
        open_ended: true,
    }
}

/// A generated schbench.
#[derive(Clone, Debug)]
pub struct Schbench {
    pub version: Version,
    pub message_threads: u32,
    pub workers: u32,
    /// current: median work per request in cycles (operations × n³ × cycles per MAC), and the
    /// sigma of its log-normal spread.
    pub request_cycles: f64,
    pub request_sigma: f64,
    pub matrix_size: u64,
    pub operations: u32,
    /// current: usleep + timer slack (ns).
    pub sleep_ns: u64,
    /// old: worker and message-thread spins (us), message-thread sleep (us).
    pub cputime_us: u64,
    pub message_cputime_us: u64,
    pub sleeptime_us: u64,
    pub slack_ns: u64,
    /// `None`: the version default (cut for short runs); `Some`: as given.
    pub warmup_ns: Option<u64>,
    pub seed: u64,
}

fn str_param(
    params: &BTreeMap<String, serde_json::Value>,
    name: &str,
    default: &str,
    allowed: &[&str],
) -> Result<String, String> {
    let Some(v) = params.get(name) else {
        return Ok(default.to_string());
    };
    let s = v.as_str().ok_or_else(|| {
        format!(
            "workload 'schbench': parameter {name} = {v}: expected one of {}",
            allowed.join(", ")
        )
    })?;
    if !allowed.contains(&s) {
        return Err(format!(
            "workload 'schbench': parameter {name} = {s}: expected one of {}",
            allowed.join(", ")
        ));
    }
    Ok(s.to_string())
}

/// The task template names of message thread `m`.
fn msg_name(m: u32) -> String {
    format!("schbench-msg-{m}")
}
fn worker_name(m: u32) -> String {
    format!("schbench-worker-{m}")
}

impl Schbench {
    pub fn new(
        params: &BTreeMap<String, serde_json::Value>,
        nr_cpus: usize,
        seed: u64,
    ) -> Result<Self, String> {
        let p = Params::new("schbench", params, &info())?;
        let version = match str_param(params, "version", "current", &["current", "old"])?.as_str() {
            "old" => Version::Old,
            _ => Version::Current,
        };
        let only = |names: &[&str], v: &str| -> Result<(), String> {
            for n in names {
                if params.contains_key(*n) {
                    return Err(format!(
                        "workload 'schbench': parameter {n} does not apply to version={v}"
                    ));
                }
            }
            Ok(())
        };
        let message_threads = p.int("message_threads", 0, 0, 1024)? as u32;
        let workers = p.int("workers", 0, 0, 100_000)? as u32;
        let warmup_ms = p.int("warmup_ms", -1, -1, 3_600_000)?;
        let c = constants();
        let slack_ns = (c.get("timer_slack_us") * 1000.0).round() as u64;
        let mut s = Schbench {
            version,
            message_threads: 0,
            workers: 0,
            request_cycles: 0.0,
            request_sigma: c.get("request_work_sigma"),
            matrix_size: 0,
            operations: 0,
            sleep_ns: 0,
            cputime_us: 0,
            message_cputime_us: 0,
            sleeptime_us: 0,
            slack_ns,
            warmup_ns: (warmup_ms >= 0).then(|| warmup_ms as u64 * 1_000_000),
            seed,
        };
        match version {
            Version::Current => {
                only(
                    &["cputime_us", "message_cputime_us", "sleeptime_us"],
                    "current",
                )?;
                let m = if message_threads == 0 {
                    1
                } else {
                    message_threads
                };
                let operations = p.int("operations", 5, 0, 10_000)? as u32;
                let footprint_kb = p.int("footprint_kb", 256, 1, 16 * 1024 * 1024)? as u64;
                let sleep_us = p.int("sleep_us", 100, 0, 10_000_000)? as u64;
                // matrix_size = sqrt(cache_footprint_kb * 1024 / 3 / sizeof(unsigned long))
                let n = ((footprint_kb * 1024 / 3 / 8) as f64).sqrt() as u64;
                s.message_threads = m;
                s.workers = if workers == 0 {
                    (nr_cpus as u32).div_ceil(m)
                } else {
                    workers
                };
                s.matrix_size = n;
                s.operations = operations;
                s.request_cycles =
                    operations as f64 * (n * n * n) as f64 * c.get("matmul_cycles_per_mac");
                // usleep(0) is skipped by schbench (`if (sleep_usec > 0)`)
                s.sleep_ns = if sleep_us > 0 {
                    sleep_us * 1000 + slack_ns
                } else {
                    0
                };
            }
            Version::Old => {
                only(&["operations", "footprint_kb", "sleep_us"], "old")?;
                s.message_threads = if message_threads == 0 {
                    2
                } else {
                    message_threads
                };
                s.workers = if workers == 0 { 16 } else { workers };
                s.cputime_us = p.int("cputime_us", 30000, 0, 10_000_000)? as u64;
                s.message_cputime_us = p.int("message_cputime_us", 30000, 0, 10_000_000)? as u64;
                s.sleeptime_us = p.int("sleeptime_us", 30000, 4, 10_000_000)? as u64;
            }
        }
        let tasks = s.message_threads as u64 * (1 + s.workers as u64);
        if tasks > MAX_TASKS {
            return Err(format!(
                "workload 'schbench': message_threads = {} x (1 + workers = {}) is {tasks} tasks; at most {MAX_TASKS}",
                s.message_threads, s.workers
            ));
        }
        Ok(s)
    }

    /// The warmup that applies to a run that ended at `end_ns`.
    pub fn effective_warmup_ns(&self, end_ns: u64) -> u64 {
        match (self.warmup_ns, self.version) {
            (Some(w), _) => w,
            (None, Version::Current) => 0,
            (None, Version::Old) => 5_000_000_000u64.min(end_ns / 6),
        }
    }

    /// The worker's post-and-wait, then `woke`.
    fn post_and_wait(&self, m: u32) -> Vec<OpSpec> {
        match self.version {
            Version::Current => vec![
                OpSpec::Mark { name: "q".into() },
                OpSpec::Send {
                    chan: format!("post{m}"),
                },
                OpSpec::Recv {
                    chan: format!("wake{m}"),
                },
                OpSpec::Mark {
                    name: "woke".into(),
                },
            ],
            Version::Old => {
                // the condition's mutex is never held across a wait: taking it back after
                // the wakeup costs nothing and never blocks
                let d = format!("D{m}");
                vec![
                    OpSpec::Mark { name: "q".into() },
                    OpSpec::Signal {
                        cond: format!("P{m}"),
                    },
                    OpSpec::CondWait {
                        cond: format!("W{m}"),
                        mutex: d.clone(),
                    },
                    OpSpec::Unlock { mutex: d },
                    OpSpec::Mark {
                        name: "woke".into(),
                    },
                ]
            }
        }
    }

    fn worker_program(&self, m: u32) -> Vec<OpSpec> {
        let mut body = self.post_and_wait(m);
        match self.version {
            Version::Current => {
                if self.sleep_ns > 0 {
                    body.push(OpSpec::Sleep { ns: self.sleep_ns });
                }
                if self.request_cycles > 0.0 {
                    body.push(OpSpec::RunDist {
                        dist: Dist::LogNormal {
                            mu: 0.0,
                            sigma: self.request_sigma,
                            scale: self.request_cycles,
                        },
                        stall_ns: 0.0,
                    });
                }
                body.push(OpSpec::Mark {
                    name: "done".into(),
                });
            }
            Version::Old => {
                body.push(OpSpec::RunFor {
                    ns: self.worker_spin_ns(),
                });
                body.push(OpSpec::Mark {
                    name: "spun".into(),
                });
            }
        }
        vec![OpSpec::Loop { count: -1, body }]
    }

    /// `usec_spin(t)` returns at the first reading more than t us after its start: t us plus
    /// on average half a microsecond.
    pub fn worker_spin_ns(&self) -> u64 {
        if self.cputime_us == 0 {
            0
        } else {
            self.cputime_us * 1000 + 500
        }
    }

    fn msg_program(&self, m: u32) -> Vec<OpSpec> {
        let wake = |v: &mut Vec<OpSpec>| {
            v.push(OpSpec::Mark {
                name: "mwake".into(),
            });
            v.push(OpSpec::Broadcast {
                cond: format!("W{m}"),
            });
        };
        match self.version {
            Version::Current => {
                let mut body = vec![OpSpec::Recv {
                    chan: format!("post{m}"),
                }];
                body.push(OpSpec::Mark {
                    name: "mwake".into(),
                });
                body.push(OpSpec::Send {
                    chan: format!("wake{m}"),
                });
                vec![OpSpec::Loop { count: -1, body }]
            }
            Version::Old => {
                // rand_r(&seed) % (sleeptime / 4), drawn from the run seed
                let max_jitter = (self.sleeptime_us / 4).max(1);
                let mut rng = RngStream::new(self.seed, &format!("schbench-jitter-{m}"));
                let mut body = Vec::new();
                for _ in 0..OLD_JITTER_VALUES {
                    let jitter = rng.below(max_jitter);
                    wake(&mut body);
                    body.push(OpSpec::CondWait {
                        cond: format!("P{m}"),
                        mutex: format!("E{m}"),
                    });
                    body.push(OpSpec::Unlock {
                        mutex: format!("E{m}"),
                    });
                    if self.message_cputime_us > 0 {
                        body.push(OpSpec::RunFor {
                            ns: self.message_cputime_us * 1000 + 500,
                        });
                    }
                    body.push(OpSpec::Sleep {
                        ns: (self.sleeptime_us + jitter) * 1000 + self.slack_ns,
                    });
                }
                vec![OpSpec::Loop { count: -1, body }]
            }
        }
    }

    fn workload(&self) -> CustomWorkload {
        let mut tasks = Vec::new();
        let mut channels = Vec::new();
        let task = |name: String, instances: u32, program: Vec<OpSpec>| TaskSpec {
            instances,
            ..TaskSpec::new(name, program)
        };
        for m in 0..self.message_threads {
            tasks.push(task(msg_name(m), 1, self.msg_program(m)));
            tasks.push(task(worker_name(m), self.workers, self.worker_program(m)));
            if self.version == Version::Current {
                for c in ["post", "wake"] {
                    channels.push(ChannelSpec::new(format!("{c}{m}"), 1 << 30));
                }
            }
        }
        CustomWorkload { tasks, channels }
    }
}

/// What the marks of one run give.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    pub wakeup: Histogram,
    pub request: Histogram,
    /// Completion times of requests after the warmup (current).
    pub done_ns: Vec<u64>,
    /// The start of the measured window.
    pub warmup_ns: u64,
}

impl Schbench {
    /// Replay the marks: wake times from the message threads' `mwake`, latencies as the tool
    /// computes them from `gettimeofday` (whole microseconds).
    pub fn samples(&self, sim: &Sim) -> Samples {
        let nprog = sim.compiled.programs.len();
        // program index -> (message thread?, m)
        let mut role: Vec<Option<(bool, usize)>> = vec![None; nprog];
        for m in 0..self.message_threads {
            for (i, p) in sim.compiled.programs.iter().enumerate() {
                if p.name == msg_name(m) {
                    role[i] = Some((true, m as usize));
                } else if p.name == worker_name(m) {
                    role[i] = Some((false, m as usize));
                }
            }
        }
        let id = |n: &str| sim.compiled.marks.iter().position(|x| x == n);
        let (q, woke, done, mwake, spun) =
            (id("q"), id("woke"), id("done"), id("mwake"), id("spun"));
        let warm = self.effective_warmup_ns(sim.now);
        let mut out = Samples {
            warmup_ns: warm,
            ..Samples::default()
        };
        let mut queued: Vec<Vec<usize>> = vec![Vec::new(); self.message_threads as usize];
        // current: the wake tokens sent and not yet taken, by message thread (their mwake times)
        let mut tokens: Vec<std::collections::VecDeque<u64>> =
            vec![std::collections::VecDeque::new(); self.message_threads as usize];
        let ntask = sim.tasks.len();
        let mut wake_time: Vec<Option<u64>> = vec![None; ntask];
        let mut woke_time: Vec<Option<u64>> = vec![None; ntask];
        let us = |t: u64| t / 1000;
        for &(t, task, mid) in &sim.marks {
            let Some((is_msg, m)) = role[sim.tasks[task].program] else {
                continue;
            };
            let mid = Some(mid);
            if is_msg {
                if mid == mwake {
                    match self.version {
                        Version::Current => tokens[m].push_back(t),
                        Version::Old => {
                            for w in queued[m].drain(..) {
                                wake_time[w] = Some(t);
                            }
                        }
                    }
                }
                continue;
            }
            if mid == q {
                wake_time[task] = None;
                if self.version == Version::Old {
                    queued[m].push(task);
                }
            } else if mid == woke {
                woke_time[task] = Some(t);
                if self.version == Version::Current {
                    wake_time[task] = tokens[m].pop_front();
                    if let Some(wt) = wake_time[task] {
                        let delta = us(t) as i64 - us(wt) as i64;
                        if t >= warm && delta > 0 {
                            out.wakeup.add(delta.min(u32::MAX as i64) as u32);
                        }
                    }
                }
            } else if mid == done {
                if let Some(ws) = woke_time[task] {
                    // work_start is read right after the wakeup sample
                    let delta = us(t) as i64 - us(ws) as i64;
                    if t >= warm {
                        if delta > 0 {
                            out.request.add(delta.min(u32::MAX as i64) as u32);
                        }
                        out.done_ns.push(t);
                    }
                }
            } else if mid == spun {
                let (Some(wt), Some(ws)) = (wake_time[task], woke_time[task]) else {
                    continue;
                };
                // usec_spin returns at the first reading more than cputime us after it began,
                // or when the task next runs if it was off the CPU at that moment
                let spin = self.worker_spin_ns();
                let end_us = if t > ws + spin {
                    us(t)
                } else if self.cputime_us == 0 {
                    us(ws)
                } else {
                    us(ws) + self.cputime_us + 1
                };
                let delta = end_us as i64 - us(wt) as i64;
                if t >= warm && delta > 0 {
                    let d = delta as u64;
                    let lat = if d > self.cputime_us {
                        d - self.cputime_us
                    } else {
                        1
                    };
                    out.wakeup.add(lat.min(u32::MAX as u64) as u32);
                }
            }
        }
        out
    }

    /// Requests per second in each whole second after the warmup (the main thread's
    /// once-a-second samples); a run shorter than one second after the warmup gives one
    /// sample over what there is.
    pub fn rps_samples(&self, s: &Samples, end_ns: u64) -> Vec<f64> {
        let span = end_ns.saturating_sub(s.warmup_ns);
        let secs = span / 1_000_000_000;
        if secs == 0 {
            if span == 0 {
                return vec![];
            }
            return vec![s.done_ns.len() as f64 * 1e9 / span as f64];
        }
        let mut counts = vec![0u64; secs as usize];
        for &t in &s.done_ns {
            let k = ((t - s.warmup_ns) / 1_000_000_000) as usize;
            if k < counts.len() {
                counts[k] += 1;
            }
        }
        counts.into_iter().map(|c| c as f64).collect()
    }
}

fn put_percentiles(values: &mut BTreeMap<String, f64>, prefix: &str, h: &Histogram, plist: &[f64]) {
    for (p, v) in plist.iter().zip(h.percentiles(plist)) {
        let v = if h.nr_samples > 0 {
            v as f64
        } else {
            super::NO_DATA
        };
        values.insert(format!("{prefix}_p{}", fmt_pct(*p)), v);
    }
}

/// `{prefix}_min` and `{prefix}_max`, with no data when the histogram is empty.
fn put_extremes(values: &mut BTreeMap<String, f64>, prefix: &str, h: &Histogram) {
    let (min, max) = if h.nr_samples > 0 {
        (h.min as f64, h.max as f64)
    } else {
        (super::NO_DATA, super::NO_DATA)
    };
    values.insert(format!("{prefix}_min"), min);
    values.insert(format!("{prefix}_max"), max);
}

/// 50.0 → "50", 99.9 → "99.9".
fn fmt_pct(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as u64)
    } else {
        format!("{p}")
    }
}

impl Model for Schbench {
    fn build(&self) -> Result<CustomWorkload, String> {
        Ok(self.workload())
    }

    fn samples_from_ns(&self) -> u64 {
        // an explicit -w; the version's default is cut to fit the run (effective_warmup_ns)
        self.warmup_ns.unwrap_or(0)
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let s = self.samples(sim);
        let mut values = BTreeMap::new();
        let lat_plist: &[f64] = match self.version {
            Version::Current => &CURRENT_LAT_PLIST,
            Version::Old => &OLD_PLIST,
        };
        put_percentiles(&mut values, "wakeup_latency_us", &s.wakeup, lat_plist);
        put_extremes(&mut values, "wakeup_latency_us", &s.wakeup);
        values.insert("wakeup_samples".into(), s.wakeup.nr_samples as f64);
        let primary = match self.version {
            Version::Current => {
                put_percentiles(&mut values, "request_latency_us", &s.request, lat_plist);
                put_extremes(&mut values, "request_latency_us", &s.request);
                values.insert("request_samples".into(), s.request.nr_samples as f64);
                let mut rps = Histogram::default();
                for r in self.rps_samples(&s, sim.now) {
                    // add_lat(&rps_stats, rps): the double becomes an unsigned int
                    rps.add(r.min(u32::MAX as f64) as u32);
                }
                put_percentiles(&mut values, "rps", &rps, &CURRENT_RPS_PLIST);
                let span = sim.now.saturating_sub(s.warmup_ns);
                let avg = if span > 0 {
                    s.done_ns.len() as f64 * 1e9 / span as f64
                } else {
                    super::NO_DATA
                };
                values.insert("rps".into(), avg);
                "request_latency_us_p99"
            }
            Version::Old => "wakeup_latency_us_p99",
        };
        Metrics {
            values,
            primary: primary.into(),
            higher_is_better: false,
        }
    }
}
