//! `gitsource`: git's `make test` without -j (MMTests `config-workload-shellscripts`,
//! spec/workloads.md §4), for the suite seed 000 ran: git v2.15.1 (MMTests' gitsource-bench of
//! 2019). make runs one test script at a time; each script's shell (dash) runs its test blocks,
//! forking git commands, text tools and subshells one after another and waiting for each, plus
//! one pipeline per block whose 2 or 3 members run concurrently, connected by pipes. At any
//! instant about one task is runnable, but a different one every couple of milliseconds, and
//! every new one is placed by fork and exec balancing.
//!
//! The block's make-up (how many git commands, tools and subshells), the work of each kind and
//! the shell's own work between forks are the measured ones (data/workloads/gitsource.json,
//! docs/workloads/gitsource.md "Measured structure"); nothing is fitted to a total.
//! Simplified: a git command is one process (its own children, hooks and helpers, are folded
//! into its work), the tools and subshells are drawn from one distribution each, and the
//! blocks of a script all have the same make-up.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::constants::Constants;
use super::kernbench::{child, mark, process, start_task};
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
        description: "git's `make test` (v2.15.1, the suite seed 000 ran; no -j): one test script at a time, each a dash shell forking and waiting for git commands, text tools and subshells, with one 2-3 stage pipeline per test block. Block make-up, work per process and shell work measured on the suite.",
        params: vec![
            ParamInfo { name: "scripts", default: (consts().get("scripts_total") as i64).into(), description: "test scripts run (the first N of the suite's 790); each has 15-16 test blocks" },
            ParamInfo { name: "git_ms", default: consts().get("git_work_ms").into(), description: "mean work of a git command, ms on the measurement machine (2.45 GHz Zen 3; default measured)" },
            ParamInfo { name: "git_sigma", default: consts().get("git_work_sigma").into(), description: "lognormal sigma of a git command's work (default measured)" },
        ],
        metrics: vec!["elapsed_s", "scripts", "processes", "processes_per_s"],
        primary: "elapsed_s",
        higher_is_better: false,
        open_ended: false,
    }
}

/// What a test block forks, one after another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmd {
    Git,
    Tool,
    Subshell,
}

#[derive(Clone, Debug)]
pub struct Gitsource {
    pub scripts: u32,
    /// Mean work of a git command (cycles) and its lognormal sigma.
    pub git_cycles: f64,
    pub git_sigma: f64,
    /// Test blocks of each script, in order.
    pub blocks: Vec<u32>,
}

/// Skylake-class cycles per ms of the measurement machine.
pub fn cycles_per_ms() -> f64 {
    let c = consts();
    c.get("measure_clock_mhz") * 1e3 * c.get("measure_ipc_ratio")
}

/// Work drawn from a lognormal with the given mean (cycles) and sigma.
fn lognormal(mean: f64, sigma: f64) -> OpSpec {
    OpSpec::RunDist {
        dist: Dist::lognormal_with_mean(mean, sigma),
        stall_ns: 0.0,
    }
}

/// How many of a kind the first `n` blocks hold at `per_block` each: spread evenly
/// (`⌊n · per_block⌋`), so block b gets `count(b + 1) − count(b)`.
fn spread(n: u32, per_block: f64) -> u32 {
    (n as f64 * per_block).floor() as u32
}

/// The single commands of block `b` (the pipeline's members not included): the measured counts
/// per block less the pipeline's git and its 1.5 tools, interleaved.
fn block_commands(b: u32) -> Vec<Cmd> {
    let c = consts();
    let kinds = [
        (Cmd::Subshell, c.get("subshells_per_block")),
        (Cmd::Git, c.get("git_per_block") - 1.0),
        (Cmd::Tool, c.get("util_per_block") - 1.5),
    ];
    let counts: Vec<(Cmd, u32)> = kinds
        .iter()
        .map(|&(k, per)| (k, spread(b + 1, per) - spread(b, per)))
        .collect();
    let most = counts.iter().map(|&(_, n)| n).max().unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..most {
        for &(k, n) in &counts {
            if i < n {
                out.push(k);
            }
        }
    }
    out
}

impl Gitsource {
    pub fn new(params: &BTreeMap<String, serde_json::Value>) -> Result<Self, String> {
        let c = consts();
        let p = Params::new("gitsource", params, &info())?;
        let total = c.get("scripts_total") as i64;
        let scripts = p.int("scripts", total, 1, total)? as u32;
        let git_ms = p.f64("git_ms", c.get("git_work_ms"), 0.0, 10_000.0)?;
        let git_sigma = p.f64("git_sigma", c.get("git_work_sigma"), 0.0, 5.0)?;
        let b = c.get("blocks_total") as u64;
        let n = total as u64;
        let blocks = (0..scripts as u64)
            .map(|i| ((i + 1) * b / n - i * b / n) as u32)
            .collect();
        Ok(Gitsource {
            scripts,
            git_cycles: git_ms * cycles_per_ms(),
            git_sigma,
            blocks,
        })
    }

    fn git_work(&self, parts: f64) -> OpSpec {
        lognormal(self.git_cycles / parts, self.git_sigma)
    }

    fn tool_work(parts: f64) -> OpSpec {
        let c = consts();
        lognormal(
            c.get("util_work_ms") * cycles_per_ms() / parts,
            c.get("util_work_sigma"),
        )
    }

    fn shell_work(mean_ms: f64) -> OpSpec {
        lognormal(mean_ms * cycles_per_ms(), consts().get("shell_work_sigma"))
    }

    fn workload(&self) -> CustomWorkload {
        let c = consts();
        let make_work = OpSpec::Run {
            cycles: c.get("make_work_per_script_ms") * cycles_per_ms(),
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
        let shell = Self::shell_work(c.get("shell_work_ms"));
        let single = |task: &str| {
            vec![
                shell.clone(),
                OpSpec::Fork { task: task.into() },
                OpSpec::Wait,
            ]
        };
        // the tools a block runs, in turn
        const TOOLS: [&str; 6] = ["c_diff", "c_sed", "c_expr", "c_cat", "c_grep", "c_rm"];
        let mut counts: Vec<u32> = self.blocks.clone();
        counts.sort_unstable();
        counts.dedup();
        for k in counts {
            let mut prog = vec![OpSpec::Exec { comm: "sh".into() }];
            let mut tool = 0;
            for b in 0..k {
                for cmd in block_commands(b) {
                    let task = match cmd {
                        Cmd::Git => "c_git",
                        Cmd::Subshell => "c_sub",
                        Cmd::Tool => {
                            tool += 1;
                            TOOLS[(tool - 1) % TOOLS.len()]
                        }
                    };
                    prog.extend(single(task));
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
        tasks.push(process("c_git", "git", self.git_work(1.0)));
        for t in TOOLS {
            tasks.push(process(t, &t[2..], Self::tool_work(1.0)));
        }
        // a subshell: a fork of the script's shell that runs shell code and exits
        tasks.push(child(
            "c_sub",
            vec![Self::shell_work(c.get("subshell_work_ms")), OpSpec::Exit],
        ));
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
        tasks.push(stage("p_src", "git", vec![self.git_work(n), send("pipe1")]));
        tasks.push(stage(
            "p_dst",
            "sed",
            vec![recv("pipe1"), Self::tool_work(n)],
        ));
        tasks.push(stage(
            "p_mid",
            "sed",
            vec![recv("pipe1"), Self::tool_work(n), send("pipe2")],
        ));
        tasks.push(stage(
            "p_end",
            "grep",
            vec![recv("pipe2"), Self::tool_work(n)],
        ));

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
        // `time make test` starts with the run; a run cut short has no elapsed time, and its
        // process rate is over the time it ran
        let elapsed = t("end").unwrap_or(super::NO_DATA);
        let ran = t("end").unwrap_or(sim.now as f64 * 1e-9);
        let procs = sim.stats.forks as f64;
        let mut values = BTreeMap::new();
        values.insert("elapsed_s".into(), elapsed);
        // the scripts make reaped: the exited tasks of the script templates (`t<blocks>`)
        let is_script = |name: &str| {
            name.strip_prefix('t')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        let scripts = sim
            .tasks
            .iter()
            .filter(|t| {
                t.stats.exit_ns.is_some() && is_script(&sim.compiled.programs[t.program].name)
            })
            .count();
        values.insert("scripts".into(), scripts as f64);
        values.insert("processes".into(), procs);
        values.insert(
            "processes_per_s".into(),
            if ran > 0.0 {
                procs / ran
            } else {
                super::NO_DATA
            },
        );
        Metrics {
            values,
            primary: "elapsed_s".into(),
            higher_is_better: false,
        }
    }
}
