//! `nas-omp`: the NAS Parallel Benchmarks, OpenMP versions (MMTests `config-hpc-nas-omp-full`,
//! spec/workloads.md §9.3).
//!
//! Bulk-synchronous: T threads × K supersteps. In each superstep every thread runs its share of
//! the loop nest (the kernel's work / (K·T), ± a static-schedule imbalance), then the threads
//! meet at a barrier. K = iterations × barriers per iteration, from the structure of each
//! kernel's OpenMP code. The total work is the kernel's own operation count (the formula its
//! `print_results` uses for Mop/s, per class) × cycles per operation, split into core cycles
//! and a memory stall that does not scale with frequency.
//!
//! Waiting at a barrier: libgomp spins (GOMP_SPINCOUNT = 300,000 `pause` iterations with
//! OMP_WAIT_POLICY unset, ≥ 1 ms) before it sleeps on a futex, so in a balanced superstep the
//! early threads spin until the last one arrives. The model draws each thread's share per
//! superstep position at build time, so it knows the superstep's slowest share and lets every
//! thread spin (busy, at the same mix of cycles and stall) for the difference before it enters
//! the barrier: at equal speeds all arrive together; a thread slowed by the scheduler (shared
//! CPU, SMT sibling, lower frequency) makes the others block and be woken. With more threads
//! than CPUs libgomp spins only 100 iterations, so the model does not spin at all.

use std::collections::BTreeMap;

use serde_json::Value;

use super::constants::Constants;
use super::fio::{choice, finished_s, int_or, looped, mark, mark_id, task};
use super::spec::{CustomWorkload, OpSpec};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;
use crate::sim::rng::RngStream;

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| {
            Ok(Box::new(NasOmp::new(
                ctx.params,
                ctx.topo.cpus.len(),
                ctx.seed,
            )?))
        },
    }
}

pub const KERNELS: [&str; 9] = ["bt", "cg", "ep", "ft", "is", "lu", "mg", "sp", "ua"];
pub const CLASSES: [&str; 5] = ["S", "W", "A", "B", "C"];

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "nas-omp",
        description: "NAS Parallel Benchmarks (OpenMP): T threads x K supersteps of (share of the kernel's NPB operation count +/- imbalance, libgomp spin) then a barrier; K from the kernel's iterations and its OpenMP loop structure; runs to completion.",
        params: vec![
            ParamInfo { name: "kernel", default: "bt".into(), description: "bt, cg, ep, ft, is, lu, mg, sp or ua" },
            ParamInfo { name: "threads", default: Value::Null, description: "OMP_NUM_THREADS (default: number of CPUs)" },
            ParamInfo { name: "class", default: "C".into(), description: "problem class S, W, A, B or C (MMTests runs C)" },
        ],
        metrics: vec!["elapsed_s", "mops_total", "supersteps", "iterations"],
        primary: "elapsed_s",
        higher_is_better: false,
        open_ended: false,
    }
}

/// One kernel at one class: NPB's operation count, iterations and barriers.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelShape {
    /// Operations NPB counts for its Mop/s (flops, keys ranked, random numbers, points).
    pub ops: f64,
    pub iterations: u64,
    pub barriers_per_iteration: u64,
}

fn class_index(class: &str) -> usize {
    CLASSES.iter().position(|c| *c == class).unwrap_or(4)
}

/// The NPB class definitions (npbparams.h as `sys/setparams.c` writes them) and each kernel's
/// Mop/s formula (its `print_results` call), with the barrier structure from the constants.
pub fn shape(kernel: &str, class: &str, c: &Constants) -> KernelShape {
    let i = class_index(class);
    let b = |k: &str| c.get(k) as u64;
    // grid n, iterations
    let cube = |n: f64, a: f64, b2: f64, c1: f64, d: f64| a * n * n * n - b2 * n * n + c1 * n - d;
    match kernel {
        "bt" => {
            let (n, it) = [(12, 60), (24, 200), (64, 200), (102, 200), (162, 200)][i];
            let ops = it as f64 * cube(n as f64, 3478.8, 17655.7, 28023.7, 0.0);
            KernelShape {
                ops,
                iterations: it,
                barriers_per_iteration: b("barriers_bt"),
            }
        }
        "sp" => {
            let (n, it) = [(12, 100), (36, 400), (64, 400), (102, 400), (162, 400)][i];
            let ops = it as f64 * cube(n as f64, 881.174, 4683.91, 11484.5, 19272.4);
            KernelShape {
                ops,
                iterations: it,
                barriers_per_iteration: b("barriers_sp"),
            }
        }
        "lu" => {
            let (n, it) = [(12, 50), (33, 300), (64, 250), (102, 250), (162, 250)][i];
            let ops = it as f64 * cube(n as f64, 1984.77, 10923.3, 27770.9, 144010.0);
            KernelShape {
                ops,
                iterations: it,
                barriers_per_iteration: b("barriers_lu_fixed") + 2 * (n - 2),
            }
        }
        "cg" => {
            let (na, nonzer, it) = [
                (1400.0, 7.0, 15),
                (7000.0, 8.0, 15),
                (14000.0, 11.0, 15),
                (75000.0, 13.0, 75),
                (150000.0, 15.0, 75),
            ][i];
            let nz2 = nonzer * (nonzer + 1.0);
            let ops = 2.0 * it as f64 * na * (3.0 + nz2 + 25.0 * (5.0 + nz2) + 3.0);
            // cgitmax = 25 inner iterations per outer iteration (cg.f90)
            KernelShape {
                ops,
                iterations: it,
                barriers_per_iteration: 25 * b("barriers_cg_inner") + b("barriers_cg_outer"),
            }
        }
        "mg" => {
            let (n, it) = [(32u64, 4), (128, 4), (256, 4), (256, 20), (512, 20)][i];
            let ops = 58.0 * it as f64 * (n * n * n) as f64;
            let levels = n.trailing_zeros() as u64;
            KernelShape {
                ops,
                iterations: it,
                barriers_per_iteration: b("barriers_mg_level") * levels + b("barriers_mg_fixed"),
            }
        }
        "ft" => {
            let (nx, ny, nz, it) = [
                (64.0, 64.0, 64.0, 6),
                (128.0, 128.0, 32.0, 6),
                (256.0, 256.0, 128.0, 6),
                (512.0, 256.0, 256.0, 20),
                (512.0, 512.0, 512.0, 20),
            ][i];
            let nt: f64 = nx * ny * nz;
            let ops =
                nt * (14.8157 + 7.19641 * nt.ln() + (5.23518 + 7.21113 * nt.ln()) * it as f64);
            KernelShape {
                ops,
                iterations: it,
                barriers_per_iteration: b("barriers_ft"),
            }
        }
        "is" => {
            let keys_log2 = [16, 20, 23, 25, 27][i];
            // MAX_ITERATIONS = 10 rankings
            KernelShape {
                ops: 10.0 * (1u64 << keys_log2) as f64,
                iterations: 10,
                barriers_per_iteration: b("barriers_is"),
            }
        }
        "ep" => {
            let m = [24, 25, 28, 30, 32][i];
            KernelShape {
                ops: (1u64 << (m + 1)) as f64,
                iterations: 1,
                barriers_per_iteration: 1,
            }
        }
        _ => {
            // ua: lelt (element bound), niter, nmxh (diffusion CG iterations)
            let (lelt, it, nmxh) = [
                (250.0, 50, 10.0),
                (700.0, 100, 10.0),
                (8800.0, 200, 10.0),
                (33500.0, 200, 10.0),
                (140000.0, 200, 10.0),
            ][i];
            let nelt = lelt * c.get("ua_fill");
            KernelShape {
                ops: it as f64 * nelt * 125.0 * (nmxh + 1.0),
                iterations: it,
                barriers_per_iteration: b("barriers_ua"),
            }
        }
    }
}

/// The NAS OpenMP model.
#[derive(Clone, Debug)]
pub struct NasOmp {
    pub kernel: String,
    pub class: String,
    pub threads: u32,
    pub shape: KernelShape,
    /// Cycles and stall (ns) of one thread's mean share of one superstep.
    pub share_cycles: f64,
    pub share_stall_ns: f64,
    /// Per superstep position within an iteration, per thread: the share factor 1 + δ.
    pub factors: Vec<Vec<f64>>,
    /// Whether early threads spin to the superstep's slowest share.
    pub spin: bool,
}

impl NasOmp {
    pub fn new(params: &BTreeMap<String, Value>, ncpus: usize, seed: u64) -> Result<Self, String> {
        let p = Params::new("nas-omp", params, &info())?;
        let kernel = choice("nas-omp", params, "kernel", "bt", &KERNELS)?;
        let class = choice("nas-omp", params, "class", "C", &CLASSES)?;
        let threads = int_or(&p, params, "threads", ncpus as i64, 1, 4096)? as u32;
        let c = Constants::parse("nas-omp", include_str!("../../data/workloads/nas-omp.json"))?;
        let shape = shape(&kernel, &class, &c);
        let cpo = c.get(&format!("cpo_{kernel}"));
        let stall = c.get(&format!("stall_{kernel}"));
        let f_ref = c.get("ref_clock_hz");
        let k = shape.iterations * shape.barriers_per_iteration;
        let per = shape.ops * cpo / (k as f64 * threads as f64);
        let imb = c.get("imbalance");
        let mut rng = RngStream::new(seed, "nas-omp");
        // shares drawn around the mean and re-centred: the superstep's total work is fixed
        let factors = (0..shape.barriers_per_iteration)
            .map(|_| {
                let d: Vec<f64> = (0..threads)
                    .map(|_| imb * (2.0 * rng.next_f64() - 1.0))
                    .collect();
                let m = d.iter().sum::<f64>() / threads as f64;
                d.iter().map(|x| 1.0 + x - m).collect()
            })
            .collect();
        Ok(NasOmp {
            kernel,
            class,
            threads,
            share_cycles: per * (1.0 - stall),
            share_stall_ns: per * stall / f_ref * 1e9,
            shape,
            factors,
            spin: threads as usize <= ncpus,
        })
    }

    /// Supersteps of the whole run.
    pub fn supersteps(&self) -> u64 {
        self.shape.iterations * self.shape.barriers_per_iteration
    }

    fn share(&self, f: f64) -> OpSpec {
        OpSpec::Run {
            cycles: self.share_cycles * f,
            stall_ns: self.share_stall_ns * f,
        }
    }

    fn program(&self, thread: usize) -> Vec<OpSpec> {
        let mut body = Vec::new();
        for step in &self.factors {
            // the share, then (when spinning) the spin to the slowest share: one burst, since
            // the spin runs at the share's own mix of cycles and stall
            let f = if self.spin {
                step.iter().cloned().fold(f64::MIN, f64::max)
            } else {
                step[thread]
            };
            body.push(self.share(f));
            body.push(OpSpec::Barrier { name: "omp".into() });
        }
        if thread == 0 {
            body.push(mark("iter"));
        }
        vec![looped(self.shape.iterations as i64, body), OpSpec::Exit]
    }
}

impl Model for NasOmp {
    fn build(&self) -> Result<CustomWorkload, String> {
        let exe = format!("{}.{}.x", self.kernel, self.class);
        let tasks = (0..self.threads as usize)
            .map(|t| {
                let name = if self.threads == 1 {
                    exe.clone()
                } else {
                    format!("{exe}-{t}")
                };
                task(name, 1, self.program(t))
            })
            .collect();
        Ok(CustomWorkload {
            tasks,
            channels: vec![],
        })
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let elapsed = finished_s(sim);
        let iterations = mark_id(sim, "iter")
            .map(|id| sim.marks.iter().filter(|m| m.2 == id).count())
            .unwrap_or(0);
        let mut values = BTreeMap::new();
        values.insert("elapsed_s".into(), elapsed);
        values.insert(
            "mops_total".into(),
            if elapsed > 0.0 {
                self.shape.ops / elapsed * 1e-6
            } else {
                super::NO_DATA
            },
        );
        values.insert("supersteps".into(), self.supersteps() as f64);
        values.insert("iterations".into(), iterations as f64);
        Metrics {
            values,
            primary: "elapsed_s".into(),
            higher_is_better: false,
        }
    }
}
