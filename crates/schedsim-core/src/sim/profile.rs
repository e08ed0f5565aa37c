//! The kernel profile: a kernel version selects the versioned behaviour of every mechanism
//! (spec/kernel.md §11), and single features can be overridden by name like `SCHED_FEAT`
//! toggles (`/sys/kernel/debug/sched/features`). Unknown names are errors.

use std::collections::BTreeMap;

use crate::config::KernelSpec;

/// The fair class flavour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairFlavor {
    /// CFS: vruntime, sched_latency/min_granularity slices, check_preempt_tick (before v6.6).
    Cfs,
    /// EEVDF: lag, virtual deadlines, eligibility (v6.6 and later).
    Eevdf,
}

/// The small imbalance between NUMA nodes that the v5.5+ load balancer leaves alone, by
/// version. (Before v5.5 the load-based balancer of `sched::balance_load` has no such rule: a
/// node with two tasks more than an idle one counts as overloaded and gives one up.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaImbalance {
    /// v5.5: none. The load-balancer rewrite (0b0695f2b34a) evens out idle CPUs between nodes
    /// however lightly loaded, which split communicating pairs ("NUMA over-balancing").
    None,
    /// v5.6-v5.10: a source node running at most two tasks keeps them (v5.6's fix, "Allow a
    /// small load imbalance between low utilisation SD_NUMA domains",
    /// `busiest->sum_nr_running <= 2`).
    SmallSource,
    /// From v5.11: a destination node whose running tasks, with the moved one, stay under a
    /// quarter of its CPUs keeps an imbalance of up to two tasks (`adjust_numa_imbalance`
    /// with `allow_numa_imbalance(dst_running, dst_weight)`).
    LightDestination,
}

impl NumaImbalance {
    pub fn for_version(v: (u32, u32)) -> Self {
        if v >= (5, 11) {
            NumaImbalance::LightDestination
        } else if v == (5, 5) {
            NumaImbalance::None
        } else {
            NumaImbalance::SmallSource
        }
    }
}

/// The kernel's preemption model (`kernel/Kconfig.preempt`). Only whether `CONFIG_PREEMPTION`
/// is set matters to the model: a preemptible kernel stops new-idle balancing after the first
/// task it detaches (`detach_tasks`, "NEWIDLE balancing is a source of latency").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preemption {
    /// `CONFIG_PREEMPT_NONE`.
    None,
    /// `CONFIG_PREEMPT_VOLUNTARY`: the distribution kernels' choice before `PREEMPT_DYNAMIC`.
    Voluntary,
    /// `CONFIG_PREEMPT`.
    Full,
    /// `CONFIG_PREEMPT_DYNAMIC` (v5.12+, on by default where the architecture supports it): the
    /// model is chosen at boot, but the build selects `CONFIG_PREEMPTION` whatever it is.
    Dynamic,
}

impl Preemption {
    /// v5.12 (`PREEMPT_DYNAMIC`, default y on x86) builds every kernel with
    /// `CONFIG_PREEMPTION`; before it distributions shipped voluntary preemption.
    pub fn for_version(v: (u32, u32)) -> Self {
        if v >= (5, 12) {
            Preemption::Dynamic
        } else {
            Preemption::Voluntary
        }
    }

    /// `IS_ENABLED(CONFIG_PREEMPTION)`.
    pub fn config_preemption(self) -> bool {
        matches!(self, Preemption::Full | Preemption::Dynamic)
    }
}

/// Boolean scheduler features, named as in `kernel/sched/features.h`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedFeatures {
    pub gentle_fair_sleepers: bool,
    pub start_debit: bool,
    pub last_buddy: bool,
    pub next_buddy: bool,
    pub cache_hot_buddy: bool,
    pub wakeup_preemption: bool,
    pub place_lag: bool,
    pub place_deadline_initial: bool,
    pub run_to_parity: bool,
    pub util_est: bool,
    pub util_est_fastup: bool,
    pub wa_idle: bool,
    pub wa_weight: bool,
    pub wa_bias: bool,
    pub sis_util: bool,
    pub lb_min: bool,
    pub base_slice: bool,
    /// `RT_RUNTIME_SHARE`: a CPU whose RT runtime ran out borrows other CPUs' unused runtime
    /// (on before v5.10, 2586af1ac187 "sched/rt: Disable RT_RUNTIME_SHARE by default").
    pub rt_runtime_share: bool,
}

/// Everything version-dependent that the model consults.
#[derive(Clone, Debug)]
pub struct KernelProfile {
    pub version: (u32, u32),
    pub hz: u32,
    pub fair: FairFlavor,
    pub feat: SchedFeatures,
    /// util_est v1 (enqueued + ewma, v4.17–v6.8) or v2 (single ewma, v6.9+).
    pub util_est_v2: bool,
    /// PELT's second signal: weighted runnable_load (v5.1–v5.6) or count-based runnable (v5.7+).
    pub pelt_runnable_weighted: bool,
    /// schedutil/LB use max(util, runnable) ("runnable boosting", v6.5+).
    pub runnable_boost: bool,
    /// EEVDF base slice, unscaled (0.75 ms; 0.70 ms from v6.15).
    pub base_slice_ns: u64,
    /// `find_idlest_group()` compares runnable and blocked load (and spare capacity for exec)
    /// as before v5.5; from v5.5 (57abff067a08) it classifies groups like the load balancer.
    pub find_idlest_by_load: bool,
    /// Which small imbalance the load balancer leaves between NUMA nodes (§8.8).
    pub numa_imbalance: NumaImbalance,
    /// Load-balance busy_factor (32 before v5.10, then 16).
    pub busy_factor: u32,
    /// imbalance_pct above the LLC (125 before v5.10, then 117).
    pub imbalance_pct_pkg: u32,
    /// The preemption model the kernel was built with (feature `preempt`).
    pub preempt: Preemption,
    /// CFS bandwidth period timers start at a random phase (41abdba9, v6.4+) instead of
    /// aligned at multiples of the period (feature `cfs_bw_timer_phase`).
    pub cfs_bw_interleave: bool,
    /// `post_init_entity_util_avg` multiplies the cfs_rq's util by `se->load.weight`, which a
    /// 64-bit kernel keeps scaled up by 1024 (`scale_load`) against the unscaled
    /// `cfs_rq->avg.load_avg`, so the extrapolation always exceeds the cap and a new task
    /// starts with half the CPU's spare capacity. v6.10 (72bffbf57c52, "sched/fair: Fix initial
    /// util_avg calculation") uses the unscaled `se_weight()`.
    pub post_init_scaled_weight: bool,
    /// The load balancer compares groups by runnable load per capacity and moves weighted
    /// load (`calculate_imbalance`/`fix_small_imbalance`), as before the v5.5 rework
    /// (0b0695f2b34a, "sched/fair: Rework load_balance"); see `sched::balance_load`.
    pub lb_load_based: bool,
}

fn parse_version(s: &str) -> Result<(u32, u32), String> {
    let mut it = s.trim().trim_start_matches('v').split('.');
    let major = it.next().and_then(|x| x.parse().ok());
    let minor = it.next().and_then(|x| x.parse().ok()).or(Some(0));
    match (major, minor) {
        (Some(a), Some(b)) if (4..=7).contains(&a) => Ok((a, b)),
        _ => Err(format!(
            "kernel.version = '{s}': expected MAJOR.MINOR between 4.x and 7.x, e.g. '5.2' or '6.12'"
        )),
    }
}

const BOOL_FEATURES: &[&str] = &[
    "GENTLE_FAIR_SLEEPERS",
    "START_DEBIT",
    "LAST_BUDDY",
    "NEXT_BUDDY",
    "CACHE_HOT_BUDDY",
    "WAKEUP_PREEMPTION",
    "PLACE_LAG",
    "PLACE_DEADLINE_INITIAL",
    "RUN_TO_PARITY",
    "UTIL_EST",
    "UTIL_EST_FASTUP",
    "WA_IDLE",
    "WA_WEIGHT",
    "WA_BIAS",
    "SIS_UTIL",
    "LB_MIN",
    "BASE_SLICE",
    "RUNNABLE_BOOST",
    "RT_RUNTIME_SHARE",
];

/// Non-boolean features: name and allowed values.
const ENUM_FEATURES: &[(&str, &[&str])] = &[
    ("fair", &["cfs", "eevdf"]),
    ("feec", &["pre-5.4", "per-pd"]),
    ("cfs_bw_timer_phase", &["aligned", "interleaved"]),
    ("preempt", &["none", "voluntary", "full", "dynamic"]),
];

impl KernelProfile {
    pub fn from_spec(spec: &KernelSpec) -> Result<Self, String> {
        let version = parse_version(&spec.version)?;
        let at_least = |a: u32, b: u32| version >= (a, b);
        let eevdf = at_least(6, 6);
        let feat = SchedFeatures {
            gentle_fair_sleepers: true,
            start_debit: true,
            last_buddy: true,
            next_buddy: false,
            cache_hot_buddy: true,
            wakeup_preemption: true,
            place_lag: true,
            place_deadline_initial: true,
            run_to_parity: true,
            util_est: at_least(4, 17),
            // b8c96361402a (v5.5) added it; the v6.9 util_est rework removed it.
            util_est_fastup: at_least(5, 5) && !at_least(6, 9),
            wa_idle: true,
            wa_weight: true,
            wa_bias: true,
            sis_util: at_least(6, 0),
            lb_min: false,
            base_slice: at_least(5, 13) && !eevdf,
            rt_runtime_share: !at_least(5, 10),
        };
        let mut p = KernelProfile {
            version,
            hz: spec.hz,
            fair: if eevdf {
                FairFlavor::Eevdf
            } else {
                FairFlavor::Cfs
            },
            feat,
            util_est_v2: at_least(6, 9),
            pelt_runnable_weighted: !at_least(5, 7),
            runnable_boost: at_least(6, 5),
            base_slice_ns: if at_least(6, 15) { 700_000 } else { 750_000 },
            find_idlest_by_load: !at_least(5, 5),
            numa_imbalance: NumaImbalance::for_version(version),
            busy_factor: if at_least(5, 10) { 16 } else { 32 },
            imbalance_pct_pkg: if at_least(5, 10) { 117 } else { 125 },
            cfs_bw_interleave: at_least(6, 4),
            post_init_scaled_weight: !at_least(6, 10),
            lb_load_based: !at_least(5, 5),
            preempt: Preemption::for_version(version),
        };
        for (name, value) in &spec.features {
            p.set_feature(name, value)?;
        }
        Ok(p)
    }

    fn set_feature(&mut self, name: &str, value: &serde_json::Value) -> Result<(), String> {
        if let Some((key, allowed)) = ENUM_FEATURES.iter().find(|(k, _)| *k == name) {
            let v = value.as_str().unwrap_or_default();
            if !allowed.contains(&v) {
                return Err(format!(
                    "features.{key} = {value}: allowed values are {}",
                    allowed.join(", ")
                ));
            }
            if *key == "preempt" {
                self.preempt = match v {
                    "none" => Preemption::None,
                    "voluntary" => Preemption::Voluntary,
                    "full" => Preemption::Full,
                    _ => Preemption::Dynamic,
                };
            }
            if *key == "cfs_bw_timer_phase" {
                self.cfs_bw_interleave = v == "interleaved";
            }
            if *key == "fair" {
                self.fair = if v == "cfs" {
                    FairFlavor::Cfs
                } else {
                    FairFlavor::Eevdf
                };
            }
            return Ok(());
        }
        let upper = name.to_ascii_uppercase();
        let Some(&canon) = BOOL_FEATURES.iter().find(|f| **f == upper) else {
            let mut all: Vec<String> = BOOL_FEATURES.iter().map(|s| s.to_string()).collect();
            all.extend(ENUM_FEATURES.iter().map(|(k, _)| k.to_string()));
            return Err(format!(
                "unknown scheduler feature '{name}'; known features: {}",
                all.join(", ")
            ));
        };
        let on = match value {
            serde_json::Value::Bool(b) => *b,
            serde_json::Value::Number(n) if n.as_u64() == Some(0) || n.as_u64() == Some(1) => {
                n.as_u64() == Some(1)
            }
            _ => {
                return Err(format!(
                    "features.{canon} = {value}: allowed values are true/false (or 1/0)"
                ))
            }
        };
        let f = &mut self.feat;
        match canon {
            "GENTLE_FAIR_SLEEPERS" => f.gentle_fair_sleepers = on,
            "START_DEBIT" => f.start_debit = on,
            "LAST_BUDDY" => f.last_buddy = on,
            "NEXT_BUDDY" => f.next_buddy = on,
            "CACHE_HOT_BUDDY" => f.cache_hot_buddy = on,
            "WAKEUP_PREEMPTION" => f.wakeup_preemption = on,
            "PLACE_LAG" => f.place_lag = on,
            "PLACE_DEADLINE_INITIAL" => f.place_deadline_initial = on,
            "RUN_TO_PARITY" => f.run_to_parity = on,
            "UTIL_EST" => f.util_est = on,
            "UTIL_EST_FASTUP" => f.util_est_fastup = on,
            "WA_IDLE" => f.wa_idle = on,
            "WA_WEIGHT" => f.wa_weight = on,
            "WA_BIAS" => f.wa_bias = on,
            "SIS_UTIL" => f.sis_util = on,
            "LB_MIN" => f.lb_min = on,
            "BASE_SLICE" => f.base_slice = on,
            "RUNNABLE_BOOST" => self.runnable_boost = on,
            "RT_RUNTIME_SHARE" => f.rt_runtime_share = on,
            _ => unreachable!("every BOOL_FEATURES entry is matched"),
        }
        Ok(())
    }

    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        self.version >= (major, minor)
    }

    /// What keeps RT tasks from starving the fair class: RT throttling
    /// (`sched_rt_runtime_us`) before v6.12, the fair deadline server from v6.12
    /// (5f6bd380c7bd, "sched/rt: Remove default bandwidth control", without RT_GROUP_SCHED).
    pub fn fair_server(&self) -> bool {
        self.at_least(6, 12)
    }

    /// Jiffy length in ns.
    pub fn tick_ns(&self) -> u64 {
        1_000_000_000 / self.hz as u64
    }

    /// A short description for results: `6.12 (EEVDF)`.
    pub fn describe(&self) -> String {
        format!(
            "{}.{} ({})",
            self.version.0,
            self.version.1,
            match self.fair {
                FairFlavor::Cfs => "CFS",
                FairFlavor::Eevdf => "EEVDF",
            }
        )
    }

    /// Feature values as `NAME -> value` for reports.
    pub fn features_map(&self) -> BTreeMap<String, bool> {
        let f = &self.feat;
        [
            ("GENTLE_FAIR_SLEEPERS", f.gentle_fair_sleepers),
            ("START_DEBIT", f.start_debit),
            ("LAST_BUDDY", f.last_buddy),
            ("NEXT_BUDDY", f.next_buddy),
            ("CACHE_HOT_BUDDY", f.cache_hot_buddy),
            ("WAKEUP_PREEMPTION", f.wakeup_preemption),
            ("PLACE_LAG", f.place_lag),
            ("PLACE_DEADLINE_INITIAL", f.place_deadline_initial),
            ("RUN_TO_PARITY", f.run_to_parity),
            ("UTIL_EST", f.util_est),
            ("UTIL_EST_FASTUP", f.util_est_fastup),
            ("WA_IDLE", f.wa_idle),
            ("WA_WEIGHT", f.wa_weight),
            ("WA_BIAS", f.wa_bias),
            ("SIS_UTIL", f.sis_util),
            ("LB_MIN", f.lb_min),
            ("BASE_SLICE", f.base_slice),
            ("RUNNABLE_BOOST", self.runnable_boost),
            ("RT_RUNTIME_SHARE", f.rt_runtime_share),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(v: &str) -> KernelSpec {
        KernelSpec {
            version: v.into(),
            ..KernelSpec::default()
        }
    }

    #[test]
    fn versions_pick_the_fair_flavor() {
        assert_eq!(
            KernelProfile::from_spec(&spec("5.2")).unwrap().fair,
            FairFlavor::Cfs
        );
        assert_eq!(
            KernelProfile::from_spec(&spec("6.5")).unwrap().fair,
            FairFlavor::Cfs
        );
        assert_eq!(
            KernelProfile::from_spec(&spec("6.6")).unwrap().fair,
            FairFlavor::Eevdf
        );
        assert_eq!(
            KernelProfile::from_spec(&spec("6.12")).unwrap().fair,
            FairFlavor::Eevdf
        );
        let p = KernelProfile::from_spec(&spec("6.15")).unwrap();
        assert_eq!(p.base_slice_ns, 700_000);
        assert!(p.util_est_v2);
        let old = KernelProfile::from_spec(&spec("5.2")).unwrap();
        assert!(old.pelt_runnable_weighted && !old.util_est_v2 && old.busy_factor == 32);
        assert!(old.post_init_scaled_weight);
        assert!(!old.feat.util_est_fastup);
        let v55 = KernelProfile::from_spec(&spec("5.5")).unwrap();
        assert!(v55.feat.util_est_fastup);
        assert!(old.lb_load_based && !v55.lb_load_based);
        assert!(
            !KernelProfile::from_spec(&spec("6.9"))
                .unwrap()
                .feat
                .util_est_fastup
        );
        assert!(
            KernelProfile::from_spec(&spec("6.9"))
                .unwrap()
                .post_init_scaled_weight
        );
        assert!(
            !KernelProfile::from_spec(&spec("6.10"))
                .unwrap()
                .post_init_scaled_weight
        );
    }

    #[test]
    fn preemption_model_by_version_and_override() {
        // distribution kernels: voluntary preemption before PREEMPT_DYNAMIC (v5.12), which
        // builds CONFIG_PREEMPTION into every kernel
        let v52 = KernelProfile::from_spec(&spec("5.2")).unwrap();
        assert_eq!(v52.preempt, Preemption::Voluntary);
        assert!(!v52.preempt.config_preemption());
        assert_eq!(
            KernelProfile::from_spec(&spec("5.11")).unwrap().preempt,
            Preemption::Voluntary
        );
        let v512 = KernelProfile::from_spec(&spec("5.12")).unwrap();
        assert_eq!(v512.preempt, Preemption::Dynamic);
        assert!(v512.preempt.config_preemption());
        let with = |v: &str, model: &str| {
            let mut s = spec(v);
            s.features
                .insert("preempt".into(), serde_json::json!(model));
            KernelProfile::from_spec(&s)
        };
        assert!(with("5.2", "full").unwrap().preempt.config_preemption());
        assert!(!with("6.12", "none").unwrap().preempt.config_preemption());
        let e = with("6.12", "rt").unwrap_err();
        assert!(e.contains("preempt") && e.contains("voluntary"), "{e}");
    }

    #[test]
    fn feature_overrides_and_errors() {
        let mut s = spec("6.12");
        s.features
            .insert("next_buddy".into(), serde_json::json!(true));
        s.features.insert("fair".into(), serde_json::json!("cfs"));
        let p = KernelProfile::from_spec(&s).unwrap();
        assert!(p.feat.next_buddy);
        assert_eq!(p.fair, FairFlavor::Cfs);
        let mut bad = spec("6.12");
        bad.features
            .insert("NO_SUCH".into(), serde_json::json!(true));
        let e = KernelProfile::from_spec(&bad).unwrap_err();
        assert!(e.contains("NO_SUCH") && e.contains("PLACE_LAG"), "{e}");
        assert!(KernelProfile::from_spec(&spec("banana"))
            .unwrap_err()
            .contains("banana"));
    }
}
