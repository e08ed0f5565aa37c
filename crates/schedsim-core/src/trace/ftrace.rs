//! ftrace text output (the tracefs `trace` file / `trace-cmd report -N` form), with the payloads
//! of `include/trace/events/sched.h` and `power.h`: no latency-flags column, comm at most 15
//! bytes without spaces, `<idle>` / `swapper/N` for the idle task, both `sched_waking` and
//! `sched_wakeup`, lines in global time order.

use std::collections::HashMap;
use std::fmt::Write;

use crate::sim::time::Time;

/// `PWR_EVENT_EXIT`: the cpu_idle state that means "leaving idle".
pub const PWR_EVENT_EXIT: u64 = 4294967295;

/// Who was running on the CPU when the event was emitted (the line prefix).
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    pub comm: u32,
    pub pid: u32,
}

/// A task as the payloads print it.
#[derive(Clone, Copy, Debug)]
pub struct TaskRef {
    pub comm: u32,
    pub pid: u32,
    pub prio: i32,
}

#[derive(Clone, Debug)]
pub enum Payload {
    Switch {
        prev: TaskRef,
        prev_state: &'static str,
        next: TaskRef,
    },
    Waking {
        p: TaskRef,
        target: usize,
    },
    Wakeup {
        p: TaskRef,
        target: usize,
    },
    WakeupNew {
        p: TaskRef,
        target: usize,
    },
    Migrate {
        p: TaskRef,
        orig: usize,
        dest: usize,
    },
    Fork {
        parent: TaskRef,
        child: TaskRef,
    },
    Exit {
        p: TaskRef,
    },
    CpuFrequency {
        khz: u64,
        cpu: usize,
    },
    CpuIdle {
        state: u64,
        cpu: usize,
    },
}

#[derive(Clone, Debug)]
pub struct Record {
    pub ts: Time,
    pub cpu: usize,
    pub ctx: Ctx,
    pub payload: Payload,
}

/// Records plus an interned comm table. Comm 0 is the idle task.
pub struct TraceBuf {
    pub records: Vec<Record>,
    comms: Vec<String>,
    index: HashMap<String, u32>,
}

/// Kernel-style comm: at most 15 bytes, spaces replaced.
pub fn sanitize_comm(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect();
    while out.len() > 15 {
        out.pop();
    }
    out
}

impl TraceBuf {
    pub fn new() -> Self {
        let mut t = TraceBuf {
            records: Vec::new(),
            comms: Vec::new(),
            index: HashMap::new(),
        };
        t.intern("<idle>");
        t
    }

    pub fn intern(&mut self, comm: &str) -> u32 {
        if let Some(&i) = self.index.get(comm) {
            return i;
        }
        let i = self.comms.len() as u32;
        self.comms.push(sanitize_comm(comm));
        self.index.insert(comm.to_string(), i);
        i
    }

    pub fn push(&mut self, ts: Time, cpu: usize, ctx: Ctx, payload: Payload) {
        self.records.push(Record {
            ts,
            cpu,
            ctx,
            payload,
        });
    }

    /// A task's comm as payloads print it (`swapper/N` for the idle task).
    pub(crate) fn payload_comm(&self, t: &TaskRef, cpu: usize) -> String {
        if t.pid == 0 {
            format!("swapper/{cpu}")
        } else {
            self.comms[t.comm as usize].clone()
        }
    }

    /// The record indices sorted by time (stable, so same-time records keep their emission
    /// order).
    pub fn time_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.records.len()).collect();
        order.sort_by_key(|&i| self.records[i].ts);
        order
    }

    /// Format as tracefs text, in time order.
    pub fn to_text(&self, nr_cpus: usize) -> String {
        let order = self.time_order();
        let mut s = String::with_capacity(self.records.len() * 120 + 256);
        s.push_str("# tracer: nop\n#\n");
        let _ = writeln!(
            s,
            "# entries-in-buffer/entries-written: {0}/{0}   #P:{1}",
            self.records.len(),
            nr_cpus
        );
        s.push_str("#\n#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n#              | |         |         |         |\n");
        for i in order {
            self.format_line(&mut s, &self.records[i]);
        }
        s
    }

    fn format_line(&self, s: &mut String, r: &Record) {
        let comm = if r.ctx.pid == 0 {
            "<idle>"
        } else {
            self.comms[r.ctx.comm as usize].as_str()
        };
        let head = format!("{comm}-{}", r.ctx.pid);
        let secs = r.ts / 1_000_000_000;
        let usecs = (r.ts / 1_000) % 1_000_000;
        let _ = write!(s, "{head:>22} [{:03}] {secs:>5}.{usecs:06}: ", r.cpu);
        let cpu = r.cpu;
        match &r.payload {
            Payload::Switch {
                prev,
                prev_state,
                next,
            } => {
                let _ = writeln!(
                    s,
                    "sched_switch: prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
                    self.payload_comm(prev, cpu),
                    prev.pid,
                    prev.prio,
                    prev_state,
                    self.payload_comm(next, cpu),
                    next.pid,
                    next.prio
                );
            }
            Payload::Waking { p, target } => self.wake_line(s, "sched_waking", p, *target),
            Payload::Wakeup { p, target } => self.wake_line(s, "sched_wakeup", p, *target),
            Payload::WakeupNew { p, target } => self.wake_line(s, "sched_wakeup_new", p, *target),
            Payload::Migrate { p, orig, dest } => {
                let _ = writeln!(
                    s,
                    "sched_migrate_task: comm={} pid={} prio={} orig_cpu={orig} dest_cpu={dest}",
                    self.comms[p.comm as usize], p.pid, p.prio
                );
            }
            Payload::Fork { parent, child } => {
                let _ = writeln!(
                    s,
                    "sched_process_fork: comm={} pid={} child_comm={} child_pid={}",
                    self.comms[parent.comm as usize],
                    parent.pid,
                    self.comms[child.comm as usize],
                    child.pid
                );
            }
            Payload::Exit { p } => {
                let _ = writeln!(
                    s,
                    "sched_process_exit: comm={} pid={} prio={}",
                    self.comms[p.comm as usize], p.pid, p.prio
                );
            }
            Payload::CpuFrequency { khz, cpu } => {
                let _ = writeln!(s, "cpu_frequency: state={khz} cpu_id={cpu}");
            }
            Payload::CpuIdle { state, cpu } => {
                let _ = writeln!(s, "cpu_idle: state={state} cpu_id={cpu}");
            }
        }
    }

    fn wake_line(&self, s: &mut String, ev: &str, p: &TaskRef, target: usize) {
        let _ = writeln!(
            s,
            "{ev}: comm={} pid={} prio={} target_cpu={target:03}",
            self.comms[p.comm as usize], p.pid, p.prio
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_the_tracefs_shape() {
        let mut t = TraceBuf::new();
        let c = t.intern("rtapp small task");
        let ctx = Ctx { comm: c, pid: 1001 };
        let idle = Ctx { comm: 0, pid: 0 };
        let me = TaskRef {
            comm: c,
            pid: 1001,
            prio: 120,
        };
        let sw = TaskRef {
            comm: 0,
            pid: 0,
            prio: 120,
        };
        t.push(3_000_000, 0, ctx, Payload::Waking { p: me, target: 1 });
        t.push(
            1_000_000,
            0,
            idle,
            Payload::Switch {
                prev: sw,
                prev_state: "R",
                next: me,
            },
        );
        t.push(
            3_010_000,
            1,
            idle,
            Payload::CpuIdle {
                state: PWR_EVENT_EXIT,
                cpu: 1,
            },
        );
        let text = t.to_text(2);
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines[0],
            "              <idle>-0 [000]     0.001000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtapp_small_tas next_pid=1001 next_prio=120"
        );
        assert_eq!(
            lines[1],
            "  rtapp_small_tas-1001 [000]     0.003000: sched_waking: comm=rtapp_small_tas pid=1001 prio=120 target_cpu=001"
        );
        assert_eq!(
            lines[2],
            "              <idle>-0 [001]     0.003010: cpu_idle: state=4294967295 cpu_id=1"
        );
        assert!(text.starts_with("# tracer: nop\n"));
    }
}
