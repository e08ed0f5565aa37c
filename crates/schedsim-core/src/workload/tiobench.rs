//! `tiobench`: tiotest threads doing buffered file I/O in 4 KiB blocks, one file per thread
//! (spec/workloads.md §9.6; MMTests ran `tiobench.pl --size 2×RAM --block 4096 --threads N`).
//!
//! The file is twice the size of RAM, so reads come from the device and writes are throttled
//! to its bandwidth. Per mode, each thread loops:
//! - `seq-read`: the kernel reads ahead 128 KiB (32 blocks, `read_ahead_kb`); the thread blocks
//!   in iowait for each window for as long as the device is slower than its copying, then
//!   copies the 32 blocks out of the page cache;
//! - `seq-write` / `random-write`: buffered writes copy into the page cache; every
//!   `dirty_chunk_pages` the thread is throttled by balance_dirty_pages() (io_schedule_timeout,
//!   iowait) so that N writers share the device's sequential (or random) write bandwidth;
//! - `random-read`: every block misses the page cache: submit, iowait for a 4 KiB random read
//!   queued with the other threads', copy.
//!
//! Metrics per thread count as tiobench prints them: rate (MiB/s over all threads) and the
//! mean and maximum latency of a block request. The file size is far larger than a simulated
//! run, so the run is time-based: give a duration.

use std::collections::BTreeMap;

use serde_json::Value;

use super::constants::Constants;
use super::fio::{choice, looped, mark, mark_intervals, mean, run, task, BlockDevice, IoDir};
use super::spec::{CustomWorkload, OpSpec};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;
use crate::sim::rng::RngStream;

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| {
            let cycles_per_ns = super::ref_cycles(ctx.machine, ctx.topo, 1.0);
            Ok(Box::new(Tiobench::new(
                ctx.params,
                cycles_per_ns,
                ctx.seed,
            )?))
        },
    }
}

pub const MODES: [&str; 4] = ["seq-write", "seq-read", "random-read", "random-write"];

/// tiotest's block size and the kernel's default readahead window.
pub const BLOCK: f64 = 4096.0;
pub const READAHEAD_BLOCKS: usize = 32; // read_ahead_kb = 128 (VM_READAHEAD_PAGES)

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "tiobench",
        description: "tiobench/tiotest: N threads doing buffered 4 KiB file I/O on files twice the size of RAM (sequential read with 128 KiB readahead, sequential or random write throttled to the device's write bandwidth, random read missing the page cache); blocking is iowait; time-based.",
        params: vec![
            ParamInfo { name: "threads", default: 1.into(), description: "tiotest threads, one file each" },
            ParamInfo { name: "mode", default: "seq-write".into(), description: "seq-write, seq-read, random-read or random-write" },
        ],
        metrics: vec!["throughput_mib_s", "latency_us_mean", "latency_us_max", "blocks"],
        primary: "throughput_mib_s",
        higher_is_better: true,
        open_ended: true,
    }
}

/// The tiobench model.
#[derive(Clone, Debug)]
pub struct Tiobench {
    pub threads: u32,
    pub mode: String,
    pub read_copy_cycles: f64,
    pub write_copy_cycles: f64,
    pub miss_submit_cycles: f64,
    pub chunk: usize,
    /// Mean device wait per window / chunk / miss (ns); 0 when the CPU is the bottleneck.
    pub mean_wait_ns: f64,
    /// Per thread, the waits it cycles through (ns).
    pub tables: Vec<Vec<u64>>,
}

impl Tiobench {
    pub fn new(
        params: &BTreeMap<String, Value>,
        cycles_per_ns: f64,
        seed: u64,
    ) -> Result<Self, String> {
        let p = Params::new("tiobench", params, &info())?;
        let threads = p.int("threads", 1, 1, 4096)? as u32;
        let mode = choice("tiobench", params, "mode", "seq-write", &MODES)?;
        let c = Constants::parse(
            "tiobench",
            include_str!("../../data/workloads/tiobench.json"),
        )?;
        let dev = BlockDevice::nvme()?;
        let read_copy_cycles = c.get("read_copy_cycles");
        let write_copy_cycles = c.get("write_copy_cycles");
        let chunk = c.get("dirty_chunk_pages") as usize;
        let n = threads as f64;
        // CPU time of a window or chunk on the fastest CPU, which overlaps the device
        let ns = |cycles: f64| cycles / cycles_per_ns.max(1e-9);
        let mean_wait_ns = match mode.as_str() {
            "seq-read" => {
                let window = READAHEAD_BLOCKS as f64 * BLOCK;
                let dev_ns = dev.latency_ns(IoDir::Read, false, window, threads);
                (dev_ns - READAHEAD_BLOCKS as f64 * ns(read_copy_cycles)).max(0.0)
            }
            "seq-write" | "random-write" => {
                let random = mode == "random-write";
                let share = dev.bandwidth(IoDir::Write, random, BLOCK) / n;
                let bytes = chunk as f64 * BLOCK;
                (bytes / share - chunk as f64 * ns(write_copy_cycles)).max(0.0)
            }
            _ => dev.latency_ns(IoDir::Read, true, BLOCK, threads),
        };
        let len = c.get("table_len") as usize;
        let mut rng = RngStream::new(seed, "tiobench");
        let tables = (0..threads)
            .map(|_| {
                if mean_wait_ns > 0.0 {
                    dev.draw(&mut rng, mean_wait_ns, len)
                } else {
                    vec![0; len]
                }
            })
            .collect();
        Ok(Tiobench {
            threads,
            mode,
            read_copy_cycles,
            write_copy_cycles,
            miss_submit_cycles: c.get("miss_submit_cycles"),
            chunk,
            mean_wait_ns,
            tables,
        })
    }

    fn body(&self, table: &[u64]) -> Vec<OpSpec> {
        let mut body = Vec::new();
        let io = |ns: u64, body: &mut Vec<OpSpec>| {
            if ns > 0 {
                body.push(OpSpec::Io { ns });
            }
        };
        for &wait in table {
            match self.mode.as_str() {
                "seq-read" => {
                    io(wait, &mut body);
                    body.push(looped(
                        READAHEAD_BLOCKS as i64,
                        vec![run(self.read_copy_cycles), mark("op")],
                    ));
                }
                "random-read" => {
                    body.push(run(self.miss_submit_cycles));
                    io(wait, &mut body);
                    body.push(run(self.read_copy_cycles));
                    body.push(mark("op"));
                }
                _ => {
                    body.push(looped(
                        self.chunk as i64,
                        vec![run(self.write_copy_cycles), mark("op")],
                    ));
                    io(wait, &mut body);
                }
            }
        }
        body
    }
}

impl Model for Tiobench {
    fn build(&self) -> Result<CustomWorkload, String> {
        let tasks = self
            .tables
            .iter()
            .enumerate()
            .map(|(i, table)| {
                let name = if self.threads == 1 {
                    "tiotest".to_string()
                } else {
                    format!("tiotest-{i}")
                };
                task(name, 1, vec![looped(-1, self.body(table))])
            })
            .collect();
        Ok(CustomWorkload {
            tasks,
            channels: vec![],
        })
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let lat = mark_intervals(sim, "op");
        let blocks = lat.len() as f64;
        let runtime_s = (sim.now as f64 * 1e-9).max(1e-12);
        let mut values = BTreeMap::new();
        values.insert("blocks".into(), blocks);
        values.insert(
            "throughput_mib_s".into(),
            blocks * BLOCK / (1024.0 * 1024.0) / runtime_s,
        );
        values.insert("latency_us_mean".into(), mean(&lat) * 1e-3);
        values.insert(
            "latency_us_max".into(),
            lat.iter()
                .copied()
                .max()
                .map_or(super::NO_DATA, |x| x as f64 * 1e-3),
        );
        Metrics {
            values,
            primary: "throughput_mib_s".into(),
            higher_is_better: true,
        }
    }
}
