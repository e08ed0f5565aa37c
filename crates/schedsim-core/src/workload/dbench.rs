//! `dbench` (dbench 4's `fileio` backend, MMTests `dbench4` with `config-io-dbench4-async`,
//! spec/workloads.md §2): N client processes, each replaying MMTests' `client-tiny.txt` forever
//! against the local filesystem. Every loadfile line is the interpreter's work plus the op's
//! system-call work; `Flush` (fsync) blocks in iowait for its data, then asks the filesystem's
//! journal thread (`jbd2`, one per filesystem) to commit and waits for that commit, which
//! serves every fsync waiting when it starts (group commit); `Unlink` waits briefly, and writes
//! are throttled now and then.
//!
//! Metrics as MMTests reports them: the per-pass `loadfile` times (the default metric, "dbench4
//! Loadfile Execution Time", lower is better), the traditional MB/s (bytes since the start of
//! the measured period / elapsed) and the per-second maximum latency ("dbench4 Latency").

use std::collections::BTreeMap;

use super::constants::Constants;
use super::loadfile::{self, Kind, Line};
use super::spec::{CustomWorkload, OpSpec, TaskSpec};
use super::tbench::loadfile_metrics;
use super::{fsync_us_default, Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;

pub const CONSTANTS: &str = include_str!("../../data/workloads/dbench.json");

pub fn constants() -> Constants {
    Constants::parse("dbench", CONSTANTS).expect("data/workloads/dbench.json is valid")
}

/// The filesystem's journal (one jbd2 journal for every client's files).
pub const JOURNAL: &str = "jbd2";

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| {
            let flush = fsync_us_default(ctx, constants().get("flush_io_us"));
            Ok(Box::new(Dbench::new(ctx.params, flush)?))
        },
    }
}

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "dbench",
        description: "dbench 4 (MMTests dbench4, fileio backend): N clients replaying client-tiny.txt against ext4; Flush blocks in iowait for its data and for a journal commit by the jbd2 thread (group commit); per-pass loadfile times, MB/s and per-second max latency.",
        params: vec![
            ParamInfo { name: "clients", default: 1.into(), description: "client processes" },
            ParamInfo { name: "warmup_s", default: 0.0.into(), description: "seconds excluded from the throughput, the loadfile samples and the latency samples (MMTests runs dbench with --warmup 0)" },
            ParamInfo { name: "flush_io_us", default: constants().get("flush_io_us").into(), description: "device time of one Flush (fsync): its data write, then the journal commit (journal_fraction of it), us; default: the machine's storage.fsync_us, else the fsync measured on a virtio guest (data/workloads/dbench.json)" },
        ],
        metrics: vec![
            "loadfile_ms_mean", "loadfile_ms_min", "loadfile_ms_max", "loadfile_ms_stddev",
            "loadfile_ms_p50", "loadfile_ms_p75", "loadfile_ms_p90", "loadfile_ms_p99",
            "loadfile_passes", "throughput_mb_s", "latency_ms_mean", "latency_ms_max",
            "journal_commits_per_s",
        ],
        primary: "loadfile_ms_mean",
        higher_is_better: false,
        open_ended: true,
    }
}

/// What one loadfile line costs a dbench client.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpCost {
    /// CPU of the op itself (cycles), after the interpreter's parse.
    pub cpu: f64,
    /// Wait in iowait (ns): the op's own device time (for Flush, the file's data).
    pub io_ns: u64,
    /// Then wait for a journal commit (Flush).
    pub commit: bool,
}

#[derive(Debug)]
pub struct Dbench {
    pub clients: u32,
    pub warmup_ns: u64,
    lines: Vec<Line>,
    cks: Vec<usize>,
    ck_bytes: Vec<u64>,
    parse: f64,
    costs: Vec<OpCost>,
    commit_cpu: f64,
    commit_ns: u64,
}

impl Dbench {
    /// `default_flush_io_us`: `flush_io_us` when the parameters do not give it (the machine's
    /// storage fsync time, else the measured one).
    pub fn new(
        params: &BTreeMap<String, serde_json::Value>,
        default_flush_io_us: f64,
    ) -> Result<Self, String> {
        let p = Params::new("dbench", params, &info())?;
        let clients = p.int("clients", 1, 1, 4096)? as u32;
        let warmup_s = p.f64("warmup_s", 0.0, 0.0, 86_400.0)?;
        let lf = loadfile::constants();
        let lines = loadfile::client_tiny();
        let cks = loadfile::checkpoints(lines.len(), lf.get("checkpoints_per_pass") as usize);
        let ck_bytes = loadfile::checkpoint_bytes(&lines, &cks);
        let k = constants();
        let flush_io_us = p.f64("flush_io_us", default_flush_io_us, 1.0, 1e6)?;
        let flush_io = (flush_io_us * 1e3).round() as u64;
        let costs = op_costs(&lines, &k, lf.get("ref_mhz"), flush_io);
        let commit_ns = (flush_io as f64 * k.get("journal_fraction")).round() as u64;
        Ok(Dbench {
            clients,
            warmup_ns: (warmup_s * 1e9).round() as u64,
            lines,
            cks,
            ck_bytes,
            parse: lf.get("parse_cycles"),
            costs,
            commit_cpu: k.get("jbd2_commit_cpu_us") * lf.get("ref_mhz"),
            commit_ns,
        })
    }

    pub fn bytes_per_pass(&self) -> u64 {
        self.ck_bytes.last().copied().unwrap_or(0)
    }

    /// The loadfile lines, in order.
    pub fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// The cost of every line of the pass.
    pub fn costs(&self) -> &[OpCost] {
        &self.costs
    }

    fn program(&self) -> Vec<OpSpec> {
        let mut body = Vec::new();
        let mut acc = 0.0;
        let mut next_ck = 0;
        let flush = |body: &mut Vec<OpSpec>, acc: &mut f64| {
            if *acc > 0.0 {
                body.push(OpSpec::Run {
                    cycles: *acc,
                    stall_ns: 0.0,
                });
                *acc = 0.0;
            }
        };
        for (i, c) in self.costs.iter().enumerate() {
            acc += self.parse;
            if c.io_ns > 0 || c.commit {
                // a blocking op: time it (dbench's latency is per op, from child_op's start)
                flush(&mut body, &mut acc);
                body.push(OpSpec::Mark { name: "ls".into() });
                acc = c.cpu;
                flush(&mut body, &mut acc);
                if c.io_ns > 0 {
                    body.push(OpSpec::Io { ns: c.io_ns });
                }
                if c.commit {
                    // jbd2_complete_transaction: ask for the running transaction's commit
                    // and wait until it is written
                    body.push(OpSpec::JournalCommit {
                        journal: JOURNAL.into(),
                    });
                }
                body.push(OpSpec::Mark { name: "le".into() });
            } else {
                acc += c.cpu;
            }
            if next_ck < self.cks.len() && self.cks[next_ck] == i {
                next_ck += 1;
                flush(&mut body, &mut acc);
                body.push(OpSpec::Mark { name: "ck".into() });
            }
        }
        flush(&mut body, &mut acc);
        vec![OpSpec::Loop { count: -1, body }]
    }

    /// The journal thread (`kjournald2`): it waits for a commit request, closes the running
    /// transaction (every fsync that asked by then is in it), commits it and writes it, then
    /// wakes the fsyncs waiting for it.
    fn jbd2(&self) -> Vec<OpSpec> {
        vec![OpSpec::Loop {
            count: -1,
            body: vec![
                OpSpec::JournalWait {
                    journal: JOURNAL.into(),
                },
                OpSpec::Run {
                    cycles: self.commit_cpu,
                    stall_ns: 0.0,
                },
                OpSpec::Mark {
                    name: "commit".into(),
                },
                OpSpec::Io { ns: self.commit_ns },
                OpSpec::JournalDone {
                    journal: JOURNAL.into(),
                },
            ],
        }]
    }
}

/// Cost of every line: CPU from the measured per-op latencies at the measurement clock, the
/// page-cache copy per byte, and the waits.
/// `flush_io` is the device time of one Flush in ns (the data write, then the journal commit).
pub fn op_costs(lines: &[Line], k: &Constants, ref_mhz: f64, flush_io: u64) -> Vec<OpCost> {
    let us = |name: &str| k.get(name) * ref_mhz;
    let ns = |name: &str| (k.get(name) * 1e3).round() as u64;
    let copy = k.get("pagecache_copy_cycles_per_byte");
    let throttle_bytes = k.get("write_throttle_bytes");
    // writeback throttling: pauses spread evenly over the bytes a pass writes, so every pass
    // pauses at the same writes
    let written: u64 = lines.iter().map(|l| l.write_bytes()).sum();
    let pauses = (written as f64 / throttle_bytes).round() as u64;
    let mut cum = 0u64;
    let mut next_pause = 0u64;
    let commit = (flush_io as f64 * k.get("journal_fraction")).round() as u64;
    let data = flush_io - commit;
    lines
        .iter()
        .map(|l| {
            let cpu_only = |cpu: f64| OpCost {
                cpu,
                io_ns: 0,
                commit: false,
            };
            match l.kind {
                Kind::NtCreateX => cpu_only(us("ntcreatex_us")),
                Kind::Close => cpu_only(us("close_us")),
                Kind::Rename => cpu_only(us("rename_us")),
                Kind::Unlink => OpCost {
                    cpu: us("unlink_cpu_us"),
                    io_ns: ns("unlink_io_us"),
                    commit: false,
                },
                Kind::Deltree => cpu_only(us("deltree_us")),
                Kind::Mkdir | Kind::Rmdir => cpu_only(us("mkdir_us")),
                Kind::QueryPathInformation => cpu_only(us("qpathinfo_us")),
                Kind::QueryFileInformation => cpu_only(us("qfileinfo_us")),
                Kind::QueryFsInformation => cpu_only(us("qfsinfo_us")),
                Kind::SetFileInformation => cpu_only(us("sfileinfo_us")),
                Kind::FindFirst => cpu_only(us("find_us")),
                Kind::LockX => cpu_only(us("lockx_us")),
                Kind::UnlockX => cpu_only(us("unlockx_us")),
                Kind::ReadX => cpu_only(k.get("readx_fixed_cycles") + l.bytes() as f64 * copy),
                Kind::WriteX => {
                    let b = l.write_bytes();
                    cum += b;
                    let cpu = k.get("writex_fixed_cycles") + b as f64 * copy;
                    // the k-th pause falls on the write that crosses (k + 1/2) / pauses of
                    // the pass's written bytes
                    let due = next_pause < pauses
                        && (cum as f64)
                            >= (next_pause as f64 + 0.5) * written as f64 / pauses as f64;
                    if due {
                        next_pause += 1;
                        OpCost {
                            cpu,
                            io_ns: ns("write_throttle_us"),
                            commit: false,
                        }
                    } else {
                        cpu_only(cpu)
                    }
                }
                Kind::Flush => OpCost {
                    cpu: us("flush_cpu_us"),
                    io_ns: data,
                    commit: true,
                },
            }
        })
        .collect()
}

/// The dbench clients (program 0).
fn client_tasks(sim: &Sim) -> Vec<usize> {
    (0..sim.tasks.len())
        .filter(|&t| sim.tasks[t].program == 0)
        .collect()
}

impl Model for Dbench {
    fn measured_from_ns(&self) -> u64 {
        self.warmup_ns
    }

    fn build(&self) -> Result<CustomWorkload, String> {
        let jbd2 = super::tbench::task("jbd2".into(), self.jbd2());
        Ok(CustomWorkload {
            tasks: vec![
                TaskSpec {
                    instances: self.clients,
                    ..TaskSpec::new("dbench", self.program())
                },
                jbd2,
            ],
            channels: vec![],
        })
    }

    fn window_primary(&self, sim: &Sim, t0: u64, t1: u64) -> Option<f64> {
        let clients = client_tasks(sim);
        super::tbench::loadfile_window(sim, &clients, &self.ck_bytes, t0, t1).1
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let clients = client_tasks(sim);
        let mut values = BTreeMap::new();
        let w = self.warmup_ns.min(sim.now);
        let commit = sim.compiled.marks.iter().position(|m| m == "commit");
        let commits = sim
            .marks
            .iter()
            .filter(|&&(t, _, m)| Some(m) == commit && t > w)
            .count();
        let secs = (sim.now - w) as f64 * 1e-9;
        values.insert(
            "journal_commits_per_s".into(),
            if secs > 0.0 {
                commits as f64 / secs
            } else {
                super::NO_DATA
            },
        );
        let (mean, max) = latency_per_second(sim, self.warmup_ns);
        values.insert("latency_ms_mean".into(), mean);
        values.insert("latency_ms_max".into(), max);
        let values = loadfile_metrics(sim, &clients, &self.ck_bytes, self.warmup_ns, values);
        Metrics {
            values,
            primary: "loadfile_ms_mean".into(),
            higher_is_better: false,
        }
    }
}

/// dbench's per-second `latency` (the longest time any client spent in one op: completed ops
/// by their duration at the first tick after they end, ops in flight by their elapsed time at
/// each tick), over the ticks of the measured period, as (Amean, Max) in ms. Ticks are every
/// second from the end of the warmup; a final partial second counts as one. Only the ops that
/// block are timed (the others take microseconds unless preempted).
pub fn latency_per_second(sim: &Sim, warmup_ns: u64) -> (f64, f64) {
    const SEC: u64 = 1_000_000_000;
    let end = sim.now;
    let w = warmup_ns.min(end);
    if end <= w {
        return (super::NO_DATA, super::NO_DATA);
    }
    let ticks = (end - w).div_ceil(SEC) as usize;
    let tick_t = |k: usize| (w + k as u64 * SEC).min(end);
    let mut sample = vec![0u64; ticks + 1];
    let ls = sim.compiled.marks.iter().position(|m| m == "ls");
    let le = sim.compiled.marks.iter().position(|m| m == "le");
    let mut open: BTreeMap<usize, u64> = BTreeMap::new();
    let add = |a: u64, b: u64, done: bool, sample: &mut Vec<u64>| {
        // ticks after the op started and before it ended (or up to the end if it has not)
        let mut k = if a < w {
            1
        } else {
            ((a - w) / SEC + 1) as usize
        };
        while k <= ticks && (tick_t(k) < b || (!done && tick_t(k) <= b)) {
            sample[k] = sample[k].max(tick_t(k) - a);
            k += 1;
        }
        if done && b > w {
            let kb = ((b - w).div_ceil(SEC) as usize).clamp(1, ticks);
            sample[kb] = sample[kb].max(b - a);
        }
    };
    for &(t, task, m) in &sim.marks {
        if Some(m) == ls {
            open.insert(task, t);
        } else if Some(m) == le {
            if let Some(a) = open.remove(&task) {
                add(a, t, true, &mut sample);
            }
        }
    }
    for (_, a) in open {
        add(a, end, false, &mut sample);
    }
    let s = &sample[1..];
    let mean = s.iter().sum::<u64>() as f64 / s.len() as f64;
    let max = s.iter().copied().max().unwrap_or(0);
    (mean * 1e-6, max as f64 * 1e-6)
}
