//! The IPC benchmark models: hackbench (`perf bench sched messaging`) and schbench (current
//! and old), against numbers derived by hand from their structure and constants.

mod common;

use std::collections::BTreeMap;

use common::*;
use schedsim_core::workload::hackbench::{self, Hackbench};
use schedsim_core::workload::schbench::{
    self, plat_idx_to_val, plat_val_to_idx, Histogram, Schbench, Version, PLAT_NR,
};
use schedsim_core::workload::spec::{CustomWorkload, Dist, OpSpec};
use schedsim_core::workload::Model;
use schedsim_core::{Sim, SimConfig};
use serde_json::{json, Value};

/// 1 GHz: one cycle is one nanosecond.
const GHZ: u64 = 1_000_000;

fn params(v: Value) -> BTreeMap<String, Value> {
    serde_json::from_value(v).unwrap()
}

fn metrics(sim: &Sim) -> BTreeMap<String, f64> {
    sim.workload.metrics(sim).values
}

fn mark_id(sim: &Sim, name: &str) -> Option<usize> {
    sim.compiled.marks.iter().position(|m| m == name)
}

/// `smp` with only the polling idle state: waking an idle CPU costs no exit latency.
fn smp_poll(cores: usize, khz: u64, costs: bool) -> Value {
    let mut m = smp(cores, 1, khz, costs);
    m["idle_states"]["default"] = json!([
        {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true}
    ]);
    m
}

fn try_sim(cfg: SimConfig) -> Result<Sim, String> {
    Sim::new(cfg)
}

// ================================================================== hackbench

fn hb(p: Value) -> Value {
    json!({"name": "hackbench", "params": p})
}

#[test]
fn hackbench_buffers_hold_what_linux_holds() {
    // measured on Linux 6.18 (non-blocking writes until EAGAIN) for these message sizes
    for (size, socket, pipe) in [
        (1, 278, 65536),
        (64, 278, 1024),
        (100, 278, 640),
        (200, 167, 320),
        (500, 167, 128),
        (1000, 93, 64),
        (2000, 49, 32),
        (3000, 49, 16),
        (3776, 49, 16),
        (3800, 44, 16),
        (4096, 44, 16),
    ] {
        assert_eq!(hackbench::socket_capacity(size), socket, "socket, {size} B");
        assert_eq!(hackbench::pipe_capacity(size), pipe, "pipe, {size} B");
    }
    // unix_writable(): writers wake once sk_wmem_alloc x 4 <= sk_sndbuf, i.e. at most
    // 212,992 / 4 bytes of skb truesize left: 768-byte skbs of 100 B messages, 1,280 of 200 B,
    // 2,304 of 1000 B, 4,352 of 2000 B, 4,864 (page fragment) of 4096 B
    for (size, left) in [(100, 69), (200, 41), (1000, 23), (2000, 12), (4096, 10)] {
        assert_eq!(hackbench::socket_write_space(size), left, "{size} B");
    }
}

#[test]
fn hackbench_builds_40_tasks_per_group_and_the_message_pattern() {
    let h = Hackbench::new(&params(json!({"groups": 3, "loops": 7}))).unwrap();
    let w = h.build().unwrap();
    // the parent plus 20 receivers and 20 senders per group
    assert_eq!(w.tasks.len(), 1 + 40 * 3);
    assert_eq!(w.tasks.iter().filter(|t| t.start).count(), 1);
    // one channel per receiver (socket buffer: 278 messages) plus the ready pipe
    let recv_chans: Vec<_> = w.channels.iter().filter(|c| c.name != "ready").collect();
    assert_eq!(recv_chans.len(), 60);
    assert!(recv_chans.iter().all(|c| c.capacity == 278));
    fn count(ops: &[OpSpec], f: &dyn Fn(&OpSpec) -> bool) -> i64 {
        ops.iter()
            .map(|op| match op {
                OpSpec::Loop { count: n, body } => n * count(body, f),
                op => f(op) as i64,
            })
            .sum()
    }
    for t in &w.tasks[1..] {
        let recvs = count(&t.program, &|op| matches!(op, OpSpec::Recv { .. }));
        let sends = count(
            &t.program,
            &|op| matches!(op, OpSpec::Send { chan } if chan.starts_with('g')),
        );
        if t.name.starts_with("hb-recv") {
            assert_eq!((recvs, sends), (20 * 7, 0), "{}", t.name);
        } else {
            assert_eq!((recvs, sends), (0, 20 * 7), "{}", t.name);
        }
    }
    let p = Hackbench::new(&params(json!({"groups": 1, "ipc": "pipe"}))).unwrap();
    assert_eq!(p.capacity, 640);
}

/// The model's programs with a mark after every message read ("rx") and written ("tx-J").
fn instrumented(h: &Hackbench) -> Value {
    let mut w: CustomWorkload = h.build().unwrap();
    fn add_marks(ops: &mut Vec<OpSpec>) {
        let mut out = Vec::new();
        for mut op in ops.drain(..) {
            if let OpSpec::Loop { body, .. } = &mut op {
                add_marks(body);
            }
            let extra = match &op {
                OpSpec::Recv { chan } if chan.starts_with('g') => Some("rx".to_string()),
                OpSpec::Send { chan } if chan.starts_with('g') => {
                    Some(format!("tx-{}", chan.split("-r").nth(1).unwrap()))
                }
                _ => None,
            };
            out.push(op);
            if let Some(name) = extra {
                out.push(OpSpec::Mark { name });
            }
        }
        *ops = out;
    }
    for t in &mut w.tasks {
        add_marks(&mut t.program);
    }
    custom(
        serde_json::to_value(&w.tasks).unwrap(),
        serde_json::to_value(&w.channels).unwrap(),
    )
}

#[test]
fn hackbench_every_receiver_gets_fds_times_loops_messages_after_the_start() {
    for (mode, ipc) in [("process", "socket"), ("thread", "pipe")] {
        let (groups, loops) = (2, 30);
        let h = Hackbench::new(&params(
            json!({"groups": groups, "loops": loops, "mode": mode, "ipc": ipc}),
        ))
        .unwrap();
        let sim = run(config(smp(4, 1, GHZ, true), instrumented(&h), "6.12", 0.0));
        // 40 tasks per group were created, and all exited
        let workers: Vec<_> = sim
            .tasks
            .iter()
            .filter(|t| t.comm != hackbench::PARENT)
            .collect();
        assert_eq!(workers.len(), 40 * groups);
        assert_eq!(sim.stats.forks as usize, 40 * groups);
        assert!(workers.iter().all(|t| t.stats.exit_ns.is_some()));
        let go = mark_id(&sim, "go").unwrap();
        let t_go = sim.marks.iter().find(|m| m.2 == go).unwrap().0;
        let rx = mark_id(&sim, "rx").unwrap();
        let mut per_task: BTreeMap<usize, usize> = BTreeMap::new();
        let mut tx: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        for &(t, task, id) in &sim.marks {
            let name = &sim.compiled.marks[id];
            if id == rx {
                *per_task.entry(task).or_default() += 1;
            }
            if let Some(j) = name.strip_prefix("tx-") {
                *tx.entry((task, j.parse().unwrap())).or_default() += 1;
            }
            if id == rx || name.starts_with("tx-") {
                assert!(t >= t_go, "{mode}/{ipc}: a message moved before the start");
            }
        }
        // every receiver read exactly 20 × loops messages
        assert_eq!(per_task.len(), 20 * groups);
        assert!(per_task.values().all(|&n| n == 20 * loops), "{mode}/{ipc}");
        // every sender wrote loops messages to each of its group's 20 receivers
        assert_eq!(tx.len(), 20 * groups * 20);
        assert!(tx.values().all(|&n| n == loops));
        // nothing is left in any pipe or socket
        assert!(sim
            .chans
            .iter()
            .all(|c| c.count == 0 || c.capacity as usize == 40 * groups));
        // the uninstrumented model gives the same time: marks cost nothing
        let plain = run(config(
            smp(4, 1, GHZ, true),
            hb(json!({"groups": groups, "loops": loops, "mode": mode, "ipc": ipc})),
            "6.12",
            0.0,
        ));
        let m = metrics(&plain);
        let end = mark_id(&sim, "end").unwrap();
        let t_end = sim.marks.iter().find(|m| m.2 == end).unwrap().0;
        assert_eq!(m["time_us"], (t_end / 1000 - t_go / 1000) as f64);
        assert_eq!(m["workers"], (40 * groups) as f64);
        assert_eq!(m["completed"], 1.0);
    }
}

#[test]
fn hackbench_time_on_one_cpu_is_the_work_of_every_message() {
    // One CPU, no kernel costs: from the start to the last reap the CPU does nothing but the
    // writes, the reads and (process mode) the exits.
    let c = hackbench::constants();
    let (groups, loops) = (1u64, 40u64);
    let msgs = (groups * 20 * 20 * loops) as f64;
    for (ipc, kind) in [("socket", "socket"), ("pipe", "pipe")] {
        let per_msg = c.get(&format!("{kind}_write_cycles"))
            + c.get(&format!("{kind}_read_cycles"))
            + c.get(&format!("{kind}_write_stall_ns"))
            + c.get(&format!("{kind}_read_stall_ns"));
        let mut t = BTreeMap::new();
        for mode in ["process", "thread"] {
            let sim = run(config(
                smp(1, 1, GHZ, false),
                hb(json!({"groups": groups, "loops": loops, "mode": mode, "ipc": ipc})),
                "6.12",
                0.0,
            ));
            let m = metrics(&sim);
            let exits = if mode == "process" {
                40.0 * groups as f64 * c.get("process_exit_cycles")
            } else {
                0.0
            };
            let expect_us = (msgs * per_msg + exits) / 1000.0;
            assert!(
                (m["time_us"] - expect_us).abs() <= 2.0,
                "{mode}/{ipc}: {} us, expected {expect_us}",
                m["time_us"]
            );
            // perf prints the time truncated to the millisecond
            assert_eq!(m["time_s"], (m["time_us"] / 1000.0).floor() / 1000.0);
            t.insert(mode, m["time_us"]);
        }
        // process and thread mode differ by the processes' exits only
        let d = t["process"] - t["thread"];
        let exits_us = 40.0 * c.get("process_exit_cycles") / 1000.0;
        assert!((d - exits_us).abs() <= 2.0, "{ipc}: {d} vs {exits_us}");
    }
}

#[test]
fn hackbench_time_shrinks_with_more_cpus() {
    let mut last = f64::INFINITY;
    let mut times = Vec::new();
    for cpus in [1, 2, 4, 8] {
        let sim = run(config(
            smp(cpus, 1, 2 * GHZ, true),
            hb(json!({"groups": 2, "loops": 25})),
            "6.12",
            0.0,
        ));
        let t = metrics(&sim)["time_us"];
        assert!(t < last, "{cpus} CPUs: {t} us, not below {last}");
        last = t;
        times.push(t);
    }
    // 80 tasks have plenty of parallelism: 8 CPUs are at least 4x faster than 1
    assert!(times[0] / times[3] > 4.0, "{times:?}");
}

#[test]
fn hackbench_pipes_are_faster_than_sockets_and_threads_than_processes() {
    let t = |mode: &str, ipc: &str| {
        let sim = run(config(
            smp(4, 1, 2 * GHZ, true),
            hb(json!({"groups": 1, "loops": 50, "mode": mode, "ipc": ipc})),
            "6.12",
            0.0,
        ));
        metrics(&sim)["time_us"]
    };
    let (ps, ts, pp, tp) = (
        t("process", "socket"),
        t("thread", "socket"),
        t("process", "pipe"),
        t("thread", "pipe"),
    );
    assert!(pp < ps && tp < ts, "{ps} {ts} {pp} {tp}");
    assert!(ts < ps && tp < pp, "{ps} {ts} {pp} {tp}");
}

#[test]
fn hackbench_is_deterministic() {
    let cfg = || {
        config(
            smp(4, 2, 2 * GHZ, true),
            hb(json!({"groups": 2, "loops": 20, "mode": "thread"})),
            "6.12",
            0.0,
        )
    };
    let a = run(cfg());
    let b = run(cfg());
    assert_eq!(a.marks, b.marks);
    assert_eq!(metrics(&a), metrics(&b));
    assert_eq!(
        schedsim_core::metrics::result_json(&a, 0.0),
        schedsim_core::metrics::result_json(&b, 0.0)
    );
}

#[test]
fn hackbench_parameter_errors() {
    for (p, needle) in [
        (json!({"groups": 0}), "groups"),
        (json!({"loops": 0}), "loops"),
        (json!({"loops": 1.5}), "integer"),
        (json!({"mode": "fork"}), "process, thread"),
        (json!({"ipc": "tcp"}), "socket, pipe"),
        (json!({"ipc": 3}), "socket, pipe"),
        (json!({"datasize": 5000}), "datasize"),
        (json!({"fds": 0}), "fds"),
        (json!({"threads": 4}), "unknown parameter 'threads'"),
        (json!({"groups": 10000, "fds": 20}), "at most 200000"),
    ] {
        let e = try_sim(config(smp(2, 1, GHZ, true), hb(p.clone()), "6.12", 0.0))
            .err()
            .unwrap_or_else(|| panic!("{p} accepted"));
        assert!(e.contains(needle), "{p}: {e}");
    }
}

// ================================================================== schbench histogram

#[test]
fn schbench_histogram_buckets_match_hand_computed_indices_and_values() {
    // values below 512 are exact
    for v in [0u32, 1, 7, 255, 256, 511] {
        assert_eq!(plat_val_to_idx(v), v as usize);
        assert_eq!(plat_idx_to_val(v as usize), v);
    }
    // 512..1023: msb 9, 1 error bit, group base (1+1)<<8 = 512; the value is the bucket's
    // start + 2^1 / 2
    assert_eq!(plat_val_to_idx(512), 512);
    assert_eq!(plat_val_to_idx(513), 512);
    assert_eq!(plat_val_to_idx(514), 513);
    assert_eq!(plat_idx_to_val(512), 513);
    // 1000: msb 9, error bits 1, offset 255 & 500 = 244 -> idx 756 -> 512 + 244.5*2 = 1001
    assert_eq!(plat_val_to_idx(1000), 756);
    assert_eq!(plat_idx_to_val(756), 1001);
    // 30000: msb 14, error bits 6, base 7<<8 = 1792, offset 255 & 468 = 212 -> idx 2004;
    // value 2^14 + 212.5 * 2^6 = 29984
    assert_eq!(plat_val_to_idx(30000), 2004);
    assert_eq!(plat_idx_to_val(2004), 29984);
    // 6906: msb 12, error bits 4, base 5<<8 = 1280, offset 255 & 431 = 175 -> idx 1455;
    // value 4096 + 175.5 * 16 = 6904
    assert_eq!(plat_val_to_idx(6906), 1455);
    assert_eq!(plat_idx_to_val(1455), 6904);
    // the last bucket catches everything above: 18 groups up, 2^25 + 255.5 * 2^17
    assert_eq!(plat_val_to_idx(u32::MAX), PLAT_NR - 1);
    assert_eq!(plat_idx_to_val(PLAT_NR - 1), 67_043_328);
    // a bucket's value lies within 1/512 of every value it holds
    for v in [600u32, 5_000, 77_777, 1_000_000, 20_000_000] {
        let b = plat_idx_to_val(plat_val_to_idx(v)) as f64;
        assert!((b - v as f64).abs() / v as f64 <= 1.0 / 512.0, "{v} -> {b}");
    }
}

#[test]
fn schbench_percentiles_are_computed_like_schbench() {
    // 1..=100 once each: p50 = 50, p90 = 90, p99 = 99, p99.9 needs 99.9 samples -> 100
    let mut h = Histogram::default();
    for v in 1..=100 {
        h.add(v);
    }
    assert_eq!(
        h.percentiles(&[50.0, 90.0, 99.0, 99.9]),
        vec![50, 90, 99, 100]
    );
    assert_eq!((h.min, h.max, h.nr_samples), (1, 100, 100));
    // 99 samples of 1000 us and one of 30000: everything up to p99 is the 1000 bucket (1001),
    // p99.9 is the 30000 bucket (29984)
    let mut h = Histogram::default();
    for _ in 0..99 {
        h.add(1000);
    }
    h.add(30000);
    assert_eq!(
        h.percentiles(&schbench::OLD_PLIST),
        vec![1001, 1001, 1001, 1001, 1001, 29984, 29984]
    );
    // schbench compares the running count with plist[j] / 100.0 * nr in doubles:
    // 99.9 / 100.0 * 1000 = 999.0000000000001, so with 999 samples of 10 and one of 20 the
    // 99.9th percentile is 20 (a nearest-rank computation would say 10)
    let mut h = Histogram::default();
    for _ in 0..999 {
        h.add(10);
    }
    h.add(20);
    assert_eq!(h.percentiles(&[99.0, 99.9]), vec![10, 20]);
    // min starts at the first sample: add_lat treats min == 0 as unset
    let mut h = Histogram::default();
    h.add(0);
    h.add(5);
    assert_eq!((h.min, h.max), (5, 5));
}

// ================================================================== schbench model

fn sb(p: Value) -> Value {
    json!({"name": "schbench", "params": p})
}

#[test]
fn a_schbench_warmup_must_be_shorter_than_the_run() {
    // every sample would fall in the warm-up and each percentile would read 0
    let w = sb(json!({"workers": 2, "warmup_ms": 100}));
    let e = schedsim_core::Sim::new(config(smp(2, 1, 3_000_000, true), w, "6.12", 20.0))
        .err()
        .expect("rejected");
    assert!(
        e.contains("warm-up (0.1 s) is not shorter than the run (0.02 s)"),
        "{e}"
    );
}

#[test]
fn schbench_current_and_old_have_their_structure() {
    // current: m message threads with ceil(CPUs/m) workers each; requests sleep 100 us + the
    // 50 us timer slack and multiply 104x104 matrices 5 times
    let s = Schbench::new(&params(json!({"message_threads": 2})), 7, 1).unwrap();
    assert_eq!(s.version, Version::Current);
    assert_eq!((s.message_threads, s.workers), (2, 4));
    assert_eq!(s.matrix_size, 104);
    let cpm = schbench::constants().get("matmul_cycles_per_mac");
    assert_eq!(s.request_cycles, 5.0 * 104f64.powi(3) * cpm);
    let w = s.build().unwrap();
    assert_eq!(w.tasks.len(), 4);
    assert_eq!(w.tasks[1].instances, 4);
    let body = |t: usize| match &w.tasks[t].program[0] {
        OpSpec::Loop { count: -1, body } => body.clone(),
        _ => panic!("not open-ended"),
    };
    let worker = body(1);
    assert!(worker
        .iter()
        .any(|op| matches!(op, OpSpec::Sleep { ns: 150_000 })));
    // the matrix work: log-normal around its median, from the run's workload stream
    let sigma = schbench::constants().get("request_work_sigma");
    assert!(worker.iter().any(|op| matches!(op,
        OpSpec::RunDist { dist: Dist::LogNormal { mu, sigma: sg, scale }, .. }
            if *mu == 0.0 && *sg == sigma && *scale == s.request_cycles)));
    assert!(!worker.iter().any(|op| matches!(op, OpSpec::RunFor { .. })));
    // the message thread only wakes: no work of its own
    assert!(!body(0).iter().any(|op| matches!(
        op,
        OpSpec::Run { .. } | OpSpec::RunFor { .. } | OpSpec::Sleep { .. }
    )));

    // old: -m 2 -t 16; workers spin 30 ms of wall time; the message thread spins 30 ms and
    // sleeps 30 ms + [0, 7.5 ms) jitter + the 50 us slack
    let o = Schbench::new(&params(json!({"version": "old"})), 64, 1).unwrap();
    assert_eq!((o.message_threads, o.workers), (2, 16));
    let w = o.build().unwrap();
    assert_eq!(w.tasks[1].instances, 16);
    let worker = match &w.tasks[1].program[0] {
        OpSpec::Loop { body, .. } => body.clone(),
        _ => panic!(),
    };
    assert!(worker
        .iter()
        .any(|op| matches!(op, OpSpec::RunFor { ns } if *ns == 30_000_500)));
    assert!(!worker.iter().any(|op| matches!(op, OpSpec::Sleep { .. })));
    let msg = match &w.tasks[0].program[0] {
        OpSpec::Loop { body, .. } => body.clone(),
        _ => panic!(),
    };
    let sleeps: Vec<u64> = msg
        .iter()
        .filter_map(|op| match op {
            OpSpec::Sleep { ns } => Some(*ns),
            _ => None,
        })
        .collect();
    assert_eq!(sleeps.len(), schbench::OLD_JITTER_VALUES);
    assert!(sleeps
        .iter()
        .all(|&ns| (30_050_000..37_550_000).contains(&ns)));
    assert!(sleeps.iter().any(|&ns| ns != sleeps[0]), "no jitter");
    assert!(msg
        .iter()
        .any(|op| matches!(op, OpSpec::RunFor { ns } if *ns == 30_000_500)));
}

#[test]
fn schbench_current_requests_take_the_sleep_and_the_matrix_work() {
    // 2 workers on 8 idle 1-GHz CPUs: a request is usleep(100) + 50 us slack, the wakeup
    // from it (a 6000-cycle context switch), and a median of 5 x 104^3 x 1.2 cycles of matrix
    // work: 150 + 6 + 6749.18 us = 6905 us (histogram bucket [6896, 6912), shown as 6904).
    // The work is log-normal with sigma 0.6 %: its 99th percentile is exp(2.326 sigma) = 1.4 %
    // above the median, 7000 us.
    let sim = run(config(
        smp_poll(8, GHZ, true),
        sb(json!({"workers": 2})),
        "6.12",
        400.0,
    ));
    let m = metrics(&sim);
    let c = schbench::constants();
    let work_us = 5.0 * 104f64.powi(3) * c.get("matmul_cycles_per_mac") / 1000.0;
    let req_us = 150.0 + 6.0 + work_us;
    assert_eq!(plat_idx_to_val(plat_val_to_idx(req_us as u32)), 6904);
    assert!(
        (m["request_latency_us_p50"] - req_us).abs() <= 24.0,
        "{m:?}"
    );
    let p99 = 156.0 + work_us * (2.326 * c.get("request_work_sigma")).exp();
    assert!(
        (m["request_latency_us_p99"] - p99).abs() <= 40.0,
        "{m:?} vs {p99}"
    );
    // each worker serves one request per cycle: post, the message thread's wakeup (10 us: the
    // IPI leaves after the waker's 4 us of wakeup work, then the 6 us switch), its own wakeup
    // (10 us) and the request: rps = 2 / cycle
    let rps = 2.0 * 1e6 / (req_us + 20.0);
    assert!(
        (m["rps"] - rps).abs() / rps < 0.02,
        "rps {} vs {rps}",
        m["rps"]
    );
    assert!(m["request_samples"] > 100.0);
}

#[test]
fn schbench_wakeup_latency_runs_from_the_message_threads_wake() {
    // Idle CPUs that need no exit latency, 1 GHz, a 4000-cycle wakeup and a 6000-cycle
    // context switch: a worker woken by the message thread onto an idle CPU runs 10 us after
    // the message thread read its clock (the IPI leaves after the 4 us of wakeup work, then
    // the switch), whatever happened before that (its post, the message thread's own wakeup).
    let sim = run(config(
        smp_poll(8, GHZ, true),
        sb(json!({"workers": 2})),
        "6.12",
        300.0,
    ));
    let m = metrics(&sim);
    assert_eq!(m["wakeup_latency_us_min"], 10.0, "{m:?}");
    assert_eq!(m["wakeup_latency_us_p50"], 10.0, "{m:?}");
    // the time from a worker's post to its wakeup is longer: the message thread must be
    // woken and switched in first (10 us) before it reads the clock
    let (q, woke) = (mark_id(&sim, "q").unwrap(), mark_id(&sim, "woke").unwrap());
    let mut last_q = BTreeMap::new();
    let mut post_to_run = Vec::new();
    for &(t, task, id) in &sim.marks {
        if id == q {
            last_q.insert(task, t);
        } else if id == woke {
            post_to_run.push(t - last_q[&task]);
        }
    }
    post_to_run.sort();
    assert!(
        post_to_run[post_to_run.len() / 2] >= 20_000,
        "{post_to_run:?}"
    );

    // old: a worker posts at the end of its 30 ms spin and the message thread wakes it up to
    // ~67 ms later, after its own spin and sleep; the latency still counts from the wake
    let sim = run(config(
        smp_poll(8, GHZ, true),
        sb(json!({"version": "old", "message_threads": 1, "workers": 2, "warmup_ms": 0})),
        "6.12",
        1000.0,
    ));
    let m = metrics(&sim);
    assert!(m["wakeup_samples"] >= 18.0, "{m:?}");
    // the spin's 1 us tick, the 4 us of wakeup work before the IPI and the 6 us switch
    assert!(m["wakeup_latency_us_p99"] <= 12.0, "{m:?}");
    let (q, woke) = (mark_id(&sim, "q").unwrap(), mark_id(&sim, "woke").unwrap());
    let mut waits = Vec::new();
    for &(t, task, id) in &sim.marks {
        if id == q {
            last_q.insert(task, t);
        } else if id == woke {
            waits.push(t - last_q[&task]);
        }
    }
    assert!(waits[2..].iter().all(|&w| w > 20_000_000), "{waits:?}");
}

#[test]
fn schbench_the_message_thread_does_the_wakeups_on_its_cpu() {
    // Every wakeup of a worker is done by its message thread, on the message thread's CPU
    // (the ftrace line of sched_waking names the task running on the waker's CPU), except
    // (current) the end of the worker's own usleep, a timer on the worker's CPU.
    for p in [
        json!({"version": "old", "message_threads": 1, "workers": 4, "warmup_ms": 0}),
        json!({"message_threads": 2, "workers": 3}),
    ] {
        let mut cfg = config(smp_poll(8, GHZ, true), sb(p.clone()), "6.12", 400.0);
        cfg.trace = true;
        let sim = run(cfg);
        let text = sim.trace.as_ref().unwrap().to_text(sim.topo.cpus.len());
        let (mut by_msg, mut by_timer, mut other) = (0, 0, 0);
        let program_of = |pid: u32| {
            let t = sim.tasks.iter().find(|t| t.pid == pid).unwrap();
            sim.compiled.programs[t.program].name.clone()
        };
        for line in text
            .lines()
            .filter(|l| l.contains("sched_waking: comm=schbench-worker"))
        {
            // "COMM-PID [CPU] TIME: sched_waking: comm=... pid=PID ..."
            let waker = line.split_whitespace().next().unwrap();
            let wakee: u32 = line
                .split(" pid=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            // schbench-worker-M's message thread is schbench-msg-M
            let own_msg = program_of(wakee).replace("worker", "msg");
            if waker.starts_with("<idle>") {
                by_timer += 1;
            } else if program_of(waker.rsplit('-').next().unwrap().parse().unwrap()) == own_msg {
                by_msg += 1;
            } else {
                other += 1;
            }
        }
        assert!(by_msg >= 12, "{p}: {by_msg}");
        assert_eq!(other, 0, "{p}");
        if p["version"] == "old" {
            assert_eq!(by_timer, 0, "{p}");
        } else {
            // one usleep per request, one wakeup per request
            assert!(
                (by_timer as i64 - by_msg as i64).abs() <= 6,
                "{by_timer} {by_msg}"
            );
        }
    }
}

#[test]
fn schbench_old_message_thread_waits_for_a_post_after_each_round() {
    // The futex post is a flag the message thread resets at the top of its loop: a round is
    // its wait for the first post after the wake (the woken workers' 30 ms spin), its 30 ms
    // spin and its 30-37.5 ms sleep: 90-97.6 ms, not the 60-67.5 ms a counted post gives.
    let sim = run(config(
        smp_poll(8, GHZ, true),
        sb(json!({"version": "old", "message_threads": 1, "workers": 3, "warmup_ms": 0})),
        "6.12",
        1000.0,
    ));
    let mwake = mark_id(&sim, "mwake").unwrap();
    let t: Vec<u64> = sim
        .marks
        .iter()
        .filter(|m| m.2 == mwake)
        .map(|m| m.0)
        .collect();
    assert!(t.len() >= 10, "{t:?}");
    for w in t[1..].windows(2) {
        let d = w[1] - w[0];
        assert!((90_000_000..97_700_000).contains(&d), "round of {d} ns");
    }
}

#[test]
fn schbench_old_reports_its_seven_percentiles_and_current_its_own() {
    let old = run(config(
        smp_poll(8, GHZ, true),
        sb(json!({"version": "old", "message_threads": 1, "workers": 2})),
        "6.12",
        600.0,
    ));
    let m = old.workload.metrics(&old);
    assert_eq!(m.primary, "wakeup_latency_us_p99");
    for p in ["50", "75", "90", "95", "99", "99.5", "99.9"] {
        assert!(
            m.values.contains_key(&format!("wakeup_latency_us_p{p}")),
            "{p}"
        );
    }
    assert!(!m.values.contains_key("request_latency_us_p99"));
    assert!(!m.values.contains_key("rps"));
    // the default warmup (5 s of a 30 s run) is cut to a sixth of this 600 ms run
    let s = Schbench::new(&params(json!({"version": "old"})), 8, 1).unwrap();
    assert_eq!(s.effective_warmup_ns(600_000_000), 100_000_000);
    assert_eq!(s.effective_warmup_ns(60_000_000_000), 5_000_000_000);

    let cur = run(config(smp_poll(4, GHZ, true), sb(json!({})), "6.12", 300.0));
    let m = cur.workload.metrics(&cur);
    assert_eq!(m.primary, "request_latency_us_p99");
    assert!(!m.higher_is_better);
    for k in [
        "wakeup_latency_us_p50",
        "wakeup_latency_us_p90",
        "wakeup_latency_us_p99",
        "wakeup_latency_us_p99.9",
        "request_latency_us_p50",
        "request_latency_us_p99.9",
        "rps_p20",
        "rps_p50",
        "rps_p90",
        "rps",
    ] {
        assert!(m.values.contains_key(k), "{k}");
    }
    assert!(!m.values.contains_key("wakeup_latency_us_p75"));
}

#[test]
fn schbench_rps_is_sampled_every_second_and_warmup_drops_early_samples() {
    // 2.1 s: two whole seconds, so two RPS samples (requests completed in [0, 1) and [1, 2) s);
    // of two samples p20 and p50 are the smaller, p90 the larger (running count >= 1.8)
    let sim = run(config(
        smp_poll(4, 2 * GHZ, true),
        sb(json!({"workers": 3})),
        "6.12",
        2100.0,
    ));
    let m = metrics(&sim);
    let done = mark_id(&sim, "done").unwrap();
    let mut per_s = [0u32; 2];
    for &(t, _, id) in &sim.marks {
        if id == done && t < 2_000_000_000 {
            per_s[(t / 1_000_000_000) as usize] += 1;
        }
    }
    let bucket = |v: u32| plat_idx_to_val(plat_val_to_idx(v)) as f64;
    let (lo, hi) = (per_s[0].min(per_s[1]), per_s[0].max(per_s[1]));
    assert_eq!(m["rps_p20"], bucket(lo), "{per_s:?} {m:?}");
    assert_eq!(m["rps_p50"], bucket(lo));
    assert_eq!(m["rps_p90"], bucket(hi));
    let all = sim.marks.iter().filter(|x| x.2 == done).count() as f64;
    assert!((m["rps"] - all / 2.1).abs() < 1e-6);
    assert_eq!(m["request_samples"], all);

    // a 500 ms warmup drops the samples recorded before it
    let warm = run(config(
        smp_poll(4, 2 * GHZ, true),
        sb(json!({"workers": 3, "warmup_ms": 500})),
        "6.12",
        2100.0,
    ));
    let mw = metrics(&warm);
    let late = warm
        .marks
        .iter()
        .filter(|x| x.2 == done && x.0 >= 500_000_000)
        .count() as f64;
    assert_eq!(mw["request_samples"], late);
    assert!((mw["rps"] - late / 1.6).abs() < 1e-6);
}

#[test]
fn schbench_more_workers_than_cpus_raise_wakeup_latency() {
    let p99 = |workers: u32| {
        let sim = run(config(
            smp(4, 1, 2 * GHZ, true),
            sb(json!({"workers": workers})),
            "6.12",
            300.0,
        ));
        metrics(&sim)["wakeup_latency_us_p99"]
    };
    let (light, heavy) = (p99(2), p99(12));
    assert!(heavy > 5.0 * light, "light {light} heavy {heavy}");
}

#[test]
fn schbench_is_deterministic() {
    for p in [
        json!({"workers": 6}),
        json!({"version": "old", "workers": 6}),
    ] {
        let cfg = || config(smp(4, 2, 2 * GHZ, true), sb(p.clone()), "6.12", 300.0);
        let a = run(cfg());
        let b = run(cfg());
        assert_eq!(a.marks, b.marks);
        assert_eq!(metrics(&a), metrics(&b));
    }
    // the old message thread's jitter follows the seed
    let sleeps = |seed: u64| {
        let s = Schbench::new(&params(json!({"version": "old"})), 8, seed).unwrap();
        serde_json::to_string(&s.build().unwrap().tasks[0].program).unwrap()
    };
    assert_eq!(sleeps(3), sleeps(3));
    assert_ne!(sleeps(3), sleeps(4));
}

#[test]
fn schbench_parameter_errors() {
    for (p, needle) in [
        (json!({"version": "new"}), "current, old"),
        (json!({"version": 2}), "current, old"),
        (
            json!({"version": "old", "operations": 5}),
            "does not apply to version=old",
        ),
        (
            json!({"cputime_us": 100}),
            "does not apply to version=current",
        ),
        (json!({"message_threads": -1}), "message_threads"),
        (json!({"workers": 2.5}), "integer"),
        (json!({"version": "old", "sleeptime_us": 2}), "sleeptime_us"),
        (json!({"footprint_kb": 0}), "footprint_kb"),
        (json!({"runtime": 30}), "unknown parameter 'runtime'"),
        (
            json!({"message_threads": 1000, "workers": 1000}),
            "at most 200000",
        ),
    ] {
        let e = try_sim(config(smp(2, 1, GHZ, true), sb(p.clone()), "6.12", 100.0))
            .err()
            .unwrap_or_else(|| panic!("{p} accepted"));
        assert!(e.contains(needle), "{p}: {e}");
    }
    // open-ended: a run without a duration is refused
    let e = try_sim(config(smp(2, 1, GHZ, true), sb(json!({})), "6.12", 0.0)).err();
    assert!(e.is_some());
}
