//! kernbench and gitsource: the process structure (jobserver bound, serial link, one command
//! at a time), the scaling with -j, the time attribution, the calibration anchor, determinism
//! and parameter errors.

mod common;

use common::*;
use schedsim_core::sched::task::TaskState;
use schedsim_core::Sim;
use serde_json::{json, Value};

const KHZ: u64 = 3_000_000;

fn kernbench(params: Value) -> Value {
    json!({"name": "kernbench", "params": params})
}

fn gitsource(params: Value) -> Value {
    json!({"name": "gitsource", "params": params})
}

/// Times of every mark named `name`, in order.
fn marks(sim: &Sim, name: &str) -> Vec<u64> {
    let Some(id) = sim.compiled.marks.iter().position(|m| m == name) else {
        return vec![];
    };
    sim.marks
        .iter()
        .filter(|m| m.2 == id)
        .map(|m| m.0)
        .collect()
}

/// The largest number of open [start, end) intervals at any instant (ends first on ties).
fn max_overlap(starts: &[u64], ends: &[u64]) -> usize {
    let mut ev: Vec<(u64, i32)> = starts
        .iter()
        .map(|&t| (t, 1))
        .chain(ends.iter().map(|&t| (t, -1)))
        .collect();
    ev.sort();
    let (mut cur, mut max) = (0i32, 0i32);
    for (_, d) in ev {
        cur += d;
        max = max.max(cur);
    }
    max as usize
}

fn template(sim: &Sim, t: usize) -> &str {
    &sim.compiled.programs[sim.tasks[t].program].name
}

fn metric(sim: &Sim, name: &str) -> f64 {
    sim.workload.metrics(sim).values[name]
}

fn all_exited(sim: &Sim) {
    assert!(sim.tasks.iter().all(|t| t.state == TaskState::Dead));
}

#[test]
fn kernbench_runs_at_most_n_compile_jobs_and_links_serially_after_them() {
    for jobs in [1u32, 2, 3] {
        let sim = run(config(
            smp(4, 1, KHZ, true),
            kernbench(json!({"jobs": jobs, "objects": 40})),
            "6.12",
            0.0,
        ));
        all_exited(&sim);
        let (s, e) = (marks(&sim, "job_start"), marks(&sim, "job_end"));
        assert_eq!((s.len(), e.len()), (40, 40));
        assert_eq!(metric(&sim, "compile_jobs"), 40.0);
        // the jobserver bound is reached and never exceeded
        assert_eq!(max_overlap(&s, &e), jobs as usize, "jobs={jobs}");

        // the link starts after the last compile job and the last archive
        let link_start = marks(&sim, "link_start")[0];
        let link_end = marks(&sim, "link_end")[0];
        assert!(e.iter().all(|&t| t <= link_start));
        let link = (0..sim.tasks.len())
            .find(|&t| template(&sim, t) == "link")
            .unwrap();
        let mut steps = vec![];
        for (t, task) in sim.tasks.iter().enumerate() {
            let name = template(&sim, t);
            if task.parent == Some(link) {
                steps.push((task.stats.start_ns, task.stats.exit_ns.unwrap()));
            } else if name != "make" && name != "link" {
                // everything else (sub-makes, jobs, ar, prepare) is gone before the link
                assert!(task.stats.exit_ns.unwrap() <= link_start, "{name}");
            }
        }
        // its ten steps run one after another: one busy task at a time
        assert_eq!(steps.len(), 10);
        steps.sort();
        for w in steps.windows(2) {
            assert!(w[0].1 <= w[1].0, "link steps overlap: {w:?}");
        }
        assert!(steps[0].0 >= link_start && steps[9].1 <= link_end);
        let end = marks(&sim, "end")[0];
        assert!((metric(&sim, "elapsed_s") - end as f64 * 1e-9).abs() < 1e-9);
        let link_s = metric(&sim, "link_s");
        assert!((link_s - (link_end - link_start) as f64 * 1e-9).abs() < 1e-9);
    }
}

#[test]
fn kernbench_elapsed_shrinks_with_jobs_and_saturates_at_the_cpu_count() {
    let elapsed = |jobs: u32| {
        let sim = run(config(
            smp(8, 1, KHZ, true),
            kernbench(json!({"jobs": jobs, "objects": 40})),
            "6.12",
            0.0,
        ));
        metric(&sim, "elapsed_s")
    };
    let e: Vec<f64> = [1u32, 2, 4, 8, 16].iter().map(|&j| elapsed(j)).collect();
    for w in e.windows(2).take(3) {
        assert!(w[1] < w[0] * 0.8, "more jobs must be faster: {e:?}");
    }
    // 8 CPUs: beyond 8 jobs nothing is gained
    assert!((e[4] - e[3]).abs() < 0.05 * e[3], "{e:?}");
    // 1 → 8 jobs: well below ideal 8x because of the serial phases and the lognormal tail
    assert!(e[0] / e[3] > 3.0 && e[0] / e[3] < 8.0, "{e:?}");
}

#[test]
fn kernbench_user_time_is_the_compile_work_and_sys_the_charged_kernel_paths() {
    let sim = run(config(
        smp(4, 1, KHZ, true),
        kernbench(json!({"jobs": 4, "objects": 40})),
        "6.12",
        0.0,
    ));
    let (user, sys) = (metric(&sim, "user_s"), metric(&sim, "sys_s"));
    let total: u64 = sim.tasks.iter().map(|t| t.stats.cpu_ns).sum();
    assert!((user + sys - total as f64 * 1e-9).abs() < 1e-6);

    // the compile recipes drawn for this seed, at 3 GHz without SMT
    let params = json!({"jobs": 4, "objects": 40});
    let model = schedsim_core::workload::kernbench::Kernbench::new(
        &serde_json::from_value(params).unwrap(),
        4,
        7,
    )
    .unwrap();
    let compile_s = model.compile_cycles() / (KHZ as f64 * 1e3);
    // plus ~8 bookkeeping recipes of ~11.5 ms (reference) per object, make and small tools
    assert!(
        user > compile_s && user < compile_s * 1.15,
        "{user} vs {compile_s}"
    );
    // sys: fork 150k + exec 400k cycles per process, 6k per context switch, at 3 GHz
    let st = &sim.stats;
    let kernel =
        (st.forks as f64 * 150e3 + st.execs as f64 * 400e3 + st.context_switches as f64 * 6e3)
            / (KHZ as f64 * 1e3);
    assert!(
        sys > 0.9 * kernel && sys < 1.3 * kernel,
        "sys {sys} vs {kernel}"
    );
    // every object: sh, gcc, cc1, as, objtool, fixdep and 8 bookkeeping processes
    assert!(st.forks >= 40 * 14);
}

#[test]
fn kernbench_scales_its_serial_phases_with_the_object_count() {
    let run_n = |objects: u32| {
        run(config(
            smp(2, 1, KHZ, true),
            kernbench(json!({"jobs": 2, "objects": objects})),
            "6.12",
            0.0,
        ))
    };
    let (a, b) = (run_n(20), run_n(40));
    // link_scale scales the link alone
    let half = run(config(
        smp(2, 1, KHZ, true),
        kernbench(json!({"jobs": 2, "objects": 40, "link_scale": 0.5})),
        "6.12",
        0.0,
    ));
    let (l, l2) = (metric(&b, "link_s"), metric(&half, "link_s"));
    assert!((l2 / l - 0.5).abs() < 0.03, "link {l} s, at 0.5: {l2} s");
    assert!((metric(&half, "prepare_s") / metric(&b, "prepare_s") - 1.0).abs() < 0.05);
    // the link is fixed work scaled by objects/3450: 58.8 Gcycles at full size
    let link = |objects: f64| 58.8e9 * objects / 3450.0 / (KHZ as f64 * 1e3);
    for (sim, n) in [(&a, 20.0), (&b, 40.0)] {
        let l = metric(sim, "link_s");
        assert!(l > link(n) && l < link(n) * 1.05, "{l} vs {}", link(n));
    }
    assert!(metric(&b, "prepare_s") > 1.5 * metric(&a, "prepare_s"));
}

#[test]
fn kernbench_work_scale_scales_every_process_but_not_the_kernel_paths() {
    let model = |scale: f64| {
        schedsim_core::workload::kernbench::Kernbench::new(
            &serde_json::from_value(json!({"jobs": 2, "objects": 40, "work_scale": scale}))
                .unwrap(),
            2,
            7,
        )
        .unwrap()
    };
    // the same tree of objects (same seed), each compile a quarter as long
    let (full, quarter) = (model(1.0), model(0.25));
    assert!((quarter.compile_cycles() / full.compile_cycles() - 0.25).abs() < 1e-12);
    // at a fixed 3 GHz on 1 CPU without kernel costs the build is all work: the link, the
    // prepare phase and the bookkeeping shrink with it, so the elapsed time is a quarter too
    let elapsed = |scale: f64| {
        let sim = run(config(
            smp(1, 1, KHZ, false),
            kernbench(json!({"jobs": 1, "objects": 40, "work_scale": scale})),
            "6.12",
            0.0,
        ));
        metric(&sim, "elapsed_s")
    };
    let (a, b) = (elapsed(1.0), elapsed(0.25));
    assert!((b / a - 0.25).abs() < 0.01, "{a} s vs {b} s");
}

#[test]
fn kernbench_is_deterministic_and_the_seed_draws_the_tree() {
    let cfg = |seed: u64| {
        let mut c = config(
            smp(2, 2, KHZ, true),
            kernbench(json!({"jobs": 3, "objects": 30})),
            "6.12",
            0.0,
        );
        c.seed = seed;
        c
    };
    let (a, b) = (run(cfg(7)), run(cfg(7)));
    assert_eq!(stable_json(&a), stable_json(&b));
    let c = run(cfg(8));
    assert_ne!(metric(&a, "elapsed_s"), metric(&c, "elapsed_s"));
}

#[test]
fn kernbench_and_gitsource_reject_bad_parameters() {
    let err = |w: Value| {
        Sim::new(config(smp(2, 1, KHZ, false), w, "6.12", 0.0))
            .err()
            .expect("error")
    };
    let e = err(kernbench(json!({"jobs": 0})));
    assert!(e.contains("jobs") && e.contains("1..=4096"), "{e}");
    let e = err(kernbench(json!({"work_scale": 0.0})));
    assert!(e.contains("work_scale"), "{e}");
    let e = err(kernbench(json!({"objects": 0})));
    assert!(e.contains("objects") && e.contains("1..=100000"), "{e}");
    let e = err(kernbench(json!({"jobs": 2.5})));
    assert!(e.contains("expected an integer"), "{e}");
    let e = err(kernbench(json!({"jobs": "many"})));
    assert!(e.contains("expected a number"), "{e}");
    let e = err(kernbench(json!({"job": 2})));
    assert!(
        e.contains("unknown parameter 'job'") && e.contains("objects"),
        "{e}"
    );
    let e = err(gitsource(json!({"scripts": 2000})));
    assert!(e.contains("scripts") && e.contains("1..=1011"), "{e}");
    let e = err(gitsource(json!({"work_sigma": -1})));
    assert!(e.contains("work_sigma"), "{e}");
    let e = err(gitsource(json!({"jobs": 2})));
    assert!(e.contains("unknown parameter 'jobs'"), "{e}");
}

#[test]
fn gitsource_forks_one_process_at_a_time_except_pipelines() {
    let sim = run(config(
        smp(4, 2, KHZ, true),
        gitsource(json!({"scripts": 5, "procs_per_block": 4})),
        "6.12",
        0.0,
    ));
    all_exited(&sim);
    let n = sim.tasks.len();
    let mut scripts = 0;
    for drv in 0..n {
        let name = template(&sim, drv);
        if name != "make" && !name.starts_with('t') {
            continue;
        }
        let mut kids: Vec<(u64, u64, &str)> = (0..n)
            .filter(|&t| sim.tasks[t].parent == Some(drv))
            .map(|t| {
                let s = &sim.tasks[t].stats;
                (s.start_ns, s.exit_ns.unwrap(), template(&sim, t))
            })
            .collect();
        kids.sort();
        if name == "make" {
            // make runs the five scripts one after another
            assert_eq!(kids.len(), 5);
            assert!(kids.windows(2).all(|w| w[0].1 <= w[1].0));
            continue;
        }
        scripts += 1;
        // 20 setup commands + 18 blocks of 4 singles and one 2- or 3-stage pipeline
        assert_eq!(kids.len(), 20 + 18 * 4 + 9 * 2 + 9 * 3);
        let mut i = 0;
        let mut pipelines = 0;
        while i < kids.len() {
            if kids[i].2.starts_with("p_") {
                // a pipeline: its members are alive together, and nothing else is
                assert_eq!(kids[i].2, "p_src");
                let mut j = i + 1;
                while j < kids.len() && kids[j].2.starts_with("p_") && kids[j].2 != "p_src" {
                    j += 1;
                }
                let group = &kids[i..j];
                assert!(group.len() == 2 || group.len() == 3, "{group:?}");
                let start = group.iter().map(|k| k.0).max().unwrap();
                let end = group.iter().map(|k| k.1).min().unwrap();
                assert!(start < end, "pipeline members overlap: {group:?}");
                let last = group.iter().map(|k| k.1).max().unwrap();
                if j < kids.len() {
                    assert!(last <= kids[j].0, "next command before the pipeline ended");
                }
                pipelines += 1;
                i = j;
            } else {
                if i + 1 < kids.len() {
                    assert!(
                        kids[i].1 <= kids[i + 1].0,
                        "two commands alive: {:?}",
                        &kids[i..i + 2]
                    );
                }
                i += 1;
            }
        }
        assert_eq!(pipelines, 18);
    }
    assert_eq!(scripts, 5);
    assert_eq!(metric(&sim, "scripts"), 5.0);
    assert_eq!(metric(&sim, "processes"), sim.stats.forks as f64);
    assert_eq!(sim.stats.forks as usize, n - 1);
}

#[test]
fn gitsource_elapsed_per_script_is_the_calibrated_share_of_2215_s() {
    // skylake-8x as the calibration ran it (performance: 3.9 GHz with one busy core): 4 cores
    // × 2 threads, the preset's kernel costs, its idle states and package C-states
    // (python/schedsim/machines/skylake-8x.toml: C7s-C10 wake in the core's 85 µs, PC7 and PC8
    // add 39 and 115 µs). One script of 18 blocks takes its share of the 2,215 s anchor.
    let mut m = smp(4, 2, 3_900_000, true);
    m["freq_domains"][0]["turbo_khz"] = json!([3_900_000, 3_900_000, 3_800_000, 3_700_000]);
    m["freq_domains"][0]["base_khz"] = json!(3_500_000);
    let st = |n: &str, lat: u32, res: u32, mw: f64, turbo: bool| {
        let mut s = json!({"name": n, "exit_latency_us": lat, "target_residency_us": res,
               "power_mw": mw, "turbo_active": turbo});
        if lat > 85 {
            s["core_exit_latency_us"] = json!(85);
        }
        s
    };
    m["idle_states"] = json!({"default": [
        st("POLL", 0, 0, 4000.0, true), st("C1", 2, 2, 2400.0, true),
        st("C1E", 10, 20, 1750.0, true), st("C3", 70, 100, 500.0, false),
        st("C6", 85, 200, 0.0, false), st("C7s", 124, 800, 0.0, false),
        st("C8", 200, 800, 0.0, false), st("C9", 480, 5000, 0.0, false),
        st("C10", 890, 5000, 0.0, false)]});
    m["package_idle_states"] = json!([
        {"name": "PC3", "min_core_state": 3, "power_mw": 3000.0},
        {"name": "PC6", "min_core_state": 4, "power_mw": 2000.0},
        {"name": "PC7", "min_core_state": 5, "power_mw": 1500.0, "exit_latency_us": 39},
        {"name": "PC8", "min_core_state": 6, "power_mw": 1200.0, "exit_latency_us": 115}]);
    let sim = run(config(m, gitsource(json!({"scripts": 1})), "6.12", 0.0));
    let c = schedsim_core::workload::gitsource::constants();
    let per_block = c.get("single_procs_per_block") + 2.5;
    let setup = c.get("setup_procs_per_script");
    let blocks = c.get("blocks_total") / c.get("scripts_total");
    let share = (setup + 18.0 * per_block) / (setup + blocks * per_block);
    let expect = c.get("target_elapsed_s") / c.get("scripts_total") * share;
    let got = metric(&sim, "elapsed_s");
    assert!(
        (got - expect).abs() < 0.05 * expect,
        "{got} s vs {expect} s"
    );
    // about one process every 2.0 ms
    let rate = metric(&sim, "processes_per_s");
    assert!(rate > 420.0 && rate < 580.0, "{rate}");
}

#[test]
fn gitsource_is_deterministic() {
    let mk = || {
        config(
            smp(2, 2, KHZ, true),
            gitsource(json!({"scripts": 2, "procs_per_block": 3})),
            "6.12",
            0.0,
        )
    };
    assert_eq!(stable_json(&run(mk())), stable_json(&run(mk())));
}

#[test]
fn the_registry_describes_both_models() {
    let reg = schedsim_core::workload::registry();
    for name in ["kernbench", "gitsource"] {
        let w = reg.iter().find(|w| w.name == name).expect(name);
        assert_eq!(w.primary, "elapsed_s");
        assert!(!w.higher_is_better && !w.open_ended);
        assert!(w.metrics.contains(&"elapsed_s"));
    }
    // every constant parses with its unit, source and justification
    assert!(schedsim_core::workload::kernbench::constants().get("cc_sigma") > 0.0);
    assert!(schedsim_core::workload::gitsource::constants().get("proc_work_ms") > 0.0);
}
