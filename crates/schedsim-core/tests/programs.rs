//! Task-program operations: synchronisation objects, distributions, yield.

mod common;

use common::*;
use serde_json::json;

const KHZ: u64 = 1_000_000;

#[test]
fn a_mutex_serialises_its_critical_sections_in_fifo_order() {
    // 3 tasks on 3 CPUs each hold the mutex for 1 ms, 5 times: 15 ms of critical sections
    // back to back; nobody else can be inside at the same time.
    let t = |i: usize| {
        json!({"name": format!("w{i}"), "start_cpu": i, "program": [{"op": "loop", "count": 5, "body": [
        {"op": "lock", "mutex": "m"}, {"op": "mark", "name": "in"},
        {"op": "run", "cycles": cycles(1.0, KHZ)}, {"op": "mark", "name": "out"},
        {"op": "unlock", "mutex": "m"}]}]})
    };
    let sim = run(config(
        smp(3, 1, KHZ, false),
        custom(json!([t(0), t(1), t(2)]), json!([])),
        "6.12",
        0.0,
    ));
    let (inn, out) = (0usize, 1usize);
    let mut inside = 0i32;
    let mut events: Vec<_> = sim
        .marks
        .iter()
        .map(|&(t, _, id)| (t, if id == out { 0 } else { 1 }, id))
        .collect();
    events.sort();
    for (_, _, id) in events {
        inside += if id == inn { 1 } else { -1 };
        assert!(
            (0..=1).contains(&inside),
            "two tasks inside the critical section"
        );
    }
    // each hand-off wakes the next owner's CPU out of C6 (85 µs)
    let end = sim.marks.iter().map(|m| m.0).max().unwrap();
    assert!(
        (15_000_000..15_000_000 + 15 * 90_000).contains(&end),
        "end {end}"
    );
}

#[test]
fn a_barrier_releases_all_parties_together() {
    // 4 instances run 1, 2, 3, 4 ms of work per round on 4 CPUs, then meet: each round takes
    // as long as the slowest (4 ms); 3 rounds ≈ 12 ms.
    let tasks: Vec<_> = (1..=4)
        .map(|i| json!({"name": format!("t{i}"), "start_cpu": i - 1, "program": [{"op": "loop", "count": 3, "body": [
            {"op": "run", "cycles": cycles(i as f64, KHZ)}, {"op": "barrier", "name": "b"}, {"op": "mark", "name": "past"}]}]}))
        .collect();
    let sim = run(config(
        smp(4, 1, KHZ, false),
        custom(json!(tasks), json!([])),
        "6.12",
        0.0,
    ));
    let mut past: Vec<u64> = sim.marks.iter().map(|m| m.0).collect();
    past.sort();
    assert_eq!(past.len(), 12);
    for round in past.chunks(4) {
        // all four leave the barrier within the wakeup latencies of one another
        assert!(
            round[3] - round[0] < 200_000,
            "round spread {}",
            round[3] - round[0]
        );
    }
    assert!(
        past[11] >= 12_000_000 && past[11] < 13_000_000,
        "end {}",
        past[11]
    );
}

#[test]
fn condition_variables_and_suspend_resume_hand_work_over() {
    let consumer = json!({"name": "consumer", "start_cpu": 1, "program": [{"op": "loop", "count": 3, "body": [
        {"op": "lock", "mutex": "m"}, {"op": "cond_wait", "cond": "c", "mutex": "m"},
        {"op": "mark", "name": "got"}, {"op": "unlock", "mutex": "m"}]}]});
    let producer = json!({"name": "producer", "start_cpu": 0, "program": [{"op": "loop", "count": 3, "body": [
        {"op": "sleep", "ns": 2_000_000}, {"op": "lock", "mutex": "m"}, {"op": "signal", "cond": "c"},
        {"op": "unlock", "mutex": "m"}]}]});
    let sleeper = json!({"name": "sleeper", "program": [{"op": "suspend"}, {"op": "mark", "name": "resumed"}]});
    let waker = json!({"name": "waker", "program": [{"op": "sleep", "ns": 1_000_000}, {"op": "resume", "task": "sleeper"}]});
    let w = custom(json!([consumer, producer, sleeper, waker]), json!([]));
    let sim = run(config(smp(2, 1, KHZ, false), w, "6.12", 0.0));
    let got: Vec<u64> = sim
        .marks
        .iter()
        .filter(|m| sim.compiled.marks[m.2] == "got")
        .map(|m| m.0)
        .collect();
    assert_eq!(got.len(), 3);
    for (i, t) in got.iter().enumerate() {
        // the producer's timer and the consumer's wakeup may each leave C6 (85 µs)
        let signal = 2_000_000 * (i as u64 + 1);
        assert!(*t >= signal && *t < signal + 400_000, "got {i} at {t}");
    }
    let resumed = sim
        .marks
        .iter()
        .find(|m| sim.compiled.marks[m.2] == "resumed")
        .unwrap()
        .0;
    assert!(
        (1_000_000..1_400_000).contains(&resumed),
        "resumed at {resumed}"
    );
    assert_eq!(sim.live_tasks, 0);
}

#[test]
fn run_dist_draws_reproducibly_with_the_right_mean() {
    // 2000 exponential draws with a 50 µs mean at 1 GHz: total ≈ 100 ms (±5 %), identical for
    // the same seed, different for another seed.
    let w = custom(
        json!([{"name": "d", "program": [{"op": "loop", "count": 2000, "body": [
        {"op": "run_dist", "dist": {"kind": "exponential", "mean": 50_000.0}}]}]}]),
        json!([]),
    );
    let a = run(config(smp(1, 1, KHZ, false), w.clone(), "6.12", 0.0));
    let b = run(config(smp(1, 1, KHZ, false), w.clone(), "6.12", 0.0));
    let mut c_cfg = config(smp(1, 1, KHZ, false), w, "6.12", 0.0);
    c_cfg.seed = 8;
    let c = run(c_cfg);
    let t = a.tasks[0].stats.exit_ns.unwrap() as f64;
    assert!((t / 100e6 - 1.0).abs() < 0.05, "total {t}");
    assert_eq!(a.tasks[0].stats.exit_ns, b.tasks[0].stats.exit_ns);
    assert_ne!(a.tasks[0].stats.exit_ns, c.tasks[0].stats.exit_ns);
}

#[test]
fn yield_hands_the_cpu_to_the_other_task() {
    // Two tasks on one CPU alternate 0.1 ms of work with sched_yield(): each gets about half.
    for kernel in ["5.2", "6.12"] {
        let t = |n: &str| {
            json!({"name": n, "program": [{"op": "loop", "count": -1, "body": [
            {"op": "run", "cycles": cycles(0.1, KHZ)}, {"op": "yield"}]}]})
        };
        let sim = run(config(
            smp(1, 1, KHZ, false),
            custom(json!([t("a"), t("b")]), json!([])),
            kernel,
            100.0,
        ));
        let (a, b) = (
            sim.tasks[0].stats.cpu_ns as f64,
            sim.tasks[1].stats.cpu_ns as f64,
        );
        assert!((a / b - 1.0).abs() < 0.05, "{kernel}: {a} vs {b}");
        assert!(
            sim.tasks[0].stats.nr_switches > 300,
            "{kernel}: {} switches",
            sim.tasks[0].stats.nr_switches
        );
    }
}

#[test]
fn locking_a_mutex_or_row_already_held_waits_for_good() {
    // non-recursive locks: the second lock queues the task behind itself, so "again" never
    // comes, and a second task that wants the mutex waits behind it for good too
    let again = |op: serde_json::Value| json!({"name": "a", "start_cpu": 0, "program": [op.clone(), op, {"op": "mark", "name": "again"}]});
    let other = json!({"name": "b", "start_cpu": 1, "program": [
        {"op": "sleep", "ns": 1_000_000}, {"op": "lock", "mutex": "m"}, {"op": "mark", "name": "b_in"}]});
    let lock = json!({"op": "lock", "mutex": "m"});
    let row = json!({"op": "lock_row", "table": "t", "rows": 1});
    for (tasks, n) in [(json!([again(lock), other]), 2), (json!([again(row)]), 1)] {
        let sim = run(config(
            smp(2, 1, KHZ, false),
            custom(tasks, json!([])),
            "6.12",
            0.0,
        ));
        assert!(sim.marks.is_empty(), "{:?}", sim.marks);
        assert_eq!(sim.live_tasks, n);
        assert!(sim.now < 2_000_000, "the run goes on to {} ns", sim.now);
    }
}

#[test]
fn a_workload_starts_at_most_200000_tasks() {
    let task =
        |n: u32| json!({"name": "t", "instances": n, "program": [{"op": "run", "cycles": 1.0}]});
    let two = custom(
        json!([task(100_000), {"name": "u", "instances": 100_001, "program": []}]),
        json!([]),
    );
    let e = schedsim_core::Sim::new(config(smp(1, 1, KHZ, false), two, "6.12", 0.0))
        .err()
        .expect("too many tasks");
    assert!(
        e.contains("200001 tasks") && e.contains("at most 200000"),
        "{e}"
    );
}

#[test]
fn op_times_beyond_the_clock_are_errors_and_draws_are_capped() {
    let build = |op: serde_json::Value| {
        let w = custom(json!([{"name": "t", "program": [op]}]), json!([]));
        schedsim_core::Sim::new(config(smp(1, 1, KHZ, false), w, "6.12", 20.0)).err()
    };
    for op in [
        json!({"op": "sleep", "ns": u64::MAX}),
        json!({"op": "io", "ns": 1u64 << 63}),
        json!({"op": "run", "cycles": 1e22}),
        json!({"op": "run", "cycles": 10.0, "stall_ns": 1e30}),
        json!({"op": "group_commit", "log": "l", "ns": u64::MAX}),
    ] {
        let e = build(op.clone()).unwrap_or_else(|| panic!("{op} built"));
        assert!(e.contains("task 't'") && e.contains("at most"), "{op}: {e}");
    }
    let late =
        json!([{"name": "t", "delay_ns": u64::MAX, "program": [{"op": "run", "cycles": 1.0}]}]);
    let w = custom(late, json!([]));
    let e = schedsim_core::Sim::new(config(smp(1, 1, KHZ, false), w, "6.12", 20.0))
        .err()
        .expect("rejected");
    assert!(
        e.contains("task 't': delay_ns = 18446744073709551615: at most"),
        "{e}"
    );
    // the longest sleep allowed is built; a heavy-tailed draw is capped at 10^15 cycles, so it
    // is still running at the end of a 20 ms run instead of wrapping round to a short burst
    assert!(build(json!({"op": "sleep", "ns": 1u64 << 62})).is_none());
    let w = custom(
        json!([{"name": "t", "program": [
            {"op": "run_dist", "dist": {"kind": "log_normal", "mu": 700.0, "sigma": 5.0, "scale": 1.0}},
            {"op": "mark", "name": "done"}]}]),
        json!([]),
    );
    let sim = run(config(smp(1, 1, KHZ, false), w, "6.12", 20.0));
    assert!(sim.marks.is_empty());
    assert!(
        sim.rqs[0].busy_ns > 19_500_000,
        "busy {}",
        sim.rqs[0].busy_ns
    );
}

#[test]
fn unlocking_a_mutex_not_held_is_an_error() {
    let w = custom(
        json!([{"name": "bad", "program": [{"op": "unlock", "mutex": "m"}]}]),
        json!([]),
    );
    let mut sim = schedsim_core::Sim::new(config(smp(1, 1, KHZ, false), w, "6.12", 0.0)).unwrap();
    let e = sim.run().unwrap_err();
    assert!(e.contains("does not hold"), "{e}");
}

/// A server polling three request channels and three clients asking at 3, 1 and 2 ms.
fn poll_clients_and_server(server_cycles_ms: f64) -> serde_json::Value {
    let client = |i: usize, at_ms: f64| {
        json!({"name": format!("c{i}"), "start_cpu": i + 1, "program": [
            {"op": "sleep", "ns": (at_ms * 1e6) as u64},
            {"op": "send", "chan": format!("req{i}")},
            {"op": "recv", "chan": format!("rsp{i}")},
            {"op": "mark", "name": format!("done{i}")}]})
    };
    let server = json!({"name": "srv", "start_cpu": 0, "program": [{"op": "loop", "count": 3, "body": [
        {"op": "recv_any", "chans": ["req0", "req1", "req2"]},
        {"op": "mark", "name": "served"},
        {"op": "run", "cycles": cycles(server_cycles_ms, KHZ)},
        {"op": "send_polled", "chans": ["rsp0", "rsp1", "rsp2"]}]}]});
    let chans: Vec<_> = ["req0", "req1", "req2", "rsp0", "rsp1", "rsp2"]
        .iter()
        .map(|c| json!({"name": c, "capacity": 1}))
        .collect();
    custom(
        json!([server, client(0, 3.0), client(1, 1.0), client(2, 2.0)]),
        json!(chans),
    )
}

fn mark_time(sim: &schedsim_core::Sim, name: &str) -> Vec<u64> {
    let id = sim.compiled.marks.iter().position(|m| m == name).unwrap();
    sim.marks
        .iter()
        .filter(|m| m.2 == id)
        .map(|m| m.0)
        .collect()
}

#[test]
fn recv_any_serves_whichever_channel_is_ready_and_send_polled_answers_it() {
    // 0.1 ms of service: each request is answered before the next arrives, in arrival order,
    // and each reply reaches the client that asked (a reply on the wrong channel would end
    // another client first, or leave one waiting for ever).
    let sim = run(config(
        smp_costless_poll(4),
        poll_clients_and_server(0.1),
        "6.12",
        0.0,
    ));
    let done = |i: usize| mark_time(&sim, &format!("done{i}"));
    for (i, at_ms) in [(0, 3.0), (1, 1.0), (2, 2.0)] {
        let t = done(i);
        assert_eq!(t.len(), 1, "client {i} done once");
        let expect = ((at_ms + 0.1) * 1e6) as u64;
        assert!(
            (expect..expect + 20_000).contains(&t[0]),
            "client {i}: {t:?} vs {expect}"
        );
    }
    assert_eq!(mark_time(&sim, "served").len(), 3);
}

#[test]
fn recv_any_scans_round_robin_after_the_last_served() {
    // 1.5 ms of service: the request of 1 ms is served at once (until 2.5 ms); then req2
    // (2 ms) and req0 (3 ms) are both waiting, and the scan starts after position 1, so req2
    // goes first (2.5-4 ms) and req0 last (4-5.5 ms).
    let sim = run(config(
        smp_costless_poll(4),
        poll_clients_and_server(1.5),
        "6.12",
        0.0,
    ));
    let end = |i: usize| mark_time(&sim, &format!("done{i}"))[0];
    let near = |t: u64, ms: f64| (t as f64 - ms * 1e6).abs() < 30_000.0;
    assert!(near(end(1), 2.5), "{}", end(1));
    assert!(near(end(2), 4.0), "{}", end(2));
    assert!(near(end(0), 5.5), "{}", end(0));
}

#[test]
fn recv_any_channel_sets_are_checked() {
    for (chans, expect) in [
        (json!([]), "recv_any needs at least one channel"),
        (json!(["a", "a"]), "recv_any lists channel 'a' twice"),
        (json!(["a", "nope"]), "unknown channel 'nope'"),
    ] {
        let w = custom(
            json!([{"name": "bad", "program": [{"op": "recv_any", "chans": chans}]}]),
            json!([{"name": "a"}]),
        );
        let e = schedsim_core::Sim::new(config(smp(1, 1, KHZ, false), w, "6.12", 0.0))
            .err()
            .expect("rejected");
        assert!(e.contains(expect) && e.contains("task 'bad'"), "{e}");
    }
}

/// CPUs that wake at once and charge no kernel work: times are the programs' own.
fn smp_costless_poll(cores: usize) -> serde_json::Value {
    let mut m = smp(cores, 1, KHZ, false);
    m["idle_states"]["default"] = json!([
        {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true}
    ]);
    m
}

#[test]
fn send_polled_with_a_shorter_list_than_recv_any_is_an_error() {
    // the request on position 2 is served; the reply list has only one channel for it
    let w = custom(
        json!([
            {"name": "c", "program": [{"op": "send", "chan": "q2"}]},
            {"name": "srv", "program": [
                {"op": "recv_any", "chans": ["q1", "q2"]},
                {"op": "send_polled", "chans": ["r1"]}]}
        ]),
        json!([{"name": "q1"}, {"name": "q2"}, {"name": "r1"}]),
    );
    let mut sim = schedsim_core::Sim::new(config(smp(2, 1, KHZ, false), w, "6.12", 0.0)).unwrap();
    let e = sim.run().unwrap_err();
    assert!(
        e.contains("send_polled lists 1 channels") && e.contains("position 2"),
        "{e}"
    );
}

/// Tasks that commit through a group-commit log at the given start times (ns), one per CPU,
/// each flush taking 1 ms; returns the run.
fn group_commits(starts: &[u64]) -> schedsim_core::Sim {
    let tasks: Vec<_> = starts
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            json!({"name": format!("c{i}"), "start_cpu": i, "program": [
            {"op": "sleep", "ns": at}, {"op": "mark", "name": "commit"},
            {"op": "group_commit", "log": "wal", "ns": 1_000_000},
            {"op": "mark", "name": "durable"}, {"op": "exit"}]})
        })
        .collect();
    // only shallow idle states: wakeups cost microseconds, not C6 exits
    let mut m = smp(starts.len(), 1, KHZ, false);
    m["idle_states"]["default"] = json!([
        {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true},
        {"name": "C1", "exit_latency_us": 2, "target_residency_us": 2, "power_mw": 500.0, "turbo_active": true}]);
    run(config(m, custom(json!(tasks), json!([])), "6.12", 0.0))
}

/// When each task's record became durable, by task, and its iowait.
fn durable_at(sim: &schedsim_core::Sim) -> Vec<(u64, u64)> {
    let id = sim.compiled.marks.iter().position(|m| m == "durable");
    let mut out = vec![(0, 0); sim.tasks.len()];
    for &(t, task, m) in &sim.marks {
        if Some(m) == id {
            out[task].0 = t;
        }
    }
    for (i, t) in sim.tasks.iter().enumerate() {
        out[i].1 = t.stats.iowait_ns;
    }
    out
}

#[test]
fn group_commit_flushes_once_for_everyone_who_arrived_during_the_previous_flush() {
    // c0 commits at 0 and flushes [0, 1 ms]. c1..c3 commit at 0.2, 0.4, 0.6 ms, during that
    // flush: their records are not in it. When it ends, c1 (the first of them) flushes for all
    // three [1, 2 ms]; c2 and c3 never wait in iowait. Two flushes, four commits.
    let sim = group_commits(&[0, 200_000, 400_000, 600_000]);
    let lg = &sim.sync.logs[0];
    assert_eq!((lg.flushes, lg.commits), (2, 4));
    let d = durable_at(&sim);
    // each wakeup out of C1 adds a few microseconds
    let near = |t: u64, want: u64| (want..want + 20_000).contains(&t);
    assert!(near(d[0].0, 1_000_000), "{d:?}");
    for w in &d[1..] {
        assert!(near(w.0, 2_000_000), "{d:?}");
    }
    assert_eq!(
        d[0].1, 1_000_000,
        "the first flusher waits its flush in iowait"
    );
    assert_eq!(
        d[1].1, 1_000_000,
        "the second flusher waits its flush in iowait"
    );
    assert_eq!(
        (d[2].1, d[3].1),
        (0, 0),
        "covered commits sleep without iowait"
    );
}

#[test]
fn group_commit_without_overlap_flushes_once_per_commit() {
    // commits 2 ms apart never meet: three flushes of one commit each
    let sim = group_commits(&[0, 2_000_000, 4_000_000]);
    let lg = &sim.sync.logs[0];
    assert_eq!((lg.flushes, lg.commits), (3, 3));
    for (i, (at, io)) in durable_at(&sim).into_iter().enumerate() {
        let want = 2_000_000 * i as u64 + 1_000_000;
        assert!((want..want + 20_000).contains(&at), "c{i} durable at {at}");
        assert_eq!(io, 1_000_000);
    }
}

/// Two tasks that each hold a row of a `rows`-row table for 1 ms of work; returns when the
/// later one finishes.
fn two_row_lockers(rows: u32) -> u64 {
    let t = |i: usize| {
        json!({"name": format!("t{i}"), "start_cpu": i, "program": [
        {"op": "lock_row", "table": "branches", "rows": rows},
        {"op": "run", "cycles": cycles(1.0, KHZ)},
        {"op": "unlock_rows", "table": "branches"}, {"op": "mark", "name": "done"}]})
    };
    let sim = run(config(
        smp(2, 1, KHZ, false),
        custom(json!([t(0), t(1)]), json!([])),
        "6.12",
        0.0,
    ));
    assert!(sim.sync.tables[0].held.is_empty(), "every row released");
    sim.marks.iter().map(|m| m.0).max().unwrap()
}

#[test]
fn a_row_lock_serialises_only_transactions_on_the_same_row() {
    // one row: the second transaction waits for the first (2 ms); 10^9 rows: they (almost
    // surely, and for this seed) pick different rows and run side by side (1 ms)
    let one = two_row_lockers(1);
    assert!((2_000_000..2_200_000).contains(&one), "{one}");
    let many = two_row_lockers(1_000_000_000);
    assert!((1_000_000..1_100_000).contains(&many), "{many}");
}

#[test]
fn lock_row_needs_rows() {
    let err = schedsim_core::Sim::new(config(
        smp(1, 1, KHZ, false),
        custom(
            json!([{"name": "t", "program": [{"op": "lock_row", "table": "x", "rows": 0}]}]),
            json!([]),
        ),
        "6.12",
        1.0,
    ))
    .err()
    .expect("rows = 0 is refused");
    assert!(
        err.contains("lock_row") && err.contains("rows >= 1"),
        "{err}"
    );
}

/// A journal thread that commits in 1 ms of device time, and one fsync per client at the
/// given times (ns), one client per CPU; idle CPUs sleep in a 100 µs-exit state.
fn journal_fsyncs(starts: &[u64]) -> schedsim_core::Sim {
    let mut tasks: Vec<_> = starts
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            json!({"name": format!("c{i}"), "start_cpu": i + 1, "program": [
            {"op": "sleep", "ns": at}, {"op": "journal_commit", "journal": "j"},
            {"op": "mark", "name": "durable"}, {"op": "exit"}]})
        })
        .collect();
    tasks.push(
        json!({"name": "jbd2", "start_cpu": 0, "program": [{"op": "loop", "count": 3,
        "body": [{"op": "journal_wait", "journal": "j"}, {"op": "io", "ns": 1_000_000},
                 {"op": "journal_done", "journal": "j"}]}]}),
    );
    let mut m = smp(starts.len() + 1, 1, KHZ, false);
    m["idle_states"]["default"] = json!([
        {"name": "C1", "exit_latency_us": 2, "target_residency_us": 2, "power_mw": 500.0, "turbo_active": true},
        {"name": "C6", "exit_latency_us": 100, "target_residency_us": 200, "power_mw": 10.0}]);
    run(config(m, custom(json!(tasks), json!([])), "6.12", 5.0))
}

#[test]
fn a_journal_commit_serves_every_fsync_of_its_transaction_and_wakes_them_together() {
    // c0 asks at 0: the thread commits transaction 1, holding c0's change, and writes it for
    // 1 ms; with the thread's two exits from C6 (the request, the write's completion) and
    // c0's own, c0 continues at 1.3 ms. c1..c3 ask at 0.2-0.6 ms, during that commit: their
    // changes are in transaction 2, whose commit starts as soon as the first ends and covers
    // all three (2.3 ms). Its end wakes the three at once: each pays its own CPU's exit, none
    // waits for another (a hand-over chain would space them 100 µs apart). As the kernel's
    // wake_up on j_wait_done_commit, the first commit's end wakes them too, and they sleep
    // again: two wakeups each, one for c0 (plus every client's wakeup from its first sleep).
    let sim = journal_fsyncs(&[0, 200_000, 400_000, 600_000]);
    let jr = &sim.sync.journals[0];
    assert_eq!((jr.commits, jr.fsyncs, jr.committed), (2, 4, 2));
    let id = sim.compiled.marks.iter().position(|m| m == "durable");
    let mut at = vec![0u64; 4];
    for &(t, task, m) in &sim.marks {
        if Some(m) == id {
            at[task] = t;
        }
    }
    assert!((1_300_000..1_320_000).contains(&at[0]), "{at:?}");
    let (lo, hi) = (at[1..].iter().min().unwrap(), at[1..].iter().max().unwrap());
    assert!((2_300_000..2_320_000).contains(lo), "{at:?}");
    assert!(
        hi - lo < 20_000,
        "woken together, not one after another: {at:?}"
    );
    let wakeups: Vec<u64> = sim.tasks[..4].iter().map(|t| t.stats.nr_wakeups).collect();
    assert_eq!(wakeups, [2, 3, 3, 3]);
}

#[test]
fn a_journal_thread_that_waits_again_before_its_commit_is_done_is_an_error() {
    let w = custom(
        json!([{"name": "c", "program": [{"op": "journal_commit", "journal": "j"}]},
               {"name": "jbd2", "delay_ns": 1_000_000, "program": [
                   {"op": "journal_wait", "journal": "j"}, {"op": "journal_wait", "journal": "j"}]}]),
        json!([]),
    );
    let mut sim = schedsim_core::Sim::new(config(smp(2, 1, KHZ, false), w, "6.12", 5.0)).unwrap();
    let e = sim.run().unwrap_err();
    assert!(
        e.contains("task 'jbd2'") && e.contains("journal_done ends it"),
        "{e}"
    );
}

#[test]
fn each_cgroup_copy_of_a_workload_has_its_own_journal() {
    // two clients and a thread, replicated into two groups: each group's journal commits
    // once for its own two fsyncs
    let w = json!({"name": "custom", "cgroups": ["a", "b"], "custom": {"channels": [], "tasks": [
        {"name": "c", "instances": 2, "program": [{"op": "journal_commit", "journal": "j"}]},
        {"name": "jbd2", "delay_ns": 1_000_000, "program": [{"op": "loop", "count": -1, "body": [
            {"op": "journal_wait", "journal": "j"}, {"op": "io", "ns": 100_000},
            {"op": "journal_done", "journal": "j"}]}]}]}});
    let cfg = json!({"machine": smp(6, 1, KHZ, false), "kernel": {"version": "6.12"},
        "workload": w, "seed": 7, "duration_ns": 5_000_000_u64,
        "cgroups": [{"path": "a"}, {"path": "b"}]});
    let sim = run(serde_json::from_value(cfg).expect("valid config"));
    let names: Vec<&str> = sim.compiled.journals.iter().map(|s| s.as_str()).collect();
    assert_eq!(names, ["j@a", "j@b"]);
    for jr in &sim.sync.journals {
        assert_eq!((jr.commits, jr.fsyncs), (1, 2));
    }
}

#[test]
fn journal_done_needs_a_commit_under_way() {
    let w = custom(
        json!([{"name": "bad", "program": [{"op": "journal_done", "journal": "j"}]}]),
        json!([]),
    );
    let mut sim = schedsim_core::Sim::new(config(smp(1, 1, KHZ, false), w, "6.12", 0.0)).unwrap();
    let e = sim.run().unwrap_err();
    assert!(
        e.contains("journal 'j'") && e.contains("journal_wait"),
        "{e}"
    );
}

/// Two pinned CPUs at 1 GHz (ns = cycles) with kernel costs: a 6,000-cycle sleep-and-wake
/// switch of which the sleeping task runs 3,000 itself on its way to sleep, a 4,000-cycle
/// wakeup paid by the waker before its IPI leaves; POLL only, so an idle CPU leaves idle at
/// once.
fn costed_pair(tasks: serde_json::Value) -> schedsim_core::Sim {
    costed_pair_out(tasks, 3000.0)
}

/// As `costed_pair`, with `out` cycles of the switch run by the sleeping task.
fn costed_pair_out(tasks: serde_json::Value, out: f64) -> schedsim_core::Sim {
    let mut m = smp(2, 1, KHZ, true);
    m["core_types"][0]["kernel_cycles"]["context_switch_out"] = json!(out);
    m["idle_states"]["default"] = json!([
        {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true}
    ]);
    run(config(m, custom(tasks, json!([])), "5.2", 0.0))
}

fn pinned(name: &str, cpu: usize, body: serde_json::Value) -> serde_json::Value {
    let mut program = vec![json!({"op": "set_affinity", "cpus": [cpu]})];
    program.extend(body.as_array().unwrap().iter().cloned());
    json!({"name": name, "start_cpu": cpu, "program": program})
}

#[test]
fn cond_wait_pays_the_wakeup_of_the_mutexs_next_owner_before_it_sleeps() {
    // a holds m, works 10,000 and waits on c, which releases m to b (asleep in lock since
    // ~1,000). a pays b's 4,000-cycle wakeup and its own 3,000 way to sleep; b's CPU starts
    // when the IPI leaves, 4,000 after "a_waits", and b pays the other 3,000 of the switch:
    // b holds m at a_waits + 7,000 (a_waits + 10,000 if b slept in lock without its way to
    // sleep). b works 5,000 and signals: its 4,000 wakeup is paid before the IPI, then a pays
    // its 3,000 and retakes m, which b released right after that wakeup: a is back at
    // b_signals + 7,000 (+ 11,000 if a's wakeup of b were still owed).
    let a = pinned(
        "a",
        0,
        json!([
            {"op": "lock", "mutex": "m"}, {"op": "run", "cycles": 10_000.0},
            {"op": "mark", "name": "a_waits"}, {"op": "cond_wait", "cond": "c", "mutex": "m"},
            {"op": "mark", "name": "a_back"}, {"op": "unlock", "mutex": "m"}]),
    );
    let b = pinned(
        "b",
        1,
        json!([
            {"op": "run", "cycles": 1_000.0}, {"op": "lock", "mutex": "m"},
            {"op": "mark", "name": "b_holds"}, {"op": "run", "cycles": 5_000.0},
            {"op": "mark", "name": "b_signals"}, {"op": "signal", "cond": "c"},
            {"op": "unlock", "mutex": "m"}]),
    );
    let sim = costed_pair(json!([a, b]));
    let at = |name: &str| mark_time(&sim, name)[0] as i64;
    assert_eq!(at("b_holds") - at("a_waits"), 7_000);
    assert_eq!(at("a_back") - at("b_signals"), 7_000);
    assert_eq!(sim.live_tasks, 0);
}

#[test]
fn a_signal_on_the_way_to_sleep_is_not_lost() {
    // Here the sleeping task runs 5,000 of the 6,000-cycle switch itself. b is asleep in lock;
    // a's cond_wait releases m to b and a starts its 9,000 cycles of wakeup (4,000) and way to
    // sleep (5,000). b's CPU starts when the IPI leaves (+4,000), b runs the other 1,000 of
    // its switch and signals at +5,000, 4,000 before a gets to sleep: a takes the signal
    // where it is and never sleeps.
    let a = pinned(
        "a",
        0,
        json!([
            {"op": "lock", "mutex": "m"}, {"op": "run", "cycles": 10_000.0},
            {"op": "cond_wait", "cond": "c", "mutex": "m"},
            {"op": "mark", "name": "a_back"}, {"op": "unlock", "mutex": "m"}]),
    );
    let b = pinned(
        "b",
        1,
        json!([
            {"op": "run", "cycles": 1_000.0}, {"op": "lock", "mutex": "m"},
            {"op": "signal", "cond": "c"}, {"op": "unlock", "mutex": "m"}]),
    );
    let sim = costed_pair_out(json!([a, b]), 5000.0);
    assert_eq!(mark_time(&sim, "a_back").len(), 1);
    assert_eq!(sim.tasks[0].stats.nr_wakeups, 0, "a never slept");
    assert_eq!(sim.live_tasks, 0);
}

#[test]
fn barrier_and_suspend_sleepers_pay_their_way_to_sleep_before_they_sleep() {
    // The sleeper arrives first and pays its 3,000 way to sleep before it sleeps; the other
    // works 10,000, releases it and pays the 4,000 wakeup before the IPI; the sleeper then
    // pays the other 3,000 of the switch: it goes on at 17,000 after the releaser's start of
    // work (20,000 if it had slept without its way to sleep).
    for (sleep_op, release_op) in [
        (
            json!({"op": "barrier", "name": "b"}),
            json!({"op": "barrier", "name": "b"}),
        ),
        (
            json!({"op": "suspend"}),
            json!({"op": "resume", "task": "s"}),
        ),
    ] {
        let s = pinned("s", 1, json!([sleep_op, {"op": "mark", "name": "s_on"}]));
        let r = pinned(
            "r",
            0,
            json!([{"op": "mark", "name": "r_starts"}, {"op": "run", "cycles": 10_000.0},
                   release_op]),
        );
        let sim = costed_pair(json!([s, r]));
        let at = |name: &str| mark_time(&sim, name)[0] as i64;
        assert_eq!(at("s_on") - at("r_starts"), 17_000, "{sleep_op}");
        assert_eq!(sim.tasks[0].stats.nr_wakeups, 1, "{sleep_op}: s slept once");
    }
}

#[test]
fn a_row_lock_waiter_pays_its_way_to_sleep_before_it_sleeps() {
    // One row: h locks it and works 10,000; w asks at ~1,000, pays its 3,000 way to sleep and
    // sleeps; h's unlock_rows pays w's 4,000 wakeup before the IPI, and w pays the other 3,000
    // of the switch: w holds the row 7,000 after h's release (10,000 if it had slept without
    // its way to sleep).
    let h = pinned(
        "h",
        0,
        json!([{"op": "lock_row", "table": "t", "rows": 1}, {"op": "run", "cycles": 10_000.0},
               {"op": "mark", "name": "h_releases"}, {"op": "unlock_rows", "table": "t"}]),
    );
    let w = pinned(
        "w",
        1,
        json!([{"op": "run", "cycles": 1_000.0}, {"op": "lock_row", "table": "t", "rows": 1},
               {"op": "mark", "name": "w_holds"}, {"op": "unlock_rows", "table": "t"}]),
    );
    let sim = costed_pair(json!([h, w]));
    let at = |name: &str| mark_time(&sim, name)[0] as i64;
    assert_eq!(at("w_holds") - at("h_releases"), 7_000);
    assert!(sim.sync.tables[0].held.is_empty(), "every row released");
}

#[test]
fn a_group_committer_that_queues_behind_a_flush_pays_its_way_to_sleep_first() {
    // a flushes at once (100 us of IO): it starts the write and pays its 3,000 way to sleep
    // while the write runs. b works 10,000 and commits during that flush, so it queues: it
    // pays its 3,000 way to sleep while the flush runs. At the flush's end a is back on its CPU
    // (the IO completion's 4,000 wakeup, then the other 3,000 of its switch) and ends the
    // flush at E; it pays b's 4,000 wakeup before its IPI and its mark (a_done = E + 4,000).
    // b pays the other 3,000 of its switch, flushes as the next leader (100,000, its way to
    // sleep inside it), and comes back the way a did (4,000 + 3,000): durable at E + 114,000,
    // 110,000 after a_done (116,000 if neither paid its way to sleep before sleeping).
    let a = pinned(
        "a",
        0,
        json!([{"op": "group_commit", "log": "l", "ns": 100_000},
               {"op": "mark", "name": "a_done"}]),
    );
    let b = pinned(
        "b",
        1,
        json!([{"op": "run", "cycles": 10_000.0},
               {"op": "group_commit", "log": "l", "ns": 100_000},
               {"op": "mark", "name": "b_done"}]),
    );
    let sim = costed_pair(json!([a, b]));
    let at = |name: &str| mark_time(&sim, name)[0] as i64;
    assert_eq!(at("a_done"), 6_000 + 100_000 + 4_000 + 3_000 + 4_000);
    assert_eq!(at("b_done") - at("a_done"), 110_000);
    assert_eq!(sim.sync.logs[0].flushes, 2);
}

#[test]
fn a_barrier_arrival_counts_before_the_way_to_sleep() {
    // Two parties. a arrives first (its arrival counts at once) and starts its 3,000 way to
    // sleep; b arrives 1,000 later, completes the round and goes on; a, released on its way,
    // goes on too without sleeping, when its way ends: a_past - b_past = 2,000. (Counting a's
    // arrival only after its way would make b wait for a as well.)
    let a = pinned(
        "a",
        0,
        json!([{"op": "barrier", "name": "b"}, {"op": "mark", "name": "a_past"}]),
    );
    let b = pinned(
        "b",
        1,
        json!([{"op": "run", "cycles": 1_000.0}, {"op": "barrier", "name": "b"},
               {"op": "mark", "name": "b_past"}]),
    );
    let sim = costed_pair(json!([a, b]));
    let at = |name: &str| mark_time(&sim, name)[0] as i64;
    assert_eq!(at("a_past") - at("b_past"), 2_000);
    assert_eq!(sim.tasks[0].stats.nr_wakeups, 0, "a never slept");
    assert_eq!(sim.tasks[1].stats.nr_wakeups, 0, "b never slept");
}

#[test]
fn mutex_waiters_keep_their_fifo_order_while_on_their_way_to_sleep() {
    // Every task starts 6,000 in (its first switch). h holds m from 6,000 and releases it at
    // 7,500. w1 asks at 7,000 and queues, then starts its 3,000 way to sleep; h's unlock
    // hands m to w1 on its way. w2 asks at 8,000 and finds m w1's: w1 holds m first. (Had w1
    // queued only after its way, at 10,000, w2 would have found m free at 8,000.)
    let h = pinned(
        "h",
        0,
        json!([{"op": "lock", "mutex": "m"}, {"op": "run", "cycles": 1_500.0},
               {"op": "unlock", "mutex": "m"}]),
    );
    let w = |name: &str, cpu: usize, lead: f64| {
        let mark = format!("{name}_holds");
        pinned(
            name,
            cpu,
            json!([{"op": "run", "cycles": lead}, {"op": "lock", "mutex": "m"},
                   {"op": "mark", "name": mark}, {"op": "run", "cycles": 1_000.0},
                   {"op": "unlock", "mutex": "m"}]),
        )
    };
    let mut m = smp(3, 1, KHZ, true);
    m["core_types"][0]["kernel_cycles"]["context_switch_out"] = json!(3000.0);
    m["idle_states"]["default"] = json!([
        {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true}
    ]);
    let tasks = json!([h, w("w1", 1, 1_000.0), w("w2", 2, 2_000.0)]);
    let sim = run(config(m, custom(tasks, json!([])), "5.2", 0.0));
    let (w1, w2) = (
        mark_time(&sim, "w1_holds")[0],
        mark_time(&sim, "w2_holds")[0],
    );
    assert!(w1 < w2, "w1 at {w1}, w2 at {w2}");
}

#[test]
fn a_committer_that_flushes_after_its_way_to_sleep_is_not_charged_twice() {
    // a flushes for 5,000 ns from 6,000, pays its 3,000 way to sleep during the write, sleeps
    // until 11,000 and is back (4,000 of interrupt, the other 3,000 of its switch) to end the
    // flush at 18,000. b commits at 16,500, while the flush is still under way, and starts its
    // 3,000 way to sleep; when it gets there (19,500) the flush is over, so b flushes itself
    // and sleeps in IO for 1,000 without a second way to sleep. Back at 20,500 it pays the
    // interrupt (4,000) and the other 3,000 of its switch:
    // b_done - b_commit = 3,000 + 1,000 + 4,000 + 3,000 = 11,000 (14,000 if its way to sleep
    // were charged again).
    let a = pinned(
        "a",
        0,
        json!([{"op": "group_commit", "log": "l", "ns": 5_000}]),
    );
    let b = pinned(
        "b",
        1,
        json!([{"op": "run", "cycles": 10_500.0}, {"op": "mark", "name": "b_commit"},
               {"op": "group_commit", "log": "l", "ns": 1_000},
               {"op": "mark", "name": "b_done"}]),
    );
    let sim = costed_pair(json!([a, b]));
    let at = |name: &str| mark_time(&sim, name)[0] as i64;
    assert_eq!(at("b_commit"), 16_500);
    assert_eq!(at("b_done") - at("b_commit"), 11_000);
    assert_eq!(sim.sync.logs[0].flushes, 2);
}

#[test]
fn a_timed_sleep_runs_its_way_to_sleep_inside_the_sleep() {
    // The expiry is fixed when the op starts (nanosleep arms its hrtimer, a read submits its
    // IO, before `schedule()`), and the 3,000 way to sleep runs inside the sleep. Sleeping
    // 100,000 from `before`, the task is back at before + 100,000 + 4,000 (the timer's wakeup
    // on its idle CPU) + 3,000 (the other half of its switch): 107,000 after it (110,000 if
    // the whole switch were paid after the sleep). A 1,000 sleep has expired when the way
    // ends: the task goes on 3,000 after `before`, without sleeping.
    for op in ["sleep", "io"] {
        for (ns, back, sleeps) in [(100_000, 107_000, 1), (1_000, 3_000, 0)] {
            let a = pinned(
                "a",
                0,
                json!([{"op": "mark", "name": "before"}, {"op": op, "ns": ns},
                       {"op": "mark", "name": "after"}]),
            );
            let sim = costed_pair(json!([a]));
            let at = |name: &str| mark_time(&sim, name)[0] as i64;
            assert_eq!(at("after") - at("before"), back, "{op} {ns}");
            assert_eq!(sim.tasks[0].stats.nr_wakeups, sleeps, "{op} {ns}");
        }
    }
}

#[test]
fn a_periodic_timer_keeps_its_expiry_while_the_task_runs_its_way_to_sleep() {
    // rt-app's `timer` (the task's own) and a named clock: the first expiry is at 100,000
    // (the task's start and the clock's origin are 0). The task, on its CPU from 6,000, runs
    // its 3,000 way to sleep, sleeps until the expiry and is back 4,000 + 3,000 after it.
    for op in [
        json!({"op": "timer", "period_ns": 100_000}),
        json!({"op": "clock", "name": "c", "period_ns": 100_000}),
    ] {
        let a = pinned(
            "a",
            0,
            json!([{"op": "mark", "name": "before"}, op, {"op": "mark", "name": "after"}]),
        );
        let sim = costed_pair(json!([a]));
        let at = |name: &str| mark_time(&sim, name)[0] as i64;
        assert_eq!(at("before"), 6_000, "{op}");
        assert_eq!(at("after"), 107_000, "{op}");
    }
}

#[test]
fn an_io_completes_on_the_cpu_that_submitted_it_even_if_the_task_moved_on_its_way_to_sleep() {
    // A 3 ms way to sleep (inflated so that load balancing moves the task during it): a
    // submits a 20 ms IO on CPU 0, which it shares with c (pinned there); on its way to sleep
    // it is moved to the idle CPU 1 and sleeps there. The completion still fires on CPU 0,
    // where the IO was submitted, and wakes a from there.
    let mut m = smp(2, 1, KHZ, true);
    m["core_types"][0]["kernel_cycles"]["context_switch_out"] = json!(3_000_000.0);
    m["core_types"][0]["kernel_cycles"]["context_switch"] = json!(3_000_000.0);
    let a = json!({"name": "a", "start_cpu": 0, "program": [
        {"op": "run", "cycles": 100_000.0}, {"op": "io", "ns": 20_000_000},
        {"op": "mark", "name": "after"}]});
    let c = pinned("c", 0, json!([{"op": "run", "cycles": 50_000_000.0}]));
    let b = pinned(
        "b",
        1,
        json!([{"op": "run", "cycles": 2_000_000.0}, {"op": "sleep", "ns": 100_000_000}]),
    );
    let mut cfg = config(m, custom(json!([a, c, b]), json!([])), "6.12", 0.0);
    cfg.trace = true;
    let sim = run(cfg);
    let text = sim.trace.as_ref().unwrap().to_text(2);
    let slept_on = text
        .lines()
        .filter(|l| l.contains("sched_switch: prev_comm=a ") && l.contains("prev_state=D"))
        .map(|l| l.split('[').nth(1).unwrap()[..3].to_string())
        .collect::<Vec<_>>();
    let woken_from = text
        .lines()
        .filter(|l| l.contains("sched_waking: comm=a "))
        .map(|l| l.split('[').nth(1).unwrap()[..3].to_string())
        .collect::<Vec<_>>();
    assert_eq!(slept_on, ["001"], "a moved to CPU 1 on its way to sleep");
    assert_eq!(
        woken_from,
        ["000"],
        "the completion fires where the IO was submitted"
    );
    assert_eq!(mark_time(&sim, "after").len(), 1);
}

/// `cpus` CPUs at 1 GHz without kernel costs, waking from idle at once (POLL only).
fn bare_smp(cpus: usize) -> serde_json::Value {
    let mut m = smp(cpus, 1, KHZ, false);
    m["idle_states"]["default"] = json!([
        {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true}
    ]);
    m
}

/// `name` on `cpu` sends `sends` messages on channel `chan`, marking `mark` after each.
fn sender(name: &str, cpu: usize, chan: &str, sends: i64, mark: &str) -> serde_json::Value {
    pinned(
        name,
        cpu,
        json!([{"op": "loop", "count": sends, "body": [
            {"op": "send", "chan": chan}, {"op": "mark", "name": mark}]}]),
    )
}

/// `r` on CPU 1 reads `reads` messages of `chan` from 100,000 ns, one per 1,000 ns of work.
fn slow_reader(chan: &str, reads: i64) -> serde_json::Value {
    pinned(
        "r",
        1,
        json!([{"op": "run", "cycles": 100_000.0}, {"op": "loop", "count": reads, "body": [
            {"op": "recv", "chan": chan}, {"op": "run", "cycles": 1_000.0}]}]),
    )
}

#[test]
fn blocked_senders_wake_at_the_channels_write_space() {
    // w sends 10 messages into a 4-message channel; r starts reading at 100,000 ns, one
    // message per 1,000 ns of work (no kernel costs). Without a write space each read from the
    // full channel wakes w for one more message: 6 wakeups. With write_space = 1 (an AF_UNIX
    // socket's quarter of sk_sndbuf) w sleeps until a read leaves one message: reads at
    // 100,000, 101,000 and 102,000 leave 3, 2, 1, so w sends the 5th-7th at 102,000, and the
    // 8th-10th at 105,000: 2 wakeups.
    let w = sender("w", 0, "c", 10, "sent");
    let r = slow_reader("c", 10);
    let m = bare_smp(2);
    for (write_space, wakeups) in [(json!(null), 6), (json!(1), 2)] {
        let chan = json!([{"name": "c", "capacity": 4, "write_space": write_space}]);
        let sim = run(config(m.clone(), custom(json!([w, r]), chan), "6.12", 0.0));
        assert_eq!(sim.tasks[0].stats.nr_wakeups, wakeups, "{write_space}");
        let sent = mark_time(&sim, "sent");
        assert_eq!(sent.len(), 10);
        if write_space == json!(1) {
            let start = sent[0];
            assert!(sent[..4].iter().all(|&t| t == start), "{sent:?}");
            assert_eq!(
                &sent[4..],
                &[102_000, 102_000, 102_000, 105_000, 105_000, 105_000]
            );
        }
    }
}

#[test]
fn a_write_space_must_be_below_the_capacity() {
    let w = pinned("w", 0, json!([{"op": "send", "chan": "c"}]));
    let chan = json!([{"name": "c", "capacity": 4, "write_space": 4}]);
    let cfg = config(smp(1, 1, KHZ, false), custom(json!([w]), chan), "6.12", 0.0);
    let Err(err) = schedsim_core::Sim::new(cfg) else {
        panic!("expected an error");
    };
    assert!(
        err.contains("channel 'c'") && err.contains("write_space must be below its capacity (4)"),
        "{err}"
    );
}

/// w sends and r reads `messages` messages through a 4-message pipe of `page`-message pages.
fn pipe_pair(messages: i64, page: u32, kernel: &str) -> schedsim_core::Sim {
    let tasks = json!([
        sender("w", 0, "p", messages, "sent"),
        slow_reader("p", messages)
    ]);
    let chan = json!([{"name": "p", "capacity": 4, "pipe_page": page}]);
    run(config(bare_smp(2), custom(tasks, chan), kernel, 0.0))
}

#[test]
fn a_pipes_writers_wait_for_a_free_page_and_wake_as_the_kernel_version_wakes_them() {
    // A pipe of 2 pages of 2 messages (capacity 4). w sends 10 messages; r reads one per
    // 1,000 ns from 100,000 (no kernel costs). w fills both pages and blocks on the 5th. A
    // read that leaves its page partly full frees nothing, so w can write again only after
    // every second read: 5-6 at 101,000, 7-8 at 103,000, 9-10 at 105,000, in every version.
    // Before v5.5 the freed page wakes w: 3 wakeups. From v5.5 every read that finds both
    // pages in use wakes w, which goes back to sleep unless a page was freed: 6 wakeups.
    for (kernel, wakeups) in [("5.2", 3), ("6.12", 6)] {
        let sim = pipe_pair(10, 2, kernel);
        assert_eq!(sim.tasks[0].stats.nr_wakeups, wakeups, "{kernel}");
        let sent = mark_time(&sim, "sent");
        assert!(
            sent[..4].iter().all(|&t| t == sent[0]),
            "{kernel}: {sent:?}"
        );
        assert_eq!(
            &sent[4..],
            &[101_000, 101_000, 103_000, 103_000, 105_000, 105_000],
            "{kernel}"
        );
    }
}

#[test]
fn a_pipe_page_must_divide_the_capacity() {
    let w = pinned("w", 0, json!([{"op": "send", "chan": "p"}]));
    for bad in [
        json!({"name": "p", "capacity": 5, "pipe_page": 2}),
        json!({"name": "p", "capacity": 4, "pipe_page": 0}),
        json!({"name": "p", "capacity": 4, "pipe_page": 2, "write_space": 1}),
    ] {
        let cfg = config(
            smp(1, 1, KHZ, false),
            custom(json!([w]), json!([bad])),
            "6.12",
            0.0,
        );
        let Err(err) = schedsim_core::Sim::new(cfg) else {
            panic!("expected an error for {bad}");
        };
        assert!(
            err.contains("channel 'p': pipe_page must be >= 1 and divide the capacity"),
            "{err}"
        );
    }
}

#[test]
fn a_read_makes_no_room_in_a_pipe_page_until_the_page_is_empty() {
    // One page of 4 messages. w fills it and blocks on its 5th send; r reads one message per
    // 1,000 ns from 100,000. A write only appends after the last message written, so the
    // reads at 100,000-102,000 make no room; the 4th empties the page and frees it, and w
    // sends its 5th and 6th at 103,000. On 6.12 each of the 4 reads finds the pipe full and
    // wakes w (3 in vain), on 5.2 only the freed page does.
    for (kernel, wakeups) in [("5.2", 1), ("6.12", 4)] {
        let sim = pipe_pair(6, 4, kernel);
        assert_eq!(sim.tasks[0].stats.nr_wakeups, wakeups, "{kernel}");
        assert_eq!(
            &mark_time(&sim, "sent")[4..],
            &[103_000, 103_000],
            "{kernel}"
        );
    }
}

#[test]
fn a_pipe_writer_that_has_waited_needs_a_free_page() {
    // Two pages of 2 messages. w1 fills both and blocks on its 5th send; w2 blocks on its
    // send at 50,000. r reads one message per 1,000 ns from 100,000. pipe_write appends to the
    // last page only on entry: after waiting, a writer needs a whole free page. The read at
    // 101,000 frees one page, which one writer takes (the other cannot append to it); the
    // read at 103,000 frees the next, for the other: one sends at 101,000, the other at
    // 103,000, whichever kernel version wakes them.
    let w1 = sender("w1", 0, "p", 5, "w1_sent");
    let w2 = pinned(
        "w2",
        2,
        json!([{"op": "run", "cycles": 50_000.0}, {"op": "send", "chan": "p"},
               {"op": "mark", "name": "w2_sent"}]),
    );
    let r = slow_reader("p", 6);
    let m = bare_smp(3);
    let chan = json!([{"name": "p", "capacity": 4, "pipe_page": 2}]);
    for kernel in ["5.2", "6.12"] {
        let tasks = json!([w1.clone(), w2.clone(), r.clone()]);
        let sim = run(config(m.clone(), custom(tasks, chan.clone()), kernel, 0.0));
        let mut last = [mark_time(&sim, "w1_sent")[4], mark_time(&sim, "w2_sent")[0]];
        last.sort_unstable();
        assert_eq!(last, [101_000, 103_000], "{kernel}");
    }
}
