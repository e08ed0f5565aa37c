//! The network and file-server benchmark models (tbench, dbench, pgbench, netperf) against
//! numbers derived independently of the models' code: the loadfile's byte totals and op mix,
//! the calibration data's per-op latencies, closed forms of request/response and streaming
//! rates on machines without kernel costs, and the benchmarks' structure.

mod common;

use common::*;
use schedsim_core::workload::pgbench::threads_for;
use schedsim_core::workload::program::Op;
use schedsim_core::workload::registry;
use schedsim_core::Sim;
use serde_json::{json, Value};

/// Client-tiny.txt: bytes one pass credits (7,711,510 written + 11,408,226 read).
const PASS_BYTES: f64 = 19_119_736.0;

/// `cores` CPUs at `khz` with the presets' kernel costs (6000-cycle switches, 4000-cycle
/// wakeups) and only shallow idle states (POLL, C1 with 2 us exit). Cross-CPU ping-pongs then
/// pay little for idle exits, so the tests see the models' work rather than idle-state choices.
fn shallow(cores: usize, khz: u64, costs: bool) -> Value {
    let mut m = smp(cores, 1, khz, costs);
    m["idle_states"]["default"] = json!([
        {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true},
        {"name": "C1", "exit_latency_us": 2, "target_residency_us": 2, "power_mw": 500.0, "turbo_active": true}]);
    m
}

fn wl(name: &str, params: Value) -> Value {
    json!({"name": name, "params": params})
}

fn sim(machine: Value, name: &str, params: Value, ms: f64) -> Sim {
    run(config(machine, wl(name, params), "6.12", ms))
}

fn metric(s: &Sim, key: &str) -> f64 {
    let m = s.workload.metrics(s);
    *m.values
        .get(key)
        .unwrap_or_else(|| panic!("no metric {key} in {:?}", m.values))
}

fn build_err(name: &str, params: Value) -> String {
    match Sim::new(config(
        shallow(2, 1_000_000, true),
        wl(name, params),
        "6.12",
        10.0,
    )) {
        Ok(_) => panic!("{name}: expected an error"),
        Err(e) => e,
    }
}

fn busy(s: &Sim) -> f64 {
    s.rqs.iter().map(|r| r.busy_ns as f64).sum::<f64>() / (s.now as f64 * s.rqs.len() as f64)
}

// ------------------------------------------------------------------ registry

#[test]
fn every_model_is_registered_with_its_primary_metric() {
    let reg = registry();
    let want = [
        ("tbench", "throughput_mb_s", true),
        ("dbench", "loadfile_ms_mean", false),
        ("pgbench-ro", "tps", true),
        ("pgbench-rw", "tps", true),
        ("netperf-tcp-rr", "trans_per_s", true),
        ("netperf-udp-rr", "trans_per_s", true),
        ("netperf-tcp-stream", "throughput_mbit_s", true),
        ("netperf-udp-stream", "throughput_mbit_s", true),
    ];
    for (name, primary, hib) in want {
        let w = reg
            .iter()
            .find(|w| w.name == name)
            .unwrap_or_else(|| panic!("{name} not registered"));
        assert_eq!(w.primary, primary, "{name}");
        assert_eq!(w.higher_is_better, hib, "{name}");
        assert!(w.open_ended, "{name} runs until stopped");
        assert!(w.metrics.contains(&primary), "{name} lists its primary");
    }
}

#[test]
fn open_ended_models_need_a_duration() {
    let e = match Sim::new(config(
        shallow(2, 1_000_000, true),
        wl("tbench", json!({})),
        "6.12",
        0.0,
    )) {
        Ok(_) => panic!("tbench without a duration must fail"),
        Err(e) => e,
    };
    assert!(e.contains("duration"), "{e}");
}

// ------------------------------------------------------------------ tbench

#[test]
fn tbench_pairs_each_client_with_its_own_server() {
    let n = 3;
    let s = Sim::new(config(
        shallow(2, 1_000_000, true),
        wl("tbench", json!({"clients": n})),
        "6.12",
        10.0,
    ))
    .unwrap();
    let c = &s.compiled;
    assert_eq!(c.programs.len(), 2 * n, "N clients and N servers");
    assert_eq!(
        c.channels.len(),
        2 * n,
        "a request and a reply channel per pair"
    );
    assert!(c.channels.iter().all(|ch| ch.capacity == 1));
    for (p, prog) in c.programs.iter().enumerate() {
        let id = p % n;
        let want = if p < n {
            format!("tbench-{id}")
        } else {
            format!("tbench_srv-{id}")
        };
        assert_eq!(prog.name, want);
        let mut sends = 0;
        for op in &prog.ops {
            let ch = match op {
                Op::Send { chan } | Op::Recv { chan } => *chan,
                _ => continue,
            };
            sends += 1;
            let name = &c.channels[ch].name;
            assert!(
                name.ends_with(&format!("-{id}")),
                "{} uses channel {name}",
                prog.name
            );
        }
        assert!(sends > 0);
    }
    // and at run time every server serves: it runs as long as its client does
    let s = sim(
        shallow(4, 1_000_000, true),
        "tbench",
        json!({"clients": n}),
        100.0,
    );
    assert_eq!(s.tasks.len(), 2 * n);
    for t in &s.tasks {
        assert!(
            t.stats.cpu_ns > 10_000_000,
            "{} ran {} ns",
            t.comm,
            t.stats.cpu_ns
        );
    }
}

#[test]
fn tbench_reports_bytes_over_elapsed_like_tbench() {
    let s = sim(shallow(2, 3_000_000, true), "tbench", json!({}), 300.0);
    let tput = metric(&s, "throughput_mb_s");
    let passes = metric(&s, "loadfile_passes");
    let elapsed = s.now as f64 * 1e-9;
    let bytes = tput * 1e6 * elapsed;
    // the bytes done are the completed passes plus part of the pass in progress (all of its
    // bytes if only its last, data-less lines are left)
    assert!(passes >= 3.0, "passes {passes}");
    assert!(
        bytes >= passes * PASS_BYTES && bytes <= (passes + 1.0) * PASS_BYTES,
        "{bytes} bytes for {passes} passes of {PASS_BYTES}"
    );
    // a pass takes elapsed / passes, give or take the pass in progress
    let mean = metric(&s, "loadfile_ms_mean");
    assert!(
        mean * passes <= elapsed * 1e3 && mean * (passes + 1.0) > elapsed * 1e3,
        "mean pass {mean} ms, {passes} passes in {elapsed} s"
    );
    assert!(metric(&s, "loadfile_ms_min") <= metric(&s, "loadfile_ms_p50"));
    assert!(metric(&s, "loadfile_ms_p50") <= metric(&s, "loadfile_ms_p99"));
    assert!(metric(&s, "loadfile_ms_p99") <= metric(&s, "loadfile_ms_max"));
    // MB/s is the rate the pass time implies
    let from_passes = PASS_BYTES / (mean * 1e-3) / 1e6;
    assert!(
        (tput / from_passes - 1.0).abs() < 0.05,
        "tput {tput} vs {from_passes} from the pass time"
    );
}

#[test]
fn tbench_warmup_is_excluded() {
    let a = sim(shallow(2, 3_000_000, true), "tbench", json!({}), 300.0);
    let b = sim(
        shallow(2, 3_000_000, true),
        "tbench",
        json!({"warmup_s": 0.15}),
        300.0,
    );
    let (ta, tb) = (metric(&a, "throughput_mb_s"), metric(&b, "throughput_mb_s"));
    // a steady rate: the same MB/s over the second half as over the whole run
    assert!((tb / ta - 1.0).abs() < 0.05, "{ta} vs {tb}");
    assert!(metric(&b, "loadfile_passes") < metric(&a, "loadfile_passes"));
}

#[test]
fn tbench_throughput_grows_with_clients_until_the_cpus_saturate() {
    let t: Vec<(f64, f64)> = [1, 2, 4, 8]
        .iter()
        .map(|&c| {
            let s = sim(
                shallow(4, 3_000_000, true),
                "tbench",
                json!({"clients": c}),
                200.0,
            );
            (metric(&s, "throughput_mb_s"), busy(&s))
        })
        .collect();
    // one and two pairs leave CPUs idle and scale linearly
    assert!(t[0].1 < 0.6, "1 client busy {}", t[0].1);
    assert!((t[1].0 / t[0].0 - 2.0).abs() < 0.2, "{t:?}");
    // four pairs fill the four CPUs; eight pairs get no more
    assert!(t[2].0 > 1.5 * t[1].0, "{t:?}");
    assert!(t[2].1 > 0.95 && t[3].1 > 0.95, "{t:?}");
    assert!((t[3].0 / t[2].0 - 1.0).abs() < 0.1, "{t:?}");
}

// ------------------------------------------------------------------ dbench

/// One pass of client-tiny.txt on the 2-vCPU measurement machine (3.0 GHz), from the measured
/// per-op latencies and the op mix of the loadfile: interpreter 1.09 us per line, CPU ops at
/// their AvgLat, ReadX/WriteX their fixed cycles plus 0.31 cycles/byte, and the waits.
fn dbench_pass_ms_at_3ghz() -> f64 {
    let us = 3573.0 * 3270.0 / 3000.0 // interpreter
        + 613.0 * 17.0 + 450.0 * 1.0 + 26.0 * 15.0 + 584.0 * 3.0 + 97.0 * 1.0 + 102.0 * 1.0
        + 50.0 * 2.0 + 215.0 * 11.0 + 2.0 * 2.0 + 2.0 * 1.0
        + 124.0 * (15.0 + 37.0) // Unlink
        + 43.0 * 457.0 // Flush
        + (962.0 * 2300.0 + 11_408_226.0 * 0.31) / 3000.0 // ReadX
        + (303.0 * 5300.0 + 7_711_510.0 * 0.31) / 3000.0 // WriteX
        + 3.0 * 400.0; // writeback throttling: 7.7 MB per pass / 2.8 MB
    us / 1e3
}

#[test]
fn dbench_pass_time_matches_the_measured_op_latencies() {
    let s = sim(shallow(2, 3_000_000, true), "dbench", json!({}), 400.0);
    let want = dbench_pass_ms_at_3ghz();
    let got = metric(&s, "loadfile_ms_mean");
    // the simulator adds the kernel's wakeup and switch costs of the 171 blocking ops (and of
    // the jbd2 commits): two switches and two wakeups of 6,000 and 4,000 cycles each per op,
    // the IO completion's wakeup run by the interrupt on the idle CPU included, ~3 % at 3 GHz
    assert!(
        got >= want && got < want * 1.04,
        "pass {got} ms, from the op latencies {want} ms"
    );
    // and so the measured 382.6 MB/s of one client
    let tput = metric(&s, "throughput_mb_s");
    assert!((tput / 382.6 - 1.0).abs() < 0.05, "tput {tput}");
}

#[test]
fn dbench_flush_io_us_is_the_device_time_of_every_flush() {
    // 5 ms more per Flush (a disk instead of the measured virtio device): the 43 Flush lines
    // of a pass, each waiting for its data and the journal commit, add 43 x 5 ms to the pass
    let s = sim(
        shallow(2, 3_000_000, true),
        "dbench",
        json!({"flush_io_us": 5427}),
        1200.0,
    );
    let want = dbench_pass_ms_at_3ghz() + 43.0 * 5.0;
    let got = metric(&s, "loadfile_ms_mean");
    assert!(
        got >= want && got < want * 1.02,
        "pass {got} ms, expected {want} ms"
    );
}

#[test]
fn dbench_clients_block_in_iowait_on_flush() {
    let s = sim(shallow(2, 3_000_000, true), "dbench", json!({}), 400.0);
    let names: Vec<&str> = s.tasks.iter().map(|t| t.comm.as_str()).collect();
    assert_eq!(
        names,
        ["dbench", "jbd2"],
        "one client and the journal thread"
    );
    let (t, jbd2) = (&s.tasks[0], &s.tasks[1]);
    // per pass in iowait: 43 Flush x 213.5 us (the file's data), 124 Unlink x 37 us, 3
    // throttled writes x 400 us
    let pass = dbench_pass_ms_at_3ghz();
    let io_per_pass_ms = (43.0 * 213.5 + 124.0 * 37.0 + 3.0 * 400.0) / 1e3;
    let frac = t.stats.iowait_ns as f64 / s.now as f64;
    let want = io_per_pass_ms / pass;
    assert!(
        (frac / want - 1.0).abs() < 0.05,
        "iowait {frac:.3} of the time, expected {want:.3}"
    );
    // then each Flush waits for the journal thread's commit: 10 us of CPU and 213.5 us of
    // writing, which the thread spends in iowait
    let wait = t.stats.sleep_ns as f64 / s.now as f64;
    let want = 43.0 * (10.0 + 213.5) / 1e3 / pass;
    assert!(
        wait > want && wait < want * 1.1,
        "commit waits {wait:.3}, expected {want:.3}"
    );
    assert!(
        (jbd2.stats.iowait_ns as f64 / s.now as f64 / (43.0 * 0.2135 / pass) - 1.0).abs() < 0.05
    );
    // one commit per Flush of a single client
    let commits = metric(&s, "journal_commits_per_s");
    let flushes = metric(&s, "throughput_mb_s") * 1e6 / PASS_BYTES * 43.0;
    assert!(
        (commits / flushes - 1.0).abs() < 0.05,
        "{commits} commits/s, {flushes} flushes/s"
    );
    // the longest op in a second is a Flush (0.457 ms plus its wakeups)
    let lat = metric(&s, "latency_ms_max");
    assert!((0.457..0.5).contains(&lat), "latency {lat} ms");
}

#[test]
fn dbench_fsyncs_share_journal_commits_at_high_client_counts() {
    let run_n = |c: u32| {
        let s = sim(
            shallow(8, 3_000_000, true),
            "dbench",
            json!({"clients": c}),
            400.0,
        );
        let tput = metric(&s, "throughput_mb_s");
        (
            tput,
            metric(&s, "latency_ms_max"),
            metric(&s, "journal_commits_per_s"),
            tput * 1e6 / PASS_BYTES * 43.0,
        )
    };
    let one = run_n(1);
    let many = run_n(32);
    // group commit: one commit serves many fsyncs, so the clients scale past one commit
    // per flush, though each commit is serial
    assert!(many.2 < many.3 / 2.0, "{many:?}: commits/s vs flushes/s");
    assert!(many.0 > 2.0 * one.0, "{one:?} {many:?}");
    // and an fsync waits behind the commit in progress and its queue of clients
    assert!(many.1 > 5.0 * one.1, "latency {one:?} -> {many:?}");
}

// ------------------------------------------------------------------ pgbench

#[test]
fn pgbench_threads_follow_the_mmtests_formula() {
    // J = clamp(C, NUM_NODES, CPUs/NUM_NODES/8), never more than C
    assert_eq!(threads_for(1, 8, 1), 1);
    assert_eq!(threads_for(16, 8, 1), 1);
    assert_eq!(threads_for(1, 80, 2), 1);
    assert_eq!(threads_for(3, 80, 2), 3);
    assert_eq!(threads_for(64, 80, 2), 5);
    assert_eq!(threads_for(512, 256, 2), 16);
    let s = Sim::new(config(
        shallow(16, 1_000_000, true),
        wl("pgbench-ro", json!({"clients": 5})),
        "6.12",
        10.0,
    ))
    .unwrap();
    // 16 CPUs, 1 node: J = 2, so 2 client threads and 5 backends
    let names: Vec<&str> = s
        .compiled
        .programs
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "pgbench-0",
            "pgbench-1",
            "postgres-0",
            "postgres-1",
            "postgres-2",
            "postgres-3",
            "postgres-4"
        ]
    );
}

#[test]
fn pgbench_rw_is_slower_than_ro_and_waits_for_the_wal() {
    for c in [1, 8] {
        let ro = sim(
            shallow(4, 3_000_000, true),
            "pgbench-ro",
            json!({"clients": c}),
            200.0,
        );
        let rw = sim(
            shallow(4, 3_000_000, true),
            "pgbench-rw",
            json!({"clients": c}),
            200.0,
        );
        let (a, b) = (metric(&ro, "tps"), metric(&rw, "tps"));
        assert!(b < a / 5.0, "{c} clients: ro {a} tps, rw {b} tps");
        let io = |s: &Sim| s.tasks.iter().map(|t| t.stats.iowait_ns).sum::<u64>();
        assert_eq!(io(&ro), 0, "select-only never waits for the disk");
        // each commit flushes the WAL for 0.457 ms under WALWriteLock, one at a time
        let flushes = metric(&rw, "transactions");
        assert!(
            io(&rw) as f64 >= 0.457e6 * flushes,
            "{c}: iowait {} for {flushes} commits",
            io(&rw)
        );
        assert!(
            b <= 1.0 / 0.457e-3 * 1.01,
            "commits are serialised: {b} tps"
        );
        // Little's law: latency = clients / tps
        let lat = metric(&rw, "latency_ms_mean");
        assert!((lat * b / 1e3 - c as f64).abs() < 1e-6);
    }
}

#[test]
fn pgbench_rw_wal_flush_us_is_the_time_of_every_commit_flush() {
    // one client commits alone: each transaction waits for exactly one flush, so 5 ms more
    // per flush is 5 ms more per transaction. The mean latency is clients / tps over the run,
    // whose last transaction is cut off: 3 s keep that under 0.2 % (over 500 transactions).
    let lat = |f: f64| {
        let s = sim(
            shallow(4, 3_000_000, true),
            "pgbench-rw",
            json!({"clients": 1, "wal_flush_us": f}),
            3000.0,
        );
        assert_eq!(metric(&s, "commits_per_flush"), 1.0);
        metric(&s, "latency_ms_mean")
    };
    let (fast, slow) = (lat(457.0), lat(5457.0));
    assert!(
        ((slow - fast) - 5.0).abs() < 0.05,
        "latency {fast} ms with 0.457 ms flushes, {slow} ms with 5.457 ms"
    );
}

#[test]
fn machine_storage_fsync_us_is_the_default_flush_of_pgbench_and_dbench() {
    // a preset's [storage] fsync_us replaces the benchmarks' measured device times (457 us per
    // WAL flush, 427 us per dbench Flush); an explicit parameter still wins
    let disk = |fsync_us: f64| {
        let mut m = shallow(4, 3_000_000, true);
        m["storage"] = json!({ "fsync_us": fsync_us });
        m
    };
    let pg = |m: Value, params: Value| {
        let s = sim(m, "pgbench-rw", params, 3000.0);
        metric(&s, "latency_ms_mean")
    };
    let one = json!({"clients": 1});
    let default = pg(shallow(4, 3_000_000, true), one.clone());
    let on_disk = pg(disk(5457.0), one.clone());
    // one client: one flush per transaction, 5 ms more each
    assert!(
        ((on_disk - default) - 5.0).abs() < 0.05,
        "latency {default} ms by default, {on_disk} ms on a 5.457 ms device"
    );
    let explicit = pg(disk(5457.0), json!({"clients": 1, "wal_flush_us": 457}));
    assert_eq!(
        explicit, default,
        "an explicit wal_flush_us wins over the machine's"
    );

    // a storage time outside 1 us .. 1 s is refused, naming the key
    let mut bad = config(disk(0.5), wl("pgbench-rw", json!({})), "6.12", 10.0);
    bad.machine.storage.as_mut().unwrap().fsync_us = 0.5;
    match Sim::new(bad) {
        Ok(_) => panic!("fsync_us 0.5 accepted"),
        Err(e) => assert!(e.contains("storage.fsync_us 0.5"), "{e}"),
    }

    // dbench: each of a pass's 43 Flush lines waits for the device once (data, then commit)
    let s = sim(disk(5427.0), "dbench", json!({}), 1200.0);
    let want = dbench_pass_ms_at_3ghz() + 43.0 * 5.0;
    let got = metric(&s, "loadfile_ms_mean");
    assert!(
        got >= want && got < want * 1.02,
        "pass {got} ms on a 5.427 ms device, expected {want} ms"
    );
}

#[test]
fn pgbench_rw_at_scale_1_commits_one_transaction_per_flush() {
    // every transaction updates the one branch row and holds it until its commit is durable,
    // so no two commits are ever in the WAL at once: one commit per flush, at most one flush
    // per 0.457 ms
    let rw = sim(
        shallow(4, 3_000_000, true),
        "pgbench-rw",
        json!({"clients": 8}),
        200.0,
    );
    assert_eq!(metric(&rw, "commits_per_flush"), 1.0);
    assert!(metric(&rw, "tps") <= 1.0 / 0.457e-3 * 1.01);
}

#[test]
fn pgbench_rw_at_a_large_scale_shares_wal_flushes_between_commits() {
    // 1000 branches: 16 clients rarely meet on a row, and the commits that arrive during a
    // flush share the next one, so the rate passes the one-flush-per-commit bound
    let one = sim(
        shallow(4, 3_000_000, true),
        "pgbench-rw",
        json!({"clients": 16}),
        200.0,
    );
    let big = sim(
        shallow(4, 3_000_000, true),
        "pgbench-rw",
        json!({"clients": 16, "scale": 1000}),
        200.0,
    );
    let (a, b) = (metric(&one, "tps"), metric(&big, "tps"));
    assert!(a <= 1.0 / 0.457e-3 * 1.01, "scale 1: {a} tps");
    assert!(b > 1.5 / 0.457e-3, "scale 1000: {b} tps");
    let cpf = metric(&big, "commits_per_flush");
    assert!(cpf > 1.5, "{cpf} commits per flush");
    // a flush covers the commits of the flush before it: at most every client's
    assert!(cpf <= 16.0, "{cpf}");
}

#[test]
fn pgbench_threads_parameter_is_pgbench_j_capped_at_the_clients() {
    // 80 CPUs on 1 node: spec 9.1 gives J = 80 / 8 = 10 at 64 clients; `threads` overrides
    // it (MMTests' 2019 script ran -j NUMNODES), and never more threads than clients
    for (c, j, want) in [(64, 0, 10), (64, 2, 2), (1, 2, 1), (5, 8, 5)] {
        let s = Sim::new(config(
            smp(80, 1, 1_000_000, false),
            wl("pgbench-rw", json!({"clients": c, "threads": j})),
            "6.12",
            1.0,
        ))
        .unwrap();
        let threads = s
            .compiled
            .programs
            .iter()
            .filter(|p| p.name.starts_with("pgbench-"))
            .count();
        assert_eq!(threads, want, "{c} clients, threads {j}");
    }
}

#[test]
fn pgbench_ro_transaction_is_two_hops_of_work_without_kernel_costs() {
    // 1 client on 1 CPU at 1 GHz without kernel costs: a transaction is the client's and the
    // backend's work back to back. Mean backend work is 175,000 cycles (data/workloads/
    // pgbench.json, lognormal, mean preserving); the rest: client 24,000 + send 1280 + 120 B x
    // 0.44 + recv 500 + 200 B x 0.31, backend recv 500 + 120 B x 0.31 + send 1280 + 200 B x 0.44.
    let per_txn = 175_000.0
        + 24_000.0
        + 1280.0
        + 120.0 * 0.44
        + 500.0
        + 200.0 * 0.31
        + 500.0
        + 120.0 * 0.31
        + 1280.0
        + 200.0 * 0.44;
    let s = sim(shallow(1, 1_000_000, false), "pgbench-ro", json!({}), 500.0);
    let want = 1e9 / per_txn;
    let got = metric(&s, "tps");
    assert!(
        (got / want - 1.0).abs() < 0.03,
        "{got} tps, closed form {want}"
    );
}

#[test]
fn pgbench_client_thread_polls_its_connections() {
    // One client thread (`threads` = 1) drives 16 connections on 24 CPUs. It poll()s them: it
    // reads whichever result is ready and answers on that connection, so with 16 queries in
    // flight (16 backends of ~177,000 cycles each could do ~90,000 statements/s) it never waits
    // and the thread's own work per statement bounds the rate:
    // 24,000 + send 1280 + 120 B x 0.44 + recv 500 + 200 B x 0.31 cycles at 1 GHz.
    let s = sim(
        shallow(24, 1_000_000, false),
        "pgbench-ro",
        json!({"clients": 16, "threads": 1}),
        300.0,
    );
    let pg = &s.compiled.programs[0];
    assert_eq!(pg.name, "pgbench-0");
    let polls = pg
        .ops
        .iter()
        .filter(|op| matches!(op, Op::RecvAny { chans } if chans.len() == 16));
    let replies = pg
        .ops
        .iter()
        .filter(|op| matches!(op, Op::SendPolled { chans } if chans.len() == 16));
    assert_eq!((polls.count(), replies.count()), (1, 1));
    let t_client = 24_000.0 + 1280.0 + 120.0 * 0.44 + 500.0 + 200.0 * 0.31;
    let want = 1e9 / t_client;
    let got = metric(&s, "tps");
    assert!(
        (got / want - 1.0).abs() < 0.02,
        "{got} tps, thread bound {want}"
    );
    // every connection keeps being served
    for i in 0..16 {
        let b = s
            .tasks
            .iter()
            .find(|t| s.compiled.programs[t.program].name == format!("postgres-{i}"))
            .unwrap();
        assert!(b.stats.cpu_ns > 0, "backend {i} never ran");
    }
}

// ------------------------------------------------------------------ netperf

#[test]
fn netperf_rr_alternates_strictly_between_netperf_and_netserver() {
    for name in ["netperf-tcp-rr", "netperf-udp-rr"] {
        let s = sim(shallow(2, 2_400_000, true), name, json!({}), 20.0);
        assert_eq!(s.tasks.len(), 2);
        let rr = s.compiled.marks.iter().position(|m| m == "rr").unwrap();
        let srv = s.compiled.marks.iter().position(|m| m == "srv").unwrap();
        let seq: Vec<usize> = s.marks.iter().map(|&(_, _, m)| m).collect();
        assert!(seq.len() > 100, "{name}: {} marks", seq.len());
        for (i, &m) in seq.iter().enumerate() {
            let want = if i % 2 == 0 { srv } else { rr };
            assert_eq!(m, want, "{name}: mark {i} breaks the alternation");
        }
        let n = metric(&s, "transactions");
        assert_eq!(n as usize, seq.len() / 2);
        let tps = metric(&s, "trans_per_s");
        assert!((tps * 0.020 - n).abs() < 1e-6);
    }
}

#[test]
fn netperf_rr_round_trip_is_the_sum_of_both_sides_work() {
    // 1 CPU at 1 GHz, no kernel costs: a transaction is netperf's and netserver's work.
    // TCP: 2 x (user 300 + send 1280 + 1 B x 0.44 + recv 500 + 1 B x 0.31)
    // UDP: 2 x (user 300 + send 4170 + 1 B x 0.31 + recv 500 + 1 B x 0.31)
    for (name, cycles) in [
        (
            "netperf-tcp-rr",
            2.0 * (300.0 + 1280.0 + 0.44 + 500.0 + 0.31),
        ),
        (
            "netperf-udp-rr",
            2.0 * (300.0 + 4170.0 + 0.31 + 500.0 + 0.31),
        ),
    ] {
        let s = sim(shallow(1, 1_000_000, false), name, json!({}), 20.0);
        let want = 1e9 / cycles;
        let got = metric(&s, "trans_per_s");
        assert!((got / want - 1.0).abs() < 0.01, "{name}: {got} vs {want}");
    }
}

#[test]
fn stream_throughput_rises_with_message_size() {
    for name in ["netperf-tcp-stream", "netperf-udp-stream"] {
        let mut last = 0.0;
        for m in [64, 1024, 16384] {
            let s = sim(
                shallow(2, 2_400_000, true),
                name,
                json!({"msg_size": m}),
                50.0,
            );
            let t = metric(&s, "throughput_mbit_s");
            assert!(t > 1.5 * last, "{name} {m} B: {t} Mbit/s after {last}");
            let rx = metric(&s, "recv_mbit_s");
            assert!(rx <= t && rx > 0.95 * t, "{name} {m} B: recv {rx} of {t}");
            assert!(metric(&s, "loss_pct") < 5.0);
            last = t;
        }
    }
}

#[test]
fn tcp_stream_is_sender_bound_at_its_per_message_cost() {
    // 2 CPUs at 2.4 GHz, no kernel costs: the sender needs 1500 + m x 0.44 cycles per
    // message, the receiver 500 + m x 0.31, so the sender sets the rate.
    for m in [64.0, 4096.0, 16384.0] {
        let s = sim(
            shallow(2, 2_400_000, false),
            "netperf-tcp-stream",
            json!({"msg_size": m as u64}),
            50.0,
        );
        let want = 2.4e9 / (1500.0 + m * 0.44) * m * 8.0 / 1e6;
        let got = metric(&s, "throughput_mbit_s");
        assert!((got / want - 1.0).abs() < 0.02, "{m} B: {got} vs {want}");
    }
}

#[test]
fn a_udp_sender_never_blocks_and_a_slow_receiver_loses_datagrams() {
    // one CPU shared by both: netperf never waits for netserver, which gets only its fair
    // share; a TCP sender instead blocks on its send buffer and nothing is lost
    let s = sim(
        shallow(1, 2_400_000, true),
        "netperf-udp-stream",
        json!({"msg_size": 1024}),
        100.0,
    );
    let netperf = &s.tasks[0];
    assert_eq!(netperf.comm, "netperf");
    assert_eq!(netperf.stats.sleep_ns, 0, "the UDP sender never sleeps");
    let t = metric(&s, "throughput_mbit_s");
    let rx = metric(&s, "recv_mbit_s");
    let loss = metric(&s, "loss_pct");
    assert!(
        rx < t && (loss - (t - rx) / t * 100.0).abs() < 1e-9,
        "{t} {rx} {loss}"
    );
    let s = sim(
        shallow(1, 2_400_000, true),
        "netperf-tcp-stream",
        json!({"msg_size": 1024}),
        100.0,
    );
    assert!(
        s.tasks[0].stats.sleep_ns > 0,
        "the TCP sender blocks on a full buffer"
    );
    assert_eq!(metric(&s, "loss_pct"), 0.0);
}

// ------------------------------------------------------------------ all

#[test]
fn models_are_deterministic() {
    for (name, params) in [
        ("tbench", json!({"clients": 3})),
        ("dbench", json!({"clients": 5})),
        ("pgbench-ro", json!({"clients": 6})),
        ("pgbench-rw", json!({"clients": 3})),
        ("netperf-udp-stream", json!({"msg_size": 256})),
    ] {
        let a = stable_json(&sim(
            shallow(4, 2_000_000, true),
            name,
            params.clone(),
            50.0,
        ));
        let b = stable_json(&sim(shallow(4, 2_000_000, true), name, params, 50.0));
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn bad_parameters_are_errors_that_name_them() {
    let cases = [
        ("tbench", json!({"clients": 0}), "clients"),
        ("tbench", json!({"clients": 1.5}), "integer"),
        ("tbench", json!({"client": 2}), "unknown parameter 'client'"),
        ("tbench", json!({"warmup_s": -1}), "warmup_s"),
        ("dbench", json!({"clients": 5000}), "clients"),
        ("dbench", json!({"clients": "many"}), "expected a number"),
        ("pgbench-ro", json!({"clients": 0}), "clients"),
        ("pgbench-rw", json!({"scale": 0}), "scale"),
        ("pgbench-rw", json!({"scale": 50_000}), "scale"),
        ("pgbench-ro", json!({"threads": 5000}), "threads"),
        ("pgbench-rw", json!({"wal_flush_us": 0}), "wal_flush_us"),
        ("dbench", json!({"flush_io_us": -1}), "flush_io_us"),
        (
            "pgbench-rw",
            json!({"branches": 10}),
            "unknown parameter 'branches'",
        ),
        ("netperf-tcp-stream", json!({"msg_size": 0}), "msg_size"),
        ("netperf-udp-stream", json!({"msg_size": 70000}), "65507"),
        (
            "netperf-tcp-rr",
            json!({"msg_size": 64}),
            "unknown parameter 'msg_size'",
        ),
        ("netperf-udp-rr", json!({"request_size": 0}), "request_size"),
    ];
    for (name, params, needle) in cases {
        let e = build_err(name, params.clone());
        assert!(
            e.contains(needle) && e.contains(name),
            "{name} {params}: '{e}' should mention '{needle}'"
        );
    }
}

#[test]
fn tbench_with_socket_timers_and_sis_prop_is_deterministic() {
    // 3 clients on 4 CPUs with C6 (the smp preset's deep state): the v5.2 wakeup path with its
    // SIS_PROP budget, the TCP socket timers and their interrupts on idle CPUs all take part;
    // two runs give the same bytes.
    let once = || {
        let cfg = config(
            smp(4, 1, 2_000_000, true),
            wl("tbench", json!({"clients": 3})),
            "5.2",
            60.0,
        );
        let s = run(cfg);
        assert!(
            s.rqs
                .iter()
                .any(|rq| rq.idle_state_usage.iter().sum::<u64>() > 0),
            "the CPUs idle"
        );
        stable_json(&s)
    };
    assert_eq!(once(), once());
}

#[test]
fn power_turbostat_and_cpu_time_cover_the_interval_after_the_warmup() {
    // netperf TCP_STREAM, a 50 ms warm-up in a 100 ms run, sampled every 20 ms: sampling
    // restarts where the warm-up ends (samples at 20, 40, 50, 70, 90 and 100 ms), the result's
    // energy is the sum of the three samples after the warm-up, every CPU's busy + idle time
    // is the 50 ms measured interval, and turbostat's Busy% is their mean; without a warm-up
    // the whole run is measured
    let result = |warmup_s: f64| {
        let mut cfg = config(
            smp(2, 1, 2_000_000, true),
            wl(
                "netperf-tcp-stream",
                json!({"msg_size": 1024, "warmup_s": warmup_s}),
            ),
            "6.12",
            100.0,
        );
        cfg.sample_interval_ns = 20_000_000;
        let s = run(cfg);
        let r: Value = serde_json::from_str(&schedsim_core::metrics::result_json(&s, 0.0)).unwrap();
        let times: Vec<u64> = s.samples.iter().map(|x| x.t_ns / 1_000_000).collect();
        let energy = |from_ns: u64| -> f64 {
            let mut prev = 0;
            let mut e = 0.0;
            for x in &s.samples {
                if x.t_ns > from_ns {
                    e += x.pkg_watt * (x.t_ns - prev) as f64 * 1e-9;
                }
                prev = x.t_ns;
            }
            e
        };
        (r, times, energy(50_000_000), energy(0))
    };
    let (r, times, after, whole) = result(0.05);
    assert_eq!(times, vec![20, 40, 50, 70, 90, 100]);
    assert_eq!(r["sim"]["measured_from_s"].as_f64(), Some(0.05));
    let e = r["power"]["energy_j"].as_f64().unwrap();
    assert!(
        whole > after * 1.2,
        "the warm-up drew power: {whole} {after}"
    );
    assert!((e - after).abs() < 1e-9 * after, "{e} {after}");
    let w = r["power"]["avg_package_w"].as_f64().unwrap();
    assert!((w - after / 0.05).abs() < 1e-9 * w, "{w}");
    let cpus = r["cpus"].as_array().unwrap();
    let mut busy_pct = 0.0;
    for c in cpus {
        let t = c["busy_ns"].as_u64().unwrap() + c["idle_ns"].as_u64().unwrap();
        assert_eq!(t, 50_000_000, "{c}");
        busy_pct += c["busy_pct"].as_f64().unwrap() / cpus.len() as f64;
    }
    let ts = r["turbostat"]["busy_pct"].as_f64().unwrap();
    assert!((ts - busy_pct).abs() < 1e-6, "{ts} {busy_pct}");

    let (r, times, _, whole) = result(0.0);
    assert_eq!(times, vec![20, 40, 60, 80, 100]);
    assert_eq!(r["sim"]["measured_from_s"].as_f64(), Some(0.0));
    let e = r["power"]["energy_j"].as_f64().unwrap();
    assert!((e - whole).abs() < 1e-9 * whole, "{e} {whole}");
}

#[test]
fn primary_windows_split_the_measured_interval_into_five_equal_parts() {
    // Rates over five equal windows average to the rate over the whole measured interval
    // (transactions, datagrams and checkpoint bytes add up over the windows); dbench's
    // windows hold the mean time of the loadfile passes that ended in each; a fixed-work
    // benchmark has none
    let windows = |name: &str, params: Value, ms: f64| -> (Vec<f64>, f64) {
        let s = sim(shallow(2, 2_000_000, true), name, params, ms);
        let r: Value = serde_json::from_str(&schedsim_core::metrics::result_json(&s, 0.0)).unwrap();
        let w = r
            .get("primary_windows")
            .map(|v| {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect()
            })
            .unwrap_or_default();
        // null for fixed work that the run's end cut short
        (w, r["primary"]["value"].as_f64().unwrap_or(f64::NAN))
    };
    // (tbench credits bytes at its loadfile's checkpoints, so its windows need many of them)
    for (name, params, ms) in [
        ("pgbench-ro", json!({"clients": 2, "warmup_s": 0.02}), 120.0),
        ("tbench", json!({"clients": 1, "warmup_s": 0.02}), 1020.0),
        (
            "netperf-udp-stream",
            json!({"msg_size": 1024, "warmup_s": 0.02}),
            120.0,
        ),
        ("netperf-tcp-rr", json!({"warmup_s": 0.02}), 120.0),
    ] {
        let (w, whole) = windows(name, params, ms);
        assert_eq!(w.len(), 5, "{name}: {w:?}");
        let mean = w.iter().sum::<f64>() / 5.0;
        assert!(
            (mean - whole).abs() <= 1e-9 * whole,
            "{name}: {mean} {whole}"
        );
        assert!(w.iter().all(|&x| x > 0.5 * whole), "{name}: {w:?}");
    }
    let (w, whole) = windows("dbench", json!({"clients": 1, "warmup_s": 0.5}), 3000.0);
    assert_eq!(w.len(), 5, "dbench: {w:?}");
    assert!(
        w.iter().all(|&x| (x - whole).abs() < 0.25 * whole),
        "dbench: {w:?} {whole}"
    );
    let (w, whole) = windows("kernbench", json!({"jobs": 2, "objects": 4}), 50.0);
    assert!(w.is_empty(), "kernbench: {w:?}");
    assert!(
        whole.is_nan(),
        "an unfinished build has no elapsed time: {whole}"
    );
}
