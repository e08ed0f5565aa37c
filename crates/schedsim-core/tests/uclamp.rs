//! A task's effective utilization clamps (spec/kernel.md §1.9): its own requests
//! (`sched_setattr()`, v5.3+), restricted by its cgroup as each version does
//! (`uclamp_tg_restrict()`: before v5.13 the group's value replaces a request not set by the
//! user or above it, from v5.13 every request is clamped into the group's range) and by the
//! system limits (`uclamp_eff_get()`). Expected values follow those rules by hand.

mod common;

use common::*;
use schedsim_core::Sim;
use serde_json::{json, Value};

const KHZ: u64 = 1_000_000;

fn task(name: &str, cgroup: Option<&str>, min: Option<u32>, max: Option<u32>, rt: bool) -> Value {
    let mut t = json!({"name": name, "program": [{"op": "sleep", "ns": 1_000_000}]});
    if let Some(g) = cgroup {
        t["cgroup"] = json!(g);
    }
    if let Some(v) = min {
        t["uclamp_min"] = json!(v);
    }
    if let Some(v) = max {
        t["uclamp_max"] = json!(v);
    }
    if rt {
        t["policy"] = json!("SCHED_FIFO");
        t["priority"] = json!(10);
    }
    t
}

fn build(kernel: &str, tasks: Value, tunables: Value) -> Result<Sim, String> {
    let mut cfg = config(
        smp(2, 1, KHZ, false),
        custom(tasks, json!([])),
        kernel,
        10.0,
    );
    // a group whose effective clamps are [round(30 % of 1024), 50 %] = [307, 512]
    cfg.cgroups =
        serde_json::from_value(json!([{"path": "g", "uclamp_min": 30.0, "uclamp_max": 50.0}]))
            .unwrap();
    cfg.tunables = serde_json::from_value(tunables).unwrap();
    Sim::new(cfg)
}

#[test]
fn a_groups_range_restricts_task_requests_as_each_version_does() {
    let tasks = json!([
        task("none", Some("g"), None, None, false),
        task("low_min", Some("g"), Some(100), None, false),
        task("mid_min", Some("g"), Some(400), None, false),
        task("high_max", Some("g"), None, Some(800), false),
        task("mid_max", Some("g"), None, Some(400), false),
        task("root", None, Some(200), Some(600), false),
    ]);
    // (v5.10, v6.12) expected (min, max) per task
    let expected = [
        ((307, 512), (307, 512)), // defaults: the group's values / 0 and 1024 clamped into them
        ((100, 512), (307, 512)), // a user min below the group's min is kept before v5.13
        ((307, 512), (400, 512)), // above it, the group's min replaces it before v5.13
        ((307, 512), (307, 512)), // a max above the group's is the group's either way
        ((307, 400), (307, 400)), // a max within the range is kept either way
        ((200, 600), (200, 600)), // the root group restricts nothing
    ];
    let old = build("5.10", tasks.clone(), json!({})).unwrap();
    let new = build("6.12", tasks, json!({})).unwrap();
    for (t, (e_old, e_new)) in expected.iter().enumerate() {
        assert_eq!(old.task_uclamp(t), *e_old, "5.10 task {t}");
        assert_eq!(new.task_uclamp(t), *e_new, "6.12 task {t}");
    }
    assert!(new.uclamp_in_use);
}

#[test]
fn rt_defaults_and_system_limits_apply_to_every_task() {
    let tasks = json!([
        task("rt", None, None, None, true),
        task("fair", None, Some(500), Some(800), false),
    ]);
    let sim = build("6.12", tasks.clone(), json!({})).unwrap();
    assert_eq!(sim.task_uclamp(0), (1024, 1024));
    // the RT default alone turns clamps on (the sysctl handler enables sched_uclamp_used)
    let plain = json!([task("rt", None, None, None, true)]);
    let mut cfg = config(
        smp(2, 1, KHZ, false),
        custom(plain, json!([])),
        "6.12",
        10.0,
    );
    cfg.tunables = serde_json::from_value(json!({"sched_util_clamp_min_rt_default": 0})).unwrap();
    let sim = Sim::new(cfg).unwrap();
    assert!(sim.uclamp_in_use);
    assert_eq!(sim.task_uclamp(0), (0, 1024));
    // sched_util_clamp_min_rt_default (v5.10+) is RT tasks' default min request;
    // sched_util_clamp_min/max cap every effective value
    let sim = build(
        "6.12",
        tasks,
        json!({"sched_util_clamp_min_rt_default": 0, "sched_util_clamp_min": 300,
               "sched_util_clamp_max": 600}),
    )
    .unwrap();
    assert_eq!(sim.task_uclamp(0), (0, 600));
    assert_eq!(sim.task_uclamp(1), (300, 600));
}

#[test]
fn util_fits_cpu_follows_v6_2s_rules_on_asymmetric_cpus() {
    // two CPUs: capacity 1024 and 512 (the little one's original capacity)
    let mut machine = smp(2, 1, KHZ, false);
    let little = machine["core_types"][0].clone();
    machine["core_types"].as_array_mut().unwrap().push(little);
    machine["core_types"][1]["capacity_dmips_mhz"] = json!(512);
    machine["cpus"][1]["core_type"] = json!(1);
    let tasks = json!([task("a", None, Some(0), None, false)]);
    let sim = Sim::new(config(machine, custom(tasks, json!([])), "6.12", 10.0)).unwrap();
    // the real util fits (80 % of 512 = 409.6)
    assert!(sim.util_fits_cpu(400, 0, 1024, 1));
    assert!(!sim.util_fits_cpu(500, 0, 1024, 1));
    // a uclamp_max at or below the little CPU's capacity makes a big util fit there
    assert!(sim.util_fits_cpu(500, 0, 512, 1));
    assert!(!sim.util_fits_cpu(500, 0, 513, 1));
    // a boost above the little CPU's capacity does not fit there, but fits the biggest CPU
    assert!(!sim.util_fits_cpu(100, 600, 1024, 1));
    assert!(sim.util_fits_cpu(100, 600, 1024, 0));
    // on the biggest CPU a uclamp_max of 1024 does not force a fit
    assert!(!sim.util_fits_cpu(900, 0, 1024, 0));
}

#[test]
fn bad_requests_and_early_kernels_are_refused() {
    let cases = [
        (
            "6.12",
            task("a", None, Some(1025), None, false),
            json!({}),
            "uclamp_min = 1025",
        ),
        (
            "6.12",
            task("a", None, Some(600), Some(500), false),
            json!({}),
            "exceeds uclamp_max",
        ),
        (
            "5.2",
            task("a", None, Some(100), None, false),
            json!({}),
            "need kernel 5.3",
        ),
        (
            "5.4",
            task("a", None, None, None, false),
            json!({"sched_util_clamp_min_rt_default": 0}),
            "needs kernel 5.10",
        ),
        (
            "6.12",
            task("a", None, None, None, false),
            json!({"sched_util_clamp_min": 700, "sched_util_clamp_max": 600}),
            "must not exceed",
        ),
    ];
    for (kernel, t, tun, msg) in cases {
        let mut cfg = config(
            smp(1, 1, KHZ, false),
            custom(json!([t]), json!([])),
            kernel,
            10.0,
        );
        cfg.tunables = serde_json::from_value(tun).unwrap();
        let err = Sim::new(cfg).err().expect("refused");
        assert!(err.contains(msg), "{kernel}: {err}");
    }
    // a set_uclamp op is checked like the task's own keys
    let t = json!({"name": "a", "program": [{"op": "set_uclamp", "min": 900, "max": 100}]});
    let cfg = config(
        smp(1, 1, KHZ, false),
        custom(json!([t]), json!([])),
        "6.12",
        10.0,
    );
    let err = Sim::new(cfg).err().expect("refused");
    assert!(
        err.contains("op set_uclamp") && err.contains("exceeds"),
        "{err}"
    );
    // uclamp_validate() counts a clamp left out at its current request: an RT task's default
    // min is 1024, so a max of 512 alone is refused, at creation and by sched_setattr()
    // (whichever name the policy goes by)
    for policy in ["SCHED_FIFO", "fifo", "rr"] {
        let mut rt = task("rt", None, None, Some(512), true);
        rt["policy"] = json!(policy);
        let cfg = config(
            smp(1, 1, KHZ, false),
            custom(json!([rt]), json!([])),
            "6.12",
            10.0,
        );
        let err = Sim::new(cfg).err().expect("refused");
        assert!(
            err.contains("below its default uclamp_min of 1024"),
            "{policy}: {err}"
        );
    }
    for (first, then) in [
        (
            json!({"policy": "SCHED_FIFO", "priority": 10}),
            json!({"op": "set_uclamp", "max": 512}),
        ),
        (
            json!({"uclamp_max": 500}),
            json!({"op": "set_uclamp", "min": 600}),
        ),
    ] {
        let mut t = json!({"name": "t", "program": [then]});
        for (k, v) in first.as_object().unwrap() {
            t[k] = v.clone();
        }
        let cfg = config(
            smp(1, 1, KHZ, false),
            custom(json!([t]), json!([])),
            "6.12",
            10.0,
        );
        let mut sim = Sim::new(cfg).unwrap();
        let err = sim.run().expect_err("refused at run time");
        assert!(
            err.contains("task 't': set_uclamp") && err.contains("EINVAL"),
            "{err}"
        );
    }
}
