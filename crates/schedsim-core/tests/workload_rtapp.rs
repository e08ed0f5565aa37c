//! rt-app JSON files (`rt-app:PATH`): the shipped files run or fail with "unsupported" and the
//! name; the tolerant parser (comments, trailing commas, duplicate keys in order, errors with
//! line and key); `run` is work and `runtime` wall time; timers, slack and wakeup latency
//! against hand-computed cases; the eb92692b ramp; determinism.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use schedsim_core::config::MachineSpec;
use schedsim_core::hw::topology::Topology;
use schedsim_core::workload::rtapp::{Row, RtApp};
use schedsim_core::workload::spec::OpSpec;
use schedsim_core::workload::GenCtx;
use schedsim_core::{Sim, SimConfig};
use serde_json::{json, Value};

const KHZ: u64 = 2_000_000;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/rt-app")
}

fn all_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![data_dir()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A machine whose only idle state is polling (no exit latency), or POLL plus a C1 with
/// `c1_exit_us` of exit latency.
fn machine(cpus: usize, c1_exit_us: Option<u64>) -> Value {
    let mut m = smp(cpus, 1, KHZ, false);
    let mut states = vec![
        json!({"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true}),
    ];
    if let Some(x) = c1_exit_us {
        states.push(
            json!({"name": "C1", "exit_latency_us": x, "target_residency_us": 2 * x,
                           "power_mw": 100.0}),
        );
    }
    m["idle_states"] = json!({ "default": states });
    m
}

fn workload(path: &Path) -> Value {
    json!({"name": "rt-app", "params": {"path": path.to_str().unwrap()}})
}

/// Write `text` to a temporary rt-app file named `name`.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("schedsim-rtapp-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn cfg(machine: Value, path: &Path, duration_ms: f64) -> SimConfig {
    config(machine, workload(path), "6.12", duration_ms)
}

fn build_err(machine: Value, path: &Path) -> String {
    match Sim::new(cfg(machine, path, 100.0)) {
        Ok(_) => panic!("{} built", path.display()),
        Err(e) => e,
    }
}

/// The model again, to read its rows from a finished run (mark names are deterministic).
fn model(machine: &Value, path: &Path) -> RtApp {
    let spec: MachineSpec = serde_json::from_value(machine.clone()).unwrap();
    let topo = Topology::new(&spec);
    let params: BTreeMap<String, Value> =
        [("path".to_string(), json!(path.to_str().unwrap()))].into();
    let ctx = GenCtx {
        params: &params,
        machine: &spec,
        topo: &topo,
        seed: 1,
    };
    RtApp::new(&ctx).unwrap()
}

fn metrics(sim: &Sim) -> BTreeMap<String, f64> {
    sim.workload.metrics(sim).values
}

/// Ops of a task's program with marks and loops flattened away.
fn flat(ops: &[OpSpec]) -> Vec<String> {
    let mut out = Vec::new();
    for op in ops {
        match op {
            OpSpec::Mark { .. } => {}
            OpSpec::Loop { body, count } => {
                out.push(format!("loop {count}"));
                out.extend(flat(body));
                out.push("end".into());
            }
            OpSpec::Run { .. } => out.push("run".into()),
            OpSpec::RunFor { ns } => out.push(format!("run_for {ns}")),
            OpSpec::Sleep { ns } => out.push(format!("sleep {ns}")),
            OpSpec::Clock {
                name, period_ns, ..
            } => out.push(format!("clock {name} {period_ns}")),
            other => out.push(format!("{other:?}")),
        }
    }
    out
}

#[test]
fn every_shipped_file_runs_or_fails_as_unsupported_with_the_name() {
    // files that use what the core does not model, and the name their error must carry
    let unsupported: BTreeMap<&str, &str> = [
        ("example11.json", "phase-level 'taskgroup'"),
        ("custom-slice.json", "dl-runtime"),
        ("taskset.json", "exec"),
    ]
    .into();
    let files = all_files();
    assert_eq!(files.len(), 27, "{files:?}");
    for f in files {
        let name = f.file_name().unwrap().to_str().unwrap();
        let c = cfg(machine(4, Some(20)), &f, 1000.0);
        match unsupported.get(name) {
            Some(what) => {
                let e = Sim::new(c).err().unwrap_or_else(|| panic!("{name} built"));
                assert!(
                    e.contains("unsupported") && e.contains(what) && e.contains(name),
                    "{name}: {e}"
                );
            }
            None => {
                let mut sim = Sim::new(c).unwrap_or_else(|e| panic!("{name}: {e}"));
                sim.run().unwrap_or_else(|e| panic!("{name}: {e}"));
                check_invariants(&sim);
                let m = metrics(&sim);
                // dvfs.json first sleeps on a 1.2 s timer (run below for longer)
                if name != "dvfs.json" {
                    let busy: u64 = sim.tasks.iter().map(|t| t.stats.cpu_ns).sum();
                    assert!(busy > 0, "{name}: nothing ran");
                    assert!(m["rows"] > 0.0, "{name}: no rt-app log rows");
                }
                eprintln!(
                    "{name}: rows {} run_us_mean {:.1} slack_us_mean {:.1} missed {:.1}%",
                    m["rows"], m["run_us_mean"], m["slack_us_mean"], m["missed_pct"]
                );
            }
        }
    }
}

#[test]
fn the_governor_efficiency_dvfs_file_alternates_a_timer_and_a_long_run() {
    // 10 × (timer 1.2 s on "tick", run 900 ms of work calibrated at 128 ns per loop) on CPU 1
    let p = data_dir().join("cpufreq_governor_efficiency/dvfs.json");
    let sim = run(cfg(machine(2, None), &p, 2200.0));
    let mm = metrics(&sim);
    assert_eq!(mm["task.thread.sleeping.rows"], 1.0);
    assert_eq!(mm["task.thread.running.rows"], 1.0);
    let run_us = (900_000_000u64 / 128) as f64 * 0.128;
    assert!((mm["task.thread.running.run_us_mean"] - run_us).abs() < 0.01);
    assert!(sim.rqs[1].busy_ns > 0 && sim.rqs[0].busy_ns == 0);
    assert_eq!(sim.tasks[0].prio(), 89); // SCHED_FIFO, rt-app's default priority 10
}

#[test]
fn duplicate_keys_keep_their_order_and_comments_and_trailing_commas_parse() {
    let p = temp_file(
        "dup.json",
        r#"{
  /* a C comment */
  "tasks": {
    "t": {
      "loop": 2,
      "run": 1000,     // first run
      "sleep": 2000,
      "run": 3000,
      "runtime1": 500,
      "timer": {"ref": "unique", "period": 10000,},
    },
  },
  "global": {"calibration": 100, "duration": -1,},
}"#,
    );
    let m = machine(1, None);
    let rt = model(&m, &p);
    let prog = &rt.programs().tasks[0].program;
    assert_eq!(
        flat(prog),
        [
            "loop 1",
            "loop 2",
            "run",
            "sleep 2000000",
            "run",
            "run_for 500000",
            "clock unique 10000000",
            "end",
            "end"
        ]
    );
    // and they run in that order: 1 ms of work, 2 ms asleep, 3 ms of work, 0.5 ms, then the
    // timer at 6.5 ms sleeps to 10 ms
    let sim = run(cfg(m.clone(), &p, 0.0));
    let rows = rt.rows(&sim);
    assert_eq!(rows.len(), 2);
    let r = &rows[0];
    assert_eq!(r.c_duration_us, 4500);
    assert!((r.run_ns as f64 - 4.5e6).abs() < 1000.0, "run {}", r.run_ns);
    assert!(
        (r.slack_ns as f64 - 3.5e6).abs() < 1000.0,
        "slack {}",
        r.slack_ns
    );
    assert_eq!(r.period_ns(), 10_000_000);
}

#[test]
fn malformed_files_are_errors_that_name_the_file_line_and_key() {
    let cases: [(&str, &str, &[&str]); 10] = [
        (
            "missing-comma.json",
            "{\n \"tasks\": {\n  \"t\": {\n   \"run\": 1000\n   \"sleep\": 5\n  }\n }\n}",
            &["missing-comma.json", "line 5", "tasks.t.run"],
        ),
        (
            "no-value.json",
            "{\"tasks\": {\"t\": {\n\"run\": }}}",
            &["line 2", "tasks.t.run", "expected a value"],
        ),
        (
            "bad-type.json",
            "{\"tasks\": {\"t\": {\n\"run\": 1000,\n\"priority\": \"high\"}}}",
            &["bad-type.json:3", "tasks.t.priority", "integer"],
        ),
        (
            "unknown-key.json",
            "{\"tasks\": {\"t\": {\"phases\": {\"p\": {\n\"run\": 1,\n\"colour\": 2}}}}}",
            &[":3", "tasks.t.phases.p.colour", "unknown key"],
        ),
        (
            "bad-timer.json",
            "{\"tasks\": {\"t\": {\"run\": 1,\n \"timer\": {\"ref\": \"a\", \"period\": 10, \"mode\": \"sometimes\"}}}}",
            &[":2", "tasks.t.timer.mode", "relative, absolute"],
        ),
        (
            "unterminated.json",
            "{\"tasks\": {\"t\": {\"run\": 1 /* never closed",
            &["line 1", "unterminated comment"],
        ),
        (
            "global.json",
            "{\"tasks\": {\"t\": {\"run\": 1}},\n \"global\": {\n \"duraton\": 5}}",
            &[":3", "global.duraton", "allowed: duration"],
        ),
        // times beyond what 64-bit nanoseconds hold (they used to wrap to a few microseconds)
        (
            "long-sleep.json",
            "{\"tasks\": {\"t\": {\"run\": 1,\n \"sleep\": 18446744073709552}}}",
            &[":2", "tasks.t.sleep", "at most 4611686018427387 us"],
        ),
        (
            "much-work.json",
            "{\"tasks\": {\"t\": {\"run\": 1000000000000, \"sleep\": 10}}}",
            &["much-work.json", "tasks.t.phases.", ".run'", "at most 1e15"],
        ),
        (
            "long-run.json",
            "{\"tasks\": {\"t\": {\"run\": 1}},\n \"global\": {\n \"duration\": 18446744074}}",
            &[":3", "global.duration", "at most 4611686018 s"],
        ),
    ];
    for (name, text, needles) in cases {
        let e = build_err(machine(1, None), &temp_file(name, text));
        for n in needles {
            assert!(e.contains(n), "{name}: '{n}' not in: {e}");
        }
    }
    // the parameter itself
    let mut c = cfg(machine(1, None), Path::new("/no/such/file.json"), 10.0);
    assert!(Sim::new(c.clone())
        .err()
        .unwrap()
        .contains("cannot read '/no/such/file.json'"));
    c.workload = serde_json::from_value(json!({"name": "rt-app", "params": {}})).unwrap();
    assert!(Sim::new(c.clone())
        .err()
        .unwrap()
        .contains("path is required"));
    c.workload = serde_json::from_value(json!({"name": "rt-app", "params": {"path": 3}})).unwrap();
    assert!(Sim::new(c).err().unwrap().contains("expected a string"));
}

#[test]
fn unsupported_properties_and_events_name_themselves() {
    let cases = [
        ("\"policy\": \"SCHED_DEADLINE\"", "SCHED_DEADLINE"),
        ("\"dl-period\": 1000", "dl-period"),
        ("\"nodes_membind\": [0]", "nodes_membind"),
        (
            "\"memrun\": {\"type\": \"read\", \"size\": 64, \"count\": 1}",
            "memrun",
        ),
        ("\"sem_post\": \"s\"", "sem_post"),
    ];
    for (i, (prop, name)) in cases.iter().enumerate() {
        let p = temp_file(
            &format!("unsup{i}.json"),
            &format!("{{\"tasks\": {{\"t\": {{\"run\": 100, {prop}}}}}}}"),
        );
        let e = build_err(machine(2, None), &p);
        assert!(e.contains("unsupported") && e.contains(name), "{prop}: {e}");
    }
    // utilization clamps are read; a value rt-app's kernel would refuse is an error
    for (i, prop) in ["\"util_min\": 2000", "\"util_max\": -2"]
        .iter()
        .enumerate()
    {
        let p = temp_file(
            &format!("clamp{i}.json"),
            &format!("{{\"tasks\": {{\"t\": {{\"run\": 100, {prop}}}}}}}"),
        );
        let e = build_err(machine(2, None), &p);
        assert!(
            e.contains("util_m") && e.contains("or 0..1024"),
            "{prop}: {e}"
        );
    }
    // a phase may restate the task's scheduling but not change it
    let p = temp_file(
        "phase-prio.json",
        r#"{"tasks": {"t": {"priority": -5, "phases": {
             "a": {"priority": -5, "policy": "SCHED_OTHER", "run": 10},
             "b": {"priority": 3, "run": 10}}}}}"#,
    );
    let e = build_err(machine(2, None), &p);
    assert!(
        e.contains("unsupported") && e.contains("tasks.t.phases.b.priority"),
        "{e}"
    );
    let p = temp_file(
        "pi.json",
        r#"{"tasks": {"t": {"run": 10}}, "global": {"pi_enabled": true}}"#,
    );
    let e = build_err(machine(2, None), &p);
    assert!(e.contains("unsupported pi_enabled"), "{e}");
    // util_min -1 means "no change" and is accepted
    let p = temp_file(
        "uclamp-none.json",
        r#"{"tasks": {"t": {"loop": 1, "run": 10, "util_min": -1}}}"#,
    );
    run(cfg(machine(1, None), &p, 0.0));
}

#[test]
fn run_is_work_that_stretches_at_lower_frequency_and_runtime_is_wall_time() {
    let p = temp_file(
        "dvfs.json",
        r#"{"tasks": {
             "work": {"loop": 5, "run": 10000, "sleep": 10000},
             "wall": {"loop": 5, "runtime": 10000, "sleep": 10000}},
           "global": {"calibration": "CPU0"}}"#,
    );
    let m = machine(2, None);
    let at = |gov: &str| {
        let mut c = cfg(m.clone(), &p, 0.0);
        c.cpufreq.governor = gov.into();
        metrics(&run(c))
    };
    let fast = at("performance");
    let slow = at("powersave");
    // pLoad on CPU0 at 2 GHz: round(61 cycles / 2 cycles per ns) = 31 ns; 10000 µs of run =
    // floor(1e7 / 31) loops of 31 ns = 9999.98 µs at 2 GHz, twice that at 1 GHz
    assert_eq!(fast["pload_ns"], 31.0);
    let loops = (10_000_000u64 / 31) as f64;
    assert!((fast["task.work.run_us_mean"] - loops * 31.0 * 1e-3).abs() < 0.01);
    assert!((slow["task.work.run_us_mean"] - 2.0 * loops * 31.0 * 1e-3).abs() < 0.01);
    assert!((fast["task.wall.run_us_mean"] - 10_000.0).abs() < 0.01);
    assert!((slow["task.wall.run_us_mean"] - 10_000.0).abs() < 0.01);
    assert_eq!(fast["task.work.perf_mean"], (10_000 / 31) as f64);
    assert_eq!(fast["rows"], 10.0);
    // an integer calibration is ns per loop on the fastest CPU at its highest frequency
    let p = temp_file(
        "calib.json",
        r#"{"tasks": {"t": {"loop": 2, "run": 1000, "sleep": 1000}},
           "global": {"calibration": 128}}"#,
    );
    let mm = metrics(&run(cfg(m.clone(), &p, 0.0)));
    assert_eq!(mm["pload_ns"], 128.0);
    assert!((mm["run_us_mean"] - (1_000_000 / 128) as f64 * 0.128).abs() < 1e-6);
}

#[test]
fn timer_rows_have_the_hand_computed_period_slack_and_wakeup_latency() {
    // 3000 µs of work every 10000 µs on one CPU. Without an idle exit latency the task starts
    // at 0, finishes its work at 3000 µs (minus the loop quantum) and has 7000 µs of slack;
    // with a 50 µs C1 every activation starts 50 µs late, which is its wakeup latency.
    let p = temp_file(
        "timer.json",
        r#"{"tasks": {"t": {"loop": 10, "run": 3000,
             "timer": {"ref": "unique", "period": 10000}}}, "global": {"calibration": 100}}"#,
    );
    let run_us = (3_000_000 / 100) as f64 * 0.1; // 30000 loops of 100 ns
    for (exit, lat) in [(None, 0.0), (Some(50), 50.0)] {
        let m = machine(1, exit);
        let sim = run(cfg(m.clone(), &p, 0.0));
        let rows = model(&m, &p).rows(&sim);
        assert_eq!(rows.len(), 10);
        for (k, r) in rows.iter().enumerate() {
            assert!((r.run_ns as f64 * 1e-3 - run_us).abs() < 1e-6, "{r:?}");
            assert!(
                (r.slack_ns as f64 * 1e-3 - (10_000.0 - lat - run_us)).abs() < 1e-6,
                "row {k}: {r:?}"
            );
            assert_eq!(r.wu_lat_ns as f64 * 1e-3, lat, "row {k}: {r:?}");
            assert_eq!(r.period_ns(), 10_000_000, "row {k}");
            assert_eq!(r.start_ns, k as u64 * 10_000_000 + (lat * 1e3) as u64);
        }
        let mm = metrics(&sim);
        assert!((mm["slack_us_mean"] - (10_000.0 - lat - run_us)).abs() < 1e-6);
        assert_eq!(mm["missed_pct"], 0.0);
        assert!((mm["wu_lat_us_mean"] - lat).abs() < 1e-9);
        assert_eq!(sim.workload.metrics(&sim).primary, "slack_us_mean");
        assert!(sim.workload.metrics(&sim).higher_is_better);
    }
}

#[test]
fn late_timers_rebase_in_relative_mode_and_keep_the_grid_in_absolute_mode() {
    // 12000 µs of work with a 10000 µs period: every activation is late. Relative mode re-bases
    // the clock on now (slack -2000 each time); absolute mode keeps the grid (-2000, -4000,
    // -6000).
    let rows_for = |mode: &str| -> Vec<Row> {
        let p = temp_file(
            &format!("late-{mode}.json"),
            &format!(
                r#"{{"tasks": {{"t": {{"loop": 3, "run": 12000,
                 "timer": {{"ref": "tick", "period": 10000, "mode": "{mode}"}}}}}},
                 "global": {{"calibration": 100}}}}"#
            ),
        );
        let m = machine(1, None);
        let sim = run(cfg(m.clone(), &p, 0.0));
        let mm = metrics(&sim);
        assert_eq!(mm["missed_pct"], 100.0);
        model(&m, &p).rows(&sim)
    };
    let slack = |rows: &[Row]| rows.iter().map(|r| r.slack_ns / 1000).collect::<Vec<_>>();
    assert_eq!(slack(&rows_for("relative")), [-2000, -2000, -2000]);
    assert_eq!(slack(&rows_for("absolute")), [-2000, -4000, -6000]);
}

#[test]
fn a_shared_timer_ref_advances_once_per_event_of_any_thread() {
    // rt-app's named timers are one clock for every thread that names them: two threads with
    // "tick" at 10000 µs each advance it, so each sleeps 20000 µs per activation.
    let p = temp_file(
        "shared.json",
        r#"{"tasks": {
             "a": {"loop": 5, "run": 1000, "timer": {"ref": "tick", "period": 10000}},
             "b": {"loop": 5, "run": 1000, "timer": {"ref": "tick", "period": 10000}}},
           "global": {"calibration": 100}}"#,
    );
    let m = machine(2, None);
    let sim = run(cfg(m.clone(), &p, 0.0));
    let rows = model(&m, &p).rows(&sim);
    assert_eq!(rows.len(), 10);
    let mut first: Vec<i64> = rows
        .iter()
        .filter(|r| r.start_ns == 0)
        .map(|r| r.slack_ns / 1000)
        .collect();
    first.sort();
    assert_eq!(first, [9000, 19000]);
    for r in rows.iter().filter(|r| r.start_ns > 0) {
        assert_eq!(r.slack_ns / 1000, 19000, "{r:?}");
        assert_eq!(r.period_ns(), 20_000_000, "{r:?}");
    }
    // with "unique" refs each thread has its own clock
    let p = temp_file(
        "unique.json",
        r#"{"tasks": {"a": {"instance": 2, "loop": 5, "run": 1000,
             "timer": {"ref": "unique", "period": 10000}}}, "global": {"calibration": 100}}"#,
    );
    let sim = run(cfg(m.clone(), &p, 0.0));
    let rows = model(&m, &p).rows(&sim);
    assert_eq!(rows.len(), 10);
    assert!(rows.iter().all(|r| r.slack_ns == 9_000_000), "{rows:?}");
}

#[test]
fn the_eb92692b_ramp_has_13_phases_of_31_loops_from_11200_to_1600_us_every_16_ms() {
    let p = data_dir().join("eb92692b-ramp-70-10-16ms.reconstructed.json");
    let m = machine(2, None);
    let rt = model(&m, &p);
    let prog = &rt.programs().tasks[0].program;
    let OpSpec::Loop { count: 1, body } = &prog[0] else {
        panic!("{prog:?}")
    };
    assert_eq!(body.len(), 13);
    assert!(body
        .iter()
        .all(|ph| matches!(ph, OpSpec::Loop { count: 31, .. })));
    // runs to completion (duration -1): 13 × 31 activations of 16 ms
    let sim = run(cfg(m.clone(), &p, 0.0));
    let mm = metrics(&sim);
    assert_eq!(mm["rows"], 403.0);
    let runs: Vec<u64> = (0..13).map(|k| 11_200 - 800 * k).collect();
    assert_eq!(runs.last(), Some(&1600));
    for (k, run_us) in runs.iter().enumerate() {
        let pre = format!("task.down.p{:06}.", k + 1);
        assert_eq!(mm[&format!("{pre}rows")], 31.0);
        assert_eq!(mm[&format!("{pre}c_duration_us")], *run_us as f64);
        assert_eq!(mm[&format!("{pre}c_period_us")], 16_000.0);
        // at the calibration CPU's highest frequency the work takes its nominal time
        let got = mm[&format!("{pre}run_us_mean")];
        assert!((got - *run_us as f64).abs() < 0.05, "{pre}: run {got}");
        let slack = mm[&format!("{pre}slack_us_mean")];
        assert!(
            (slack - (16_000.0 - got)).abs() < 0.05,
            "{pre}: slack {slack}"
        );
        assert!((mm[&format!("{pre}period_us_mean")] - 16_000.0).abs() < 1e-6);
    }
    // the whole ramp lasts 403 periods
    assert_eq!(sim.tasks[0].stats.exit_ns, Some(403 * 16_000_000));
}

#[test]
fn phase_level_cpus_move_the_thread_between_phases() {
    // tutorial example 8: phases on CPU 0, then 1, then the task's CPU 2, 1500 µs of work each
    let p = data_dir().join("tutorial/example8.json");
    let sim = run(cfg(machine(4, None), &p, 300.0));
    let busy: Vec<f64> = sim
        .rqs
        .iter()
        .map(|r| r.busy_ns as f64 / sim.now as f64)
        .collect();
    for c in 0..3 {
        assert!((busy[c] - 1.0 / 3.0).abs() < 0.02, "cpu{c} busy {busy:?}");
    }
    assert!(busy[3] < 1e-9, "{busy:?}");
    assert!(sim.tasks[0].stats.nr_migrations > 100);
    // the same for a SCHED_FIFO thread, which the stopper moves through the RT class
    let p = temp_file(
        "rt-phases.json",
        r#"{"tasks": {"t": {"policy": "SCHED_FIFO", "priority": 50, "cpus": [3], "phases": {
             "a": {"cpus": [1], "run": 1000, "sleep": 1000},
             "b": {"run": 1000, "sleep": 1000}}}}, "global": {"calibration": 100}}"#,
    );
    let sim = run(cfg(machine(4, None), &p, 100.0));
    let busy: Vec<u64> = sim.rqs.iter().map(|r| r.busy_ns).collect();
    assert!(busy[0] == 0 && busy[2] == 0, "{busy:?}");
    assert!(
        (busy[1] as f64 / busy[3] as f64 - 1.0).abs() < 0.05,
        "{busy:?}"
    );
    assert!(
        (busy[1] + busy[3]) as f64 / sim.now as f64 > 0.49,
        "{busy:?}"
    );
}

#[test]
fn synchronisation_examples_make_progress() {
    let m = machine(4, None);
    // example 4: two threads resume each other
    let sim = run(cfg(
        m.clone(),
        &data_dir().join("tutorial/example4.json"),
        200.0,
    ));
    let mm = metrics(&sim);
    assert!(mm["task.thread0.rows"] >= 9.0, "{mm:?}");
    assert!(mm["task.thread1.rows"] >= 9.0, "{mm:?}");
    // example 7: barriers keep the two tasks in lock step
    let sim = run(cfg(
        m.clone(),
        &data_dir().join("tutorial/example7.json"),
        200.0,
    ));
    let mm = metrics(&sim);
    let (a, b) = (mm["task.task0.rows"], mm["task.task1.rows"]);
    // one loop takes 9 ms (1 + 2 + 2 + 1 + 2 + barrier waits)
    assert!(a >= 21.0 && (a - b).abs() <= 1.0, "{a} {b}");
    // example 9: thread3 forks thread1 and thread2
    let sim = run(cfg(
        m.clone(),
        &data_dir().join("tutorial/example9.json"),
        200.0,
    ));
    let comms: Vec<&str> = sim.tasks.iter().map(|t| t.comm.as_str()).collect();
    assert_eq!(comms, ["thread1", "thread3", "thread1", "thread2"]);
    // mp3: the tick thread resumes the audio chain every 30 ms
    let sim = run(cfg(m, &data_dir().join("examples/mp3-short.json"), 300.0));
    let mm = metrics(&sim);
    assert!(mm["task.AudioOut.rows"] >= 9.0, "{mm:?}");
    assert!(mm["task.OMXCall.rows"] >= 9.0, "{mm:?}");
}

#[test]
fn the_files_global_duration_ends_the_run_unless_a_duration_is_given() {
    let p = data_dir().join("tutorial/example1.json"); // duration 2 s
    let mut sim = Sim::new(cfg(machine(1, None), &p, 0.0)).unwrap();
    sim.run().unwrap();
    assert_eq!(sim.now, 2_000_000_000);
    let sim = run(cfg(machine(1, None), &p, 50.0));
    assert_eq!(sim.now, 50_000_000);
    // no duration and loops forever: a duration is required
    let e = Sim::new(cfg(
        machine(2, None),
        &data_dir().join("tutorial/example4.json"),
        0.0,
    ))
    .err()
    .unwrap();
    assert!(e.contains("give a duration"), "{e}");
}

#[test]
fn runs_are_deterministic() {
    let p = data_dir().join("wa-use-cases/camera-short.json");
    let a = run(cfg(machine(4, Some(20)), &p, 200.0));
    let b = run(cfg(machine(4, Some(20)), &p, 200.0));
    assert_eq!(stable_json(&a), stable_json(&b));
    assert_eq!(metrics(&a), metrics(&b));
    assert!(metrics(&a)["rows"] > 50.0);
}

#[test]
fn taskgroup_puts_the_task_in_a_cgroup_rt_app_creates() {
    // tutorial example10: thread0 runs 2 ms every 10 ms in /tg1 (created with default settings)
    let f = all_files()
        .into_iter()
        .find(|f| f.ends_with("example10.json"))
        .expect("example10 shipped");
    let sim = run(cfg(machine(4, Some(20)), &f, 500.0));
    let g = sim.group_by_path("tg1").expect("tg1 created");
    let t = sim
        .tasks
        .iter()
        .find(|t| t.comm.starts_with("thread0"))
        .unwrap();
    assert_eq!(t.tg, g);
    // no limit: the group used what its task ran
    assert_eq!(sim.tgs[g].usage_ns, t.stats.cpu_ns);
    assert!(sim.tgs[g].cfs_b.quota.is_none());
}

#[test]
fn the_calibration_parameter_overrides_the_files_and_max_picks_the_fastest_cpu() {
    // CPU0 at 2 GHz, CPU1 in a second domain at 4 GHz; the file calibrates on CPU0
    let mut m = machine(2, None);
    let mut fast_domain = m["freq_domains"][0].clone();
    fast_domain["opps"] = json!([{"khz": KHZ, "uv": 700000}, {"khz": 2 * KHZ, "uv": 1000000}]);
    m["freq_domains"] = json!([m["freq_domains"][0].clone(), fast_domain]);
    m["cpus"][1]["freq_domain"] = json!(1);
    let p = temp_file(
        "calib-override.json",
        r#"{"tasks": {"t": {"loop": 2, "run": 1000, "sleep": 1000}},
           "global": {"calibration": "CPU0"}}"#,
    );
    let with = |calibration: Value| {
        let w = json!({"name": "rt-app",
                       "params": {"path": p.to_str().unwrap(), "calibration": calibration}});
        Sim::new(config(m.clone(), w, "6.12", 0.0))
    };
    let pload = |calibration: Value| {
        let mut sim = with(calibration).unwrap();
        sim.run().unwrap();
        metrics(&sim)["pload_ns"]
    };
    // 61 cycles per loop (data/workloads/rt-app.json): round(61 / 2) = 31 ns on CPU0 at
    // 2 GHz, round(61 / 4) = 15 ns on CPU1 at 4 GHz
    let mut plain = Sim::new(cfg(m.clone(), &p, 0.0)).unwrap();
    plain.run().unwrap();
    assert_eq!(metrics(&plain)["pload_ns"], 31.0);
    assert_eq!(pload(json!("max")), 15.0);
    assert_eq!(pload(json!("CPU1")), 15.0);
    assert_eq!(pload(json!("CPU0")), 31.0);
    assert_eq!(pload(json!(128)), 128.0);
    assert_eq!(pload(json!("128")), 128.0);
    // a file calibrated on a CPU this machine does not have runs with the override
    let other_board = temp_file(
        "calib-other-board.json",
        r#"{"tasks": {"t": {"loop": 2, "run": 1000, "sleep": 1000}},
           "global": {"calibration": "CPU31"}}"#,
    );
    let w = json!({"name": "rt-app",
                   "params": {"path": other_board.to_str().unwrap(), "calibration": "max"}});
    let mut sim = Sim::new(config(m.clone(), w, "6.12", 0.0)).unwrap();
    sim.run().unwrap();
    assert_eq!(metrics(&sim)["pload_ns"], 15.0);
    assert!(build_err(m.clone(), &other_board).contains("CPU31 does not exist"));
    for bad in [
        json!("CPU2"),
        json!("fastest"),
        json!(0),
        json!(-3),
        json!(true),
    ] {
        let err = match with(bad.clone()) {
            Ok(_) => panic!("calibration = {bad} accepted"),
            Err(e) => e,
        };
        assert!(
            err.contains("parameter calibration")
                && err.contains("\"max\"")
                && err.contains("n < 2"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn inverted_clamps_name_the_key_that_inverts_them() {
    // rt-app sets the task's clamps, then at each phase start the clamps that phase writes
    // (the phases loop); the kernel refuses any call that leaves util_min above util_max
    let cases = [
        (
            r#"{"tasks": {"t": {"util_min": 600,
                 "util_max": 500, "run": 100}}}"#,
            "tasks.t.util_max",
            2,
            "util_min 600 above util_max 500",
        ),
        (
            r#"{"tasks": {"t": {"util_min": 1024, "phases": {
                 "p1": {"run": 100},
                 "p2": {"util_max": 300, "run": 100}}}}}"#,
            "tasks.t.phases.p2.util_max",
            3,
            "set by 'tasks.t.util_min'",
        ),
        (
            r#"{"tasks": {"t": {"phases": {
                 "p1": {"util_min": 800, "run": 100},
                 "p2": {"util_max": 500, "run": 100}}}}}"#,
            "tasks.t.phases.p2.util_max",
            3,
            "set by 'tasks.t.phases.p1.util_min'",
        ),
    ];
    for (i, (text, key, line, msg)) in cases.iter().enumerate() {
        let p = temp_file(&format!("inverted{i}.json"), text);
        let e = build_err(machine(2, None), &p);
        assert!(
            e.contains(&format!(":{line}: '{key}'")) && e.contains(msg) && e.contains("EINVAL"),
            "{e}"
        );
    }
    // a phase that lowers both, then one that writes nothing, is fine: the loop keeps them
    let p = temp_file(
        "clamps-ok.json",
        r#"{"tasks": {"t": {"util_min": 1024, "phases": {
             "p1": {"run": 100}, "p2": {"util_min": 0, "util_max": 300, "run": 100}}}}}"#,
    );
    assert!(Sim::new(cfg(machine(2, None), &p, 100.0)).is_ok());
}
