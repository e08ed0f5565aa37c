//! `tbench` (dbench 4's `sockio` backend against `tbench_srv`, spec/workloads.md §2): N client
//! processes, each with its own TCP connection over loopback to its own forked server process.
//! Every loadfile line is one synchronous request/response (`do_packets`): the client writes the
//! request, then reads the 4-byte header and the rest of the reply; the server reads the header
//! and the payload and writes the reply. The clients replay MMTests' `client-tiny.txt` forever.
//!
//! Metrics as tbench and MMTests report them: MB/s = bytes done by all clients since the start
//! of the measured period / elapsed (`dbench.c::sig_alarm`, 1 MB = 10^6 bytes), and the per-pass
//! `loadfile` times of `--show-execute-time` summarised like MMTests' `loadfile-N`.

use std::collections::BTreeMap;

use super::constants::Constants;
use super::loadfile::{self, Line};
use super::spec::{ChannelSpec, CustomWorkload, OpSpec, TaskSpec};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;

pub const LOOPBACK: &str = include_str!("../../data/workloads/loopback.json");

pub fn loopback() -> Constants {
    Constants::parse("loopback", LOOPBACK).expect("data/workloads/loopback.json is valid")
}

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| Ok(Box::new(Tbench::new(ctx.params)?)),
    }
}

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "tbench",
        description: "tbench 4 (MMTests tbench4): N client/server process pairs over loopback TCP, each loadfile op of client-tiny.txt one synchronous request/response; MB/s like tbench and per-pass loadfile times.",
        params: vec![
            ParamInfo { name: "clients", default: 1.into(), description: "client processes (each with its own server process)" },
            ParamInfo { name: "warmup_s", default: 0.0.into(), description: "seconds excluded from the throughput and the loadfile samples" },
        ],
        metrics: vec![
            "throughput_mb_s", "loadfile_ms_mean", "loadfile_ms_min", "loadfile_ms_max",
            "loadfile_ms_stddev", "loadfile_ms_p50", "loadfile_ms_p75", "loadfile_ms_p90",
            "loadfile_ms_p99", "loadfile_passes",
        ],
        primary: "throughput_mb_s",
        higher_is_better: true,
        open_ended: true,
    }
}

/// Socket costs of the loopback model (`data/workloads/loopback.json`).
#[derive(Clone, Debug)]
pub struct SockCosts {
    pub copy: f64,
    pub tcp_per_byte: f64,
    pub tcp_send: f64,
    pub recv: f64,
}

impl SockCosts {
    pub fn new(c: &Constants) -> Self {
        SockCosts {
            copy: c.get("copy_cycles_per_byte"),
            tcp_per_byte: c.get("tcp_cycles_per_byte"),
            tcp_send: c.get("tcp_send_cycles"),
            recv: c.get("sock_recv_cycles"),
        }
    }

    /// Sender side of one pushed TCP message of `b` bytes: the send() and the loopback
    /// softirq that delivers it, on the sender's CPU.
    pub fn tcp_send(&self, b: u64) -> f64 {
        self.tcp_send + b as f64 * (self.copy + self.tcp_per_byte)
    }

    /// Receiver side: `calls` recv() calls and the copy of `b` bytes out.
    pub fn recv(&self, b: u64, calls: u32) -> f64 {
        calls as f64 * self.recv + b as f64 * self.copy
    }
}

#[derive(Debug)]
pub struct Tbench {
    pub clients: u32,
    pub warmup_ns: u64,
    lines: Vec<Line>,
    cks: Vec<usize>,
    ck_bytes: Vec<u64>,
    parse: f64,
    sock: SockCosts,
}

impl Tbench {
    pub fn new(params: &BTreeMap<String, serde_json::Value>) -> Result<Self, String> {
        let p = Params::new("tbench", params, &info())?;
        let clients = p.int("clients", 1, 1, 1024)? as u32;
        let warmup_s = p.f64("warmup_s", 0.0, 0.0, 86_400.0)?;
        let lf = loadfile::constants();
        let lines = loadfile::client_tiny();
        let cks = loadfile::checkpoints(lines.len(), lf.get("checkpoints_per_pass") as usize);
        let ck_bytes = loadfile::checkpoint_bytes(&lines, &cks);
        Ok(Tbench {
            clients,
            warmup_ns: (warmup_s * 1e9).round() as u64,
            lines,
            cks,
            ck_bytes,
            parse: lf.get("parse_cycles"),
            sock: SockCosts::new(&loopback()),
        })
    }

    /// Bytes of one pass over the loadfile.
    pub fn bytes_per_pass(&self) -> u64 {
        self.ck_bytes.last().copied().unwrap_or(0)
    }

    /// One client's program and its server's, for client `id`.
    fn programs(&self, id: u32) -> (Vec<OpSpec>, Vec<OpSpec>) {
        let c2s = format!("tbench-req-{id}");
        let s2c = format!("tbench-rsp-{id}");
        // client: per line [run(rest of previous line + parse + send), send, recv, (mark)]
        let mut client: Vec<(f64, bool)> = Vec::new();
        let mut server: Vec<f64> = Vec::new();
        let mut carry = 0.0;
        let mut next_ck = 0;
        let mut tail = 0.0;
        for (i, l) in self.lines.iter().enumerate() {
            let ck = next_ck < self.cks.len() && self.cks[next_ck] == i;
            if ck {
                next_ck += 1;
            }
            match l.sockio_sizes(id) {
                Some((req, rsp)) => {
                    client.push((carry + self.parse + self.sock.tcp_send(req), ck));
                    // the client reads the 4-byte header, then the rest
                    carry = self.sock.recv(rsp, 2);
                    // tbench_srv reads header and payload, writes the reply
                    server.push(self.sock.recv(req, 2) + self.sock.tcp_send(rsp));
                }
                None => carry += self.parse,
            }
            if ck && l.sockio_sizes(id).is_none() {
                // a checkpoint on a line without packets: attach it to the previous exchange
                if let Some(last) = client.last_mut() {
                    last.1 = true;
                }
            }
            if i + 1 == self.lines.len() {
                tail = carry;
            }
        }
        // the last line's reply copy runs before the pass-end mark, so the pass time includes it
        let mut cbody = Vec::new();
        let n = client.len();
        let mut i = 0;
        while i < n {
            let (cyc, ck) = client[i];
            if i + 1 == n {
                cbody.push(OpSpec::Run {
                    cycles: cyc,
                    stall_ns: 0.0,
                });
                cbody.push(OpSpec::Send { chan: c2s.clone() });
                cbody.push(OpSpec::Recv { chan: s2c.clone() });
                cbody.push(OpSpec::Run {
                    cycles: tail,
                    stall_ns: 0.0,
                });
                cbody.push(OpSpec::Mark { name: "ck".into() });
                break;
            }
            let mut j = i + 1;
            while !ck && j + 1 < n && client[j] == (cyc, false) {
                j += 1;
            }
            let one = vec![
                OpSpec::Run {
                    cycles: cyc,
                    stall_ns: 0.0,
                },
                OpSpec::Send { chan: c2s.clone() },
                OpSpec::Recv { chan: s2c.clone() },
            ];
            push_repeat(&mut cbody, one, j - i);
            if ck {
                cbody.push(OpSpec::Mark { name: "ck".into() });
            }
            i = j;
        }
        // the first line of the next pass carries no reply copy: the tail ran before the mark
        let mut sbody = Vec::new();
        let mut i = 0;
        while i < server.len() {
            let mut j = i + 1;
            while j < server.len() && server[j] == server[i] {
                j += 1;
            }
            let one = vec![
                OpSpec::Recv { chan: c2s.clone() },
                OpSpec::Run {
                    cycles: server[i],
                    stall_ns: 0.0,
                },
                OpSpec::Send { chan: s2c.clone() },
            ];
            push_repeat(&mut sbody, one, j - i);
            i = j;
        }
        (
            vec![OpSpec::Loop {
                count: -1,
                body: cbody,
            }],
            vec![OpSpec::Loop {
                count: -1,
                body: sbody,
            }],
        )
    }
}

/// Append `body` `n` times: a loop when n > 1.
pub fn push_repeat(out: &mut Vec<OpSpec>, body: Vec<OpSpec>, n: usize) {
    if n == 1 {
        out.extend(body);
    } else if n > 1 {
        out.push(OpSpec::Loop {
            count: n as i64,
            body,
        });
    }
}

pub fn task(name: String, program: Vec<OpSpec>) -> TaskSpec {
    TaskSpec::new(name, program)
}

impl Tbench {
    /// The client tasks (programs 0..clients; the servers follow them).
    fn client_tasks(&self, sim: &Sim) -> Vec<usize> {
        let n = self.clients as usize;
        sim.tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.program < n)
            .map(|(i, _)| i)
            .collect()
    }
}

impl Model for Tbench {
    fn measured_from_ns(&self) -> u64 {
        self.warmup_ns
    }

    fn build(&self) -> Result<CustomWorkload, String> {
        let mut clients = Vec::new();
        let mut servers = Vec::new();
        let mut channels = Vec::new();
        for id in 0..self.clients {
            let (c, s) = self.programs(id);
            clients.push(task(format!("tbench-{id}"), c));
            servers.push(task(format!("tbench_srv-{id}"), s));
            for ch in [format!("tbench-req-{id}"), format!("tbench-rsp-{id}")] {
                channels.push(ChannelSpec::tcp(ch, 1));
            }
        }
        clients.extend(servers);
        Ok(CustomWorkload {
            tasks: clients,
            channels,
        })
    }

    fn window_primary(&self, sim: &Sim, t0: u64, t1: u64) -> Option<f64> {
        let clients = self.client_tasks(sim);
        Some(loadfile_window(sim, &clients, &self.ck_bytes, t0, t1).0)
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let clients = self.client_tasks(sim);
        let values = loadfile_metrics(
            sim,
            &clients,
            &self.ck_bytes,
            self.warmup_ns,
            BTreeMap::new(),
        );
        Metrics {
            values,
            primary: "throughput_mb_s".into(),
            higher_is_better: true,
        }
    }
}

/// The clients' throughput (MB/s) over `(t0, t1]` and the mean time (ms) of the loadfile passes
/// that ended in it (None when none did).
pub fn loadfile_window(
    sim: &Sim,
    clients: &[usize],
    ck_bytes: &[u64],
    t0: u64,
    t1: u64,
) -> (f64, Option<f64>) {
    let pr = loadfile::progress(sim, "ck", clients, ck_bytes, &[t0, t1]);
    let (mb_s, passes) = window_stats(&pr, t0, t1);
    let mean = (!passes.is_empty()).then(|| passes.iter().sum::<f64>() / passes.len() as f64);
    (mb_s, mean)
}

/// Throughput (MB/s) between the two times `pr` was totalled at, and the durations (ms) of the
/// passes that ended between them.
fn window_stats(pr: &loadfile::Progress, t0: u64, t1: u64) -> (f64, Vec<f64>) {
    let secs = t1.saturating_sub(t0) as f64 * 1e-9;
    let bytes = pr.bytes_at[1].saturating_sub(pr.bytes_at[0]) as f64;
    let mb_s = if secs > 0.0 {
        bytes / secs / 1e6
    } else {
        super::NO_DATA
    };
    let passes = pr
        .passes
        .iter()
        .filter(|&&(t, _)| t > t0 && t <= t1)
        .map(|&(_, d)| d as f64 * 1e-6)
        .collect();
    (mb_s, passes)
}

/// Throughput and loadfile statistics of the dbench family from the clients' checkpoint marks.
pub fn loadfile_metrics(
    sim: &Sim,
    clients: &[usize],
    ck_bytes: &[u64],
    warmup_ns: u64,
    mut values: BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    let end = sim.now;
    let w = warmup_ns.min(end);
    let pr = loadfile::progress(sim, "ck", clients, ck_bytes, &[w, end]);
    let (mb_s, samples) = window_stats(&pr, w, end);
    values.insert("throughput_mb_s".into(), mb_s);
    loadfile::loadfile_stats(&samples, &mut values);
    values
}
