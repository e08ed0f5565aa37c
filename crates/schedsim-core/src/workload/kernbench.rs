//! `kernbench`: `time make -jN vmlinux` of an x86_64 defconfig kernel (MMTests `kernbench`,
//! spec/workloads.md §3) as a job-server DAG of real processes.
//!
//! - **prepare**: the top-level make runs a serial chain of short processes and a few long
//!   ones (syncconfig, host tools, asm-offsets, a generated header).
//! - **bulk**: directory sub-makes (at most `jobs` alive, in directory order) start one
//!   compile job per object. A job needs a token from the jobserver pipe (a channel holding
//!   `jobs` tokens), so at most `jobs` run at once; the job puts its token back when its last
//!   recipe line is done, which wakes the next make blocked on the pipe. A job is the process
//!   chain `sh → gcc → cc1, as`, then `objtool`, `fixdep` and the bookkeeping recipe lines.
//!   When all its objects are done a sub-make archives them (`ar`, one more token).
//! - **link**: after every directory, `sh link-vmlinux.sh` runs its steps one after another.
//!
//! Compile work is drawn at build time from the run seed (the same tree of objects for every
//! configuration compared with the same seed), from the lognormal of the measured recipes,
//! converted from seconds on the reference machine to cycles.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::constants::Constants;
use super::spec::{ChannelSpec, CustomWorkload, Dist, OpSpec, TaskSpec};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;
use crate::sim::rng::RngStream;

fn consts() -> &'static Constants {
    static C: OnceLock<Constants> = OnceLock::new();
    C.get_or_init(|| {
        Constants::parse(
            "kernbench",
            include_str!("../../data/workloads/kernbench.json"),
        )
        .expect("embedded kernbench constants parse")
    })
}

/// The embedded constants (for `--describe` and the tests).
pub fn constants() -> &'static Constants {
    consts()
}

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| {
            Ok(Box::new(Kernbench::new(
                ctx.params,
                ctx.topo.nr_cpus(),
                ctx.seed,
            )?))
        },
    }
}

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "kernbench",
        description: "time make -jN vmlinux (x86_64 defconfig, Linux 6.1): serial prepare, compile jobs as sh→gcc→cc1/as→objtool→fixdep + bookkeeping process chains under a jobserver of N tokens, per-directory ar, serial link. Job work from the measured recipe lognormal.",
        params: vec![
            ParamInfo { name: "jobs", default: serde_json::Value::String("nr_cpus".into()), description: "make -jN: jobserver tokens (default: the machine's CPU count)" },
            ParamInfo { name: "objects", default: 3450.into(), description: "compile jobs; below 3450 the whole build is scaled by objects/3450 (prepare and link phases too), a proportional miniature" },
            ParamInfo { name: "work_scale", default: 1.0.into(), description: "the work of every process of the prepare and compile phases relative to the measured 6.1 defconfig recipes (another kernel version, compiler or build host): 0.5 makes each compile half as long" },
            ParamInfo { name: "link_scale", default: 1.0.into(), description: "the serial link's work relative to its 6.1 estimates (58.8 Gcycles at full size)" },
        ],
        metrics: vec!["elapsed_s", "user_s", "sys_s", "prepare_s", "link_s", "compile_jobs", "processes"],
        primary: "elapsed_s",
        higher_is_better: false,
        open_ended: false,
    }
}

/// Work of one compile job, in cycles.
#[derive(Clone, Copy, Debug)]
struct Object {
    cc1: f64,
    asm: f64,
    objtool: f64,
}

#[derive(Clone, Debug)]
pub struct Kernbench {
    pub jobs: u32,
    pub objects: u32,
    /// objects / defconfig_objects: the factor applied to the serial phases.
    pub scale: f64,
    /// Objects per directory, in directory order.
    pub dirs: Vec<u32>,
    /// Cycles per second of reference-machine time, times `work_scale`.
    hz: f64,
    /// The link steps' work relative to their 6.1 estimates.
    link_scale: f64,
    objs: Vec<Object>,
}

/// Cycles per second of reference-machine time.
fn ref_hz() -> f64 {
    let c = consts();
    c.get("ref_clock_mhz") * 1e6 * c.get("ref_ipc_ratio")
}

impl Kernbench {
    pub fn new(
        params: &BTreeMap<String, serde_json::Value>,
        nr_cpus: usize,
        seed: u64,
    ) -> Result<Self, String> {
        let p = Params::new("kernbench", params, &info())?;
        // the default as `schedsim workloads` lists it, written out
        let jobs = match p.raw("jobs") {
            Some(serde_json::Value::String(s)) if s == "nr_cpus" => nr_cpus.min(4096) as u32,
            _ => p.int("jobs", nr_cpus as i64, 1, 4096)? as u32,
        };
        let full = consts().get("defconfig_objects");
        let objects = p.int("objects", full as i64, 1, 100_000)? as u32;
        let work_scale = p.f64("work_scale", 1.0, 0.01, 100.0)?;
        let link_scale = p.f64("link_scale", 1.0, 0.01, 100.0)?;
        Ok(Self::build_tree(
            jobs, objects, work_scale, link_scale, seed,
        ))
    }

    fn build_tree(jobs: u32, objects: u32, work_scale: f64, link_scale: f64, seed: u64) -> Self {
        let c = consts();
        let hz = ref_hz() * work_scale;
        let mut rng = RngStream::new(seed, "kernbench-tree");
        let (mu, sigma) = (c.get("cc_mu"), c.get("cc_sigma"));
        let objs = (0..objects)
            .map(|_| {
                let cycles = rng.lognormal(mu, sigma) * hz;
                Object {
                    cc1: cycles * c.get("cc1_share"),
                    asm: cycles * c.get("as_share"),
                    objtool: cycles * c.get("objtool_share"),
                }
            })
            .collect();
        let ndirs = ((objects as f64 / c.get("objects_per_directory")).round() as u32).max(1);
        // objects spread evenly over the directories, in order
        let dirs = (0..ndirs)
            .map(|d| {
                let lo = d as u64 * objects as u64 / ndirs as u64;
                let hi = (d as u64 + 1) * objects as u64 / ndirs as u64;
                (hi - lo) as u32
            })
            .collect();
        Kernbench {
            jobs,
            objects,
            scale: objects as f64 / c.get("defconfig_objects"),
            dirs,
            hz,
            link_scale,
            objs,
        }
    }

    /// Total cycles of the compile recipes (cc1 + as + objtool), for the tests.
    pub fn compile_cycles(&self) -> f64 {
        self.objs.iter().map(|o| o.cc1 + o.asm + o.objtool).sum()
    }

    /// Cycles of `key` (ms at the reference machine).
    fn ms(&self, key: &str) -> f64 {
        consts().get(key) * 1e-3 * self.hz
    }

    fn workload(&self) -> CustomWorkload {
        let c = consts();
        let hz = self.hz;
        let s = self.scale;
        let mut tasks = Vec::new();
        let bk_dist = Dist::LogNormal {
            mu: c.get("bookkeeping_mu"),
            sigma: c.get("bookkeeping_sigma"),
            scale: hz,
        };
        let make_work = self.ms("make_work_per_object_ms");
        let sh_work = self.ms("sh_work_ms");

        // --- the top-level make: tokens, prepare, directories, link ---
        let mut top = vec![mark("start")];
        top.push(OpSpec::Loop {
            count: self.jobs as i64,
            body: vec![OpSpec::Send {
                chan: "jobserver".into(),
            }],
        });
        let n_short = ((c.get("prepare_short_procs") * s).round() as i64).max(1);
        let long = [
            ("syncconfig", "conf", c.get("prepare_syncconfig_s")),
            ("hosttools", "gcc", c.get("prepare_hosttools_s")),
            ("asm_offsets", "cc1", c.get("prepare_asm_offsets_s")),
            ("genheader", "sh", c.get("prepare_genheader_s")),
        ];
        // the long jobs sit between equal runs of short processes
        let parts = long.len() as i64;
        for (i, (name, comm, secs)) in long.iter().enumerate() {
            let k = n_short * (i as i64 + 1) / parts - n_short * i as i64 / parts;
            top.push(OpSpec::Loop {
                count: k,
                body: vec![
                    run(make_work),
                    OpSpec::Fork {
                        task: "prep".into(),
                    },
                    OpSpec::Wait,
                ],
            });
            let t = format!("prep_{name}");
            top.extend([
                run(make_work),
                OpSpec::Fork { task: t.clone() },
                OpSpec::Wait,
            ]);
            tasks.push(process(&t, comm, run(secs * s * hz)));
        }
        tasks.push(process("prep", "sh", run_dist(&bk_dist)));
        top.push(mark("prepare_done"));
        let ndirs = self.dirs.len();
        let window = (self.jobs as usize).min(ndirs);
        for d in 0..window {
            top.push(OpSpec::Fork {
                task: format!("dir{d}"),
            });
        }
        for d in window..ndirs {
            top.extend([
                OpSpec::Wait,
                OpSpec::Fork {
                    task: format!("dir{d}"),
                },
            ]);
        }
        top.push(OpSpec::Loop {
            count: window as i64,
            body: vec![OpSpec::Wait],
        });
        top.extend([
            mark("bulk_done"),
            OpSpec::Fork {
                task: "link".into(),
            },
            OpSpec::Wait,
            mark("end"),
        ]);
        tasks.insert(0, start_task("make", top));

        // --- directories and their objects ---
        let mut obj = 0usize;
        for (d, &n) in self.dirs.iter().enumerate() {
            let mut prog = vec![OpSpec::Exec {
                comm: "make".into(),
            }];
            for _ in 0..n {
                prog.extend([
                    OpSpec::Recv {
                        chan: "jobserver".into(),
                    },
                    run(make_work),
                    OpSpec::Fork {
                        task: format!("job{obj}"),
                    },
                ]);
                self.object_tasks(obj, &mut tasks, sh_work);
                obj += 1;
            }
            prog.extend([
                OpSpec::Loop {
                    count: n as i64,
                    body: vec![OpSpec::Wait],
                },
                OpSpec::Recv {
                    chan: "jobserver".into(),
                },
                run(make_work),
                OpSpec::Fork { task: "ar".into() },
                OpSpec::Wait,
                OpSpec::Send {
                    chan: "jobserver".into(),
                },
                OpSpec::Exit,
            ]);
            tasks.push(child(&format!("dir{d}"), prog));
        }
        tasks.push(process("ar", "ar", run(self.ms("ar_work_ms"))));
        tasks.push(process("fixdep", "fixdep", run(self.ms("fixdep_work_ms"))));
        tasks.push(process("bk", "sh", run_dist(&bk_dist)));

        // --- link: scripts/link-vmlinux.sh and its steps, one after another ---
        let g = |k: &str| c.get(k) * 1e9 * s * self.link_scale;
        let steps: Vec<(&str, &str, f64)> = vec![
            ("l_vmlinux_a", "ar", g("link_ar_vmlinux_gcycles")),
            ("l_ld_r", "ld", g("link_ld_r_gcycles")),
            ("l_objtool", "objtool", g("link_objtool_gcycles")),
            ("l_modpost", "modpost", g("link_modpost_gcycles")),
            ("l_ld1", "ld", g("link_ld_pass_gcycles")),
            ("l_kallsyms1", "kallsyms", g("link_kallsyms_gcycles")),
            ("l_ld2", "ld", g("link_ld_pass_gcycles")),
            ("l_kallsyms2", "kallsyms", g("link_kallsyms_gcycles")),
            ("l_ld3", "ld", g("link_ld_pass_gcycles")),
            ("l_sysmap", "nm", g("link_sysmap_gcycles")),
        ];
        let mut link = vec![
            OpSpec::Exec { comm: "sh".into() },
            mark("link_start"),
            run(sh_work),
        ];
        for (name, comm, cyc) in steps {
            link.extend([OpSpec::Fork { task: name.into() }, OpSpec::Wait]);
            tasks.push(process(name, comm, run(cyc)));
        }
        link.extend([mark("link_end"), OpSpec::Exit]);
        tasks.push(child("link", link));

        CustomWorkload {
            tasks,
            channels: vec![ChannelSpec::new("jobserver", self.jobs)],
        }
    }

    /// The process chain of object `i`: its job shell, gcc driver, cc1, as and objtool.
    fn object_tasks(&self, i: usize, tasks: &mut Vec<TaskSpec>, sh_work: f64) {
        let o = self.objs[i];
        let nbk = consts().get("bookkeeping_per_object") as i64;
        let job = vec![
            mark("job_start"),
            OpSpec::Exec { comm: "sh".into() },
            run(sh_work),
            OpSpec::Fork {
                task: format!("gcc{i}"),
            },
            OpSpec::Wait,
            run(sh_work),
            OpSpec::Fork {
                task: format!("objtool{i}"),
            },
            OpSpec::Wait,
            run(sh_work),
            OpSpec::Fork {
                task: "fixdep".into(),
            },
            OpSpec::Wait,
            // the recipe's bookkeeping lines (make forks them in order in the same job slot)
            OpSpec::Loop {
                count: nbk,
                body: vec![OpSpec::Fork { task: "bk".into() }, OpSpec::Wait],
            },
            mark("job_end"),
            OpSpec::Send {
                chan: "jobserver".into(),
            },
            OpSpec::Exit,
        ];
        tasks.push(child(&format!("job{i}"), job));
        let gcc = vec![
            OpSpec::Exec { comm: "gcc".into() },
            run(self.ms("gcc_driver_work_ms")),
            OpSpec::Fork {
                task: format!("cc1_{i}"),
            },
            OpSpec::Wait,
            OpSpec::Fork {
                task: format!("as{i}"),
            },
            OpSpec::Wait,
            OpSpec::Exit,
        ];
        tasks.push(child(&format!("gcc{i}"), gcc));
        tasks.push(process(&format!("cc1_{i}"), "cc1", run(o.cc1)));
        tasks.push(process(&format!("as{i}"), "as", run(o.asm)));
        tasks.push(process(&format!("objtool{i}"), "objtool", run(o.objtool)));
    }
}

pub(super) fn mark(name: &str) -> OpSpec {
    OpSpec::Mark { name: name.into() }
}

/// Program work (user time).
pub(super) fn run(cycles: f64) -> OpSpec {
    OpSpec::Run {
        cycles,
        stall_ns: 0.0,
    }
}

/// Program work drawn from a distribution (user time).
pub(super) fn run_dist(dist: &Dist) -> OpSpec {
    OpSpec::RunDist {
        dist: dist.clone(),
        stall_ns: 0.0,
    }
}

pub(super) fn start_task(name: &str, program: Vec<OpSpec>) -> TaskSpec {
    TaskSpec::new(name, program)
}

pub(super) fn child(name: &str, program: Vec<OpSpec>) -> TaskSpec {
    TaskSpec {
        start: false,
        ..start_task(name, program)
    }
}

/// A forked process: exec `comm`, do its work, exit.
pub(super) fn process(name: &str, comm: &str, work: OpSpec) -> TaskSpec {
    child(
        name,
        vec![OpSpec::Exec { comm: comm.into() }, work, OpSpec::Exit],
    )
}

/// User and system time as `/usr/bin/time` would split them: user = the on-CPU time of the
/// program work (the on-CPU time of the tasks' own `run` bursts, whether or not they were
/// preempted meanwhile; capped by each task's CPU time), sys = the rest of the CPU time (the
/// kernel paths the core charges: fork, exec, context switches, wakeups, migrations).
pub fn user_sys_s(sim: &Sim) -> (f64, f64) {
    let (mut user, mut total) = (0u64, 0u64);
    for t in &sim.tasks {
        user += t.stats.user_ns.min(t.stats.cpu_ns);
        total += t.stats.cpu_ns;
    }
    (user as f64 * 1e-9, (total - user) as f64 * 1e-9)
}

/// Time of the first mark named `name`.
pub fn mark_time(sim: &Sim, name: &str) -> Option<u64> {
    let id = sim.compiled.marks.iter().position(|m| m == name)?;
    sim.marks.iter().find(|m| m.2 == id).map(|m| m.0)
}

impl Model for Kernbench {
    fn build(&self) -> Result<CustomWorkload, String> {
        Ok(self.workload())
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let t = |n: &str| mark_time(sim, n).map(|x| x as f64 * 1e-9);
        let end = t("end").unwrap_or(super::NO_DATA);
        let start = 0.0; // `time make` starts with the run
        let (user, sys) = user_sys_s(sim);
        let mut values = BTreeMap::new();
        values.insert("elapsed_s".into(), end - start);
        values.insert("user_s".into(), user);
        values.insert("sys_s".into(), sys);
        values.insert(
            "prepare_s".into(),
            t("prepare_done").map_or(super::NO_DATA, |x| x - start),
        );
        values.insert(
            "link_s".into(),
            match (t("link_start"), t("link_end")) {
                (Some(a), Some(b)) => b - a,
                _ => super::NO_DATA,
            },
        );
        let done = sim
            .compiled
            .marks
            .iter()
            .position(|m| m == "job_end")
            .map_or(0, |id| sim.marks.iter().filter(|m| m.2 == id).count());
        values.insert("compile_jobs".into(), done as f64);
        values.insert("processes".into(), sim.tasks.len() as f64);
        Metrics {
            values,
            primary: "elapsed_s".into(),
            higher_is_better: false,
        }
    }
}
