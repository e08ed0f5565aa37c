//! Compiled task programs: [`super::spec::OpSpec`] trees flattened into a vector of ops with
//! resolved channel, template and mark indices, and loops turned into begin/end pairs.

use std::collections::BTreeMap;

use super::spec::{CustomWorkload, OpSpec, TaskSpec};

#[derive(Clone, Debug)]
pub enum Op {
    Run {
        cycles: f64,
        stall_ns: f64,
    },
    RunFor {
        ns: u64,
    },
    Sleep {
        ns: u64,
    },
    Timer {
        period_ns: u64,
    },
    Io {
        ns: u64,
    },
    Send {
        chan: usize,
    },
    Recv {
        chan: usize,
    },
    Fork {
        program: usize,
    },
    Exec {
        comm: String,
    },
    Wait,
    Exit,
    /// Start of a loop; `end` is the index of its `LoopEnd`.
    LoopBegin {
        count: i64,
        end: usize,
    },
    /// End of a loop; `begin` is the index of its `LoopBegin`.
    LoopEnd {
        begin: usize,
    },
    Mark {
        id: usize,
    },
}

/// One task template.
#[derive(Clone, Debug)]
pub struct Program {
    pub name: String,
    pub instances: u32,
    pub nice: i32,
    pub policy: String,
    pub cpus: Vec<usize>,
    pub start: bool,
    pub delay_ns: u64,
    pub start_cpu: Option<usize>,
    pub ops: Vec<Op>,
}

/// A bounded message channel.
#[derive(Clone, Debug)]
pub struct ChannelDef {
    pub name: String,
    pub capacity: u32,
}

/// The compiled workload.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    pub programs: Vec<Program>,
    pub channels: Vec<ChannelDef>,
    /// Mark names, indexed by mark id.
    pub marks: Vec<String>,
}

struct Ctx<'a> {
    chans: &'a BTreeMap<String, usize>,
    templates: &'a BTreeMap<String, usize>,
    marks: &'a mut Vec<String>,
    task: &'a str,
}

impl Ctx<'_> {
    fn chan(&self, name: &str) -> Result<usize, String> {
        self.chans.get(name).copied().ok_or_else(|| {
            format!(
                "task '{}': unknown channel '{name}' (declared channels: {})",
                self.task,
                self.chans.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        })
    }

    fn mark(&mut self, name: &str) -> usize {
        match self.marks.iter().position(|m| m == name) {
            Some(i) => i,
            None => {
                self.marks.push(name.to_string());
                self.marks.len() - 1
            }
        }
    }
}

fn compile_ops(ops: &[OpSpec], ctx: &mut Ctx, out: &mut Vec<Op>) -> Result<(), String> {
    for op in ops {
        let c = match op {
            OpSpec::Run { cycles, stall_ns } => {
                if !(cycles.is_finite()
                    && *cycles >= 0.0
                    && stall_ns.is_finite()
                    && *stall_ns >= 0.0)
                {
                    return Err(format!(
                        "task '{}': run needs cycles >= 0 and stall_ns >= 0",
                        ctx.task
                    ));
                }
                Op::Run {
                    cycles: *cycles,
                    stall_ns: *stall_ns,
                }
            }
            OpSpec::RunFor { ns } => Op::RunFor { ns: *ns },
            OpSpec::Sleep { ns } => Op::Sleep { ns: *ns },
            OpSpec::Timer { period_ns } => {
                if *period_ns == 0 {
                    return Err(format!("task '{}': timer period_ns must be > 0", ctx.task));
                }
                Op::Timer {
                    period_ns: *period_ns,
                }
            }
            OpSpec::Io { ns } => Op::Io { ns: *ns },
            OpSpec::Send { chan } => Op::Send {
                chan: ctx.chan(chan)?,
            },
            OpSpec::Recv { chan } => Op::Recv {
                chan: ctx.chan(chan)?,
            },
            OpSpec::Fork { task } => Op::Fork {
                program: *ctx.templates.get(task).ok_or_else(|| {
                    format!(
                        "task '{}': fork of unknown task template '{task}'",
                        ctx.task
                    )
                })?,
            },
            OpSpec::Exec { comm } => Op::Exec { comm: comm.clone() },
            OpSpec::Wait => Op::Wait,
            OpSpec::Exit => Op::Exit,
            OpSpec::Mark { name } => Op::Mark { id: ctx.mark(name) },
            OpSpec::Loop { count, body } => {
                let begin = out.len();
                out.push(Op::LoopBegin {
                    count: *count,
                    end: 0,
                });
                compile_ops(body, ctx, out)?;
                let end = out.len();
                out.push(Op::LoopEnd { begin });
                out[begin] = Op::LoopBegin { count: *count, end };
                continue;
            }
        };
        out.push(c);
    }
    Ok(())
}

/// Compile a custom workload; errors name the task and the offending key.
pub fn compile(w: &CustomWorkload) -> Result<Compiled, String> {
    if w.tasks.is_empty() {
        return Err("workload has no tasks".into());
    }
    let mut chans = BTreeMap::new();
    for (i, c) in w.channels.iter().enumerate() {
        if c.capacity == 0 {
            return Err(format!("channel '{}': capacity must be >= 1", c.name));
        }
        if chans.insert(c.name.clone(), i).is_some() {
            return Err(format!("channel '{}' declared twice", c.name));
        }
    }
    let mut templates = BTreeMap::new();
    for (i, t) in w.tasks.iter().enumerate() {
        if templates.insert(t.name.clone(), i).is_some() {
            return Err(format!("task '{}' declared twice", t.name));
        }
    }
    let mut marks = Vec::new();
    let mut programs = Vec::new();
    for t in &w.tasks {
        programs.push(compile_task(t, &chans, &templates, &mut marks)?);
    }
    if !programs.iter().any(|p| p.start) {
        return Err("workload has no task with start = true".into());
    }
    Ok(Compiled {
        programs,
        channels: w
            .channels
            .iter()
            .map(|c| ChannelDef {
                name: c.name.clone(),
                capacity: c.capacity,
            })
            .collect(),
        marks,
    })
}

fn compile_task(
    t: &TaskSpec,
    chans: &BTreeMap<String, usize>,
    templates: &BTreeMap<String, usize>,
    marks: &mut Vec<String>,
) -> Result<Program, String> {
    if !(-20..=19).contains(&t.nice) {
        return Err(format!(
            "task '{}': nice {} out of range -20..19",
            t.name, t.nice
        ));
    }
    crate::sched::task::Policy::parse(&t.policy).map_err(|e| format!("task '{}': {e}", t.name))?;
    let mut ops = Vec::new();
    let mut ctx = Ctx {
        chans,
        templates,
        marks,
        task: &t.name,
    };
    compile_ops(&t.program, &mut ctx, &mut ops)?;
    Ok(Program {
        name: t.name.clone(),
        instances: t.instances.max(1),
        nice: t.nice,
        policy: t.policy.clone(),
        cpus: t.cpus.clone(),
        start: t.start,
        delay_ns: t.delay_ns,
        start_cpu: t.start_cpu,
        ops,
    })
}
