//! `rt-app:PATH`: rt-app JSON workload files run as they are (spec/ecosystem.md §1.4,
//! spec/workloads.md §8; `scheduler-tools/rt-app`: `src/rt-app_parse_config.c`,
//! `src/rt-app.c`).
//!
//! Each task × instance becomes a task program. Its phases run in order (`loop` times the whole
//! sequence), each phase `loop` times; one pass over a phase's events is one rt-app *log row*.
//! Events map to program ops: `run` is calibrated work (cycles), `runtime` wall time, `sleep` a
//! relative sleep, `timer` an absolute-deadline sleep on a named clock (shared by every thread
//! naming it, or per thread for `"unique…"` refs), `lock`/`unlock` a mutex, `wait`/`signal`/
//! `broad`/`sync` condition variables, `suspend`/`resume` the mutex + condition pair rt-app
//! builds them from, `barrier` a rendezvous, `fork` a new thread of a defined task, `yield`
//! `sched_yield()`, and `mem`/`iorun` the equivalent CPU work. Marks around each row, run and
//! timer give the rt-app log columns (perf, run, period, slack, c_duration, c_period, wu_lat).
//! See docs/workloads/rt-app.md.

pub mod json;

use std::collections::BTreeMap;

use self::json::{Member, Node, Pos, Value};
use super::constants::Constants;
use super::spec::{CustomWorkload, OpSpec, TaskSpec};
use super::{GenCtx, Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;

const CONSTANTS_JSON: &str = include_str!("../../data/workloads/rt-app.json");

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| Ok(Box::new(RtApp::new(ctx)?)),
    }
}

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "rt-app",
        description: "An rt-app JSON file (rt-app:PATH): tasks, phases and events as rt-app runs them; run is work calibrated on the calibration CPU at its highest frequency, runtime is wall time; metrics are rt-app's per-activation log (perf, run, period, slack, wu_lat).",
        params: vec![
            ParamInfo {
                name: "path",
                default: serde_json::Value::Null,
                description: "path of the rt-app JSON file",
            },
            ParamInfo {
                name: "calibration",
                default: serde_json::Value::Null,
                description: "overrides the file's global calibration: \"CPUn\" (run is work at CPU n's highest frequency), \"max\" (the fastest CPU's, as LISA writes the pLoad of the fastest CPU) or ns per loop",
            },
        ],
        metrics: vec![
            "rows",
            "run_us_mean",
            "period_us_mean",
            "perf_mean",
            "slack_us_mean",
            "missed_pct",
            "wu_lat_us_mean",
            "wu_lat_us_max",
            "pload_ns",
            "task.<TASK>.<METRIC>",
            "task.<TASK>.<PHASE>.<METRIC>",
        ],
        primary: "slack_us_mean",
        higher_is_better: true,
        open_ended: false,
    }
}

/// rt-app's event prefixes in the order of `obj_is_event()` (`runtime` before `run`, `memrun`
/// before `mem`): the first prefix a key starts with names its event.
const EVENTS: [&str; 20] = [
    "lock", "unlock", "wait", "signal", "broad", "sync", "sleep", "runtime", "run", "timer",
    "suspend", "resume", "memrun", "mem", "iorun", "yield", "barrier", "fork", "sem_post",
    "sem_wait",
];

/// The event type of a key, if it is one.
pub fn event_of(key: &str) -> Option<&'static str> {
    EVENTS.iter().copied().find(|e| key.starts_with(e))
}

const GLOBAL_KEYS: [&str; 15] = [
    "duration",
    "calibration",
    "default_policy",
    "pi_enabled",
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
    "frag",
    "logstats",
];

const SCHED_KEYS: [&str; 10] = [
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "util_min",
    "util_max",
    "taskgroup",
    "cpus",
    "nodes_membind",
];

/// Keys of rt-app's first (2014) per-task grammar, which today's rt-app no longer reads.
const LEGACY_TASK_KEYS: [&str; 5] = ["exec", "period", "deadline", "lock_order", "resources"];

/// Name of the per-task clock that implements the initial `delay` (not a valid rt-app ref).
const DELAY_CLOCK: &str = "\u{1}delay";

/// Scheduling class and level of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sched {
    /// SCHED_OTHER / SCHED_BATCH / SCHED_IDLE with a nice level.
    Fair(&'static str, i32),
    /// SCHED_FIFO / SCHED_RR with an RT priority.
    Rt(&'static str, u32),
}

impl Sched {
    fn policy(&self) -> &'static str {
        match self {
            Sched::Fair(p, _) | Sched::Rt(p, _) => p,
        }
    }
}

/// One event of a phase.
#[derive(Clone, Debug)]
enum Event {
    Run(u64),
    Runtime(u64),
    Sleep(u64),
    Timer {
        clock: String,
        unique: bool,
        period_us: u64,
        absolute: bool,
    },
    Lock(String),
    Unlock(String),
    Wait {
        cond: String,
        mutex: String,
    },
    Signal(String),
    Broad(String),
    Sync {
        cond: String,
        mutex: String,
    },
    Barrier(String),
    /// The condition/mutex name the thread suspends on.
    Suspend(String),
    Resume(String),
    Yield,
    Fork(String),
    Mem(u64),
    IoRun(u64),
}

#[derive(Clone, Debug)]
struct Phase {
    name: String,
    /// rt-app's phase loop: ≤ 0 runs the phase forever.
    loops: i64,
    events: Vec<Event>,
    cpus: Option<Vec<usize>>,
    /// The phase's own `util_min`, `util_max` (see `SchedKeys::uclamp`).
    uclamp: [Option<i64>; 2],
}

#[derive(Clone, Debug)]
struct TaskDef {
    name: String,
    instances: u32,
    delay_us: u64,
    /// rt-app's thread loop: < 0 forever, 0 nothing, N times.
    loops: i64,
    phases: Vec<Phase>,
    /// Written as a `phases` object (metrics then report per phase).
    named_phases: bool,
    sched: Sched,
    cpus: Vec<usize>,
    /// `taskgroup`: the cgroup path, `/`-prefixed (created with default settings unless the
    /// run configures it); `None` = the root group.
    taskgroup: Option<String>,
    /// The task's `util_min`, `util_max` (see `SchedKeys::uclamp`).
    uclamp: [Option<i64>; 2],
}

/// The `global` section.
#[derive(Clone, Debug)]
struct Global {
    duration_s: i64,
    calibration: Calibration,
    default_policy: &'static str,
    io_device: String,
    io_device_pos: Pos,
    mem_buffer_size: u64,
    cumulative_slack: bool,
}

#[derive(Clone, Copy, Debug)]
enum Calibration {
    Cpu(usize),
    NsPerLoop(u64),
}

/// What a mark stands for in the metrics.
#[derive(Clone, Debug)]
enum MarkKind {
    RowStart,
    RowEnd,
    RunBegin {
        perf: u64,
        c_us: u64,
    },
    RunEnd,
    TimerBegin {
        clock: String,
        unique: bool,
        period_ns: u64,
        origin_ns: u64,
        relative: bool,
        c_us: u64,
    },
    TimerEnd,
}

#[derive(Clone, Debug)]
struct MarkInfo {
    task: usize,
    phase: usize,
    kind: MarkKind,
}

/// An rt-app file made into task programs.
#[derive(Debug)]
pub struct RtApp {
    pub file: String,
    workload: CustomWorkload,
    duration_ns: Option<u64>,
    /// rt-app's pLoad: ns per calibration loop.
    pub pload_ns: u64,
    /// Cycles of one calibration loop.
    pub loop_cycles: f64,
    cumulative_slack: bool,
    marks: BTreeMap<String, MarkInfo>,
    /// Task names and, for tasks written with `phases`, their phase names.
    task_names: Vec<(String, Option<Vec<String>>)>,
    has_timer: bool,
}

/// Error context: the file and the key path.
struct Cx<'a> {
    file: &'a str,
}

impl Cx<'_> {
    fn err(&self, pos: Pos, path: &str, msg: impl std::fmt::Display) -> String {
        format!("{}:{}: '{path}': {msg}", self.file, pos.line)
    }

    fn int(&self, n: &Node, path: &str) -> Result<i64, String> {
        match n.value {
            Value::Int(v) => Ok(v),
            ref v => Err(self.err(
                n.pos,
                path,
                format!("expected an integer, got {}", v.kind()),
            )),
        }
    }

    fn uint(&self, n: &Node, path: &str) -> Result<u64, String> {
        let v = self.int(n, path)?;
        u64::try_from(v).map_err(|_| self.err(n.pos, path, format!("{v}: must be >= 0")))
    }

    /// A time in µs that the core's 64-bit nanosecond clock can hold.
    fn usec(&self, n: &Node, path: &str) -> Result<u64, String> {
        let v = self.uint(n, path)?;
        let max = crate::workload::program::MAX_OP_NS / 1000;
        if v > max {
            return Err(self.err(n.pos, path, format!("{v} us: at most {max} us")));
        }
        Ok(v)
    }

    fn string<'n>(&self, n: &'n Node, path: &str) -> Result<&'n str, String> {
        match &n.value {
            Value::Str(s) => Ok(s),
            v => Err(self.err(n.pos, path, format!("expected a string, got {}", v.kind()))),
        }
    }

    fn boolean(&self, n: &Node, path: &str) -> Result<bool, String> {
        match n.value {
            Value::Bool(b) => Ok(b),
            ref v => Err(self.err(
                n.pos,
                path,
                format!("expected true or false, got {}", v.kind()),
            )),
        }
    }

    fn object<'n>(&self, n: &'n Node, path: &str) -> Result<&'n [Member], String> {
        match &n.value {
            Value::Object(m) => Ok(m),
            v => Err(self.err(n.pos, path, format!("expected an object, got {}", v.kind()))),
        }
    }

    fn unsupported(&self, pos: Pos, path: &str, what: &str, why: &str) -> String {
        self.err(pos, path, format!("unsupported {what}: {why}"))
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn parse_policy(cx: &Cx, n: &Node, path: &str) -> Result<&'static str, String> {
    let s = cx.string(n, path)?;
    match s {
        "SCHED_OTHER" => Ok("SCHED_OTHER"),
        "SCHED_BATCH" => Ok("SCHED_BATCH"),
        "SCHED_IDLE" => Ok("SCHED_IDLE"),
        "SCHED_FIFO" => Ok("SCHED_FIFO"),
        "SCHED_RR" => Ok("SCHED_RR"),
        "SCHED_DEADLINE" => Err(cx.unsupported(
            n.pos,
            path,
            "policy SCHED_DEADLINE",
            "the deadline class is not modelled",
        )),
        _ => Err(cx.err(
            n.pos,
            path,
            format!("policy '{s}': allowed SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE"),
        )),
    }
}

/// Scheduling keys of a task or phase object.
#[derive(Default)]
struct SchedKeys<'a> {
    policy: Option<(&'static str, &'a Node)>,
    priority: Option<&'a Node>,
    cpus: Option<Vec<usize>>,
    /// `util_min`, `util_max` as written: -1 keeps the current request, 0..1024 sets it; and
    /// where each was written.
    uclamp: [Option<i64>; 2],
    uclamp_pos: [Pos; 2],
    /// `taskgroup` and where it was written; `Some(None)` = the root group.
    taskgroup: Option<(Option<String>, &'a Node)>,
}

/// Read one scheduling key (`SCHED_KEYS`); unsupported properties are errors.
fn sched_key<'a>(
    cx: &Cx,
    m: &'a Member,
    path: &str,
    nr_cpus: usize,
    out: &mut SchedKeys<'a>,
) -> Result<(), String> {
    let p = join(path, &m.key);
    let v = &m.value;
    match m.key.as_str() {
        "policy" => out.policy = Some((parse_policy(cx, v, &p)?, v)),
        "priority" => {
            cx.int(v, &p)?;
            out.priority = Some(v);
        }
        "dl-runtime" | "dl-period" | "dl-deadline" => {
            if cx.int(v, &p)? != 0 {
                return Err(cx.unsupported(
                    m.pos,
                    &p,
                    &format!("property '{}'", m.key),
                    "SCHED_DEADLINE parameters (and the custom slice they set on SCHED_OTHER) are not modelled",
                ));
            }
        }
        "util_min" | "util_max" => {
            let n = cx.int(v, &p)?;
            if !(-1..=1024).contains(&n) {
                return Err(cx.err(
                    m.pos,
                    &p,
                    format!("{n}: expected -1 (keep the current clamp) or 0..1024"),
                ));
            }
            let i = (m.key == "util_max") as usize;
            out.uclamp[i] = Some(n);
            out.uclamp_pos[i] = m.pos;
        }
        "taskgroup" => {
            let g = cx.string(v, &p)?;
            let g = g.trim_matches('/');
            let bad = g.split('/').any(|c| c.is_empty() || c == "." || c == "..");
            if !g.is_empty() && bad {
                return Err(cx.err(
                    m.pos,
                    &p,
                    format!("'{g}': expected a cgroup path like \"/tg1\" or \"/a/b\""),
                ));
            }
            let path = (!g.is_empty()).then(|| format!("/{g}"));
            out.taskgroup = Some((path, v));
        }
        "nodes_membind" => {
            return Err(cx.unsupported(
                m.pos,
                &p,
                "property 'nodes_membind'",
                "NUMA memory placement is not modelled",
            ))
        }
        "cpus" => {
            let Value::Array(items) = &v.value else {
                return Err(cx.err(
                    v.pos,
                    &p,
                    format!("expected an array of CPU numbers, got {}", v.value.kind()),
                ));
            };
            if items.is_empty() {
                return Err(cx.err(v.pos, &p, "empty CPU set"));
            }
            let mut cpus = Vec::new();
            for it in items {
                let c = cx.uint(it, &p)? as usize;
                if c >= nr_cpus {
                    return Err(cx.err(
                        it.pos,
                        &p,
                        format!("CPU {c} does not exist: the machine has {nr_cpus} CPUs"),
                    ));
                }
                if !cpus.contains(&c) {
                    cpus.push(c);
                }
            }
            cpus.sort_unstable();
            out.cpus = Some(cpus);
        }
        _ => unreachable!("not a scheduling key"),
    }
    Ok(())
}

/// The class and level given by `policy` and `priority`; a missing priority takes rt-app's
/// default for the policy (nice 0, RT priority 10).
fn resolve_sched(
    cx: &Cx,
    policy: &'static str,
    priority: Option<&Node>,
    path: &str,
) -> Result<Sched, String> {
    let p = join(path, "priority");
    Ok(match policy {
        "SCHED_FIFO" | "SCHED_RR" => {
            let prio = match priority {
                Some(n) => {
                    let v = cx.int(n, &p)?;
                    if !(1..=99).contains(&v) {
                        return Err(cx.err(
                            n.pos,
                            &p,
                            format!("{v}: {policy} needs a priority 1..99"),
                        ));
                    }
                    v as u32
                }
                None => 10,
            };
            Sched::Rt(policy, prio)
        }
        _ => {
            // setpriority() clamps nice to -20..19
            let nice = match priority {
                Some(n) => cx.int(n, &p)?.clamp(-20, 19) as i32,
                None => 0,
            };
            Sched::Fair(policy, nice)
        }
    })
}

/// Parse one event.
fn parse_event(
    cx: &Cx,
    m: &Member,
    ev: &'static str,
    path: &str,
    task: &str,
    names: &[&str],
) -> Result<Event, String> {
    let p = join(path, &m.key);
    let v = &m.value;
    let ref_name = |n: &Node| -> Result<String, String> { Ok(cx.string(n, &p)?.to_string()) };
    let sub = |n: &Node, allowed: &[&str]| -> Result<BTreeMap<String, Node>, String> {
        let mut out = BTreeMap::new();
        for s in cx.object(n, &p)? {
            if !allowed.contains(&s.key.as_str()) {
                return Err(cx.err(
                    s.pos,
                    &join(&p, &s.key),
                    format!(
                        "unknown key in a {ev} event; allowed: {}",
                        allowed.join(", ")
                    ),
                ));
            }
            out.insert(s.key.clone(), s.value.clone());
        }
        Ok(out)
    };
    let e =
        match ev {
            "run" => Event::Run(cx.usec(v, &p)?),
            "runtime" => Event::Runtime(cx.usec(v, &p)?),
            "sleep" => Event::Sleep(cx.usec(v, &p)?),
            "timer" => {
                let o = sub(v, &["ref", "period", "mode"])?;
                let clock = match o.get("ref") {
                    Some(n) => cx.string(n, &join(&p, "ref"))?.to_string(),
                    None => "unknown".to_string(),
                };
                let period_us = match o.get("period") {
                    Some(n) => cx.usec(n, &join(&p, "period"))?,
                    None => 0,
                };
                let absolute = match o.get("mode") {
                    None => false,
                    Some(n) => match cx.string(n, &join(&p, "mode"))? {
                        "relative" => false,
                        "absolute" => true,
                        s => {
                            return Err(cx.err(
                                n.pos,
                                &join(&p, "mode"),
                                format!("'{s}': allowed relative, absolute"),
                            ))
                        }
                    },
                };
                Event::Timer {
                    unique: clock.starts_with("unique"),
                    clock,
                    period_us,
                    absolute,
                }
            }
            "lock" => Event::Lock(ref_name(v)?),
            "unlock" => Event::Unlock(ref_name(v)?),
            "signal" => Event::Signal(ref_name(v)?),
            "broad" => Event::Broad(ref_name(v)?),
            "barrier" => Event::Barrier(ref_name(v)?),
            "resume" => Event::Resume(ref_name(v)?),
            "fork" => {
                let x = ref_name(v)?;
                if !names.contains(&x.as_str()) {
                    return Err(cx.err(
                        v.pos,
                        &p,
                        format!("fork of '{x}', which is not a task of this file"),
                    ));
                }
                Event::Fork(x)
            }
            "wait" | "sync" => {
                let o = sub(v, &["ref", "mutex"])?;
                let get = |k: &str| -> Result<String, String> {
                    match o.get(k) {
                        Some(n) => Ok(cx.string(n, &join(&p, k))?.to_string()),
                        None => Ok("unknown".to_string()),
                    }
                };
                let (cond, mutex) = (get("ref")?, get("mutex")?);
                if ev == "wait" {
                    Event::Wait { cond, mutex }
                } else {
                    Event::Sync { cond, mutex }
                }
            }
            "suspend" => match &v.value {
                // a bare "suspend" (or an empty name) suspends the thread on its own name, as
                // rt-app's workgen filled it in
                Value::Null => Event::Suspend(task.to_string()),
                Value::Str(s) if s.is_empty() => Event::Suspend(task.to_string()),
                Value::Str(s) => Event::Suspend(s.clone()),
                other => {
                    return Err(cx.err(
                        v.pos,
                        &p,
                        format!("expected a string, got {}", other.kind()),
                    ))
                }
            },
            "yield" => Event::Yield,
            "mem" => Event::Mem(cx.uint(v, &p)?),
            "iorun" => Event::IoRun(cx.uint(v, &p)?),
            "memrun" | "sem_post" | "sem_wait" => return Err(cx.unsupported(
                m.pos,
                &p,
                &format!("event '{ev}'"),
                "not modelled (memrun: cache/DRAM access patterns; sem_post/sem_wait: semaphores)",
            )),
            _ => unreachable!("event table"),
        };
    Ok(e)
}

/// Parse the events and properties of a phase object (or of a task written as one inline phase,
/// whose task-level keys the caller has taken out).
#[allow(clippy::too_many_arguments)]
fn parse_phase<'a>(
    cx: &Cx,
    members: &'a [Member],
    path: &str,
    task: &str,
    name: &str,
    inline: bool,
    nr_cpus: usize,
    names: &[&str],
) -> Result<(Phase, SchedKeys<'a>), String> {
    let mut events = Vec::new();
    let mut loops = 1i64;
    let mut sk = SchedKeys::default();
    for m in members {
        let p = join(path, &m.key);
        if let Some(ev) = event_of(&m.key) {
            events.push(parse_event(cx, m, ev, path, task, names)?);
            continue;
        }
        match m.key.as_str() {
            "loop" => loops = cx.int(&m.value, &p)?,
            k if SCHED_KEYS.contains(&k) => sched_key(cx, m, path, nr_cpus, &mut sk)?,
            k if inline && ["instance", "delay"].contains(&k) => {}
            k if inline && LEGACY_TASK_KEYS.contains(&k) => {
                return Err(cx.unsupported(
                    m.pos,
                    &p,
                    &format!("legacy task key '{k}'"),
                    "the 2014 rt-app task grammar (exec/period/lock_order/resources) is not read by rt-app any more; rewrite the task with events",
                ))
            }
            k => {
                return Err(cx.err(
                    m.pos,
                    &p,
                    format!(
                        "unknown key '{k}': not an rt-app event ({}) or property (loop, {}{})",
                        EVENTS.join(", "),
                        SCHED_KEYS.join(", "),
                        if inline { ", instance, delay, phases" } else { "" }
                    ),
                ))
            }
        }
    }
    if events.is_empty() {
        return Err(cx.err(
            members.first().map(|m| m.pos).unwrap_or_default(),
            path,
            "no events: a phase needs at least one event (rt-app: \"Task must have events\")",
        ));
    }
    Ok((
        Phase {
            name: name.to_string(),
            loops,
            events,
            cpus: sk.cpus.clone(),
            uclamp: sk.uclamp,
        },
        sk,
    ))
}

fn parse_task(
    cx: &Cx,
    name: &str,
    node: &Node,
    global: &Global,
    nr_cpus: usize,
    names: &[&str],
) -> Result<TaskDef, String> {
    let path = format!("tasks.{name}");
    let members = cx.object(node, &path)?;
    let phases_node = members.iter().rev().find(|m| m.key == "phases");
    let mut instances = 1u32;
    let mut delay_us = 0u64;
    let mut task_loop: Option<i64> = None;
    let mut sk = SchedKeys::default();
    for m in members {
        let p = join(&path, &m.key);
        match m.key.as_str() {
            "instance" => {
                let v = cx.uint(&m.value, &p)?;
                instances = u32::try_from(v)
                    .ok()
                    .filter(|&n| n <= 100_000)
                    .ok_or_else(|| cx.err(m.pos, &p, format!("{v}: at most 100000")))?;
            }
            "delay" => delay_us = cx.usec(&m.value, &p)?,
            "loop" => task_loop = Some(cx.int(&m.value, &p)?),
            "phases" => {}
            k if SCHED_KEYS.contains(&k) => sched_key(cx, m, &path, nr_cpus, &mut sk)?,
            k if LEGACY_TASK_KEYS.contains(&k) && event_of(k).is_none() => {
                return Err(cx.unsupported(
                    m.pos,
                    &p,
                    &format!("legacy task key '{k}'"),
                    "the 2014 rt-app task grammar (exec/period/lock_order/resources) is not read by rt-app any more; rewrite the task with events",
                ))
            }
            k if phases_node.is_some() && event_of(k).is_some() => {
                return Err(cx.err(
                    m.pos,
                    &p,
                    "an event next to 'phases' is ignored by rt-app: move it into a phase",
                ))
            }
            k if phases_node.is_some() => {
                return Err(cx.err(
                    m.pos,
                    &p,
                    format!(
                        "unknown key '{k}': not an rt-app task property (instance, delay, loop, phases, {})",
                        SCHED_KEYS.join(", ")
                    ),
                ))
            }
            // an inline phase: its events and keys are read below
            _ => {}
        }
    }
    let policy = match sk.policy {
        Some((p, _)) => p,
        None => global.default_policy,
    };
    let sched = resolve_sched(cx, policy, sk.priority, &path)?;
    let (phases, named_phases, loops) = match phases_node {
        Some(pm) => {
            let ppath = join(&path, "phases");
            let list = cx.object(&pm.value, &ppath)?;
            if list.is_empty() {
                return Err(cx.err(pm.pos, &ppath, "no phases"));
            }
            let mut phases = Vec::new();
            let mut clamp_steps = Vec::new();
            let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
            for ph in list {
                let phpath = join(&ppath, &ph.key);
                let obj = cx.object(&ph.value, &phpath)?;
                let (mut phase, psk) =
                    parse_phase(cx, obj, &phpath, name, &ph.key, false, nr_cpus, names)?;
                clamp_steps.push((psk.uclamp, psk.uclamp_pos, phpath.clone()));
                // a phase may restate the task's policy and priority but not change them
                if psk.policy.is_some() || psk.priority.is_some() {
                    let ppol = psk.policy.map(|(p, _)| p).unwrap_or(sched.policy());
                    let pri = match psk.priority {
                        Some(n) => Some(n),
                        None if psk.policy.is_some() => None,
                        None => sk.priority,
                    };
                    let s = resolve_sched(cx, ppol, pri, &phpath)?;
                    if s != sched {
                        let (k, pos) = match (psk.priority, psk.policy) {
                            (Some(n), _) => ("priority", n.pos),
                            (None, Some((_, n))) => ("policy", n.pos),
                            _ => unreachable!(),
                        };
                        return Err(cx.unsupported(
                            pos,
                            &join(&phpath, k),
                            &format!("phase-level '{k}'"),
                            &format!(
                                "the phase changes the task's scheduling ({sched:?} -> {s:?}); the core has no sched_setscheduler()/setpriority() op"
                            ),
                        ));
                    }
                }
                // duplicate phase names are kept (rt-app's workgen renames them); metrics name
                // the later ones NAME-1, NAME-2, ...
                if let Some((g, node)) = &psk.taskgroup {
                    let task_g = sk.taskgroup.as_ref().and_then(|(g, _)| g.clone());
                    if *g != task_g {
                        return Err(cx.unsupported(
                            node.pos,
                            &join(&phpath, "taskgroup"),
                            "phase-level 'taskgroup'",
                            "moving a task to another cgroup between phases is not modelled; set taskgroup on the task",
                        ));
                    }
                }
                let n = seen.entry(ph.key.as_str()).or_insert(0);
                if *n > 0 {
                    phase.name = format!("{}-{}", ph.key, n);
                }
                *n += 1;
                phases.push(phase);
            }
            check_uclamp_steps(cx, (sk.uclamp, sk.uclamp_pos, path.clone()), &clamp_steps)?;
            (phases, true, task_loop.unwrap_or(-1))
        }
        None => {
            check_uclamp_steps(cx, (sk.uclamp, sk.uclamp_pos, path.clone()), &[])?;
            let (phase, _) = parse_phase(cx, members, &path, name, name, true, nr_cpus, names)?;
            // rt-app reads an inline task's "loop" as the phase's loop and then runs the task
            // once; without "loop" the phase runs once per task loop, forever
            let task_loops = if task_loop.is_some() { 1 } else { -1 };
            (vec![phase], false, task_loops)
        }
    };
    for ph in &phases {
        for e in &ph.events {
            if let Event::IoRun(_) = e {
                if global.io_device != "/dev/null" {
                    return Err(cx.unsupported(
                        global.io_device_pos,
                        "global.io_device",
                        "io_device",
                        &format!(
                            "iorun writes to '{}': only /dev/null is modelled",
                            global.io_device
                        ),
                    ));
                }
            }
        }
    }
    Ok(TaskDef {
        name: name.to_string(),
        instances,
        delay_us,
        loops,
        phases,
        named_phases,
        sched,
        cpus: sk.cpus.unwrap_or_default(),
        taskgroup: sk.taskgroup.and_then(|(g, _)| g),
        uclamp: sk.uclamp,
    })
}

/// The clamps a task's `sched_setattr()` calls write, first the task's, then each phase's as
/// rt-app sets them at the phase's start (only the clamps the phase writes; the phases loop),
/// checked as the kernel's `uclamp_validate()` checks every call: a min above the max in
/// effect is refused (EINVAL). Only written values are compared: a default (an RT task's min
/// request follows `sched_util_clamp_min_rt_default`) is checked by the core when it runs.
type ClampStep = ([Option<i64>; 2], [Pos; 2], String);

fn check_uclamp_steps(cx: &Cx, task: ClampStep, phases: &[ClampStep]) -> Result<(), String> {
    let written = |v: Option<i64>| v.filter(|&v| v >= 0);
    // the value in effect for each clamp and where it was written
    let mut cur: [Option<(i64, String)>; 2] = [None, None];
    let steps = std::iter::once(&task).chain(phases.iter().cycle().take(2 * phases.len()));
    for (vals, pos, path) in steps {
        let mut next = cur.clone();
        for i in 0..2 {
            if let Some(v) = written(vals[i]) {
                next[i] = Some((v, join(path, ["util_min", "util_max"][i])));
            }
        }
        if let [Some((lo, lo_at)), Some((hi, hi_at))] = &next {
            if lo > hi {
                // blame the key this step wrote (the max if it wrote both)
                let i = if written(vals[1]).is_some() { 1 } else { 0 };
                let (at, other) = if i == 1 {
                    (hi_at, lo_at)
                } else {
                    (lo_at, hi_at)
                };
                return Err(cx.err(
                    pos[i],
                    at,
                    format!(
                        "leaves util_min {lo} above util_max {hi} (the other set by '{other}'): \
                         the kernel refuses such a sched_setattr() (EINVAL)"
                    ),
                ));
            }
        }
        cur = next;
    }
    Ok(())
}

/// The `calibration` parameter: "CPUn", "max" (the CPU with the highest capacity at its
/// highest frequency; the first of equals) or ns per calibration loop (an integer > 0).
fn calibration_param(p: &Params, ctx: &GenCtx) -> Result<Option<Calibration>, String> {
    let Some(v) = p.raw("calibration") else {
        return Ok(None);
    };
    let bad = || {
        format!(
            "workload 'rt-app': parameter calibration = {v}: expected \"CPUn\" (n < {}), \"max\" or ns per loop (an integer > 0)",
            ctx.topo.nr_cpus()
        )
    };
    let text = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return Err(bad()),
    };
    if text == "max" {
        let speed = |c: usize| super::top_speed_khz(ctx.machine, ctx.topo, c);
        let best = (0..ctx.topo.nr_cpus()).fold(0, |b, c| if speed(c) > speed(b) { c } else { b });
        return Ok(Some(Calibration::Cpu(best)));
    }
    if let Some(n) = text.strip_prefix("CPU") {
        return match n.parse::<usize>() {
            Ok(c) if c < ctx.topo.nr_cpus() => Ok(Some(Calibration::Cpu(c))),
            _ => Err(bad()),
        };
    }
    match text.parse::<u64>() {
        Ok(ns) if ns > 0 => Ok(Some(Calibration::NsPerLoop(ns))),
        _ => Err(bad()),
    }
}

/// `nr_cpus`: the machine's CPUs, against which a `"CPUn"` calibration is checked; `None` when
/// the workload's `calibration` parameter overrides the file's (which is then not checked).
fn parse_global(cx: &Cx, node: Option<&Node>, nr_cpus: Option<usize>) -> Result<Global, String> {
    let mut g = Global {
        duration_s: -1,
        calibration: Calibration::Cpu(0),
        default_policy: "SCHED_OTHER",
        io_device: "/dev/null".into(),
        io_device_pos: Pos::default(),
        mem_buffer_size: 4 * 1024 * 1024,
        cumulative_slack: false,
    };
    let Some(node) = node else {
        return Ok(g);
    };
    for m in cx.object(node, "global")? {
        let p = join("global", &m.key);
        let v = &m.value;
        match m.key.as_str() {
            "duration" => {
                g.duration_s = cx.int(v, &p)?;
                let max = (crate::workload::program::MAX_OP_NS / 1_000_000_000) as i64;
                if g.duration_s > max {
                    return Err(cx.err(
                        v.pos,
                        &p,
                        format!("{} s: at most {max} s (or -1: no limit)", g.duration_s),
                    ));
                }
            }
            "calibration" => {
                g.calibration = match &v.value {
                    Value::Int(n) if *n > 0 => Calibration::NsPerLoop(*n as u64),
                    Value::Str(s) => {
                        let cpu = s
                            .strip_prefix("CPU")
                            .and_then(|n| n.parse::<usize>().ok())
                            .ok_or_else(|| {
                                cx.err(
                                    v.pos,
                                    &p,
                                    format!(
                                        "'{s}': expected \"CPUn\" or ns per loop (an integer > 0)"
                                    ),
                                )
                            })?;
                        if let Some(nr_cpus) = nr_cpus.filter(|&n| cpu >= n) {
                            return Err(cx.err(
                                v.pos,
                                &p,
                                format!("CPU{cpu} does not exist: the machine has {nr_cpus} CPUs"),
                            ));
                        }
                        Calibration::Cpu(cpu)
                    }
                    other => {
                        return Err(cx.err(
                            v.pos,
                            &p,
                            format!(
                                "expected \"CPUn\" or ns per loop (an integer > 0), got {}",
                                match other {
                                    Value::Int(n) => n.to_string(),
                                    o => o.kind().to_string(),
                                }
                            ),
                        ))
                    }
                }
            }
            "default_policy" => g.default_policy = parse_policy(cx, v, &p)?,
            "pi_enabled" => {
                if cx.boolean(v, &p)? {
                    return Err(cx.unsupported(
                        m.pos,
                        &p,
                        "pi_enabled",
                        "the core's mutexes have no priority inheritance",
                    ));
                }
            }
            "lock_pages" | "gnuplot" => {
                cx.boolean(v, &p)?;
            }
            "logdir" | "log_basename" => {
                cx.string(v, &p)?;
            }
            "log_size" => match &v.value {
                Value::Int(_) => {}
                Value::Str(s) if ["file", "disable", "auto"].contains(&s.as_str()) => {}
                _ => {
                    return Err(cx.err(
                        v.pos,
                        &p,
                        "expected \"file\", \"disable\", \"auto\" or a size in MB",
                    ))
                }
            },
            "ftrace" => match &v.value {
                Value::Bool(_) | Value::Str(_) => {}
                o => {
                    return Err(cx.err(
                        v.pos,
                        &p,
                        format!(
                            "expected categories (a string) or a boolean, got {}",
                            o.kind()
                        ),
                    ))
                }
            },
            "io_device" => {
                g.io_device = cx.string(v, &p)?.to_string();
                g.io_device_pos = v.pos;
            }
            "mem_buffer_size" => {
                let n = cx.uint(v, &p)?;
                if n == 0 {
                    return Err(cx.err(v.pos, &p, "must be > 0"));
                }
                g.mem_buffer_size = n;
            }
            "cumulative_slack" => g.cumulative_slack = cx.boolean(v, &p)?,
            // keys of older rt-app versions, read by none today
            "frag" | "logstats" => {}
            k => {
                return Err(cx.err(
                    m.pos,
                    &p,
                    format!("unknown key '{k}'; allowed: {}", GLOBAL_KEYS.join(", ")),
                ))
            }
        }
    }
    Ok(g)
}

/// The legacy top-level `resources` section: names declared ahead of use. rt-app creates
/// resources on first use, so the section only has to be valid.
fn check_resources(cx: &Cx, node: &Node) -> Result<(), String> {
    const TYPES: [&str; 8] = [
        "mutex",
        "signal",
        "wait",
        "broadcast",
        "sync",
        "sleep",
        "run",
        "timer",
    ];
    for r in cx.object(node, "resources")? {
        let p = join("resources", &r.key);
        for m in cx.object(&r.value, &p)? {
            let kp = join(&p, &m.key);
            match m.key.as_str() {
                "type" => {
                    let t = cx.string(&m.value, &kp)?;
                    if !TYPES.contains(&t) {
                        return Err(cx.err(
                            m.value.pos,
                            &kp,
                            format!("resource type '{t}': allowed {}", TYPES.join(", ")),
                        ));
                    }
                }
                "target" => {
                    cx.string(&m.value, &kp)?;
                }
                k => {
                    return Err(cx.err(
                        m.pos,
                        &kp,
                        format!("unknown key '{k}' in a resource; allowed: type, target"),
                    ))
                }
            }
        }
    }
    Ok(())
}

impl RtApp {
    pub fn new(ctx: &GenCtx) -> Result<Self, String> {
        let p = Params::new("rt-app", ctx.params, &info())?;
        let path = p.string("path")?.ok_or_else(|| {
            "workload 'rt-app': parameter path is required (rt-app:PATH)".to_string()
        })?;
        let calibration = calibration_param(&p, ctx)?;
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("workload 'rt-app': cannot read '{path}': {e}"))?;
        Self::build(&path, &text, ctx, calibration)
    }

    /// Build from the file's text; `file` names it in errors.
    pub fn from_str(file: &str, text: &str, ctx: &GenCtx) -> Result<Self, String> {
        Self::build(file, text, ctx, None)
    }

    /// Build from the file's text, with the `calibration` parameter's override if given.
    fn build(
        file: &str,
        text: &str,
        ctx: &GenCtx,
        calibration: Option<Calibration>,
    ) -> Result<Self, String> {
        let consts = Constants::parse("rt-app", CONSTANTS_JSON)?;
        let cx = Cx { file };
        let root = json::parse(text).map_err(|e| format!("{file}:{e}"))?;
        let top = cx.object(&root, "(top level)")?;
        let nr_cpus = ctx.topo.nr_cpus();
        let (mut tasks_node, mut global_node, mut resources_node) = (None, None, None);
        for m in top {
            match m.key.as_str() {
                "tasks" => tasks_node = Some(m),
                "global" => global_node = Some(&m.value),
                "resources" => resources_node = Some(&m.value),
                k => {
                    return Err(cx.err(
                        m.pos,
                        k,
                        format!("unknown top-level key '{k}'; allowed: tasks, global, resources"),
                    ))
                }
            }
        }
        let checked = calibration.is_none().then_some(nr_cpus);
        let mut global = parse_global(&cx, global_node, checked)?;
        if let Some(c) = calibration {
            global.calibration = c;
        }
        if let Some(r) = resources_node {
            check_resources(&cx, r)?;
        }
        let tasks_node = tasks_node.ok_or_else(|| {
            format!("{file}: no 'tasks' section (rt-app needs \"tasks\": {{...}})")
        })?;
        let task_members = cx.object(&tasks_node.value, "tasks")?;
        let names: Vec<&str> = task_members.iter().map(|m| m.key.as_str()).collect();
        let mut tasks = Vec::new();
        for m in task_members {
            if tasks.iter().any(|t: &TaskDef| t.name == m.key) {
                return Err(cx.err(m.pos, &join("tasks", &m.key), "task defined twice"));
            }
            tasks.push(parse_task(&cx, &m.key, &m.value, &global, nr_cpus, &names)?);
        }
        if tasks.is_empty() {
            return Err(cx.err(tasks_node.pos, "tasks", "no tasks"));
        }
        if !tasks.iter().any(|t| t.instances > 0) {
            return Err(cx.err(
                tasks_node.pos,
                "tasks",
                "every task has instance 0: nothing starts",
            ));
        }
        // calibration: pLoad and the cycles of one loop
        let rate = |c: usize| super::top_speed_khz(ctx.machine, ctx.topo, c) * 1e-6;
        let (pload_ns, rate_cal) = match global.calibration {
            Calibration::Cpu(c) => {
                let r = rate(c);
                if r <= 0.0 {
                    return Err(format!("{file}: calibration CPU{c} has no frequency"));
                }
                let p = (consts.get("calib_loop_cycles") / r).round().max(1.0) as u64;
                (p, r)
            }
            Calibration::NsPerLoop(p) => {
                let r = (0..nr_cpus).map(rate).fold(0.0, f64::max);
                (p, r)
            }
        };
        let loop_cycles = pload_ns as f64 * rate_cal;

        // which clocks are absolute: any timer event naming the clock says so
        let mut absolute_shared: Vec<&str> = Vec::new();
        for t in &tasks {
            for ph in &t.phases {
                for e in &ph.events {
                    if let Event::Timer {
                        clock,
                        unique: false,
                        absolute: true,
                        ..
                    } = e
                    {
                        absolute_shared.push(clock);
                    }
                }
            }
        }

        let mut marks = BTreeMap::new();
        let mut specs = Vec::new();
        let mut has_timer = false;
        for (ti, t) in tasks.iter().enumerate() {
            let origin_ns = t.delay_us * 1000;
            let absolute_unique: Vec<&str> = t
                .phases
                .iter()
                .flat_map(|p| p.events.iter())
                .filter_map(|e| match e {
                    Event::Timer {
                        clock,
                        unique: true,
                        absolute: true,
                        ..
                    } => Some(clock.as_str()),
                    _ => None,
                })
                .collect();
            let mut program = Vec::new();
            if t.delay_us > 0 {
                // rt-app threads sleep until t_zero + delay (absolute), forked ones too
                program.push(OpSpec::Clock {
                    name: DELAY_CLOCK.into(),
                    period_ns: origin_ns,
                    unique: true,
                    relative: false,
                    origin_ns: 0,
                });
            }
            let per_phase_cpus = t.phases.iter().any(|p| p.cpus.is_some());
            let mut body = Vec::new();
            for (pi, ph) in t.phases.iter().enumerate() {
                if per_phase_cpus {
                    body.push(OpSpec::SetAffinity {
                        cpus: ph.cpus.clone().unwrap_or_else(|| t.cpus.clone()),
                    });
                }
                // rt-app sets at a phase's start only the clamps the phase writes (-1, its
                // default, or no key: the current request stays)
                let [min, max] = ph.uclamp.map(|v| v.filter(|&v| v >= 0).map(|v| v as u32));
                if min.is_some() || max.is_some() {
                    body.push(OpSpec::SetUclamp { min, max });
                }
                let mut k = 0usize;
                let mut mark = |ops: &mut Vec<OpSpec>, kind: MarkKind| {
                    let name = format!("rtapp/{ti}/{pi}/{k}");
                    k += 1;
                    marks.insert(
                        name.clone(),
                        MarkInfo {
                            task: ti,
                            phase: pi,
                            kind,
                        },
                    );
                    ops.push(OpSpec::Mark { name });
                };
                let mut ops = Vec::new();
                mark(&mut ops, MarkKind::RowStart);
                for e in &ph.events {
                    match e {
                        Event::Run(us) => {
                            let loops = (*us as u128 * 1000 / pload_ns as u128) as f64;
                            let max = crate::workload::program::MAX_OP_CYCLES;
                            if loops * loop_cycles > max {
                                return Err(format!(
                                    "{file}: 'tasks.{}.phases.{}.run': {us} us is {:e} cycles of \
                                     work; one run may do at most {max:e}",
                                    t.name,
                                    ph.name,
                                    loops * loop_cycles
                                ));
                            }
                            mark(
                                &mut ops,
                                MarkKind::RunBegin {
                                    perf: us / pload_ns,
                                    c_us: *us,
                                },
                            );
                            ops.push(OpSpec::Run {
                                cycles: loops * loop_cycles,
                                stall_ns: 0.0,
                            });
                            mark(&mut ops, MarkKind::RunEnd);
                        }
                        Event::Runtime(us) => {
                            // rt-app runs 32 µs loadwait() chunks until the time has passed
                            let perf = (32 / pload_ns) * us.div_ceil(32);
                            mark(&mut ops, MarkKind::RunBegin { perf, c_us: *us });
                            ops.push(OpSpec::RunFor { ns: us * 1000 });
                            mark(&mut ops, MarkKind::RunEnd);
                        }
                        Event::Sleep(us) => {
                            // nanosleep(0) returns at once
                            if *us > 0 {
                                ops.push(OpSpec::Sleep { ns: us * 1000 });
                            }
                        }
                        Event::Timer {
                            clock,
                            unique,
                            period_us,
                            ..
                        } => {
                            has_timer = true;
                            let relative = if *unique {
                                !absolute_unique.contains(&clock.as_str())
                            } else {
                                !absolute_shared.contains(&clock.as_str())
                            };
                            mark(
                                &mut ops,
                                MarkKind::TimerBegin {
                                    clock: clock.clone(),
                                    unique: *unique,
                                    period_ns: period_us * 1000,
                                    origin_ns,
                                    relative,
                                    c_us: *period_us,
                                },
                            );
                            ops.push(OpSpec::Clock {
                                name: clock.clone(),
                                period_ns: period_us * 1000,
                                unique: *unique,
                                relative,
                                origin_ns,
                            });
                            mark(&mut ops, MarkKind::TimerEnd);
                        }
                        Event::Lock(m) => ops.push(OpSpec::Lock { mutex: m.clone() }),
                        Event::Unlock(m) => ops.push(OpSpec::Unlock { mutex: m.clone() }),
                        Event::Wait { cond, mutex } => ops.push(OpSpec::CondWait {
                            cond: cond.clone(),
                            mutex: mutex.clone(),
                        }),
                        Event::Signal(c) => ops.push(OpSpec::Signal { cond: c.clone() }),
                        Event::Broad(c) => ops.push(OpSpec::Broadcast { cond: c.clone() }),
                        Event::Sync { cond, mutex } => {
                            ops.push(OpSpec::Signal { cond: cond.clone() });
                            ops.push(OpSpec::CondWait {
                                cond: cond.clone(),
                                mutex: mutex.clone(),
                            });
                        }
                        Event::Barrier(b) => ops.push(OpSpec::Barrier { name: b.clone() }),
                        Event::Suspend(x) => {
                            // lock(X); pthread_cond_wait(X, X); unlock(X)
                            ops.push(OpSpec::Lock { mutex: x.clone() });
                            ops.push(OpSpec::CondWait {
                                cond: x.clone(),
                                mutex: x.clone(),
                            });
                            ops.push(OpSpec::Unlock { mutex: x.clone() });
                        }
                        Event::Resume(x) => {
                            // lock(X); pthread_cond_broadcast(X); unlock(X)
                            ops.push(OpSpec::Lock { mutex: x.clone() });
                            ops.push(OpSpec::Broadcast { cond: x.clone() });
                            ops.push(OpSpec::Unlock { mutex: x.clone() });
                        }
                        Event::Yield => ops.push(OpSpec::Yield),
                        Event::Fork(x) => ops.push(OpSpec::Fork { task: x.clone() }),
                        Event::Mem(bytes) => ops.push(OpSpec::Run {
                            cycles: *bytes as f64 / consts.get("memset_bytes_per_cycle"),
                            stall_ns: 0.0,
                        }),
                        Event::IoRun(bytes) => {
                            let calls = bytes.div_ceil(global.mem_buffer_size);
                            ops.push(OpSpec::Run {
                                cycles: calls as f64 * consts.get("write_syscall_cycles"),
                                stall_ns: 0.0,
                            });
                        }
                    }
                }
                mark(&mut ops, MarkKind::RowEnd);
                body.push(OpSpec::Loop {
                    count: if ph.loops <= 0 { -1 } else { ph.loops },
                    body: ops,
                });
            }
            if t.loops != 0 {
                program.push(OpSpec::Loop {
                    count: if t.loops < 0 { -1 } else { t.loops },
                    body,
                });
            }
            let (nice, priority) = match t.sched {
                Sched::Fair(_, n) => (n, 0),
                Sched::Rt(_, p) => (0, p),
            };
            specs.push(TaskSpec {
                instances: t.instances.max(1),
                nice,
                policy: t.sched.policy().into(),
                priority,
                cpus: t.cpus.clone(),
                start: t.instances > 0,
                cgroup: t.taskgroup.clone(),
                uclamp_min: t.uclamp[0].filter(|&v| v >= 0).map(|v| v as u32),
                uclamp_max: t.uclamp[1].filter(|&v| v >= 0).map(|v| v as u32),
                ..TaskSpec::new(t.name.clone(), program)
            });
        }
        Ok(RtApp {
            file: file.to_string(),
            workload: CustomWorkload {
                tasks: specs,
                channels: vec![],
            },
            duration_ns: (global.duration_s > 0).then(|| global.duration_s as u64 * 1_000_000_000),
            pload_ns,
            loop_cycles,
            cumulative_slack: global.cumulative_slack,
            marks,
            task_names: tasks
                .iter()
                .map(|t| {
                    (
                        t.name.clone(),
                        t.named_phases
                            .then(|| t.phases.iter().map(|p| p.name.clone()).collect()),
                    )
                })
                .collect(),
            has_timer,
        })
    }

    /// The task programs (for inspection and tests).
    pub fn programs(&self) -> &CustomWorkload {
        &self.workload
    }
}

/// One completed rt-app log row.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub task: usize,
    pub phase: usize,
    pub thread: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    pub perf: u64,
    pub run_ns: u64,
    pub c_duration_us: u64,
    pub c_period_us: u64,
    pub slack_ns: i64,
    pub wu_lat_ns: u64,
    pub timers: u32,
}

impl Row {
    pub fn period_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

#[derive(Default)]
struct ThreadState {
    row: Option<Row>,
    run_begin: u64,
    /// Expiry the thread sleeps until in the current timer event.
    timer_wait: Option<u64>,
}

impl RtApp {
    /// The rt-app log rows of a finished run, in completion order, from the marks: each timer
    /// event is replayed on its clock (shared or per thread) exactly as the program ran it.
    pub fn rows(&self, sim: &Sim) -> Vec<Row> {
        let info: Vec<Option<&MarkInfo>> = sim
            .compiled
            .marks
            .iter()
            .map(|n| self.marks.get(n))
            .collect();
        let mut threads: BTreeMap<usize, ThreadState> = BTreeMap::new();
        let mut clocks: BTreeMap<(Option<usize>, &str), u64> = BTreeMap::new();
        let mut rows = Vec::new();
        for &(t_ns, task, id) in &sim.marks {
            let Some(mi) = info.get(id).copied().flatten() else {
                continue;
            };
            let st = threads.entry(task).or_default();
            match &mi.kind {
                MarkKind::RowStart => {
                    st.row = Some(Row {
                        task: mi.task,
                        phase: mi.phase,
                        thread: task,
                        start_ns: t_ns,
                        ..Row::default()
                    });
                }
                MarkKind::RowEnd => {
                    if let Some(mut r) = st.row.take() {
                        r.end_ns = t_ns;
                        rows.push(r);
                    }
                }
                MarkKind::RunBegin { perf, c_us } => {
                    st.run_begin = t_ns;
                    if let Some(r) = st.row.as_mut() {
                        r.perf += perf;
                        r.c_duration_us += c_us;
                    }
                }
                MarkKind::RunEnd => {
                    if let Some(r) = st.row.as_mut() {
                        r.run_ns += t_ns - st.run_begin;
                    }
                }
                MarkKind::TimerBegin {
                    clock,
                    unique,
                    period_ns,
                    origin_ns,
                    relative,
                    c_us,
                } => {
                    let key = (unique.then_some(task), clock.as_str());
                    let next = clocks.get(&key).copied().unwrap_or(*origin_ns) + period_ns;
                    let slack = next as i64 - t_ns as i64;
                    let stored = if t_ns < next {
                        st.timer_wait = Some(next);
                        next
                    } else {
                        st.timer_wait = None;
                        if *relative {
                            t_ns
                        } else {
                            next
                        }
                    };
                    clocks.insert(key, stored);
                    if let Some(r) = st.row.as_mut() {
                        r.timers += 1;
                        r.c_period_us += c_us;
                        if self.cumulative_slack {
                            r.slack_ns += slack;
                        } else {
                            r.slack_ns = slack;
                        }
                        if st.timer_wait.is_none() {
                            // rt-app resets wu_lat when the timer did not sleep
                            r.wu_lat_ns = 0;
                        }
                    }
                }
                MarkKind::TimerEnd => {
                    if let (Some(next), Some(r)) = (st.timer_wait.take(), st.row.as_mut()) {
                        r.wu_lat_ns += t_ns.saturating_sub(next);
                    }
                }
            }
        }
        rows
    }
}

/// Sums over log rows.
#[derive(Default, Clone)]
struct Acc {
    rows: u64,
    run_rows: u64,
    run_ns: f64,
    perf: f64,
    period_ns: f64,
    timer_rows: u64,
    slack_ns: f64,
    missed: u64,
    wu_ns: f64,
    wu_max_ns: f64,
    c_duration_us: f64,
    c_period_us: f64,
}

impl Acc {
    fn add(&mut self, r: &Row) {
        self.rows += 1;
        self.period_ns += r.period_ns() as f64;
        self.c_duration_us += r.c_duration_us as f64;
        self.c_period_us += r.c_period_us as f64;
        if r.c_duration_us > 0 {
            self.run_rows += 1;
            self.run_ns += r.run_ns as f64;
            self.perf += r.perf as f64;
        }
        if r.timers > 0 {
            self.timer_rows += 1;
            self.slack_ns += r.slack_ns as f64;
            self.missed += (r.slack_ns < 0) as u64;
            self.wu_ns += r.wu_lat_ns as f64;
            self.wu_max_ns = self.wu_max_ns.max(r.wu_lat_ns as f64);
        }
    }

    /// Insert the means under `prefix`. `all`: every metric, null where there is no row (the
    /// run-wide set, which holds the primary metric); otherwise only those with rows behind
    /// them.
    fn emit(&self, prefix: &str, out: &mut BTreeMap<String, f64>, configured: bool, all: bool) {
        let mean = super::mean_or_no_data;
        if !all && self.rows == 0 {
            return;
        }
        out.insert(format!("{prefix}rows"), self.rows as f64);
        out.insert(
            format!("{prefix}period_us_mean"),
            mean(self.period_ns, self.rows) * 1e-3,
        );
        if all || self.run_rows > 0 {
            out.insert(
                format!("{prefix}run_us_mean"),
                mean(self.run_ns, self.run_rows) * 1e-3,
            );
            out.insert(format!("{prefix}perf_mean"), mean(self.perf, self.run_rows));
        }
        if all || self.timer_rows > 0 {
            out.insert(
                format!("{prefix}slack_us_mean"),
                mean(self.slack_ns, self.timer_rows) * 1e-3,
            );
            out.insert(
                format!("{prefix}missed_pct"),
                mean(100.0 * self.missed as f64, self.timer_rows),
            );
            out.insert(
                format!("{prefix}wu_lat_us_mean"),
                mean(self.wu_ns, self.timer_rows) * 1e-3,
            );
            out.insert(
                format!("{prefix}wu_lat_us_max"),
                if self.timer_rows > 0 {
                    self.wu_max_ns * 1e-3
                } else {
                    super::NO_DATA
                },
            );
        }
        if configured {
            out.insert(
                format!("{prefix}c_duration_us"),
                mean(self.c_duration_us, self.rows),
            );
            out.insert(
                format!("{prefix}c_period_us"),
                mean(self.c_period_us, self.rows),
            );
        }
    }
}

impl Model for RtApp {
    fn build(&self) -> Result<CustomWorkload, String> {
        Ok(self.workload.clone())
    }

    fn duration_ns(&self) -> Option<u64> {
        self.duration_ns
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let rows = self.rows(sim);
        let mut all = Acc::default();
        let mut per_task = vec![Acc::default(); self.task_names.len()];
        let mut per_phase: BTreeMap<(usize, usize), Acc> = BTreeMap::new();
        for r in &rows {
            all.add(r);
            per_task[r.task].add(r);
            per_phase.entry((r.task, r.phase)).or_default().add(r);
        }
        let mut values = BTreeMap::new();
        all.emit("", &mut values, false, true);
        values.insert("pload_ns".into(), self.pload_ns as f64);
        for (ti, (name, phases)) in self.task_names.iter().enumerate() {
            per_task[ti].emit(&format!("task.{name}."), &mut values, false, false);
            if let Some(phases) = phases {
                for (pi, pname) in phases.iter().enumerate() {
                    if let Some(acc) = per_phase.get(&(ti, pi)) {
                        acc.emit(&format!("task.{name}.{pname}."), &mut values, true, false);
                    }
                }
            }
        }
        let (primary, higher) = if self.has_timer {
            ("slack_us_mean", true)
        } else {
            ("run_us_mean", false)
        };
        Metrics {
            values,
            primary: primary.into(),
            higher_is_better: higher,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::event_of;

    #[test]
    fn event_keys_match_by_prefix_in_rt_apps_order() {
        let cases = [
            ("run", Some("run")),
            ("run2", Some("run")),
            ("run-x", Some("run")),
            ("runtime", Some("runtime")),
            ("runtime1", Some("runtime")),
            ("sleep_a", Some("sleep")),
            ("memrun", Some("memrun")),
            ("mem1", Some("mem")),
            ("unlock1", Some("unlock")),
            ("lock", Some("lock")),
            ("sync3", Some("sync")),
            ("broad", Some("broad")),
            ("resume2", Some("resume")),
            ("suspend", Some("suspend")),
            ("loop", None),
            ("resources", None),
            ("priority", None),
            ("policy", None),
            ("phases", None),
            ("instance", None),
            ("delay", None),
            ("dl-runtime", None),
            ("taskgroup", None),
        ];
        for (k, e) in cases {
            assert_eq!(event_of(k), e, "{k}");
        }
    }
}
