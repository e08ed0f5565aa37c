//! `gitsource`: git's `make test` without -j (MMTests `config-workload-shellscripts`,
//! spec/workloads.md §4): make runs one test script at a time; each script's shell forks
//! short-lived processes (git, sed, grep, cat, test-tool) one after another and waits for
//! each, plus one pipeline per test block whose 2 or 3 members run concurrently, connected
//! by pipes. At any instant about one task is runnable, but a different one every couple of
//! milliseconds, and every new one is placed by fork and exec balancing.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::constants::Constants;
use super::kernbench::{child, mark, start_task};
use super::spec::{ChannelSpec, CustomWorkload, Dist, OpSpec, TaskSpec};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;

fn consts() -> &'static Constants {
    static C: OnceLock<Constants> = OnceLock::new();
    C.get_or_init(|| {
        Constants::parse(
            "gitsource",
            include_str!("../../data/workloads/gitsource.json"),
        )
        .expect("embedded gitsource constants parse")
    })
}

/// The embedded constants (for the tests).
pub fn constants() -> &'static Constants {
    consts()
}

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| Ok(Box::new(Gitsource::new(ctx.params)?)),
    }
}

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "gitsource",
        description: "git's `make test` (v2.49.0, no -j): one test script at a time, each a shell forking and waiting for short git/sed/grep/test-tool processes, with one 2-3 stage pipeline per test block. Calibrated to 2,215 s on skylake-8x at max frequency.",
        params: vec![
            ParamInfo { name: "scripts", default: 1011.into(), description: "test scripts run (the first N of the suite's 1,011); each has 18-19 test blocks" },
            ParamInfo { name: "procs_per_block", default: (consts().get("single_procs_per_block") as i64).into(), description: "single (non-pipeline) processes per test block (the default is calibrated to 2,215 s on skylake-8x)" },
            ParamInfo { name: "work_ms", default: consts().get("proc_work_ms").into(), description: "mean work per process, ms on the reference machine (2.52 GHz Sapphire Rapids; default measured)" },
            ParamInfo { name: "work_sigma", default: consts().get("proc_work_sigma").into(), description: "lognormal sigma of the per-process work (default measured)" },
        ],
        metrics: vec!["elapsed_s", "scripts", "processes", "processes_per_s"],
        primary: "elapsed_s",
        higher_is_better: false,
        open_ended: false,
    }
}

#[derive(Clone, Debug)]
pub struct Gitsource {
    pub scripts: u32,
    pub procs_per_block: u32,
    /// Mean work per process (cycles) and the lognormal sigma.
    pub work_cycles: f64,
    pub work_sigma: f64,
    /// Test blocks of each script, in order.
    pub blocks: Vec<u32>,
}

/// Cycles per ms of reference-machine time.
fn ref_cycles_per_ms() -> f64 {
    let c = consts();
    c.get("ref_clock_mhz") * 1e3 * c.get("ref_ipc_ratio")
}

impl Gitsource {
    pub fn new(params: &BTreeMap<String, serde_json::Value>) -> Result<Self, String> {
        let c = consts();
        let p = Params::new("gitsource", params, &info())?;
        let total = c.get("scripts_total") as i64;
        let scripts = p.int("scripts", total, 1, total)? as u32;
        let procs_per_block = p.int(
            "procs_per_block",
            c.get("single_procs_per_block") as i64,
            0,
            100_000,
        )? as u32;
        let work_ms = p.f64("work_ms", c.get("proc_work_ms"), 0.0, 10_000.0)?;
        let work_sigma = p.f64("work_sigma", c.get("proc_work_sigma"), 0.0, 5.0)?;
        let b = c.get("blocks_total") as u64;
        let n = total as u64;
        let blocks = (0..scripts as u64)
            .map(|i| ((i + 1) * b / n - i * b / n) as u32)
            .collect();
        Ok(Gitsource {
            scripts,
            procs_per_block,
            work_cycles: work_ms * ref_cycles_per_ms(),
            work_sigma,
            blocks,
        })
    }

    /// Work of one process (or of one of `parts` chunks of it): a lognormal of the given mean.
    fn work(&self, parts: f64) -> OpSpec {
        let s = self.work_sigma;
        OpSpec::RunDist {
            dist: Dist::LogNormal {
                mu: -s * s / 2.0,
                sigma: s,
                scale: self.work_cycles / parts,
            },
            stall_ns: 0.0,
        }
    }

    fn workload(&self) -> CustomWorkload {
        let c = consts();
        let cpm = ref_cycles_per_ms();
        let shell = OpSpec::Run {
            cycles: c.get("shell_work_ms") * cpm,
            stall_ns: 0.0,
        };
        let make_work = OpSpec::Run {
            cycles: c.get("make_work_per_script_ms") * cpm,
            stall_ns: 0.0,
        };
        let chunks = c.get("pipeline_chunks") as i64;
        let mut tasks = Vec::new();

        // make: one script at a time
        let mut make = vec![mark("start")];
        for &k in &self.blocks {
            make.extend([
                make_work.clone(),
                OpSpec::Fork {
                    task: format!("t{k}"),
                },
                OpSpec::Wait,
            ]);
        }
        make.push(mark("end"));
        tasks.push(start_task("make", make));

        // the test scripts, one template per block count
        let single = |comm: &str| {
            vec![
                shell.clone(),
                OpSpec::Fork {
                    task: format!("c_{comm}"),
                },
                OpSpec::Wait,
            ]
        };
        // the command mix of a block: mostly git, with the usual text tools and helpers
        const MIX: [&str; 8] = [
            "git",
            "git",
            "sed",
            "git",
            "test-tool",
            "git",
            "grep",
            "cat",
        ];
        let mut counts: Vec<u32> = self.blocks.clone();
        counts.sort_unstable();
        counts.dedup();
        for k in counts {
            let mut prog = vec![OpSpec::Exec { comm: "sh".into() }];
            prog.push(OpSpec::Loop {
                count: c.get("setup_procs_per_script") as i64,
                body: single("git"),
            });
            for b in 0..k {
                for i in 0..self.procs_per_block {
                    prog.extend(single(MIX[i as usize % MIX.len()]));
                }
                // one pipeline per block: 2 and 3 stages alternately
                prog.push(shell.clone());
                let stages: &[&str] = if b % 2 == 0 {
                    &["p_src", "p_dst"]
                } else {
                    &["p_src", "p_mid", "p_end"]
                };
                for s in stages {
                    prog.push(OpSpec::Fork {
                        task: s.to_string(),
                    });
                }
                for _ in stages {
                    prog.push(OpSpec::Wait);
                }
            }
            prog.push(OpSpec::Exit);
            tasks.push(child(&format!("t{k}"), prog));
        }
        for comm in ["git", "sed", "grep", "cat", "test-tool"] {
            tasks.push(child(
                &format!("c_{comm}"),
                vec![
                    OpSpec::Exec { comm: comm.into() },
                    self.work(1.0),
                    OpSpec::Exit,
                ],
            ));
        }
        let n = chunks as f64;
        let send = |ch: &str| OpSpec::Send { chan: ch.into() };
        let recv = |ch: &str| OpSpec::Recv { chan: ch.into() };
        let stage = |name: &str, comm: &str, body: Vec<OpSpec>| -> TaskSpec {
            child(
                name,
                vec![
                    OpSpec::Exec { comm: comm.into() },
                    OpSpec::Loop {
                        count: chunks,
                        body,
                    },
                    OpSpec::Exit,
                ],
            )
        };
        tasks.push(stage("p_src", "git", vec![self.work(n), send("pipe1")]));
        tasks.push(stage("p_dst", "sed", vec![recv("pipe1"), self.work(n)]));
        tasks.push(stage(
            "p_mid",
            "sed",
            vec![recv("pipe1"), self.work(n), send("pipe2")],
        ));
        tasks.push(stage("p_end", "grep", vec![recv("pipe2"), self.work(n)]));

        CustomWorkload {
            tasks,
            channels: vec![
                ChannelSpec::new("pipe1", chunks as u32),
                ChannelSpec::new("pipe2", chunks as u32),
            ],
        }
    }
}

impl Model for Gitsource {
    fn build(&self) -> Result<CustomWorkload, String> {
        Ok(self.workload())
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let t = |n: &str| super::kernbench::mark_time(sim, n).map(|x| x as f64 * 1e-9);
        let end = t("end").unwrap_or(sim.now as f64 * 1e-9);
        let elapsed = end; // `time make test` starts with the run
        let procs = sim.stats.forks as f64;
        let mut values = BTreeMap::new();
        values.insert("elapsed_s".into(), elapsed);
        values.insert("scripts".into(), self.scripts as f64);
        values.insert("processes".into(), procs);
        values.insert(
            "processes_per_s".into(),
            if elapsed > 0.0 { procs / elapsed } else { 0.0 },
        );
        Metrics {
            values,
            primary: "elapsed_s".into(),
            higher_is_better: false,
        }
    }
}
