//! kernbench and gitsource: the process structure (jobserver bound, serial link, one command
//! at a time), the scaling with -j, the time attribution, the measured work per command, determinism
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
    // the default as `schedsim workloads` lists it may be written out
    let kb = |jobs: Value| {
        let params = serde_json::from_value(json!({"jobs": jobs})).unwrap();
        schedsim_core::workload::kernbench::Kernbench::new(&params, 6, 7).map(|k| k.jobs)
    };
    assert_eq!(kb(json!("nr_cpus")), Ok(6));
    assert_eq!(kb(json!(3)), Ok(3));
    let e = err(kernbench(json!({"job": 2})));
    assert!(
        e.contains("unknown parameter 'job'") && e.contains("objects"),
        "{e}"
    );
    let e = err(gitsource(json!({"scripts": 2000})));
    assert!(e.contains("scripts") && e.contains("1..=790"), "{e}");
    let e = err(gitsource(json!({"git_sigma": -1})));
    assert!(e.contains("git_sigma"), "{e}");
    let e = err(gitsource(json!({"jobs": 2})));
    assert!(e.contains("unknown parameter 'jobs'"), "{e}");
}

/// Singles of a kind in the first `n` blocks: the measured count per block spread evenly,
/// `⌊n · per_block⌋`.
fn first_blocks(n: u32, per_block: f64) -> usize {
    (n as f64 * per_block).floor() as usize
}

#[test]
fn gitsource_forks_one_process_at_a_time_except_pipelines() {
    let sim = run(config(
        smp(4, 2, KHZ, true),
        gitsource(json!({"scripts": 5})),
        "6.12",
        0.0,
    ));
    all_exited(&sim);
    let c = schedsim_core::workload::gitsource::constants();
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
        // script i has ⌊(i+1)·12114/790⌋ − ⌊i·12114/790⌋ blocks (15 or 16); a block holds the
        // measured 3.83 git commands, 4.45 tools and 3.72 subshells, of which the pipeline
        // (2 and 3 stages alternately) takes one git command and 1.5 tools
        let i = scripts as u32 - 1;
        let k: u32 = (i + 1) * 12114 / 790 - i * 12114 / 790;
        assert!(k == 15 || k == 16);
        let count = |t: &str| kids.iter().filter(|x| x.2 == t).count();
        let tools = ["c_diff", "c_sed", "c_expr", "c_cat", "c_grep", "c_rm"];
        let single_tools: usize = tools.iter().map(|t| count(t)).sum();
        assert_eq!(
            count("c_git"),
            first_blocks(k, c.get("git_per_block") - 1.0)
        );
        assert_eq!(single_tools, first_blocks(k, c.get("util_per_block") - 1.5));
        assert_eq!(
            count("c_sub"),
            first_blocks(k, c.get("subshells_per_block"))
        );
        assert_eq!(count("p_src"), k as usize);
        assert_eq!(count("p_dst") + count("p_end"), k as usize);
        assert_eq!(count("p_mid"), (k / 2) as usize);
        // about 12 processes per block
        let per_block = kids.len() as f64 / k as f64;
        let measured =
            c.get("git_per_block") + c.get("util_per_block") + c.get("subshells_per_block");
        assert!(
            (per_block - measured).abs() < 0.2,
            "{per_block} vs {measured}"
        );
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
        assert_eq!(pipelines, k as usize);
    }
    assert_eq!(scripts, 5);
    assert_eq!(metric(&sim, "scripts"), 5.0);
    assert_eq!(metric(&sim, "processes"), sim.stats.forks as f64);
    assert_eq!(sim.stats.forks as usize, n - 1);
}

#[test]
fn gitsource_work_per_command_is_the_measured_mean() {
    // The measured means, in ms of the 2.45 GHz Zen 3 measurement machine at 1.25 Skylake-class
    // cycles per cycle: 3.056 M cycles per ms. At a fixed 3 GHz a git command with sigma 0
    // runs exactly its 2.35 ms of work (plus the preset's exec and switch costs), and the
    // tools' lognormal draws average to their 1.0 ms.
    let c = schedsim_core::workload::gitsource::constants();
    let cpm = c.get("measure_clock_mhz") * 1e3 * c.get("measure_ipc_ratio");
    assert!((cpm - 3.056e6).abs() < 1e3);
    let sim = run(config(
        smp(1, 1, KHZ, false),
        gitsource(json!({"scripts": 40, "git_sigma": 0.0})),
        "6.12",
        0.0,
    ));
    all_exited(&sim);
    let mut by: std::collections::BTreeMap<String, (f64, usize)> = Default::default();
    for t in 0..sim.tasks.len() {
        let e = by.entry(template(&sim, t).to_string()).or_default();
        e.0 += sim.tasks[t].stats.cpu_ns as f64;
        e.1 += 1;
    }
    let ns_per_cycle = 1e6 / KHZ as f64;
    let (git_ns, git_n) = by["c_git"];
    let git_work = 2.35 * cpm * ns_per_cycle;
    let per = git_ns / git_n as f64;
    assert!(
        per > git_work && per < git_work + 400_000.0,
        "{per} ns vs {git_work} ns"
    );
    let tools = ["c_diff", "c_sed", "c_expr", "c_cat", "c_grep", "c_rm"];
    let (ns, n) = tools
        .iter()
        .fold((0.0, 0), |a, t| (a.0 + by[*t].0, a.1 + by[*t].1));
    let tool_work = 1.0 * cpm * ns_per_cycle;
    let per = ns / n as f64;
    assert!(
        per > 0.9 * tool_work && per < 1.1 * tool_work + 400_000.0,
        "{per} ns vs {tool_work} ns ({n} tools)"
    );
}

#[test]
fn gitsource_is_deterministic() {
    let mk = || {
        config(
            smp(2, 2, KHZ, true),
            gitsource(json!({"scripts": 2})),
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
    assert!(schedsim_core::workload::gitsource::constants().get("git_work_ms") > 0.0);
}
