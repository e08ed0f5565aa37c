//! Perfetto protobuf output (spec/ecosystem.md §1.3, route A): the messages a Linux device's
//! `traced_probes` writes, so the Perfetto UI and trace processor fill their CPU tracks, thread
//! states, frequency and idle counters and SQL tables (`sched_slice`, `thread_state`, `counter`)
//! as for a real trace.
//!
//! A `Trace` is a stream of `TracePacket`s: one `system_info` (the kernel release, so that
//! `prev_state` bits decode with the right layout), one `process_tree` naming the tasks that
//! exist from the start, then the records as `FtraceEventBundle`s, one per CPU per chunk of the
//! time-sorted records, each holding that CPU's events in time order.
//!
//! Timestamps are the simulation's nanoseconds, made unique: an event at the same instant as
//! the one before it moves 1 ns later. Perfetto's sorter merges the per-CPU queues and breaks
//! ties by CPU, which would put a wakeup on a higher CPU after the switch-in it caused.
//!
//! The events are those of the ftrace text (`sched_switch`, `sched_waking`, `sched_wakeup`,
//! `sched_wakeup_new`, `sched_migrate_task`, `sched_process_fork`, `sched_process_exit`,
//! `cpu_frequency`, `cpu_idle`), plus what Perfetto's importer reads where the text has
//! nothing it parses: `task_newtask` beside each fork (the child's runnable time and its
//! process start) and `sched_process_free` beside each exit (the thread's end).
//!
//! Simplified: every task is its own process (tgid = pid); an `exec` does not rename it.

use super::ftrace::{Payload, Record, TaskRef, TraceBuf};

/// How many time-sorted records one round of per-CPU bundles covers.
const CHUNK: usize = 4096;

// Field numbers (protos/perfetto/trace/*.proto).
mod field {
    pub const TRACE_PACKET: u32 = 1;
    pub const PACKET_FTRACE_EVENTS: u32 = 1;
    pub const PACKET_PROCESS_TREE: u32 = 2;
    pub const PACKET_SEQUENCE_ID: u32 = 10;
    pub const PACKET_SYSTEM_INFO: u32 = 45;
    pub const SYSTEM_INFO_UTSNAME: u32 = 1;
    pub const SYSTEM_INFO_NUM_CPUS: u32 = 8;
    pub const UTS_SYSNAME: u32 = 1;
    pub const UTS_RELEASE: u32 = 3;
    pub const UTS_MACHINE: u32 = 4;
    pub const TREE_PROCESSES: u32 = 1;
    pub const TREE_THREADS: u32 = 2;
    pub const PROCESS_PID: u32 = 1;
    pub const PROCESS_PPID: u32 = 2;
    pub const PROCESS_CMDLINE: u32 = 3;
    pub const THREAD_TID: u32 = 1;
    pub const THREAD_NAME: u32 = 2;
    pub const THREAD_TGID: u32 = 3;
    pub const BUNDLE_CPU: u32 = 1;
    pub const BUNDLE_EVENT: u32 = 2;
    pub const EVENT_TIMESTAMP: u32 = 1;
    pub const EVENT_PID: u32 = 2;
    pub const EVENT_SCHED_SWITCH: u32 = 4;
    pub const EVENT_CPU_FREQUENCY: u32 = 11;
    pub const EVENT_CPU_IDLE: u32 = 13;
    pub const EVENT_SCHED_WAKEUP: u32 = 17;
    pub const EVENT_SCHED_WAKING: u32 = 20;
    pub const EVENT_SCHED_WAKEUP_NEW: u32 = 114;
    pub const EVENT_TASK_NEWTASK: u32 = 235;
    pub const EVENT_SCHED_PROCESS_EXIT: u32 = 238;
    pub const EVENT_SCHED_PROCESS_FORK: u32 = 239;
    pub const EVENT_SCHED_PROCESS_FREE: u32 = 240;
    pub const EVENT_SCHED_MIGRATE_TASK: u32 = 491;
}

/// A task that exists from the run's start (no parent in the run), for the process tree.
#[derive(Clone, Debug)]
pub struct TaskInfo {
    pub pid: u32,
    pub comm: String,
}

/// The kernel's `prev_state` bits for a `sched_switch` state string, in the layout of the
/// kernel `version` (as Perfetto decodes them, by the release in `system_info`): S 0x1, D 0x2,
/// T 0x4, t 0x8, X 0x10, Z 0x20 always; from v4.14 (`TASK_REPORT`) P 0x40, I 0x80 and 0x100
/// for a preempted task's `+`; before, P 0x200 and `+` at `TASK_STATE_MAX`: 0x1000 from v4.8,
/// 0x800 before. `R` is 0.
pub fn prev_state_bits(state: &str, version: (u32, u32)) -> i64 {
    let report = version >= (4, 14);
    let preempted = if report {
        0x100
    } else if version >= (4, 8) {
        0x1000
    } else {
        0x800
    };
    let mut bits = 0;
    for c in state.chars() {
        bits |= match c {
            'S' => 0x1,
            'D' => 0x2,
            'T' => 0x4,
            't' => 0x8,
            'X' => 0x10,
            'Z' => 0x20,
            'P' if report => 0x40,
            'P' => 0x200,
            'I' if report => 0x80,
            '+' => preempted,
            _ => 0,
        };
    }
    bits
}

/// `clone_flags` of a forked process: `SIGCHLD`, no `CLONE_THREAD` (every task is a process).
const FORK_CLONE_FLAGS: u64 = 0x11;

/// A protobuf message under construction.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire_type: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire_type));
    }

    /// A varint field: uint32/uint64, and int32/int64 as their two's complement.
    fn uint(&mut self, field: u32, v: u64) -> &mut Self {
        self.key(field, 0);
        self.varint(v);
        self
    }

    fn int(&mut self, field: u32, v: i64) -> &mut Self {
        self.uint(field, v as u64)
    }

    fn bytes(&mut self, field: u32, b: &[u8]) -> &mut Self {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }

    fn string(&mut self, field: u32, s: &str) -> &mut Self {
        self.bytes(field, s.as_bytes())
    }

    fn msg(&mut self, field: u32, m: &Msg) -> &mut Self {
        self.bytes(field, &m.0)
    }
}

/// Encode the trace of a run on kernel `version`. `machine` is the architecture (`x86_64`,
/// `aarch64`); `tasks` are the tasks that exist from the start (the process tree).
pub fn encode(
    buf: &TraceBuf,
    nr_cpus: usize,
    version: (u32, u32),
    machine: &str,
    tasks: &[TaskInfo],
) -> Vec<u8> {
    let release = format!("{}.{}.0", version.0, version.1);
    let mut trace = Msg::default();
    let mut uts = Msg::default();
    uts.string(field::UTS_SYSNAME, "Linux")
        .string(field::UTS_RELEASE, &release)
        .string(field::UTS_MACHINE, machine);
    let mut info = Msg::default();
    info.msg(field::SYSTEM_INFO_UTSNAME, &uts)
        .uint(field::SYSTEM_INFO_NUM_CPUS, nr_cpus as u64);
    packet(&mut trace, |p| {
        p.msg(field::PACKET_SYSTEM_INFO, &info);
    });
    let tree = process_tree(tasks);
    packet(&mut trace, |p| {
        p.msg(field::PACKET_PROCESS_TREE, &tree);
    });
    let order = buf.time_order();
    let mut last_ts: Option<u64> = None;
    let mut unique_ts = |ts: u64| {
        let t = last_ts.map_or(ts, |l| ts.max(l + 1));
        last_ts = Some(t);
        t
    };
    for chunk in order.chunks(CHUNK) {
        // (bundle, events in it) per CPU
        let mut bundles: Vec<(Msg, usize)> = (0..nr_cpus).map(|_| (Msg::default(), 0)).collect();
        for &i in chunk {
            let r = &buf.records[i];
            let (bundle, n) = &mut bundles[r.cpu];
            if *n == 0 {
                bundle.uint(field::BUNDLE_CPU, r.cpu as u64);
            }
            for e in events(buf, r, version) {
                bundle.msg(field::BUNDLE_EVENT, &e.finish(unique_ts(r.ts), r.ctx.pid));
            }
            *n += 1;
        }
        for (bundle, n) in &bundles {
            if *n > 0 {
                packet(&mut trace, |p| {
                    p.msg(field::PACKET_FTRACE_EVENTS, bundle);
                });
            }
        }
    }
    trace.0
}

/// Append one `TracePacket` (all on trusted sequence 1).
fn packet(trace: &mut Msg, fill: impl FnOnce(&mut Msg)) {
    let mut p = Msg::default();
    fill(&mut p);
    p.uint(field::PACKET_SEQUENCE_ID, 1);
    trace.msg(field::TRACE_PACKET, &p);
}

fn process_tree(tasks: &[TaskInfo]) -> Msg {
    let mut tree = Msg::default();
    for t in tasks {
        let mut p = Msg::default();
        p.int(field::PROCESS_PID, i64::from(t.pid))
            .int(field::PROCESS_PPID, 0)
            .string(field::PROCESS_CMDLINE, &t.comm);
        tree.msg(field::TREE_PROCESSES, &p);
        let mut th = Msg::default();
        th.int(field::THREAD_TID, i64::from(t.pid))
            .string(field::THREAD_NAME, &t.comm)
            .int(field::THREAD_TGID, i64::from(t.pid));
        tree.msg(field::TREE_THREADS, &th);
    }
    tree
}

/// An `FtraceEvent`'s payload: (field, message); the common fields come last.
struct Event(u32, Msg);

impl Event {
    fn finish(&self, ts: u64, pid: u32) -> Msg {
        let mut e = Msg::default();
        e.uint(field::EVENT_TIMESTAMP, ts)
            .uint(field::EVENT_PID, u64::from(pid))
            .msg(self.0, &self.1);
        e
    }
}

/// The `FtraceEvent`s of one record: its own, and the companions Perfetto reads.
fn events(buf: &TraceBuf, r: &Record, version: (u32, u32)) -> Vec<Event> {
    let comm = |t: &TaskRef| buf.payload_comm(t, r.cpu);
    let mut m = Msg::default();
    let own = match &r.payload {
        Payload::Switch {
            prev,
            prev_state,
            next,
        } => {
            m.string(1, &comm(prev))
                .int(2, i64::from(prev.pid))
                .int(3, i64::from(prev.prio))
                .int(4, prev_state_bits(prev_state, version))
                .string(5, &comm(next))
                .int(6, i64::from(next.pid))
                .int(7, i64::from(next.prio));
            field::EVENT_SCHED_SWITCH
        }
        Payload::Waking { p, target } => {
            wakeup(&mut m, &comm(p), p, *target);
            field::EVENT_SCHED_WAKING
        }
        Payload::Wakeup { p, target } => {
            wakeup(&mut m, &comm(p), p, *target);
            field::EVENT_SCHED_WAKEUP
        }
        Payload::WakeupNew { p, target } => {
            wakeup(&mut m, &comm(p), p, *target);
            field::EVENT_SCHED_WAKEUP_NEW
        }
        Payload::Migrate { p, orig, dest } => {
            m.string(1, &comm(p))
                .int(2, i64::from(p.pid))
                .int(3, i64::from(p.prio))
                .int(4, *orig as i64)
                .int(5, *dest as i64);
            field::EVENT_SCHED_MIGRATE_TASK
        }
        Payload::Fork { parent, child } => {
            m.string(1, &comm(parent))
                .int(2, i64::from(parent.pid))
                .string(3, &comm(child))
                .int(4, i64::from(child.pid));
            let mut new = Msg::default();
            new.int(1, i64::from(child.pid))
                .string(2, &comm(child))
                .uint(3, FORK_CLONE_FLAGS);
            return vec![
                Event(field::EVENT_SCHED_PROCESS_FORK, m),
                Event(field::EVENT_TASK_NEWTASK, new),
            ];
        }
        Payload::Exit { p } => {
            m.string(1, &comm(p))
                .int(2, i64::from(p.pid))
                .int(3, i64::from(p.pid))
                .int(4, i64::from(p.prio));
            let mut free = Msg::default();
            free.string(1, &comm(p))
                .int(2, i64::from(p.pid))
                .int(3, i64::from(p.prio));
            return vec![
                Event(field::EVENT_SCHED_PROCESS_EXIT, m),
                Event(field::EVENT_SCHED_PROCESS_FREE, free),
            ];
        }
        Payload::CpuFrequency { khz, cpu } => {
            m.uint(1, *khz).uint(2, *cpu as u64);
            field::EVENT_CPU_FREQUENCY
        }
        Payload::CpuIdle { state, cpu } => {
            m.uint(1, *state).uint(2, *cpu as u64);
            field::EVENT_CPU_IDLE
        }
    };
    vec![Event(own, m)]
}

/// `sched_waking`, `sched_wakeup` and `sched_wakeup_new` share one layout.
fn wakeup(m: &mut Msg, comm: &str, p: &TaskRef, target: usize) {
    m.string(1, comm)
        .int(2, i64::from(p.pid))
        .int(3, i64::from(p.prio))
        .int(4, 1)
        .int(5, target as i64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_keys_follow_the_wire_format() {
        // protobuf's encoding guide: 150 in field 1 is 08 96 01; 300 is AC 02
        let mut m = Msg::default();
        m.uint(1, 150);
        assert_eq!(m.0, vec![0x08, 0x96, 0x01]);
        let mut m = Msg::default();
        m.varint(300);
        assert_eq!(m.0, vec![0xac, 0x02]);
        // a negative int32 is its 64-bit two's complement: ten bytes
        let mut m = Msg::default();
        m.int(1, -1);
        assert_eq!(m.0.len(), 11);
        assert_eq!(m.0[10], 0x01);
        // "testing" in field 2: 12 07 then the bytes
        let mut m = Msg::default();
        m.string(2, "testing");
        assert_eq!(&m.0[..2], &[0x12, 0x07]);
        // field 491 (sched_migrate_task), length-delimited: (491 << 3 | 2) = 3930 = DA 1E
        let mut m = Msg::default();
        m.bytes(491, &[]);
        assert_eq!(m.0, vec![0xda, 0x1e, 0x00]);
    }

    #[test]
    fn prev_state_bits_follow_the_kernels_layout() {
        let v = (6, 12);
        assert_eq!(prev_state_bits("R", v), 0);
        assert_eq!(prev_state_bits("R+", v), 0x100);
        assert_eq!(prev_state_bits("S", v), 1);
        assert_eq!(prev_state_bits("D", v), 2);
        assert_eq!(prev_state_bits("X", v), 0x10);
        assert_eq!(prev_state_bits("D|S", v), 3);
        // TASK_STATE_MAX marked a preempted task before TASK_REPORT (v4.14)
        assert_eq!(prev_state_bits("R+", (4, 9)), 0x1000);
        assert_eq!(prev_state_bits("R+", (4, 4)), 0x800);
        assert_eq!(prev_state_bits("S", (4, 9)), 1);
    }
}
