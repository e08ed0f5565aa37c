//! Scheduling domains and groups (`kernel/sched/topology.c`, spec/kernel.md §8.8): SMT (the
//! threads of a core), MC (the LLC), PKG (the package, when it has several LLCs), NUMA (the
//! machine). Degenerate levels (same span as the child) are dropped. Every CPU has its own chain,
//! with its own balance state, as in the kernel.

use crate::hw::topology::Topology;

/// Domain level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Smt,
    Mc,
    Pkg,
    Numa,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Smt => "SMT",
            Level::Mc => "MC",
            Level::Pkg => "PKG",
            Level::Numa => "NUMA",
        }
    }
}

/// `struct sched_domain` as seen from one CPU.
#[derive(Clone, Debug)]
pub struct SchedDomain {
    pub level: Level,
    /// CPUs covered, ascending.
    pub span: Vec<usize>,
    /// Groups: the child domain's spans (or single CPUs at the bottom). Group 0 holds this CPU.
    pub groups: Vec<Vec<usize>>,
    pub imbalance_pct: u32,
    pub cache_nice_tries: u32,
    pub busy_factor: u32,
    pub min_interval_ms: u64,
    pub max_interval_ms: u64,
    pub balance_interval_ms: u64,
    pub nr_balance_failed: u32,
    pub last_balance: u64,
    /// `max_newidle_lb_cost` (ns) and when it next decays.
    pub max_newidle_lb_cost: u64,
    pub next_decay_max_lb_cost: u64,
    /// SD_SHARE_CPUCAPACITY (SMT), SD_SHARE_LLC, SD_NUMA, SD_PREFER_SIBLING (on the child).
    pub share_cpucapacity: bool,
    pub share_llc: bool,
    pub numa: bool,
    pub prefer_sibling: bool,
    /// SD_BALANCE_FORK/EXEC and SD_WAKE_AFFINE.
    pub balance_fork: bool,
    pub wake_affine: bool,
    /// SD_ASYM_CPUCAPACITY.
    pub asym_cpucapacity: bool,
}

/// Build every CPU's domain chain, bottom-up.
pub fn build_sched_domains(
    topo: &Topology,
    busy_factor: u32,
    imbalance_pct_pkg: u32,
) -> Vec<Vec<SchedDomain>> {
    let n = topo.nr_cpus();
    let mut per_cpu = Vec::with_capacity(n);
    for cpu in 0..n {
        let c = &topo.cpus[cpu];
        // candidate spans bottom-up, each with how to form its groups
        let smt: Vec<usize> = topo.core_cpus[c.core].clone();
        let llc: Vec<usize> = topo.llc_cpus[c.llc].clone();
        let pkg: Vec<usize> = topo.package_cpus[c.package].clone();
        let all: Vec<usize> = (0..n).collect();
        let levels = [
            (Level::Smt, smt),
            (Level::Mc, llc),
            (Level::Pkg, pkg),
            (Level::Numa, all),
        ];
        let mut chain: Vec<SchedDomain> = Vec::new();
        let mut child_span: Vec<usize> = vec![cpu];
        for (level, span) in levels {
            if span.len() <= child_span.len() {
                continue; // degenerate
            }
            let groups = groups_for(topo, &span, cpu, &child_span, level);
            let weight = span.len() as u64;
            let numa = level == Level::Numa;
            let asym = {
                let cap0 = topo.cpus[span[0]].capacity_orig;
                span.iter().any(|&x| topo.cpus[x].capacity_orig != cap0)
            };
            chain.push(SchedDomain {
                level,
                groups,
                imbalance_pct: match level {
                    Level::Smt => 110,
                    Level::Mc => 117,
                    _ => imbalance_pct_pkg,
                },
                cache_nice_tries: match level {
                    Level::Smt => 0,
                    Level::Numa => 2,
                    _ => 1,
                },
                busy_factor,
                min_interval_ms: weight,
                max_interval_ms: 2 * weight,
                balance_interval_ms: weight,
                nr_balance_failed: 0,
                last_balance: 0,
                max_newidle_lb_cost: 0,
                next_decay_max_lb_cost: 0,
                share_cpucapacity: level == Level::Smt,
                share_llc: matches!(level, Level::Smt | Level::Mc),
                numa,
                prefer_sibling: false,
                balance_fork: true,
                wake_affine: true,
                asym_cpucapacity: asym,
                span: span.clone(),
            });
            child_span = span;
        }
        // SD_PREFER_SIBLING is set on every level but NUMA; the balancer reads it on the child.
        let flags: Vec<bool> = chain.iter().map(|d| !d.numa).collect();
        for i in 1..chain.len() {
            chain[i].prefer_sibling = flags[i - 1];
        }
        per_cpu.push(chain);
    }
    per_cpu
}

/// Groups of a domain: the spans of the next lower level's domains, with the local one first.
fn groups_for(
    topo: &Topology,
    span: &[usize],
    cpu: usize,
    child: &[usize],
    level: Level,
) -> Vec<Vec<usize>> {
    let key = |x: usize| -> usize {
        let c = &topo.cpus[x];
        match level {
            Level::Smt => x,
            Level::Mc => {
                if child.len() > 1 {
                    c.core
                } else {
                    x
                }
            }
            Level::Pkg => c.llc,
            Level::Numa => c.package * 1_000_000 + c.node,
        }
    };
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for &x in span {
        let k = key(x);
        match groups.iter_mut().find(|(gk, _)| *gk == k) {
            Some((_, g)) => g.push(x),
            None => groups.push((k, vec![x])),
        }
    }
    let local_key = key(cpu);
    let pos = groups
        .iter()
        .position(|(k, _)| *k == local_key)
        .unwrap_or(0);
    groups.rotate_left(pos);
    groups.into_iter().map(|(_, g)| g).collect()
}
