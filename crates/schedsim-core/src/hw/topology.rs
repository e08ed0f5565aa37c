//! Machine topology: packages, NUMA nodes, LLCs, clusters, cores and SMT threads, and the CPU
//! capacities the scheduler sees (spec/kernel.md §2.1–§2.2: `arch_scale_cpu_capacity`, the
//! biggest CPU at its maximum frequency is 1024).

use crate::config::MachineSpec;

/// Static facts about one logical CPU.
#[derive(Clone, Debug)]
pub struct CpuInfo {
    pub id: usize,
    pub core: usize,
    pub cluster: usize,
    pub llc: usize,
    pub node: usize,
    pub package: usize,
    pub core_type: usize,
    pub freq_domain: usize,
    /// `arch_scale_cpu_capacity(cpu)`.
    pub capacity_orig: u64,
    /// Work per cycle relative to the biggest micro-architecture (capacity-dmips-mhz ratio).
    pub ipc_scale: f64,
}

/// The whole topology with member lists at each level.
#[derive(Clone, Debug)]
pub struct Topology {
    pub cpus: Vec<CpuInfo>,
    /// core -> its hardware threads (ascending CPU ids).
    pub core_cpus: Vec<Vec<usize>>,
    pub llc_cpus: Vec<Vec<usize>>,
    pub cluster_cpus: Vec<Vec<usize>>,
    pub package_cpus: Vec<Vec<usize>>,
    /// package -> its cores.
    pub package_cores: Vec<Vec<usize>>,
    pub node_cpus: Vec<Vec<usize>>,
    pub numa_distance: Vec<Vec<u32>>,
}

fn group(n: usize, key: impl Fn(usize) -> usize, count: usize) -> Vec<Vec<usize>> {
    let mut v = vec![Vec::new(); count];
    for i in 0..n {
        v[key(i)].push(i);
    }
    v
}

impl Topology {
    pub fn new(m: &MachineSpec) -> Topology {
        let n = m.cpus.len();
        let max_of =
            |f: fn(&crate::config::CpuSpec) -> usize| m.cpus.iter().map(f).max().unwrap_or(0) + 1;
        let ncores = max_of(|c| c.core);
        // capacity_i = dmips_i × fmax_i; cpu_scale = capacity_i × 1024 / max_j capacity_j
        let raw: Vec<u128> = m
            .cpus
            .iter()
            .map(|c| {
                let dmips = m.core_types[c.core_type].capacity_dmips_mhz as u128;
                let fmax = m.freq_domains[c.freq_domain]
                    .opps
                    .last()
                    .map(|o| o.khz)
                    .unwrap_or(1) as u128;
                dmips * fmax
            })
            .collect();
        let max_raw = raw.iter().copied().max().unwrap_or(1).max(1);
        let max_dmips = m
            .core_types
            .iter()
            .map(|t| t.capacity_dmips_mhz)
            .max()
            .unwrap_or(1024) as f64;
        let cpus: Vec<CpuInfo> = m
            .cpus
            .iter()
            .zip(&raw)
            .map(|(c, r)| CpuInfo {
                id: c.id,
                core: c.core,
                cluster: c.cluster,
                llc: c.llc,
                node: c.node,
                package: c.package,
                core_type: c.core_type,
                freq_domain: c.freq_domain,
                capacity_orig: ((r << 10) / max_raw) as u64,
                ipc_scale: m.core_types[c.core_type].capacity_dmips_mhz as f64 / max_dmips,
            })
            .collect();
        let core_cpus = group(n, |i| cpus[i].core, ncores);
        let npkg = max_of(|c| c.package);
        let mut package_cores = vec![Vec::new(); npkg];
        for (core, members) in core_cpus.iter().enumerate() {
            if let Some(&c0) = members.first() {
                package_cores[cpus[c0].package].push(core);
            }
        }
        let nnodes = max_of(|c| c.node);
        let numa_distance = if m.numa_distance.is_empty() {
            (0..nnodes)
                .map(|a| (0..nnodes).map(|b| if a == b { 10 } else { 20 }).collect())
                .collect()
        } else {
            m.numa_distance.clone()
        };
        Topology {
            llc_cpus: group(n, |i| cpus[i].llc, max_of(|c| c.llc)),
            cluster_cpus: group(n, |i| cpus[i].cluster, max_of(|c| c.cluster)),
            package_cpus: group(n, |i| cpus[i].package, npkg),
            node_cpus: group(n, |i| cpus[i].node, nnodes),
            core_cpus,
            package_cores,
            numa_distance,
            cpus,
        }
    }

    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// SMT siblings of `cpu`, including itself.
    pub fn siblings(&self, cpu: usize) -> &[usize] {
        &self.core_cpus[self.cpus[cpu].core]
    }

    pub fn smt_active(&self) -> bool {
        self.core_cpus.iter().any(|c| c.len() > 1)
    }

    pub fn shares_llc(&self, a: usize, b: usize) -> bool {
        self.cpus[a].llc == self.cpus[b].llc
    }

    /// Whether CPUs have different capacities (SD_ASYM_CPUCAPACITY somewhere).
    pub fn asym_capacity(&self) -> bool {
        let first = self.cpus[0].capacity_orig;
        self.cpus.iter().any(|c| c.capacity_orig != first)
    }
}
