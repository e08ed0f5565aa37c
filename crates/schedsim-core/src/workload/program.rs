//! Compiled task programs: [`super::spec::OpSpec`] trees flattened into a vector of ops with
//! resolved channel, template and mark indices, and loops turned into begin/end pairs.

use std::collections::BTreeMap;
use std::sync::Arc;

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
    /// The channel sets are shared (`Arc`): ops are cloned on every step.
    RecvAny {
        chans: Arc<[usize]>,
    },
    SendPolled {
        chans: Arc<[usize]>,
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
    RunDist {
        dist: super::spec::Dist,
        stall_ns: f64,
    },
    Lock {
        mutex: usize,
    },
    Unlock {
        mutex: usize,
    },
    LockRow {
        table: usize,
        rows: u32,
    },
    UnlockRows {
        table: usize,
    },
    GroupCommit {
        log: usize,
        ns: u64,
    },
    /// The first half of `journal_commit`: ask for the running transaction's commit (the
    /// wakeup it pays runs before the wait).
    JournalRequest {
        journal: usize,
    },
    /// The second half: sleep until the asked-for commit is written.
    JournalCommit {
        journal: usize,
    },
    JournalWait {
        journal: usize,
    },
    JournalDone {
        journal: usize,
    },
    Barrier {
        barrier: usize,
    },
    /// Release the mutex and wait on the condition (the next op re-takes the mutex).
    CondWait {
        cond: usize,
        mutex: usize,
    },
    Signal {
        cond: usize,
    },
    Broadcast {
        cond: usize,
    },
    Suspend,
    Resume {
        program: usize,
    },
    Yield,
    /// A named periodic clock (rt-app `timer`); `clock` indexes `Compiled::clocks`.
    Clock {
        clock: usize,
        period_ns: u64,
        unique: bool,
        relative: bool,
        origin_ns: u64,
    },
    SetAffinity {
        cpus: Vec<usize>,
    },
    /// `sched_setattr()` with `SCHED_FLAG_UTIL_CLAMP` on itself: each `Some` becomes the
    /// task's request for that clamp.
    SetUclamp {
        min: Option<u32>,
        max: Option<u32>,
    },
}

/// One task template.
#[derive(Clone, Debug)]
pub struct Program {
    pub name: String,
    pub instances: u32,
    pub nice: i32,
    pub policy: String,
    pub priority: u32,
    pub cpus: Vec<usize>,
    pub start: bool,
    pub delay_ns: u64,
    pub start_cpu: Option<usize>,
    /// The template's cgroup path (`None`: inherit the parent's group, or the root).
    pub cgroup: Option<String>,
    /// Utilization clamp requests (min, max) from creation (`None`: the default).
    pub uclamp: [Option<u32>; 2],
    pub ops: Vec<Op>,
}

impl Program {
    /// The template asks for utilization clamps: from creation or with a `set_uclamp` op.
    pub fn sets_uclamp(&self) -> bool {
        self.uclamp.iter().any(Option::is_some)
            || self.ops.iter().any(|op| matches!(op, Op::SetUclamp { .. }))
    }
}

/// A bounded message channel.
#[derive(Clone, Debug)]
pub struct ChannelDef {
    pub name: String,
    pub capacity: u32,
    pub tcp: bool,
    /// See [`super::spec::ChannelSpec::write_space`].
    pub write_space: Option<u32>,
    /// See [`super::spec::ChannelSpec::pipe_page`].
    pub pipe_page: Option<u32>,
}

/// The compiled workload.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    pub programs: Vec<Program>,
    pub channels: Vec<ChannelDef>,
    /// Mark names, indexed by mark id.
    pub marks: Vec<String>,
    /// Mutex, condition and barrier names, indexed by id.
    pub mutexes: Vec<String>,
    pub conds: Vec<String>,
    pub barriers: Vec<String>,
    /// Clock names (rt-app timer refs), indexed by clock id.
    pub clocks: Vec<String>,
    /// Row-lock tables, group-commit logs and journals, indexed by id.
    pub tables: Vec<String>,
    pub logs: Vec<String>,
    pub journals: Vec<String>,
    /// Parties of each barrier: the initial task instances whose program names it.
    pub barrier_parties: Vec<u32>,
}

struct Ctx<'a> {
    chans: &'a BTreeMap<String, usize>,
    templates: &'a BTreeMap<String, usize>,
    names: &'a mut Names,
    task: &'a str,
}

/// Named objects, created on first use.
#[derive(Default)]
struct Names {
    marks: Vec<String>,
    mutexes: Vec<String>,
    conds: Vec<String>,
    barriers: Vec<String>,
    clocks: Vec<String>,
    tables: Vec<String>,
    logs: Vec<String>,
    journals: Vec<String>,
}

fn intern(v: &mut Vec<String>, name: &str) -> usize {
    match v.iter().position(|m| m == name) {
        Some(i) => i,
        None => {
            v.push(name.to_string());
            v.len() - 1
        }
    }
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

    /// A non-empty list of distinct declared channels.
    fn chan_set(&self, names: &[String], op: &str) -> Result<Arc<[usize]>, String> {
        if names.is_empty() {
            return Err(format!(
                "task '{}': {op} needs at least one channel",
                self.task
            ));
        }
        let mut out = Vec::with_capacity(names.len());
        for n in names {
            let c = self.chan(n)?;
            if out.contains(&c) {
                return Err(format!(
                    "task '{}': {op} lists channel '{n}' twice",
                    self.task
                ));
            }
            out.push(c);
        }
        Ok(out.into())
    }

    fn template(&self, name: &str, op: &str) -> Result<usize, String> {
        self.templates.get(name).copied().ok_or_else(|| {
            format!(
                "task '{}': {op} of unknown task template '{name}'",
                self.task
            )
        })
    }
}

/// The longest time an op may name, in ns (2^62 ns, about 146 years): the core adds times to
/// the clock in 64-bit nanoseconds, and this keeps every sum in range.
pub const MAX_OP_NS: u64 = 1 << 62;

/// The most work one `run` (or one `run_dist` draw) may do, in cycles: 10^15 cycles last
/// 10^6 s even at 1 GHz, and stay below [`MAX_OP_NS`] at any clock of 1 MHz and up.
pub const MAX_OP_CYCLES: f64 = 1e15;

/// `value` of `key` in `op` is a time the clock can hold.
fn check_ns(ctx: &Ctx, op: &str, key: &str, value: u64) -> Result<(), String> {
    if value > MAX_OP_NS {
        return Err(format!(
            "task '{}': {op} {key} = {value}: at most {MAX_OP_NS} ns (about 146 years)",
            ctx.task
        ));
    }
    Ok(())
}

fn compile_ops(ops: &[OpSpec], ctx: &mut Ctx, out: &mut Vec<Op>) -> Result<(), String> {
    for op in ops {
        let c = match op {
            OpSpec::Run { cycles, stall_ns } => {
                if !(cycles.is_finite()
                    && (0.0..=MAX_OP_CYCLES).contains(cycles)
                    && stall_ns.is_finite()
                    && (0.0..=MAX_OP_NS as f64).contains(stall_ns))
                {
                    return Err(format!(
                        "task '{}': run needs cycles >= 0, at most {MAX_OP_CYCLES:e}, and \
                         stall_ns >= 0, at most {MAX_OP_NS}",
                        ctx.task
                    ));
                }
                Op::Run {
                    cycles: *cycles,
                    stall_ns: *stall_ns,
                }
            }
            OpSpec::RunFor { ns } => {
                check_ns(ctx, "run_for", "ns", *ns)?;
                Op::RunFor { ns: *ns }
            }
            OpSpec::Sleep { ns } => {
                check_ns(ctx, "sleep", "ns", *ns)?;
                Op::Sleep { ns: *ns }
            }
            OpSpec::Timer { period_ns } => {
                if *period_ns == 0 {
                    return Err(format!("task '{}': timer period_ns must be > 0", ctx.task));
                }
                check_ns(ctx, "timer", "period_ns", *period_ns)?;
                Op::Timer {
                    period_ns: *period_ns,
                }
            }
            OpSpec::Io { ns } => {
                check_ns(ctx, "io", "ns", *ns)?;
                Op::Io { ns: *ns }
            }
            OpSpec::Send { chan } => Op::Send {
                chan: ctx.chan(chan)?,
            },
            OpSpec::Recv { chan } => Op::Recv {
                chan: ctx.chan(chan)?,
            },
            OpSpec::RecvAny { chans } => Op::RecvAny {
                chans: ctx.chan_set(chans, "recv_any")?,
            },
            OpSpec::SendPolled { chans } => Op::SendPolled {
                chans: ctx.chan_set(chans, "send_polled")?,
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
            OpSpec::Mark { name } => Op::Mark {
                id: intern(&mut ctx.names.marks, name),
            },
            OpSpec::RunDist { dist, stall_ns } => {
                dist.validate()
                    .map_err(|e| format!("task '{}': run_dist: {e}", ctx.task))?;
                if !(stall_ns.is_finite() && (0.0..=MAX_OP_NS as f64).contains(stall_ns)) {
                    return Err(format!(
                        "task '{}': run_dist needs stall_ns >= 0, at most {MAX_OP_NS}",
                        ctx.task
                    ));
                }
                Op::RunDist {
                    dist: dist.clone(),
                    stall_ns: *stall_ns,
                }
            }
            OpSpec::Lock { mutex } => Op::Lock {
                mutex: intern(&mut ctx.names.mutexes, mutex),
            },
            OpSpec::Unlock { mutex } => Op::Unlock {
                mutex: intern(&mut ctx.names.mutexes, mutex),
            },
            OpSpec::LockRow { table, rows } => {
                if *rows == 0 {
                    return Err(format!(
                        "task '{}': lock_row on table '{table}' needs rows >= 1",
                        ctx.task
                    ));
                }
                Op::LockRow {
                    table: intern(&mut ctx.names.tables, table),
                    rows: *rows,
                }
            }
            OpSpec::UnlockRows { table } => Op::UnlockRows {
                table: intern(&mut ctx.names.tables, table),
            },
            OpSpec::GroupCommit { log, ns } => {
                check_ns(ctx, "group_commit", "ns", *ns)?;
                Op::GroupCommit {
                    log: intern(&mut ctx.names.logs, log),
                    ns: *ns,
                }
            }
            OpSpec::JournalCommit { journal } => {
                let journal = intern(&mut ctx.names.journals, journal);
                out.push(Op::JournalRequest { journal });
                Op::JournalCommit { journal }
            }
            OpSpec::JournalWait { journal } => Op::JournalWait {
                journal: intern(&mut ctx.names.journals, journal),
            },
            OpSpec::JournalDone { journal } => Op::JournalDone {
                journal: intern(&mut ctx.names.journals, journal),
            },
            OpSpec::Barrier { name } => Op::Barrier {
                barrier: intern(&mut ctx.names.barriers, name),
            },
            OpSpec::CondWait { cond, mutex } => {
                let cond = intern(&mut ctx.names.conds, cond);
                let mutex = intern(&mut ctx.names.mutexes, mutex);
                out.push(Op::CondWait { cond, mutex });
                Op::Lock { mutex }
            }
            OpSpec::Signal { cond } => Op::Signal {
                cond: intern(&mut ctx.names.conds, cond),
            },
            OpSpec::Broadcast { cond } => Op::Broadcast {
                cond: intern(&mut ctx.names.conds, cond),
            },
            OpSpec::Suspend => Op::Suspend,
            OpSpec::Resume { task } => Op::Resume {
                program: ctx.template(task, "resume")?,
            },
            OpSpec::Yield => Op::Yield,
            OpSpec::Clock {
                name,
                period_ns,
                unique,
                relative,
                origin_ns,
            } => {
                check_ns(ctx, "clock", "period_ns", *period_ns)?;
                check_ns(ctx, "clock", "origin_ns", *origin_ns)?;
                Op::Clock {
                    clock: intern(&mut ctx.names.clocks, name),
                    period_ns: *period_ns,
                    unique: *unique,
                    relative: *relative,
                    origin_ns: *origin_ns,
                }
            }
            OpSpec::SetAffinity { cpus } => Op::SetAffinity { cpus: cpus.clone() },
            OpSpec::SetUclamp { min, max } => {
                check_uclamp(&format!("task '{}': op set_uclamp", ctx.task), *min, *max)?;
                Op::SetUclamp {
                    min: *min,
                    max: *max,
                }
            }
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
        if c.write_space.is_some_and(|k| k >= c.capacity) {
            return Err(format!(
                "channel '{}': write_space must be below its capacity ({}), got {}",
                c.name,
                c.capacity,
                c.write_space.unwrap_or(0)
            ));
        }
        if let Some(pp) = c.pipe_page {
            if pp == 0 || c.capacity % pp != 0 || c.write_space.is_some() {
                return Err(format!(
                    "channel '{}': pipe_page must be >= 1 and divide the capacity ({}), without a write_space; got {pp}",
                    c.name, c.capacity
                ));
            }
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
    let mut names = Names::default();
    let mut programs = Vec::new();
    for t in &w.tasks {
        programs.push(compile_task(t, &chans, &templates, &mut names)?);
    }
    let mut barrier_parties = vec![0u32; names.barriers.len()];
    for p in programs.iter().filter(|p| p.start) {
        let mut seen = vec![false; names.barriers.len()];
        for op in &p.ops {
            if let Op::Barrier { barrier } = op {
                seen[*barrier] = true;
            }
        }
        for (b, s) in seen.into_iter().enumerate() {
            if s {
                barrier_parties[b] += p.instances;
            }
        }
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
                tcp: c.tcp,
                write_space: c.write_space,
                pipe_page: c.pipe_page,
            })
            .collect(),
        marks: names.marks,
        mutexes: names.mutexes,
        conds: names.conds,
        barriers: names.barriers,
        clocks: names.clocks,
        tables: names.tables,
        logs: names.logs,
        journals: names.journals,
        barrier_parties,
    })
}

fn compile_task(
    t: &TaskSpec,
    chans: &BTreeMap<String, usize>,
    templates: &BTreeMap<String, usize>,
    names: &mut Names,
) -> Result<Program, String> {
    if !(-20..=19).contains(&t.nice) {
        return Err(format!(
            "task '{}': nice {} out of range -20..19",
            t.name, t.nice
        ));
    }
    let policy = crate::sched::task::Policy::parse(&t.policy)
        .map_err(|e| format!("task '{}': {e}", t.name))?;
    let rt = matches!(
        policy,
        crate::sched::task::Policy::Fifo | crate::sched::task::Policy::Rr
    );
    if rt && !(1..=99).contains(&t.priority) {
        return Err(format!(
            "task '{}': {} needs priority 1..99, got {}",
            t.name, t.policy, t.priority
        ));
    }
    if !rt && t.priority != 0 {
        return Err(format!(
            "task '{}': priority is for SCHED_FIFO / SCHED_RR (policy is {})",
            t.name, t.policy
        ));
    }
    check_uclamp(&format!("task '{}'", t.name), t.uclamp_min, t.uclamp_max)?;
    let mut ops = Vec::new();
    let mut ctx = Ctx {
        chans,
        templates,
        names,
        task: &t.name,
    };
    compile_ops(&t.program, &mut ctx, &mut ops)?;
    if t.delay_ns > MAX_OP_NS {
        return Err(format!(
            "task '{}': delay_ns = {}: at most {MAX_OP_NS} ns (about 146 years)",
            t.name, t.delay_ns
        ));
    }
    Ok(Program {
        name: t.name.clone(),
        instances: t.instances.max(1),
        nice: t.nice,
        policy: t.policy.clone(),
        priority: t.priority,
        cpus: t.cpus.clone(),
        start: t.start,
        delay_ns: t.delay_ns,
        start_cpu: t.start_cpu,
        cgroup: t.cgroup.clone(),
        uclamp: [t.uclamp_min, t.uclamp_max],
        ops,
    })
}

/// `__checkparam_uclamp()`: each clamp within 0..1024 (`SCHED_CAPACITY_SCALE`), min <= max.
fn check_uclamp(what: &str, min: Option<u32>, max: Option<u32>) -> Result<(), String> {
    for (name, v) in [("uclamp_min", min), ("uclamp_max", max)] {
        if let Some(v) = v.filter(|&v| v > 1024) {
            return Err(format!("{what}: {name} = {v}: allowed range 0..=1024"));
        }
    }
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return Err(format!(
                "{what}: uclamp_min = {lo} exceeds uclamp_max = {hi}"
            ));
        }
    }
    Ok(())
}

impl Compiled {
    /// One copy of the workload per cgroup (`WorkloadSpec::cgroups`): programs, channels and
    /// synchronisation objects are duplicated with their indices shifted, and each copy's
    /// templates that name no group of their own go to that copy's group. Marks are shared by
    /// name, so a benchmark's metrics cover every copy.
    pub fn replicate(self, groups: &[String]) -> Compiled {
        if groups.is_empty() {
            return self;
        }
        let n = ObjectCounts::of(&self);
        let mut out = Compiled {
            marks: self.marks.clone(),
            ..Compiled::default()
        };
        for (k, g) in groups.iter().enumerate() {
            let tag = |name: &String| format!("{name}@{g}");
            for p in &self.programs {
                let mut q = p.clone();
                q.cgroup = Some(p.cgroup.clone().unwrap_or_else(|| g.clone()));
                for op in &mut q.ops {
                    n.shift_op(op, k);
                }
                out.programs.push(q);
            }
            out.channels
                .extend(self.channels.iter().map(|c| ChannelDef {
                    name: tag(&c.name),
                    capacity: c.capacity,
                    tcp: c.tcp,
                    write_space: c.write_space,
                    pipe_page: c.pipe_page,
                }));
            out.mutexes.extend(self.mutexes.iter().map(tag));
            out.conds.extend(self.conds.iter().map(tag));
            out.barriers.extend(self.barriers.iter().map(tag));
            out.clocks.extend(self.clocks.iter().map(tag));
            out.tables.extend(self.tables.iter().map(tag));
            out.logs.extend(self.logs.iter().map(tag));
            out.journals.extend(self.journals.iter().map(tag));
            out.barrier_parties
                .extend(self.barrier_parties.iter().copied());
        }
        out
    }
}

/// How many objects of each kind one copy of a workload has (`Compiled::replicate`).
struct ObjectCounts {
    programs: usize,
    channels: usize,
    mutexes: usize,
    conds: usize,
    barriers: usize,
    clocks: usize,
    tables: usize,
    logs: usize,
    journals: usize,
}

impl ObjectCounts {
    fn of(c: &Compiled) -> Self {
        ObjectCounts {
            programs: c.programs.len(),
            channels: c.channels.len(),
            mutexes: c.mutexes.len(),
            conds: c.conds.len(),
            barriers: c.barriers.len(),
            clocks: c.clocks.len(),
            tables: c.tables.len(),
            logs: c.logs.len(),
            journals: c.journals.len(),
        }
    }

    /// Shift the object indices of `op` into copy `k`.
    fn shift_op(&self, op: &mut Op, k: usize) {
        match op {
            Op::Send { chan } | Op::Recv { chan } => *chan += k * self.channels,
            Op::RecvAny { chans } | Op::SendPolled { chans } => {
                *chans = chans.iter().map(|c| c + k * self.channels).collect();
            }
            Op::Fork { program } | Op::Resume { program } => *program += k * self.programs,
            Op::Lock { mutex } | Op::Unlock { mutex } => *mutex += k * self.mutexes,
            Op::Barrier { barrier } => *barrier += k * self.barriers,
            Op::CondWait { cond, mutex } => {
                *cond += k * self.conds;
                *mutex += k * self.mutexes;
            }
            Op::Signal { cond } | Op::Broadcast { cond } => *cond += k * self.conds,
            Op::Clock { clock, .. } => *clock += k * self.clocks,
            Op::LockRow { table, .. } | Op::UnlockRows { table } => *table += k * self.tables,
            Op::GroupCommit { log, .. } => *log += k * self.logs,
            Op::JournalRequest { journal }
            | Op::JournalCommit { journal }
            | Op::JournalWait { journal }
            | Op::JournalDone { journal } => *journal += k * self.journals,
            _ => {}
        }
    }
}
