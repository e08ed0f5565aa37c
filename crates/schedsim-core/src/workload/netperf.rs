//! netperf over loopback (MMTests `config-network-netperf-*-unbound`, spec/workloads.md §9.2):
//! `netperf` and the `netserver` child that serves its connection, both unbound.
//!
//! - `netperf-tcp-rr`, `netperf-udp-rr`: a synchronous request/response ping-pong, one
//!   transaction at a time (1-byte request and response by default); transactions/s.
//! - `netperf-tcp-stream`, `netperf-udp-stream`: netperf sends `msg_size`-byte messages as fast
//!   as it can (`-m`/`-M`), netserver receives them; throughput in 10^6 bits/s (netperf's
//!   default `-f m`, MMTests' units MBITS_PER_SECOND). A TCP sender's writes reach the receiver
//!   in 64 KiB segments and it blocks once 4 MiB are unread. A UDP sender never blocks (a full
//!   receive buffer drops datagrams instead): each datagram is delivered, and the receiver
//!   woken, one by one; `recv_mbit_s` is what netserver processed and `loss_pct` the rest.
//!
//! Loopback's softirq work (the receive path that queues the data on the peer's socket) runs on
//! the sender's CPU, so it is part of the sender's work.

use std::collections::BTreeMap;

use super::constants::Constants;
use super::spec::{ChannelSpec, CustomWorkload, OpSpec};
use super::tbench::{loopback, push_repeat, task, SockCosts};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;

pub const CONSTANTS: &str = include_str!("../../data/workloads/netperf.json");

pub fn constants() -> Constants {
    Constants::parse("netperf", CONSTANTS).expect("data/workloads/netperf.json is valid")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    Rr,
    Stream,
}

/// The largest UDP payload over IPv4.
const MAX_MSG: i64 = 65507;

pub fn generator(proto: Proto, test: Test) -> Generator {
    match (proto, test) {
        (Proto::Tcp, Test::Rr) => Generator {
            info: || info(Proto::Tcp, Test::Rr),
            make: |ctx| Ok(Box::new(Netperf::new(ctx.params, Proto::Tcp, Test::Rr)?)),
        },
        (Proto::Udp, Test::Rr) => Generator {
            info: || info(Proto::Udp, Test::Rr),
            make: |ctx| Ok(Box::new(Netperf::new(ctx.params, Proto::Udp, Test::Rr)?)),
        },
        (Proto::Tcp, Test::Stream) => Generator {
            info: || info(Proto::Tcp, Test::Stream),
            make: |ctx| {
                Ok(Box::new(Netperf::new(
                    ctx.params,
                    Proto::Tcp,
                    Test::Stream,
                )?))
            },
        },
        (Proto::Udp, Test::Stream) => Generator {
            info: || info(Proto::Udp, Test::Stream),
            make: |ctx| {
                Ok(Box::new(Netperf::new(
                    ctx.params,
                    Proto::Udp,
                    Test::Stream,
                )?))
            },
        },
    }
}

pub fn name(proto: Proto, test: Test) -> &'static str {
    match (proto, test) {
        (Proto::Tcp, Test::Rr) => "netperf-tcp-rr",
        (Proto::Udp, Test::Rr) => "netperf-udp-rr",
        (Proto::Tcp, Test::Stream) => "netperf-tcp-stream",
        (Proto::Udp, Test::Stream) => "netperf-udp-stream",
    }
}

pub fn info(proto: Proto, test: Test) -> WorkloadInfo {
    let warmup = ParamInfo {
        name: "warmup_s",
        default: 0.0.into(),
        description: "seconds excluded from the result",
    };
    match test {
        Test::Rr => WorkloadInfo {
            name: name(proto, test),
            description: match proto {
                Proto::Tcp => "netperf TCP_RR over loopback: netperf and netserver ping-pong a request and a response (1 byte each by default), one transaction at a time; transactions/s.",
                Proto::Udp => "netperf UDP_RR over loopback: netperf and netserver ping-pong a request and a response datagram (1 byte each by default), one transaction at a time; transactions/s.",
            },
            params: vec![
                ParamInfo { name: "request_size", default: 1.into(), description: "request bytes (netperf -r req,rsp)" },
                ParamInfo { name: "response_size", default: 1.into(), description: "response bytes" },
                warmup,
            ],
            metrics: vec!["trans_per_s", "latency_us_mean", "transactions"],
            primary: "trans_per_s",
            higher_is_better: true,
            open_ended: true,
        },
        Test::Stream => WorkloadInfo {
            name: name(proto, test),
            description: match proto {
                Proto::Tcp => "netperf TCP_STREAM over loopback: netperf sends msg_size-byte messages into a 4 MiB send buffer, delivered in 64 KiB segments to netserver; 10^6 bits/s.",
                Proto::Udp => "netperf UDP_STREAM over loopback: netperf sends msg_size-byte datagrams without ever blocking, netserver is woken per datagram; sent and received 10^6 bits/s and the loss.",
            },
            params: vec![
                ParamInfo { name: "msg_size", default: 16384.into(), description: "bytes per send (netperf -m/-M; MMTests sweeps 64..16384)" },
                warmup,
            ],
            metrics: vec!["throughput_mbit_s", "recv_mbit_s", "loss_pct", "messages_per_s"],
            primary: "throughput_mbit_s",
            higher_is_better: true,
            open_ended: true,
        },
    }
}

#[derive(Debug)]
pub struct Netperf {
    pub proto: Proto,
    pub test: Test,
    pub request: u64,
    pub response: u64,
    pub msg: u64,
    pub warmup_ns: u64,
    sock: SockCosts,
    udp_send: f64,
    tcp_stream_send: f64,
    user: f64,
    /// Messages per hand-over to the receiver (TCP segment) and per progress mark.
    pub batch: u64,
    /// Socket buffer, in hand-overs (UDP: unbounded, the sender never blocks).
    pub capacity: u32,
}

impl Netperf {
    pub fn new(
        params: &BTreeMap<String, serde_json::Value>,
        proto: Proto,
        test: Test,
    ) -> Result<Self, String> {
        let info = info(proto, test);
        let p = Params::new(info.name, params, &info)?;
        let (request, response, msg) = match test {
            Test::Rr => (
                p.int("request_size", 1, 1, MAX_MSG)? as u64,
                p.int("response_size", 1, 1, MAX_MSG)? as u64,
                0,
            ),
            Test::Stream => (0, 0, p.int("msg_size", 16384, 1, MAX_MSG)? as u64),
        };
        let warmup_s = p.f64("warmup_s", 0.0, 0.0, 86_400.0)?;
        let lb = loopback();
        let np = constants();
        let (batch, capacity) = match (proto, test) {
            (_, Test::Rr) => (1, 1),
            (Proto::Tcp, Test::Stream) => {
                let k = (lb.get("tcp_segment_bytes") as u64 / msg).max(1);
                let cap = (lb.get("tcp_inflight_bytes") as u64 / (k * msg)).max(1);
                (k, cap as u32)
            }
            (Proto::Udp, Test::Stream) => (np.get("marks_every") as u64, u32::MAX),
        };
        Ok(Netperf {
            proto,
            test,
            request,
            response,
            msg,
            warmup_ns: (warmup_s * 1e9).round() as u64,
            sock: SockCosts::new(&lb),
            udp_send: lb.get("udp_send_cycles"),
            tcp_stream_send: lb.get("tcp_stream_send_cycles"),
            user: np.get("user_cycles"),
            batch,
            capacity,
        })
    }

    /// Sender side of one request/response message.
    fn send(&self, b: u64) -> f64 {
        match self.proto {
            Proto::Tcp => self.sock.tcp_send(b),
            Proto::Udp => self.udp_send + b as f64 * self.sock.copy,
        }
    }

    fn rr(&self) -> CustomWorkload {
        let run = |cycles: f64| OpSpec::Run {
            cycles,
            stall_ns: 0.0,
        };
        let client = vec![OpSpec::Loop {
            count: -1,
            body: vec![
                run(self.user + self.send(self.request)),
                OpSpec::Send {
                    chan: "request".into(),
                },
                OpSpec::Recv {
                    chan: "response".into(),
                },
                run(self.sock.recv(self.response, 1)),
                OpSpec::Mark { name: "rr".into() },
            ],
        }];
        let server = vec![OpSpec::Loop {
            count: -1,
            body: vec![
                OpSpec::Recv {
                    chan: "request".into(),
                },
                OpSpec::Mark { name: "srv".into() },
                run(self.sock.recv(self.request, 1) + self.user + self.send(self.response)),
                OpSpec::Send {
                    chan: "response".into(),
                },
            ],
        }];
        CustomWorkload {
            tasks: vec![
                task("netperf".into(), client),
                task("netserver".into(), server),
            ],
            channels: ["request", "response"]
                .iter()
                .map(|n| ChannelSpec {
                    tcp: self.proto == Proto::Tcp,
                    ..ChannelSpec::new(*n, 1)
                })
                .collect(),
        }
    }

    fn stream(&self) -> CustomWorkload {
        let run = |cycles: f64| OpSpec::Run {
            cycles,
            stall_ns: 0.0,
        };
        let m = self.msg as f64;
        let (sender, receiver) = match self.proto {
            Proto::Tcp => {
                // the writes of one segment, then the segment reaches the receiver
                let k = self.batch as f64;
                let send =
                    k * (self.tcp_stream_send + m * (self.sock.copy + self.sock.tcp_per_byte));
                let recv = k * self.sock.recv(self.msg, 1);
                (
                    vec![
                        run(send),
                        OpSpec::Send {
                            chan: "socket".into(),
                        },
                        OpSpec::Mark { name: "tx".into() },
                    ],
                    vec![
                        OpSpec::Recv {
                            chan: "socket".into(),
                        },
                        run(recv),
                        OpSpec::Mark { name: "rx".into() },
                    ],
                )
            }
            Proto::Udp => {
                let mut s = Vec::new();
                push_repeat(
                    &mut s,
                    vec![
                        run(self.send(self.msg)),
                        OpSpec::Send {
                            chan: "socket".into(),
                        },
                    ],
                    self.batch as usize,
                );
                s.push(OpSpec::Mark { name: "tx".into() });
                let mut r = Vec::new();
                push_repeat(
                    &mut r,
                    vec![
                        OpSpec::Recv {
                            chan: "socket".into(),
                        },
                        run(self.sock.recv(self.msg, 1)),
                    ],
                    self.batch as usize,
                );
                r.push(OpSpec::Mark { name: "rx".into() });
                (s, r)
            }
        };
        CustomWorkload {
            tasks: vec![
                task(
                    "netperf".into(),
                    vec![OpSpec::Loop {
                        count: -1,
                        body: sender,
                    }],
                ),
                task(
                    "netserver".into(),
                    vec![OpSpec::Loop {
                        count: -1,
                        body: receiver,
                    }],
                ),
            ],
            channels: vec![ChannelSpec {
                tcp: self.proto == Proto::Tcp,
                ..ChannelSpec::new("socket", self.capacity)
            }],
        }
    }

    fn count(&self, sim: &Sim, mark: &str) -> u64 {
        super::count_marks(sim, mark, self.warmup_ns.min(sim.now), sim.now)
    }

    /// The primary over `(t0, t1]`: transactions/s (RR) or sent Mbit/s (STREAM).
    fn primary_between(&self, sim: &Sim, t0: u64, t1: u64) -> f64 {
        let secs = t1.saturating_sub(t0) as f64 * 1e-9;
        if secs <= 0.0 {
            return 0.0;
        }
        match self.test {
            Test::Rr => super::count_marks(sim, "rr", t0, t1) as f64 / secs,
            Test::Stream => {
                let bytes = super::count_marks(sim, "tx", t0, t1) * self.batch * self.msg;
                bytes as f64 / secs * 8.0 / 1e6
            }
        }
    }
}

impl Model for Netperf {
    fn measured_from_ns(&self) -> u64 {
        self.warmup_ns
    }

    fn build(&self) -> Result<CustomWorkload, String> {
        Ok(match self.test {
            Test::Rr => self.rr(),
            Test::Stream => self.stream(),
        })
    }

    fn window_primary(&self, sim: &Sim, t0: u64, t1: u64) -> Option<f64> {
        Some(self.primary_between(sim, t0, t1))
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let w = self.warmup_ns.min(sim.now);
        let secs = (sim.now - w) as f64 * 1e-9;
        let rate = |n: f64| if secs > 0.0 { n / secs } else { super::NO_DATA };
        let mut values = BTreeMap::new();
        let primary = match self.test {
            Test::Rr => {
                let n = self.count(sim, "rr") as f64;
                values.insert("trans_per_s".into(), self.primary_between(sim, w, sim.now));
                values.insert("transactions".into(), n);
                values.insert(
                    "latency_us_mean".into(),
                    if n > 0.0 {
                        secs * 1e6 / n
                    } else {
                        super::NO_DATA
                    },
                );
                "trans_per_s"
            }
            Test::Stream => {
                let per_mark = (self.batch * self.msg) as f64;
                let tx = self.count(sim, "tx") as f64 * per_mark;
                let rx = self.count(sim, "rx") as f64 * per_mark;
                values.insert(
                    "throughput_mbit_s".into(),
                    self.primary_between(sim, w, sim.now),
                );
                values.insert("recv_mbit_s".into(), rate(rx) * 8.0 / 1e6);
                // TCP loses nothing; a UDP receiver that falls behind would overflow its
                // buffer, so what it has not processed is what netperf reports as lost
                let loss = match self.proto {
                    Proto::Udp if tx > 0.0 => (tx - rx).max(0.0) / tx * 100.0,
                    _ => 0.0,
                };
                values.insert("loss_pct".into(), loss);
                values.insert("messages_per_s".into(), rate(tx / self.msg as f64));
                "throughput_mbit_s"
            }
        };
        Metrics {
            values,
            primary: primary.into(),
            higher_is_better: true,
        }
    }
}
