//! The batch and I/O benchmark models: stress-ng-cpu, nas-omp, fio, tiobench, sqlite-insert,
//! x264. Structure and metrics against numbers derived here from the benchmarks' own rules
//! (stress-ng's op sharing, NPB's class tables and Mop formulas, datasheet device times,
//! x264's thread range formula), determinism and parameter errors.

mod common;

use std::collections::BTreeMap;

use common::*;
use schedsim_core::{Sim, SimConfig};
use serde_json::{json, Value};

const GHZ1: u64 = 1_000_000;
const GHZ3: u64 = 3_000_000;

fn wl(name: &str, params: Value) -> Value {
    json!({"name": name, "params": params})
}

fn metrics(sim: &Sim) -> BTreeMap<String, f64> {
    sim.workload.metrics(sim).values
}

fn task<'a>(sim: &'a Sim, comm: &str) -> &'a schedsim_core::sched::task::Task {
    sim.tasks
        .iter()
        .find(|t| t.comm == comm)
        .unwrap_or_else(|| panic!("no task {comm}"))
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a / b - 1.0).abs() <= tol
}

fn build_err(name: &str, params: Value) -> String {
    let cfg = config(smp(4, 1, GHZ1, false), wl(name, params), "6.12", 10.0);
    match Sim::new(cfg) {
        Ok(_) => panic!("{name}: expected a parameter error"),
        Err(e) => e,
    }
}

// Device numbers from the datasheet (Intel SSD DC P4510 2 TB), independent of the model code.
const READ_LAT_NS: f64 = 77_000.0;
const WRITE_LAT_NS: f64 = 18_000.0;
const READ_BYTES_PER_NS: f64 = 3.2;
const WRITE_BYTES_PER_NS: f64 = 2.0;

// ------------------------------------------------------------------------------- stress-ng

/// One normalised bogo op: 1/1484.5 s of a 3.6 GHz i5-8350U thread, in ns at 1 GHz.
const OP_NS_1GHZ: f64 = 3.6e9 / 1484.5;

#[test]
fn stress_ng_shares_cpu_ops_between_instances_rounding_up() {
    // --cpu 4 --cpu-ops 10: each instance does ceil(10/4) = 3 ops; each has its own CPU, so the
    // run takes 3 ops of time.
    let sim = run(config(
        smp(4, 1, GHZ1, false),
        wl("stress-ng-cpu", json!({"instances": 4, "cpu_ops": 10})),
        "6.12",
        0.0,
    ));
    let m = metrics(&sim);
    assert_eq!(m["ops_per_instance"], 3.0);
    assert_eq!(m["bogo_ops"], 12.0);
    assert_eq!(
        sim.stats.forks, 4,
        "the parent forks one worker per instance"
    );
    let workers: Vec<_> = sim.tasks.iter().filter(|t| t.parent.is_some()).collect();
    assert_eq!(workers.len(), 4);
    for w in &workers {
        assert_eq!(w.comm, "stress-ng-cpu");
        assert!(
            close(w.stats.cpu_ns as f64, 3.0 * OP_NS_1GHZ, 1e-3),
            "worker cpu {} ns, expected {:.0}",
            w.stats.cpu_ns,
            3.0 * OP_NS_1GHZ
        );
    }
    let elapsed = m["elapsed_s"] * 1e9;
    // plus idle exits and the parent's reaping, well under a millisecond
    assert!(
        (3.0 * OP_NS_1GHZ..3.0 * OP_NS_1GHZ + 500_000.0).contains(&elapsed),
        "elapsed {elapsed} ns"
    );
    // bogo ops/s (real time) = 12 ops over the instances' mean wall time
    assert!(close(
        m["bogo_ops_per_s"],
        12.0 / (3.0 * OP_NS_1GHZ * 1e-9),
        0.05
    ));
}

#[test]
fn stress_ng_with_fewer_cpus_than_instances_takes_proportionally_longer() {
    // 4 instances x 10 ops on 4, 2 and 1 CPUs: the work is fixed, so the time scales 1 : 2 : 4.
    let elapsed = |cpus: usize| {
        let sim = run(config(
            smp(cpus, 1, GHZ1, false),
            wl("stress-ng-cpu", json!({"instances": 4, "cpu_ops": 40})),
            "6.12",
            0.0,
        ));
        metrics(&sim)["elapsed_s"]
    };
    let one_op = OP_NS_1GHZ * 1e-9;
    let (e4, e2, e1) = (elapsed(4), elapsed(2), elapsed(1));
    assert!(close(e4, 10.0 * one_op, 0.02), "4 CPUs: {e4}");
    assert!(close(e2, 20.0 * one_op, 0.03), "2 CPUs: {e2}");
    assert!(close(e1, 40.0 * one_op, 0.03), "1 CPU: {e1}");
}

#[test]
fn stress_ng_defaults_to_one_instance_per_cpu_and_old_metrics_count_calls() {
    let sim = run(config(
        smp(2, 1, GHZ1, false),
        wl("stress-ng-cpu", json!({"cpu_ops": 4})),
        "6.12",
        0.0,
    ));
    assert_eq!(sim.stats.forks, 2);
    assert_eq!(metrics(&sim)["ops_per_instance"], 2.0);
    let new = sim.tasks[1].stats.cpu_ns as f64;
    let sim = run(config(
        smp(2, 1, GHZ1, false),
        wl("stress-ng-cpu", json!({"cpu_ops": 4, "old_metrics": true})),
        "6.12",
        0.0,
    ));
    // one call of the 85-method rotation is 0.9584 normalised ops (stress-cpu.c rates)
    let old = sim.tasks[1].stats.cpu_ns as f64;
    assert!(close(old / new, 0.9584, 1e-3), "old/new {}", old / new);
}

// ------------------------------------------------------------------------------- NAS

/// NPB BT class S: 12^3 grid, 60 time steps; Mop formula of bt.f90.
fn bt_s_ops() -> f64 {
    let n = 12.0f64;
    60.0 * (3478.8 * n * n * n - 17655.7 * n * n + 28023.7 * n)
}

#[test]
fn nas_threads_meet_at_a_barrier_every_superstep() {
    // BT class S: 60 iterations x 9 barriers = 540 supersteps. In each, 3 of the 4 threads wait
    // at the barrier and are woken by the last: 540 x 3 wakeups, nothing else sleeps.
    let sim = run(config(
        smp(4, 1, GHZ3, false),
        wl(
            "nas-omp",
            json!({"kernel": "bt", "class": "S", "threads": 4}),
        ),
        "6.12",
        0.0,
    ));
    let m = metrics(&sim);
    assert_eq!(m["supersteps"], 540.0);
    assert_eq!(m["iterations"], 60.0);
    assert_eq!(sim.stats.wakeups, 540 * 3);
    let threads: Vec<_> = sim.tasks.iter().collect();
    assert_eq!(threads.len(), 4);
    for t in &threads {
        assert!(t.comm.starts_with("bt.S.x-"));
        assert_eq!(t.stats.iowait_ns, 0);
    }
    // the early threads spin to the slowest share: equal CPU time, and it covers the work
    let cpu: Vec<f64> = threads.iter().map(|t| t.stats.cpu_ns as f64).collect();
    for c in &cpu {
        assert!(close(*c, cpu[0], 1e-3), "cpu times {cpu:?}");
    }
    // work per thread: ops x 1.35 cycles/op / 4 (90 % cycles at 3 GHz, 10 % stall at 3.3 GHz)
    let per = bt_s_ops() * 1.35 / 4.0;
    let min_ns = per * 0.9 / 3.0 + per * 0.1 / 3.3;
    assert!(
        cpu[0] >= min_ns && cpu[0] <= min_ns * 1.04,
        "cpu {} vs work {min_ns}",
        cpu[0]
    );
    // Mop/s total is NPB's op count over the elapsed time
    assert!(close(
        m["mops_total"] * m["elapsed_s"] * 1e6,
        bt_s_ops(),
        1e-9
    ));
}

#[test]
fn nas_lu_pipelines_its_sweeps_and_oversubscribed_threads_still_meet() {
    // LU class S: 12^3, 50 iterations; 6 barriers + 2 x (12 - 2) pipeline steps = 26 each.
    // 4 threads on 2 CPUs: no spinning, still every superstep releases 3 waiters.
    let sim = run(config(
        smp(2, 1, GHZ3, false),
        wl(
            "nas-omp",
            json!({"kernel": "lu", "class": "S", "threads": 4}),
        ),
        "6.12",
        0.0,
    ));
    let m = metrics(&sim);
    assert_eq!(m["supersteps"], 1300.0);
    assert_eq!(sim.stats.wakeups, 1300 * 3);
    assert_eq!(m["iterations"], 50.0);
}

#[test]
fn nas_ep_time_is_its_random_numbers_times_their_cost() {
    // EP class S: 2^25 random numbers x 45 cycles, no stall, one barrier at the end.
    let cycles = (1u64 << 25) as f64 * 45.0;
    let one = run(config(
        smp(1, 1, 3_300_000, false),
        wl("nas-omp", json!({"kernel": "ep", "class": "S"})),
        "6.12",
        0.0,
    ));
    let m = metrics(&one);
    assert_eq!(m["supersteps"], 1.0);
    assert!(
        close(m["elapsed_s"], cycles / 3.3e9, 0.01),
        "{}",
        m["elapsed_s"]
    );
    assert_eq!(one.tasks[0].comm, "ep.S.x");
    let two = run(config(
        smp(2, 1, 3_300_000, false),
        wl(
            "nas-omp",
            json!({"kernel": "ep", "class": "S", "threads": 2}),
        ),
        "6.12",
        0.0,
    ));
    // half each, plus at most the 3 % imbalance of the slower thread
    let e2 = metrics(&two)["elapsed_s"];
    assert!(
        e2 >= cycles / 3.3e9 / 2.0 * 0.97 && e2 <= cycles / 3.3e9 / 2.0 * 1.04,
        "{e2}"
    );
}

#[test]
fn nas_class_c_shapes_follow_the_npb_tables() {
    // Built, not run: K = iterations x barriers per iteration for every kernel of class C.
    let expect = [
        ("bt", 200 * 9),
        ("sp", 400 * 13),
        ("lu", 250 * (6 + 2 * 160)),
        ("cg", 75 * (25 * 3 + 5)),
        ("mg", 20 * (4 * 9 + 2)),
        ("ft", 20 * 5),
        ("is", 10 * 4),
        ("ep", 1),
        ("ua", 200 * 20),
    ];
    for (k, steps) in expect {
        let cfg = config(
            smp(2, 1, GHZ3, false),
            wl("nas-omp", json!({"kernel": k, "threads": 2})),
            "6.12",
            1.0,
        );
        let sim = run(cfg);
        assert_eq!(metrics(&sim)["supersteps"], steps as f64, "{k}");
    }
}

// ------------------------------------------------------------------------------- fio

fn trace_cfg(mut cfg: SimConfig) -> SimConfig {
    cfg.trace = true;
    cfg
}

#[test]
fn fio_jobs_block_in_iowait_for_the_device_service_time() {
    // one randread job, 4 KiB: device 77 us + 4096 B / 3.2 B/ns = 78.28 us mean; the CPU adds
    // 15,000 cycles (5 us at 3 GHz) per I/O.
    let dev = READ_LAT_NS + 4096.0 / READ_BYTES_PER_NS;
    let cfg = trace_cfg(config(
        smp(1, 1, GHZ3, false),
        wl("fio", json!({"rw": "randread"})),
        "6.12",
        50.0,
    ));
    let sim = run(cfg);
    let m = metrics(&sim);
    let t = task(&sim, "fio");
    assert_eq!(t.stats.sleep_ns, 0, "fio never sleeps outside iowait");
    assert!(
        close(t.stats.iowait_ns as f64 / m["ios"], dev, 0.05),
        "iowait per I/O {}",
        t.stats.iowait_ns as f64 / m["ios"]
    );
    let cycle_ns = dev + 5_000.0;
    assert!(
        close(m["iops"], 1e9 / cycle_ns, 0.04),
        "iops {} vs {}",
        m["iops"],
        1e9 / cycle_ns
    );
    assert!(close(m["latency_us_mean"], cycle_ns / 1e3, 0.04));
    assert!(m["latency_us_p99"] > m["latency_us_mean"]);
    assert!(close(
        m["bandwidth_mib_s"],
        m["iops"] * 4096.0 / 1048576.0,
        1e-9
    ));
    // every switch-out of fio is to state D (iowait)
    let text = sim.trace.as_ref().unwrap().to_text(1);
    let outs: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("sched_switch: prev_comm=fio "))
        .collect();
    assert!(outs.len() as f64 >= m["ios"] - 1.0);
    assert!(outs.iter().all(|l| l.contains("prev_state=D")));
}

#[test]
fn fio_saturates_the_device_at_its_datasheet_iops() {
    // 64 jobs keep 64 reads in flight: the drive serves ~50 at once (637k IOPS x 78 us) and
    // tops out at its 637k IOPS; each job's I/O queues.
    let sim = run(config(
        smp(16, 1, GHZ3, false),
        wl("fio", json!({"jobs": 64})),
        "6.12",
        20.0,
    ));
    let m = metrics(&sim);
    assert!(
        m["iops"] > 0.88 * 637_000.0 && m["iops"] <= 637_000.0,
        "iops {}",
        m["iops"]
    );
    assert!(m["latency_us_mean"] > 78.3 * 64.0 / 50.0);
    // random writes: 18 us + 4096 / 2 B/ns; 81.5k IOPS steady state caps 4 jobs
    let sim = run(config(
        smp(4, 1, GHZ3, false),
        wl("fio", json!({"jobs": 4, "rw": "randwrite"})),
        "6.12",
        20.0,
    ));
    let iops = metrics(&sim)["iops"];
    // each job's cycle: the queued service (4 jobs on a device that does 81.5k IOPS at 20 µs
    // each: 20 µs × 4 / 1.63), submit + completion work (5 µs at 3 GHz) and the wakeup out of
    // the idle state the CPU chose while waiting (measured)
    let wake: f64 = sim
        .tasks
        .iter()
        .filter(|t| t.comm.starts_with("fio"))
        .map(|t| t.stats.wakeup_latency_sum_ns as f64 / t.stats.wakeup_latency_count.max(1) as f64)
        .sum::<f64>()
        / 4.0;
    let service = (18_000.0 + 4096.0 / 2.0) * 4.0 / (81_500.0 * 20_048.0 * 1e-9);
    let expect = 4e9 / (service + 5_000.0 + wake);
    assert!(
        (iops / expect - 1.0).abs() < 0.05 && iops <= 81_500.0,
        "randwrite {iops}"
    );
    // sequential 128 KiB reads, one job: 77 us + 131072 / 3.2 B/ns = 118 us per I/O
    let sim = run(config(
        smp(1, 1, GHZ3, false),
        wl("fio", json!({"rw": "read", "bs_kb": 128})),
        "6.12",
        20.0,
    ));
    let per = READ_LAT_NS + 131072.0 / READ_BYTES_PER_NS + 5_000.0;
    let iops = metrics(&sim)["iops"];
    assert!(close(iops, 1e9 / per, 0.05), "seq read {iops}");
}

// ------------------------------------------------------------------------------- tiobench

#[test]
fn tiobench_writers_are_throttled_to_the_device_write_bandwidth() {
    let sim = run(config(
        smp(4, 1, GHZ3, false),
        wl("tiobench", json!({"threads": 2, "mode": "seq-write"})),
        "6.12",
        50.0,
    ));
    let m = metrics(&sim);
    let dev_mib = WRITE_BYTES_PER_NS * 1e9 / 1048576.0;
    assert!(
        close(m["throughput_mib_s"], dev_mib, 0.03),
        "{}",
        m["throughput_mib_s"]
    );
    for i in 0..2 {
        let t = task(&sim, &format!("tiotest-{i}"));
        assert!(t.stats.iowait_ns > 10_000_000, "throttled in iowait");
        assert_eq!(t.stats.sleep_ns, 0);
    }
}

#[test]
fn tiobench_random_reads_wait_for_the_device_per_block() {
    // each 4 KiB block misses the page cache: 3 us submit + 78.28 us device + 1.5 us copy
    let sim = run(config(
        smp(4, 1, GHZ3, false),
        wl("tiobench", json!({"threads": 2, "mode": "random-read"})),
        "6.12",
        50.0,
    ));
    let m = metrics(&sim);
    let per = 3_000.0 + READ_LAT_NS + 4096.0 / READ_BYTES_PER_NS + 1_500.0;
    let expect = 2.0 * 4096.0 / 1048576.0 / (per * 1e-9);
    assert!(
        close(m["throughput_mib_s"], expect, 0.04),
        "{}",
        m["throughput_mib_s"]
    );
    // sequential reads: one 128 KiB readahead per 32 blocks; 2 threads stay under the drive's
    // parallelism, so each waits 77 us + 41 us per window minus its copying
    let sim = run(config(
        smp(4, 1, GHZ3, false),
        wl("tiobench", json!({"threads": 2, "mode": "seq-read"})),
        "6.12",
        50.0,
    ));
    let m = metrics(&sim);
    let window = READ_LAT_NS + 131072.0 / READ_BYTES_PER_NS;
    let expect = 2.0 * 131072.0 / 1048576.0 / (window * 1e-9);
    assert!(
        close(m["throughput_mib_s"], expect, 0.05),
        "{}",
        m["throughput_mib_s"]
    );
}

// ------------------------------------------------------------------------------- sqlite

#[test]
fn sqlite_rollback_journal_commits_with_two_fsyncs_and_a_jbd2_commit() {
    let n = 200u64;
    let sim = run(config(
        smp(4, 1, GHZ3, false),
        wl("sqlite-insert", json!({"inserts": n})),
        "6.12",
        0.0,
    ));
    let m = metrics(&sim);
    assert_eq!(m["transactions"], n as f64);
    assert_eq!(m["fsyncs_per_txn"], 2.0);
    assert_eq!(m["jbd2_commits"], n as f64);
    // sqlite3's iowait: per transaction the journal's 8 KiB write, then the 4 KiB page write
    // plus the cache flush ext4 issues (5 us)
    let sq = task(&sim, "sqlite3");
    let per = (WRITE_LAT_NS + 8192.0 / WRITE_BYTES_PER_NS) + (WRITE_LAT_NS + 2048.0 + 5_000.0);
    assert!(
        (sq.stats.iowait_ns as f64 - n as f64 * per).abs() < n as f64 * 2.0,
        "sqlite3 iowait {} vs {}",
        sq.stats.iowait_ns,
        n as f64 * per
    );
    // jbd2: 16 KiB of journal blocks, a flush, the commit block
    let j = task(&sim, "jbd2/nvme0n1p1-8");
    let per = WRITE_LAT_NS + 8192.0 + 5_000.0 + WRITE_LAT_NS + 2048.0;
    assert!((j.stats.iowait_ns as f64 - n as f64 * per).abs() < n as f64 * 2.0);
    assert!(j.stats.exit_ns.is_some() && task(&sim, "perl").stats.exit_ns.is_some());
}

#[test]
fn sqlite_wal_commits_with_one_fsync_per_transaction() {
    let n = 300u64;
    let sim = run(config(
        smp(4, 1, GHZ3, false),
        wl(
            "sqlite-insert",
            json!({"inserts": n, "journal_mode": "wal"}),
        ),
        "6.12",
        0.0,
    ));
    let m = metrics(&sim);
    assert_eq!(m["transactions"], n as f64);
    assert_eq!(m["fsyncs_per_txn"], 1.0);
    assert_eq!(m["jbd2_commits"], 0.0);
    assert!(sim.tasks.iter().all(|t| !t.comm.starts_with("jbd2")));
    // per transaction: 72,000 cycles at 3 GHz (24 us) + the WAL frame (18 us + 4120 B / 2 B/ns)
    // and a flush (5 us), one after the other
    // (plus the wakeup out of the CPU's idle state after the write, measured)
    let sqs = task(&sim, "sqlite3");
    let wake =
        sqs.stats.wakeup_latency_sum_ns as f64 / sqs.stats.wakeup_latency_count.max(1) as f64;
    let per = 24_000.0 + WRITE_LAT_NS + 4120.0 / WRITE_BYTES_PER_NS + 5_000.0 + wake;
    assert!(close(m["txn_per_s"], 1e9 / per, 0.05), "{}", m["txn_per_s"]);
    let sq = task(&sim, "sqlite3");
    let io = WRITE_LAT_NS + 2060.0 + 5_000.0;
    assert!((sq.stats.iowait_ns as f64 - n as f64 * io).abs() < n as f64 * 2.0);
}

// ------------------------------------------------------------------------------- x264

#[test]
fn x264_row_lag_follows_the_mv_range_thread_formula() {
    // x264 encoder.c: max_range = (1080 + 24) / T - 24, r = max(max_range / 2, 16), rounded to
    // r2 = 16k + 8 >= r; rows = (r2 + 24) / 16, worked out by hand:
    // T=2: 528 -> 264 -> 264 -> 18;  T=4: 252 -> 126 -> 136 -> 10;  T=8: 114 -> 57 -> 72 -> 6;
    // T=16: 45 -> 22 -> 24 -> 3;  T=104: r = 16 -> 24 -> 3
    for (t, lag) in [(2, 18), (4, 10), (8, 6), (16, 3), (104, 3)] {
        assert_eq!(
            schedsim_core::workload::x264::row_lag(t),
            lag,
            "threads {t}"
        );
    }
}

#[test]
fn x264_frame_threads_scale_until_the_row_dependencies_bind() {
    let fps = |threads: u32| {
        let sim = run(config(
            smp(8, 1, 4_000_000, false),
            wl("x264", json!({"threads": threads, "frames": 12})),
            "6.12",
            0.0,
        ));
        let m = metrics(&sim);
        assert_eq!(m["frames"], 12.0);
        (m["fps"], sim)
    };
    // one frame thread: 4e8 cycles per frame at 4 GHz = 10 fps, the lookahead and reader
    // overlapping it
    let (f1, _) = fps(1);
    assert!(f1 > 9.5 && f1 <= 10.0, "1 thread: {f1}");
    let (f4, sim) = fps(4);
    assert!(f4 > 2.5 * f1 && f4 < 4.0 * f1, "4 threads: {f4}");
    // frame threads wait for their predecessor's rows (and for frames): short sleeps between
    // CPU-bound rows, at least one per frame on average, each far shorter than a frame (100 ms)
    let (mut wakeups, mut sleep) = (0, 0);
    for i in 0..4 {
        let t = task(&sim, &format!("x264-enc{i}"));
        assert!(t.stats.sleep_ns > 0 && t.stats.iowait_ns == 0);
        wakeups += t.stats.nr_wakeups;
        sleep += t.stats.sleep_ns;
    }
    assert!(wakeups >= 12, "encoder wakeups {wakeups}");
    assert!(
        sleep / wakeups < 10_000_000,
        "mean wait {} ns",
        sleep / wakeups
    );
}

// ------------------------------------------------------------------------------- all

#[test]
fn every_model_is_deterministic_and_seed_sensitive_where_it_draws() {
    let cases = [
        ("stress-ng-cpu", json!({"instances": 3, "cpu_ops": 9}), 0.0),
        (
            "nas-omp",
            json!({"kernel": "cg", "class": "S", "threads": 3}),
            0.0,
        ),
        ("fio", json!({"jobs": 3}), 5.0),
        (
            "tiobench",
            json!({"threads": 2, "mode": "random-write"}),
            5.0,
        ),
        ("sqlite-insert", json!({"inserts": 100}), 0.0),
        ("x264", json!({"threads": 3, "frames": 4}), 0.0),
    ];
    for (name, params, dur) in cases {
        let mk = |seed: u64| {
            let mut cfg = config(
                smp(4, 1, GHZ3, false),
                wl(name, params.clone()),
                "6.12",
                dur,
            );
            cfg.seed = seed;
            stable_json(&run(cfg))
        };
        assert_eq!(mk(7), mk(7), "{name} is not deterministic");
        if matches!(name, "nas-omp" | "fio" | "x264") {
            assert_ne!(mk(7), mk(8), "{name} ignores the seed");
        }
    }
}

#[test]
fn parameter_errors_name_the_value_and_what_is_allowed() {
    let cases = [
        ("stress-ng-cpu", json!({"instances": 0}), "instances"),
        ("stress-ng-cpu", json!({"cpu_ops": 1.5}), "integer"),
        (
            "stress-ng-cpu",
            json!({"old_metrics": "maybe"}),
            "true/false",
        ),
        ("stress-ng-cpu", json!({"timeout": 5}), "unknown parameter"),
        ("nas-omp", json!({"kernel": "dt"}), "bt, cg, ep"),
        ("nas-omp", json!({"class": "D"}), "S, W, A, B, C"),
        ("nas-omp", json!({"threads": 0}), "threads"),
        ("fio", json!({"iodepth": 32}), "only 1"),
        (
            "fio",
            json!({"rw": "trim"}),
            "randread, randwrite, read, write",
        ),
        ("fio", json!({"bs_kb": 0}), "bs_kb"),
        ("tiobench", json!({"mode": "random"}), "seq-write, seq-read"),
        ("tiobench", json!({"threads": -1}), "threads"),
        ("sqlite-insert", json!({"inserts": 0}), "inserts"),
        (
            "sqlite-insert",
            json!({"journal_mode": "truncate"}),
            "delete, wal",
        ),
        ("x264", json!({"frames": 0}), "frames"),
        ("x264", json!({"threads": 200}), "threads"),
    ];
    for (name, params, needle) in cases {
        let e = build_err(name, params.clone());
        assert!(
            e.contains(needle) && e.contains(name),
            "{name} {params}: '{e}' lacks '{needle}'"
        );
    }
}

#[test]
fn every_model_builds_with_its_defaults() {
    // the constants files parse (each constant has a unit, source and justification) and the
    // defaults make valid programs; open-ended ones need a duration
    for name in [
        "stress-ng-cpu",
        "nas-omp",
        "fio",
        "tiobench",
        "sqlite-insert",
        "x264",
    ] {
        let cfg = config(smp(4, 1, GHZ3, false), wl(name, json!({})), "6.12", 1.0);
        Sim::new(cfg).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    for name in ["fio", "tiobench"] {
        let cfg = config(smp(4, 1, GHZ3, false), wl(name, json!({})), "6.12", 0.0);
        let e = Sim::new(cfg).err().expect("needs a duration");
        assert!(e.contains("duration"), "{e}");
    }
    let info: Vec<_> = schedsim_core::workload::registry()
        .into_iter()
        .map(|w| (w.name, w.primary, w.higher_is_better, w.open_ended))
        .collect();
    for expect in [
        ("stress-ng-cpu", "elapsed_s", false, false),
        ("nas-omp", "elapsed_s", false, false),
        ("fio", "iops", true, true),
        ("tiobench", "throughput_mib_s", true, true),
        ("sqlite-insert", "txn_per_s", true, false),
        ("x264", "fps", true, false),
    ] {
        assert!(info.contains(&expect), "{expect:?} not in {info:?}");
    }
}

// ---- specpower ---------------------------------------------------------------------------
// txn_cycles = 30,000 cycles per transaction (data/workloads/specpower.json).
const SSJ_TXN_CYCLES: f64 = 30_000.0;

#[test]
fn specpower_calibrates_on_every_thread_busy_at_the_top_frequency() {
    // 2 cores x 2 threads at 1 GHz (no turbo table), smt_share [1.0, 0.62]: four threads, two
    // per core, do 4 x 1e9 x 0.62 cycles/s; two threads spread one per core, 2 x 1e9.
    let calibrated = |threads: u32| {
        let sim = run(config(
            smp(2, 2, GHZ1, false),
            wl(
                "specpower",
                json!({"threads": threads, "load_pct": 0, "warmup_s": 0}),
            ),
            "6.12",
            10.0,
        ));
        metrics(&sim)["calibrated_ops"]
    };
    assert!(close(
        calibrated(4),
        4.0 * 1e9 * 0.62 / SSJ_TXN_CYCLES,
        1e-9
    ));
    assert!(close(calibrated(2), 2.0 * 1e9 / SSJ_TXN_CYCLES, 1e-9));
}

#[test]
fn specpower_offers_its_target_load_in_exponential_bursts() {
    // 4 CPUs at 1 GHz, 4 threads, batches of 10 transactions (300,000 cycles = 0.3 ms): the
    // calibrated maximum is 4e9 / 30,000 = 133,333 ssj_ops; at 50 % each thread gets a batch
    // every 0.6 ms on average, so its CPU is busy half the time.
    let sim = run(config(
        smp(4, 1, GHZ1, false),
        wl(
            "specpower",
            json!({"load_pct": 50, "batch_txns": 10, "warmup_s": 0.2}),
        ),
        "6.12",
        1200.0,
    ));
    let m = metrics(&sim);
    let max = 4e9 / SSJ_TXN_CYCLES;
    assert!(close(m["calibrated_ops"], max, 1e-9));
    assert!(close(m["target_ops"], 0.5 * max, 1e-9));
    assert!(
        close(m["ssj_ops"], 0.5 * max, 0.02),
        "ssj_ops {}",
        m["ssj_ops"]
    );
    assert!(close(m["actual_load_pct"], 50.0, 0.02));
    for t in sim.tasks.iter() {
        let busy = t.stats.cpu_ns as f64 / sim.now as f64;
        assert!((0.45..0.55).contains(&busy), "{} busy {busy}", t.comm);
        // ~2,000 arrivals in 1.2 s; with exponential gaps a thread often finds the next batch
        // already due (a queue), and sleeps before many of the others
        assert!(
            t.stats.nr_wakeups > 500,
            "{} woke {}",
            t.comm,
            t.stats.nr_wakeups
        );
    }
}

#[test]
fn specpower_active_idle_runs_nothing_and_loads_are_checked() {
    let sim = run(config(
        smp(2, 1, GHZ1, false),
        wl("specpower", json!({"load_pct": 0, "warmup_s": 0})),
        "6.12",
        100.0,
    ));
    let m = metrics(&sim);
    assert_eq!(m["ssj_ops"], 0.0);
    assert_eq!(m["batches"], 0.0);
    assert!(sim.tasks.iter().all(|t| t.stats.cpu_ns < 100_000));
    let err = build_err("specpower", json!({"load_pct": 120}));
    assert!(err.contains("load_pct") && err.contains("0..=100"), "{err}");
}

#[test]
fn a_warm_up_as_long_as_the_run_is_an_error() {
    // specpower's default warm-up is 0.5 s: build_err's 10 ms run would measure nothing
    let err = build_err("specpower", json!({"load_pct": 50}));
    assert!(
        err.contains("specpower") && err.contains("warm-up (0.5 s)") && err.contains("(0.01 s)"),
        "{err}"
    );
}

#[test]
fn specpower_fills_every_core_before_sharing_one() {
    // 4 cores x 2 threads at 1 GHz, smt_share [1.0, 0.62]: 5 threads are 3 cores with one
    // busy thread (3 x 1e9) and one core with two (2 x 0.62 x 1e9), not 5 x 0.62
    let sim = run(config(
        smp(4, 2, GHZ1, false),
        wl(
            "specpower",
            json!({"threads": 5, "load_pct": 0, "warmup_s": 0}),
        ),
        "6.12",
        10.0,
    ));
    let want = (3.0 * 1e9 + 2.0 * 0.62 * 1e9) / SSJ_TXN_CYCLES;
    assert!(close(metrics(&sim)["calibrated_ops"], want, 1e-9));
    let err = build_err("specpower", json!({"threads": 5000}));
    assert!(err.contains("threads") && err.contains("1..=4096"), "{err}");
}
