//! `fio`: jobs doing synchronous I/O (`ioengine=psync`, `iodepth=1`, `direct=1`) against one
//! block device (spec/workloads.md §9.4).
//!
//! Each job loops: submit work on the CPU (`run`), block in iowait for the device
//! (`io`, so the completion wakes it with the IOWAIT flag from the submitting CPU), then the
//! completion work (`run`). The device is [`BlockDevice`]: a datasheet NVMe SSD whose service
//! time is `access latency + bytes / bandwidth`, drawn from a lognormal distribution, and whose
//! queue is a closed-loop approximation: it serves `P` commands at once (its parallelism, from
//! the IOPS limit or the bandwidth), so `J` jobs with one I/O each in flight see
//! `service × max(1, J / P)`.
//!
//! This file also holds the parameter helpers and the block device that `tiobench` and
//! `sqlite-insert` share.

use std::collections::BTreeMap;

use serde_json::Value;

use super::constants::Constants;
use super::spec::{CustomWorkload, OpSpec, TaskSpec};
use super::{mean_or_no_data, Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo, NO_DATA};
use crate::engine::Sim;
use crate::sim::rng::RngStream;

// ---------------------------------------------------------------------------------------------
// Parameter helpers shared by the I/O and batch models.

/// A string parameter that must be one of `allowed`.
pub(crate) fn choice(
    workload: &str,
    params: &BTreeMap<String, Value>,
    name: &str,
    default: &str,
    allowed: &[&str],
) -> Result<String, String> {
    let Some(v) = params.get(name) else {
        return Ok(default.to_string());
    };
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    };
    if allowed.contains(&s.as_str()) {
        Ok(s)
    } else {
        Err(format!(
            "workload '{workload}': parameter {name} = {v}: allowed values: {}",
            allowed.join(", ")
        ))
    }
}

/// A boolean parameter: true/false, 1/0 or "true"/"false".
pub(crate) fn flag(
    workload: &str,
    params: &BTreeMap<String, Value>,
    name: &str,
    default: bool,
) -> Result<bool, String> {
    let Some(v) = params.get(name) else {
        return Ok(default);
    };
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Number(n) if n.as_f64() == Some(0.0) => Ok(false),
        Value::Number(n) if n.as_f64() == Some(1.0) => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("true") || s == "1" => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") || s == "0" => Ok(false),
        _ => Err(format!(
            "workload '{workload}': parameter {name} = {v}: expected true/false or 1/0"
        )),
    }
}

/// An integer parameter whose default depends on the machine (`null` in the listing).
pub(crate) fn int_or(
    p: &Params,
    params: &BTreeMap<String, Value>,
    name: &str,
    default: i64,
    lo: i64,
    hi: i64,
) -> Result<i64, String> {
    match params.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(_) => p.int(name, default, lo, hi),
    }
}

/// A task template with the defaults every generated task uses.
pub(crate) fn task(name: String, instances: u32, program: Vec<OpSpec>) -> TaskSpec {
    TaskSpec {
        instances,
        ..TaskSpec::new(name, program)
    }
}

pub(crate) fn run(cycles: f64) -> OpSpec {
    OpSpec::Run {
        cycles,
        stall_ns: 0.0,
    }
}

pub(crate) fn mark(name: &str) -> OpSpec {
    OpSpec::Mark { name: name.into() }
}

pub(crate) fn looped(count: i64, body: Vec<OpSpec>) -> OpSpec {
    OpSpec::Loop { count, body }
}

/// The mark id of `name`, if the program has it.
pub(crate) fn mark_id(sim: &Sim, name: &str) -> Option<usize> {
    sim.compiled.marks.iter().position(|m| m == name)
}

/// Per task, the intervals between successive `name` marks (the first from the task's
/// start), in ns.
pub(crate) fn mark_intervals(sim: &Sim, name: &str) -> Vec<u64> {
    let Some(id) = mark_id(sim, name) else {
        return vec![];
    };
    let mut last: BTreeMap<usize, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for &(t, task, m) in &sim.marks {
        if m != id {
            continue;
        }
        let prev = last
            .get(&task)
            .copied()
            .unwrap_or(sim.tasks[task].stats.start_ns);
        out.push(t.saturating_sub(prev));
        last.insert(task, t);
    }
    out
}

/// The P-th percentile (nearest rank) of `v`, [`NO_DATA`] when empty.
pub(crate) fn percentile(v: &mut [u64], p: f64) -> f64 {
    if v.is_empty() {
        return NO_DATA;
    }
    v.sort_unstable();
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1] as f64
}

/// The mean of `v`, [`NO_DATA`] when empty.
pub(crate) fn mean(v: &[u64]) -> f64 {
    mean_or_no_data(v.iter().map(|&x| x as f64).sum::<f64>(), v.len() as u64)
}

/// The time of the last exit, or now if a task is still alive.
pub(crate) fn end_ns(sim: &Sim) -> u64 {
    finished_ns(sim).unwrap_or(sim.now)
}

/// The time of the last exit once every task has exited; None while the work is unfinished
/// (a `--duration` cut it short).
pub(crate) fn finished_ns(sim: &Sim) -> Option<u64> {
    if sim.live_tasks > 0 {
        return None;
    }
    Some(
        sim.tasks
            .iter()
            .filter_map(|t| t.stats.exit_ns)
            .max()
            .unwrap_or(0),
    )
}

/// `finished_ns` in seconds, or [`NO_DATA`].
pub(crate) fn finished_s(sim: &Sim) -> f64 {
    finished_ns(sim).map_or(NO_DATA, |ns| ns as f64 * 1e-9)
}

// ---------------------------------------------------------------------------------------------
// The block device.

/// Direction of a device command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoDir {
    Read,
    Write,
}

/// A block device: service time `access + bytes / bandwidth`, lognormally spread, and a
/// parallelism that turns outstanding commands into queueing delay
/// (`data/workloads/blockdev.json`).
#[derive(Clone, Debug)]
pub struct BlockDevice {
    pub read_latency_ns: f64,
    pub write_latency_ns: f64,
    /// Bytes per ns.
    pub read_bw: f64,
    pub write_bw: f64,
    pub rand_read_iops: f64,
    pub rand_write_iops: f64,
    pub sigma: f64,
    pub flush_ns: f64,
}

impl BlockDevice {
    /// The shipped datacenter NVMe SSD.
    pub fn nvme() -> Result<Self, String> {
        let c = Constants::parse(
            "blockdev",
            include_str!("../../data/workloads/blockdev.json"),
        )?;
        Ok(BlockDevice {
            read_latency_ns: c.get("read_latency_us") * 1e3,
            write_latency_ns: c.get("write_latency_us") * 1e3,
            read_bw: c.get("seq_read_mb_s") * 1e6 / 1e9,
            write_bw: c.get("seq_write_mb_s") * 1e6 / 1e9,
            rand_read_iops: c.get("rand_read_iops"),
            rand_write_iops: c.get("rand_write_iops"),
            sigma: c.get("latency_sigma"),
            flush_ns: c.get("flush_us") * 1e3,
        })
    }

    /// Mean service time of one command of `bytes` (ns), with the device idle otherwise.
    pub fn service_ns(&self, dir: IoDir, bytes: f64) -> f64 {
        match dir {
            IoDir::Read => self.read_latency_ns + bytes / self.read_bw,
            IoDir::Write => self.write_latency_ns + bytes / self.write_bw,
        }
    }

    /// Commands served at once before they queue: the bandwidth limit
    /// `bw × service / bytes` and, for random access, the IOPS limit
    /// `iops × service(4 KiB)` (the number of NAND units busy at the datasheet IOPS).
    pub fn parallelism(&self, dir: IoDir, random: bool, bytes: f64) -> f64 {
        let s = self.service_ns(dir, bytes);
        let bw = match dir {
            IoDir::Read => self.read_bw,
            IoDir::Write => self.write_bw,
        };
        let mut p = bw * s / bytes;
        if random {
            let (iops, s4k) = match dir {
                IoDir::Read => (self.rand_read_iops, self.service_ns(dir, 4096.0)),
                IoDir::Write => (self.rand_write_iops, self.service_ns(dir, 4096.0)),
            };
            p = p.min(iops * s4k * 1e-9);
        }
        p.max(1.0)
    }

    /// Mean latency of a command when `outstanding` commands (this one included) are in
    /// flight: a closed loop of synchronous submitters keeps that many at the device.
    pub fn latency_ns(&self, dir: IoDir, random: bool, bytes: f64, outstanding: u32) -> f64 {
        let p = self.parallelism(dir, random, bytes);
        self.service_ns(dir, bytes) * (outstanding as f64 / p).max(1.0)
    }

    /// Bandwidth (bytes per ns) the device sustains for this access pattern.
    pub fn bandwidth(&self, dir: IoDir, random: bool, bytes: f64) -> f64 {
        self.parallelism(dir, random, bytes) * bytes / self.service_ns(dir, bytes)
    }

    /// `n` draws with mean `mean_ns`, lognormal with the device's spread.
    pub fn draw(&self, rng: &mut RngStream, mean_ns: f64, n: usize) -> Vec<u64> {
        let mu = -0.5 * self.sigma * self.sigma;
        (0..n)
            .map(|_| (mean_ns * rng.lognormal(mu, self.sigma)).round().max(1.0) as u64)
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// fio.

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| Ok(Box::new(Fio::new(ctx.params, ctx.seed)?)),
    }
}

const RW: [&str; 4] = ["randread", "randwrite", "read", "write"];

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "fio",
        description: "fio jobs with the psync engine (iodepth=1, direct=1) on a datacenter NVMe SSD: each job submits an I/O on the CPU, blocks in iowait for the device's service time (lognormal, queued when jobs exceed the device's parallelism), then completes it; time-based.",
        params: vec![
            ParamInfo { name: "jobs", default: 1.into(), description: "number of jobs (numjobs), each one synchronous I/O in flight" },
            ParamInfo { name: "rw", default: "randread".into(), description: "randread, randwrite, read or write" },
            ParamInfo { name: "bs_kb", default: 4.into(), description: "block size (KiB)" },
            ParamInfo { name: "iodepth", default: 1.into(), description: "must be 1: the sync engine has one I/O in flight per job" },
        ],
        metrics: vec!["iops", "bandwidth_mib_s", "latency_us_mean", "latency_us_p99", "ios"],
        primary: "iops",
        higher_is_better: true,
        open_ended: true,
    }
}

/// The fio model.
#[derive(Clone, Debug)]
pub struct Fio {
    pub jobs: u32,
    pub rw: String,
    pub bs_bytes: f64,
    pub submit_cycles: f64,
    pub complete_cycles: f64,
    /// Per job, the device latencies it cycles through (ns).
    pub tables: Vec<Vec<u64>>,
    /// Mean device latency with all jobs in flight (ns).
    pub device_latency_ns: f64,
}

impl Fio {
    pub fn new(params: &BTreeMap<String, Value>, seed: u64) -> Result<Self, String> {
        let p = Params::new("fio", params, &info())?;
        let jobs = p.int("jobs", 1, 1, 4096)? as u32;
        let rw = choice("fio", params, "rw", "randread", &RW)?;
        let bs_kb = p.int("bs_kb", 4, 1, 16384)?;
        let iodepth = p.int("iodepth", 1, 1, 65536)?;
        if iodepth != 1 {
            return Err(format!(
                "workload 'fio': parameter iodepth = {iodepth}: only 1 is modelled (the psync engine keeps one I/O in flight per job; use jobs for concurrency)"
            ));
        }
        let c = Constants::parse("fio", include_str!("../../data/workloads/fio.json"))?;
        let dev = BlockDevice::nvme()?;
        let bs_bytes = bs_kb as f64 * 1024.0;
        let dir = if rw.contains("read") {
            IoDir::Read
        } else {
            IoDir::Write
        };
        let random = rw.starts_with("rand");
        let device_latency_ns = dev.latency_ns(dir, random, bs_bytes, jobs);
        let n = c.get("table_len") as usize;
        let mut rng = RngStream::new(seed, "fio");
        let tables = (0..jobs)
            .map(|_| dev.draw(&mut rng, device_latency_ns, n))
            .collect();
        Ok(Fio {
            jobs,
            rw,
            bs_bytes,
            submit_cycles: c.get("submit_cycles"),
            complete_cycles: c.get("complete_cycles"),
            tables,
            device_latency_ns,
        })
    }
}

impl Model for Fio {
    fn build(&self) -> Result<CustomWorkload, String> {
        let tasks = self
            .tables
            .iter()
            .enumerate()
            .map(|(j, table)| {
                let mut body = Vec::with_capacity(table.len() * 4);
                for &ns in table {
                    body.push(run(self.submit_cycles));
                    body.push(OpSpec::Io { ns });
                    body.push(run(self.complete_cycles));
                    body.push(mark("io"));
                }
                let name = if self.jobs == 1 {
                    "fio".to_string()
                } else {
                    format!("fio-{j}")
                };
                task(name, 1, vec![looped(-1, body)])
            })
            .collect();
        Ok(CustomWorkload {
            tasks,
            channels: vec![],
        })
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let mut lat = mark_intervals(sim, "io");
        let ios = lat.len() as f64;
        let runtime_s = (sim.now as f64 * 1e-9).max(1e-12);
        let iops = ios / runtime_s;
        let mut values = BTreeMap::new();
        values.insert("ios".into(), ios);
        values.insert("iops".into(), iops);
        values.insert(
            "bandwidth_mib_s".into(),
            iops * self.bs_bytes / (1024.0 * 1024.0),
        );
        values.insert("latency_us_mean".into(), mean(&lat) * 1e-3);
        values.insert("latency_us_p99".into(), percentile(&mut lat, 99.0) * 1e-3);
        Metrics {
            values,
            primary: "iops".into(),
            higher_is_better: true,
        }
    }
}
