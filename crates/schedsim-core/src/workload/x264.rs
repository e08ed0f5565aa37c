//! `x264`: the x264 CLI encoding a 1080p y4m file with frame threads (preset medium; the
//! "X264 - 104 cores" case of seed 003).
//!
//! Tasks (all of comm family `x264`):
//! - the main thread reads a frame (CPU), hands it to the lookahead, and once the pipeline is
//!   full (rc-lookahead + threads − 1 frames in flight) waits for the oldest encoded frame and
//!   writes it out;
//! - the lookahead thread does the frame-type / MB-tree analysis and hands frame n to frame
//!   thread n mod T (x264's sliced lookahead threads are folded into it: its work per frame is
//!   divided by their number, threads/6 clamped to 1..16);
//! - T frame threads: thread i encodes frames i, i+T, ... one 16-pixel macroblock row at a
//!   time. Before row y of frame n it waits (on a condition variable in x264, on a channel of
//!   "row done" tokens here) until frame n−1 has completed row y + lag, where the lag is
//!   x264's motion-vector thread range (`i_mv_range_thread`, from the height and the thread
//!   count) plus the deblocking delay (`X264_THREAD_HEIGHT`). Every finished row wakes the
//!   next frame's thread. So threads do CPU-bound row encodes with short waits in between,
//!   and the number of frames that can progress at once is bounded by rows / lag.
//!
//! Metric: frames per second over the whole encode, as x264 prints it; runs to completion.

use std::collections::BTreeMap;

use serde_json::Value;

use super::constants::Constants;
use super::fio::{end_ns, finished_s, int_or, looped, mark, mark_id, run, task};
use super::spec::{ChannelSpec, CustomWorkload, Dist, OpSpec};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| Ok(Box::new(X264::new(ctx.params, ctx.topo.cpus.len())?)),
    }
}

/// 1080p: 1088 coded lines = 68 macroblock rows.
pub const HEIGHT: i64 = 1080;
pub const MB_ROWS: usize = 68;
/// x264 common/common.h: lines in progress per frame thread (deblocking lag).
pub const X264_THREAD_HEIGHT: i64 = 24;
/// --preset medium: me_range 16; level 4.x: maximum vertical MV range 512.
pub const ME_RANGE: i64 = 16;
pub const MV_RANGE: i64 = 512;
/// X264_THREAD_MAX and X264_LOOKAHEAD_THREAD_MAX.
pub const THREAD_MAX: i64 = 128;
pub const LOOKAHEAD_THREAD_MAX: u32 = 16;

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "x264",
        description: "x264 CLI, 1080p preset medium, frame threads: a reader/muxer main thread, a lookahead thread and T frame threads encoding macroblock rows, each row waiting for the previous frame to be far enough ahead (x264's mv_range_thread); runs to completion.",
        params: vec![
            ParamInfo { name: "threads", default: Value::Null, description: "frame threads (default as x264: 1.5 x CPUs, at most 128)" },
            ParamInfo { name: "frames", default: 600.into(), description: "frames to encode" },
        ],
        metrics: vec!["fps", "elapsed_s", "frames", "row_lag"],
        primary: "fps",
        higher_is_better: true,
        open_ended: false,
    }
}

/// x264's `i_mv_range_thread` (encoder.c, validate_parameters) turned into the number of
/// macroblock rows frame n−1 must have finished beyond the row frame n is encoding.
pub fn row_lag(threads: i64) -> usize {
    if threads <= 1 {
        return 0;
    }
    let max_range = (HEIGHT + X264_THREAD_HEIGHT) / threads - X264_THREAD_HEIGHT;
    let mut r = max_range / 2;
    r = r.clamp(ME_RANGE, MV_RANGE);
    let mut r2 = (r & !15) + ((-X264_THREAD_HEIGHT) & 15);
    if r2 < r {
        r2 += 16;
    }
    ((r2 + X264_THREAD_HEIGHT + 15) / 16) as usize
}

/// The x264 model.
#[derive(Clone, Debug)]
pub struct X264 {
    pub threads: u32,
    pub frames: u64,
    pub lag: usize,
    pub row_cycles: f64,
    pub row_spread: f64,
    pub lookahead_cycles: f64,
    pub read_cycles: f64,
    pub mux_cycles: f64,
    /// Frames the main thread feeds before it waits for output.
    pub delay: u64,
}

impl X264 {
    pub fn new(params: &BTreeMap<String, Value>, ncpus: usize) -> Result<Self, String> {
        let p = Params::new("x264", params, &info())?;
        let auto = (ncpus as i64 * 3 / 2).clamp(1, THREAD_MAX);
        let threads = int_or(&p, params, "threads", auto, 1, THREAD_MAX)? as u32;
        let frames = p.int("frames", 600, 1, 10_000_000)? as u64;
        let c = Constants::parse("x264", include_str!("../../data/workloads/x264.json"))?;
        let la_threads = (threads / 6).clamp(1, LOOKAHEAD_THREAD_MAX);
        Ok(X264 {
            threads,
            frames,
            lag: row_lag(threads as i64).min(MB_ROWS),
            row_cycles: c.get("frame_cycles") / MB_ROWS as f64,
            row_spread: c.get("row_spread"),
            lookahead_cycles: c.get("lookahead_cycles") / la_threads as f64,
            read_cycles: c.get("read_cycles"),
            mux_cycles: c.get("mux_cycles"),
            delay: (c.get("rc_lookahead") as u64 + threads as u64 - 1).min(frames),
        })
    }

    fn row(&self) -> OpSpec {
        OpSpec::RunDist {
            dist: Dist::Uniform {
                lo: self.row_cycles * (1.0 - self.row_spread),
                hi: self.row_cycles * (1.0 + self.row_spread),
            },
            stall_ns: 0.0,
        }
    }

    /// One frame on thread `i`: rows, with the dependency on the previous frame when `dep`.
    fn frame(&self, i: usize, dep: bool) -> Vec<OpSpec> {
        let t = self.threads as usize;
        let mut ops = vec![OpSpec::Recv {
            chan: format!("enc{i}"),
        }];
        let tokens = t > 1;
        let recv = || OpSpec::Recv {
            chan: format!("ring{i}"),
        };
        if tokens && dep {
            for _ in 0..self.lag {
                ops.push(recv());
            }
        }
        for y in 0..MB_ROWS {
            if tokens && dep && y > 0 && y + self.lag <= MB_ROWS {
                ops.push(recv());
            }
            ops.push(self.row());
            if tokens {
                ops.push(OpSpec::Send {
                    chan: format!("ring{}", (i + 1) % t),
                });
            }
        }
        ops.push(OpSpec::Send { chan: "out".into() });
        ops
    }

    fn frames_of(&self, i: usize) -> u64 {
        let t = self.threads as u64;
        let i = i as u64;
        if i >= self.frames {
            0
        } else {
            (self.frames - i).div_ceil(t)
        }
    }
}

impl Model for X264 {
    fn build(&self) -> Result<CustomWorkload, String> {
        let t = self.threads as usize;
        let f = self.frames;
        let d = self.delay;
        let send = |c: &str| OpSpec::Send { chan: c.into() };
        let recv = |c: &str| OpSpec::Recv { chan: c.into() };
        let feed = || vec![run(self.read_cycles), send("raw")];
        let drain = || vec![recv("out"), run(self.mux_cycles), mark("frame")];
        let mut steady = feed();
        steady.extend(drain());
        let main = vec![
            looped(d as i64, feed()),
            looped((f - d) as i64, steady),
            looped(d as i64, drain()),
            OpSpec::Exit,
        ];
        // lookahead: frame n goes to thread n mod T
        let la_one = |i: usize| {
            vec![
                recv("raw"),
                run(self.lookahead_cycles),
                send(&format!("enc{i}")),
            ]
        };
        let mut round = Vec::new();
        for i in 0..t {
            round.extend(la_one(i));
        }
        let mut la = vec![looped((f / t as u64) as i64, round)];
        for i in 0..(f % t as u64) as usize {
            la.extend(la_one(i));
        }
        la.push(OpSpec::Exit);
        let mut tasks = vec![task("x264".into(), 1, main), task("x264-la".into(), 1, la)];
        let mut channels = vec![
            ChannelSpec::new("raw", (d + 1) as u32),
            ChannelSpec::new("out", f.min(u32::MAX as u64) as u32),
        ];
        for i in 0..t {
            let n = self.frames_of(i);
            let mut prog = Vec::new();
            let mut rest = n;
            if i == 0 && n > 0 {
                // frame 0 references nothing
                prog.extend(self.frame(0, false));
                rest -= 1;
            }
            prog.push(looped(rest as i64, self.frame(i, true)));
            prog.push(OpSpec::Exit);
            tasks.push(task(format!("x264-enc{i}"), 1, prog));
            channels.push(ChannelSpec::new(format!("enc{i}"), (d + 1) as u32));
            channels.push(ChannelSpec::new(format!("ring{i}"), 2 * MB_ROWS as u32 + 2));
        }
        Ok(CustomWorkload { tasks, channels })
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let done = mark_id(sim, "frame")
            .map(|id| sim.marks.iter().filter(|m| m.2 == id).count())
            .unwrap_or(0) as f64;
        let ran = end_ns(sim) as f64 * 1e-9;
        let mut values = BTreeMap::new();
        values.insert(
            "fps".into(),
            if ran > 0.0 {
                done / ran
            } else {
                super::NO_DATA
            },
        );
        values.insert("elapsed_s".into(), finished_s(sim));
        values.insert("frames".into(), done);
        values.insert("row_lag".into(), self.lag as f64);
        Metrics {
            values,
            primary: "fps".into(),
            higher_is_better: true,
        }
    }
}
