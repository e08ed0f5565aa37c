//! `hackbench`: `perf bench sched messaging` (Rusty Russell's hackbench; MMTests'
//! hackbench-{process,thread}-{pipes,sockets}, spec/workloads.md §5).
//!
//! Per group, `fds` receivers each own one pipe or AF_UNIX stream socketpair, and `fds`
//! senders each write `loops` rounds of one `datasize`-byte message to every receiver of the
//! group; a receiver reads `fds × loops` messages. The parent creates every worker (fork or
//! pthread_create), waits until each has written its byte to the "ready" pipe, reads the
//! clock, writes the GO byte that every worker polls for (one write wakes them all, from the
//! parent's CPU), then reaps them (wait() in process mode, pthread_join in creation order in
//! thread mode) and reads the clock again. `time_s` is that interval, as perf prints it
//! (`Total time: S.mmm [sec]`, truncated to the millisecond).
//!
//! Mapping onto task programs: a receiver's pipe/socket is a bounded channel whose capacity
//! is the kernel's buffer in messages (pipe: 16 pages of whole messages; socket: `sk_sndbuf`
//! over the skb truesize of one message). A write is `run(write cycles + stall); send` (a sync
//! wakeup of a waiting reader), a read is `recv; run(read cycles + stall)`. A socket's blocked
//! writers all wake once a read leaves a quarter of its buffer in use (the channel's write
//! space, `unix_write_space`); a pipe counts its space in pages and wakes its writers as
//! `pipe_read` does in the run's kernel version (the channel's `pipe_page`). The GO byte that every worker
//! polls is a level-triggered event: `resume` of each worker (a worker not yet suspended
//! keeps it pending). The creation cost (fork or clone) happens before the clock starts.
//! Process and thread mode run the same program; they differ in what happens inside the timed
//! region at the end: a forked process tears down its copy of perf's address space before it
//! exits (`process_exit_cycles`), and the parent reaps children in any order with wait(),
//! while thread mode joins them one by one in creation order.

use std::collections::BTreeMap;

use super::constants::Constants;
use super::spec::{ChannelSpec, CustomWorkload, OpSpec, TaskSpec};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;

const CONSTANTS_JSON: &str = include_str!("../../data/workloads/hackbench.json");

/// The model constants (`data/workloads/hackbench.json`).
pub fn constants() -> Constants {
    Constants::parse("hackbench", CONSTANTS_JSON).expect("data/workloads/hackbench.json is valid")
}

/// Kernel constants for the buffer sizes (not model choices).
/// `PIPE_DEF_BUFFERS`: a pipe holds 16 pages.
pub const PIPE_DEF_BUFFERS: u64 = 16;
pub const PAGE_SIZE: u64 = 4096;
/// `net.core.wmem_default`: the sender socket's `sk_sndbuf`.
pub const WMEM_DEFAULT: u64 = 212_992;
/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))` and `SKB_DATA_ALIGN(sizeof(struct
/// skb_shared_info))` on x86-64 (232 and 320 bytes, 64-byte aligned).
pub const SKB_STRUCT_ALIGNED: u64 = 256;
pub const SKB_SHINFO_ALIGNED: u64 = 320;

/// Messages a pipe holds before a writer blocks: `pipe_write` merges a write into the last
/// page only if it fits whole (writes up to PIPE_BUF are atomic), so a page holds
/// ⌊4096 / size⌋ messages.
pub fn pipe_capacity(datasize: u64) -> u32 {
    PIPE_DEF_BUFFERS as u32 * pipe_page(datasize)
}

/// Messages one pipe page holds.
pub fn pipe_page(datasize: u64) -> u32 {
    (PAGE_SIZE / datasize).max(1) as u32
}

/// Messages an AF_UNIX stream socket takes before the writer blocks.
/// `unix_stream_sendmsg` puts one message in one skb: up to `SKB_MAX_HEAD(0)` (3776) bytes in
/// the kmalloc'ed head (`SKB_DATA_ALIGN(size) + shinfo`, rounded up to its kmalloc size class),
/// larger messages in a page fragment behind an empty head. The skb is charged its truesize
/// (that allocation + the aligned `struct sk_buff`), and `sock_alloc_send_pskb` allocates while
/// `sk_wmem_alloc < sk_sndbuf`. Matches Linux 6.18: 278 messages of 1-64 or 100 B, 167 of
/// 200-500 B, 93 of 1000 B, 49 of 2000-3776 B, 44 of 3800-4096 B.
pub fn socket_capacity(datasize: u64) -> u32 {
    WMEM_DEFAULT.div_ceil(skb_truesize(datasize)) as u32
}

/// The truesize of the skb `unix_stream_sendmsg` allocates for one `datasize`-byte message.
fn skb_truesize(datasize: u64) -> u64 {
    let skb_max_head = PAGE_SIZE - SKB_SHINFO_ALIGNED;
    let empty_head = SKB_SHINFO_ALIGNED.next_power_of_two();
    if datasize > skb_max_head {
        empty_head + SKB_STRUCT_ALIGNED + datasize.div_ceil(PAGE_SIZE) * PAGE_SIZE
    } else {
        let head = datasize.div_ceil(64) * 64 + SKB_SHINFO_ALIGNED;
        head.next_power_of_two() + SKB_STRUCT_ALIGNED
    }
}

/// Messages left in an AF_UNIX stream socket when its blocked writers wake: each read frees
/// an skb (`sock_wfree`), and `unix_write_space()` wakes the writers only once
/// `unix_writable()`, `sk_wmem_alloc × 4 <= sk_sndbuf`, holds: a quarter of the buffer
/// (69 of 278 messages of 100 B).
pub fn socket_write_space(datasize: u64) -> u32 {
    (WMEM_DEFAULT / 4 / skb_truesize(datasize)) as u32
}

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| Ok(Box::new(Hackbench::new(ctx.params)?)),
    }
}

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "hackbench",
        description: "perf bench sched messaging (hackbench): per group `fds` senders each write `loops` rounds of one `datasize`-byte message to each of the group's `fds` receivers over pipes or AF_UNIX sockets (buffers of 640 / 278 messages at 100 B); a start barrier releases every worker at once from the parent, which then reaps them. time_s = wall time from the release to the last reap, truncated to ms like perf. mode=process|thread: same program; processes tear down their address space at exit inside the timed region and are reaped by wait(), threads are joined in creation order. Runs to completion.",
        params: vec![
            ParamInfo { name: "groups", default: 10.into(), description: "-g, number of groups (2*fds tasks each)" },
            ParamInfo { name: "loops", default: 100.into(), description: "-l, rounds of messages each sender writes to each receiver" },
            ParamInfo { name: "mode", default: "process".into(), description: "process (fork, default) or thread (-t, pthreads)" },
            ParamInfo { name: "ipc", default: "socket".into(), description: "socket (socketpair AF_UNIX SOCK_STREAM, default) or pipe (-p)" },
            ParamInfo { name: "fds", default: 20.into(), description: "senders and receivers per group (perf: 20; rt-tests hackbench -f)" },
            ParamInfo { name: "datasize", default: 100.into(), description: "bytes per message (perf: 100; rt-tests hackbench -s), 1..4096" },
        ],
        metrics: vec!["time_s", "time_us", "completed", "workers"],
        primary: "time_s",
        higher_is_better: false,
        open_ended: false,
    }
}

/// `mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Process,
    Thread,
}

/// `ipc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ipc {
    Socket,
    Pipe,
}

/// A generated hackbench.
#[derive(Clone, Debug)]
pub struct Hackbench {
    pub groups: u32,
    pub loops: u32,
    pub mode: Mode,
    pub ipc: Ipc,
    pub fds: u32,
    pub datasize: u64,
    /// Messages a receiver's channel holds.
    pub capacity: u32,
    /// Messages left when its blocked writers wake (sockets).
    pub write_space: Option<u32>,
    /// Messages per page (pipes).
    pub pipe_page: Option<u32>,
    pub write_cycles: f64,
    pub read_cycles: f64,
    /// Memory stall per write / read (ns).
    pub write_stall_ns: f64,
    pub read_stall_ns: f64,
    pub exit_cycles: f64,
}

fn str_param(
    params: &BTreeMap<String, serde_json::Value>,
    name: &str,
    default: &str,
    allowed: &[&str],
) -> Result<String, String> {
    let Some(v) = params.get(name) else {
        return Ok(default.to_string());
    };
    match v.as_str() {
        Some(s) if allowed.contains(&s) => Ok(s.to_string()),
        _ => Err(format!(
            "workload 'hackbench': parameter {name} = {v}: expected one of {}",
            allowed.join(", ")
        )),
    }
}

/// Template names.
pub fn receiver_name(g: u32, j: u32) -> String {
    format!("hb-recv-{g}-{j}")
}
pub fn sender_name(g: u32, i: u32) -> String {
    format!("hb-send-{g}-{i}")
}
pub const PARENT: &str = "hackbench";

/// The most worker tasks a run may create.
pub const MAX_WORKERS: u64 = crate::workload::MAX_TASKS;

impl Hackbench {
    pub fn new(params: &BTreeMap<String, serde_json::Value>) -> Result<Self, String> {
        let p = Params::new("hackbench", params, &info())?;
        let groups = p.int("groups", 10, 1, 10_000)? as u32;
        let loops = p.int("loops", 100, 1, 100_000_000)? as u32;
        let fds = p.int("fds", 20, 1, 1000)? as u32;
        let datasize = p.int("datasize", 100, 1, 4096)? as u64;
        if 2 * fds as u64 * groups as u64 > MAX_WORKERS {
            return Err(format!(
                "workload 'hackbench': groups = {groups} x 2 x fds = {fds} is {} tasks; at most {MAX_WORKERS}",
                2 * fds as u64 * groups as u64
            ));
        }
        let mode = match str_param(params, "mode", "process", &["process", "thread"])?.as_str() {
            "thread" => Mode::Thread,
            _ => Mode::Process,
        };
        let ipc = match str_param(params, "ipc", "socket", &["socket", "pipe"])?.as_str() {
            "pipe" => Ipc::Pipe,
            _ => Ipc::Socket,
        };
        let c = constants();
        let per_byte = c.get("copy_cycles_per_byte");
        let extra = (datasize as f64 - 100.0) * per_byte;
        let kind = match ipc {
            Ipc::Socket => "socket",
            Ipc::Pipe => "pipe",
        };
        let k = |what: &str| c.get(&format!("{kind}_{what}"));
        let (w, r) = (k("write_cycles"), k("read_cycles"));
        let (capacity, write_space, page) = match ipc {
            Ipc::Socket => (
                socket_capacity(datasize),
                Some(socket_write_space(datasize)),
                None,
            ),
            Ipc::Pipe => (pipe_capacity(datasize), None, Some(pipe_page(datasize))),
        };
        Ok(Hackbench {
            groups,
            loops,
            mode,
            ipc,
            fds,
            datasize,
            capacity,
            write_space,
            pipe_page: page,
            write_cycles: (w + extra).max(0.0),
            read_cycles: (r + extra).max(0.0),
            write_stall_ns: k("write_stall_ns"),
            read_stall_ns: k("read_stall_ns"),
            exit_cycles: match mode {
                Mode::Process => c.get("process_exit_cycles"),
                Mode::Thread => 0.0,
            },
        })
    }

    /// Workers in creation order: per group its receivers, then its senders (as perf's
    /// `group()` creates them and `pth_tab` lists them).
    pub fn worker_names(&self) -> Vec<String> {
        let mut v = Vec::new();
        for g in 0..self.groups {
            for j in 0..self.fds {
                v.push(receiver_name(g, j));
            }
            for i in 0..self.fds {
                v.push(sender_name(g, i));
            }
        }
        v
    }

    /// The end of a worker: teardown, then exit (process), or wake the joiner (thread).
    fn worker_tail(&self, k: usize) -> Vec<OpSpec> {
        let mut v = Vec::new();
        if self.exit_cycles > 0.0 {
            v.push(OpSpec::Run {
                cycles: self.exit_cycles,
                stall_ns: 0.0,
            });
        }
        if self.mode == Mode::Thread {
            v.push(OpSpec::Send {
                chan: format!("join-{k}"),
            });
        }
        v.push(OpSpec::Exit);
        v
    }

    /// `ready()`: write the ready byte, then poll for GO.
    fn ready() -> Vec<OpSpec> {
        vec![
            OpSpec::Send {
                chan: "ready".into(),
            },
            OpSpec::Suspend,
        ]
    }

    fn workload(&self) -> CustomWorkload {
        let task = |name: String, start: bool, program: Vec<OpSpec>| TaskSpec {
            start,
            ..TaskSpec::new(name, program)
        };
        let n = (2 * self.fds * self.groups) as usize;
        let mut tasks = Vec::with_capacity(n + 1);
        let mut channels = vec![ChannelSpec::new("ready", n as u32)];
        let mut k = 0usize;
        for g in 0..self.groups {
            for j in 0..self.fds {
                let chan = format!("g{g}-r{j}");
                channels.push(ChannelSpec {
                    write_space: self.write_space,
                    pipe_page: self.pipe_page,
                    ..ChannelSpec::new(chan.clone(), self.capacity)
                });
                let mut prog = Self::ready();
                prog.push(OpSpec::Loop {
                    count: self.fds as i64 * self.loops as i64,
                    body: vec![
                        OpSpec::Recv { chan },
                        OpSpec::Run {
                            cycles: self.read_cycles,
                            stall_ns: self.read_stall_ns,
                        },
                    ],
                });
                prog.push(OpSpec::Mark {
                    name: "received".into(),
                });
                prog.extend(self.worker_tail(k));
                tasks.push(task(receiver_name(g, j), false, prog));
                k += 1;
            }
            for i in 0..self.fds {
                let mut body = Vec::with_capacity(2 * self.fds as usize);
                for j in 0..self.fds {
                    body.push(OpSpec::Run {
                        cycles: self.write_cycles,
                        stall_ns: self.write_stall_ns,
                    });
                    body.push(OpSpec::Send {
                        chan: format!("g{g}-r{j}"),
                    });
                }
                let mut prog = Self::ready();
                prog.push(OpSpec::Loop {
                    count: self.loops as i64,
                    body,
                });
                prog.push(OpSpec::Mark {
                    name: "sent".into(),
                });
                prog.extend(self.worker_tail(k));
                tasks.push(task(sender_name(g, i), false, prog));
                k += 1;
            }
        }
        let names = self.worker_names();
        if self.mode == Mode::Thread {
            for k in 0..n {
                channels.push(ChannelSpec::new(format!("join-{k}"), 1));
            }
        }
        // the parent
        let mut prog: Vec<OpSpec> = names
            .iter()
            .map(|t| OpSpec::Fork { task: t.clone() })
            .collect();
        prog.push(OpSpec::Loop {
            count: n as i64,
            body: vec![OpSpec::Recv {
                chan: "ready".into(),
            }],
        });
        prog.push(OpSpec::Mark { name: "go".into() });
        prog.extend(names.iter().map(|t| OpSpec::Resume { task: t.clone() }));
        match self.mode {
            Mode::Process => prog.push(OpSpec::Loop {
                count: n as i64,
                body: vec![OpSpec::Wait],
            }),
            Mode::Thread => prog.extend((0..n).map(|k| OpSpec::Recv {
                chan: format!("join-{k}"),
            })),
        }
        prog.push(OpSpec::Mark { name: "end".into() });
        let mut all = vec![task(PARENT.into(), true, prog)];
        all.extend(tasks);
        CustomWorkload {
            tasks: all,
            channels,
        }
    }
}

impl Model for Hackbench {
    fn build(&self) -> Result<CustomWorkload, String> {
        Ok(self.workload())
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let id = |n: &str| sim.compiled.marks.iter().position(|x| x == n);
        let (go, end) = (id("go"), id("end"));
        let mut t_go = None;
        let mut t_end = None;
        for &(t, _, m) in &sim.marks {
            if Some(m) == go {
                t_go = Some(t);
            } else if Some(m) == end {
                t_end = Some(t);
            }
        }
        let workers = sim
            .tasks
            .iter()
            .filter(|t| sim.compiled.programs[t.program].name != PARENT)
            .count();
        let mut values = BTreeMap::new();
        let completed = t_end.is_some();
        // gettimeofday readings (us), then perf's "%lu.%03lu" of the difference
        let (start, stop) = match (t_go, t_end) {
            (Some(a), Some(b)) => (a / 1000, b / 1000),
            (Some(a), None) => (a / 1000, sim.now / 1000),
            _ => (0, 0),
        };
        let diff_us = stop.saturating_sub(start);
        let (time_us, time_s) = if completed {
            (diff_us as f64, (diff_us / 1000) as f64 / 1000.0)
        } else {
            (super::NO_DATA, super::NO_DATA)
        };
        values.insert("time_us".into(), time_us);
        values.insert("time_s".into(), time_s);
        values.insert("completed".into(), completed as u8 as f64);
        values.insert("workers".into(), workers as f64);
        Metrics {
            values,
            primary: "time_s".into(),
            higher_is_better: false,
        }
    }
}
