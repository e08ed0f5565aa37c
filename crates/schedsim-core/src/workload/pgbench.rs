//! `pgbench-ro` and `pgbench-rw` (MMTests `config-db-pgbench-timed-{ro,rw}`, spec/workloads.md
//! §9.1): a PostgreSQL server with one backend process per connection and `pgbench -c C -j J`
//! client threads over TCP loopback (MMTests sets PGHOST=127.0.0.1). Every statement is one
//! request/response between a client thread and its connection's backend. A client thread
//! `poll()`s its connections (`recv_any`) and answers whichever result is ready first
//! (`send_polled`), so a slow statement on one connection does not hold up the others.
//!
//! - `pgbench-ro` runs the built-in `select-only` script: one `SELECT abalance FROM
//!   pgbench_accounts WHERE aid = :aid` per transaction.
//! - `pgbench-rw` runs the built-in `tpcb-like` script: BEGIN, UPDATE accounts, SELECT, UPDATE
//!   tellers, UPDATE branches, INSERT history, END. Each UPDATE locks a random row of its table
//!   (100,000 accounts, 10 tellers and 1 branch per unit of `scale`) until the transaction
//!   ends. The commit (END) makes its record durable through the WAL with group commit: one
//!   backend flushes in iowait for everyone whose record was inserted before it started, and
//!   the row locks are released after the flush.
//!
//! Metric: `tps` (pgbench's transactions per second, MMTests' Hmean of `txn-<clients>`, higher
//! is better) and the average latency pgbench prints (clients / tps, no think time).

use std::collections::BTreeMap;

use super::constants::Constants;
use super::spec::{ChannelSpec, CustomWorkload, Dist, OpSpec};
use super::tbench::{loopback, task, SockCosts};
use super::{GenCtx, Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;

pub const CONSTANTS: &str = include_str!("../../data/workloads/pgbench.json");

pub fn constants() -> Constants {
    Constants::parse("pgbench", CONSTANTS).expect("data/workloads/pgbench.json is valid")
}

/// The write-ahead log a commit flushes (group commit, `XLogFlush`).
pub const WAL: &str = "pg_wal";

/// The tables whose rows a `tpcb-like` transaction updates, with rows per unit of scale.
pub const TABLES: [(&str, u32); 3] = [
    ("pgbench_accounts", 100_000),
    ("pgbench_tellers", 10),
    ("pgbench_branches", 1),
];

pub fn generator_ro() -> Generator {
    Generator {
        info: info_ro,
        make: |ctx| Ok(Box::new(Pgbench::new(ctx, false)?)),
    }
}

pub fn generator_rw() -> Generator {
    Generator {
        info: info_rw,
        make: |ctx| Ok(Box::new(Pgbench::new(ctx, true)?)),
    }
}

fn params() -> Vec<ParamInfo> {
    vec![
        ParamInfo {
            name: "clients",
            default: 1.into(),
            description: "connections (pgbench -c), one backend process each",
        },
        ParamInfo {
            name: "threads",
            default: 0.into(),
            description: "pgbench -j client threads (capped at clients); 0: one per node and per 8 CPUs of a node (spec 9.1)",
        },
        ParamInfo {
            name: "scale",
            default: 1.into(),
            description: "pgbench -s: 1 branch, 10 tellers and 100,000 accounts per unit; the read-write script locks one row of each",
        },
        ParamInfo {
            name: "warmup_s",
            default: 0.0.into(),
            description: "seconds excluded from tps",
        },
        ParamInfo {
            name: "wal_flush_us",
            default: constants().get("wal_flush_us").into(),
            description: "time of one WAL flush (fdatasync of the WAL on the database's device), us; default: the machine's storage.fsync_us, else an fsync measured on a virtio guest (data/workloads/pgbench.json)",
        },
    ]
}

pub fn info_ro() -> WorkloadInfo {
    WorkloadInfo {
        name: "pgbench-ro",
        description: "pgbench select-only (MMTests pgbench-timed-ro): C backends and J client threads (J from the machine's CPUs and nodes, spec 9.1), one SELECT round trip per transaction over loopback TCP; tps.",
        params: params(),
        metrics: vec!["tps", "latency_ms_mean", "transactions", "threads"],
        primary: "tps",
        higher_is_better: true,
        open_ended: true,
    }
}

pub fn info_rw() -> WorkloadInfo {
    WorkloadInfo {
        name: "pgbench-rw",
        description: "pgbench tpcb-like (MMTests pgbench-timed-rw): seven statement round trips per transaction, row locks on the updated account, teller and branch, the commit flushing the WAL in iowait with group commit; tps.",
        params: params(),
        metrics: vec!["tps", "latency_ms_mean", "transactions", "threads", "commits_per_flush"],
        primary: "tps",
        higher_is_better: true,
        open_ended: true,
    }
}

/// One statement of a script: its mean backend work, the table whose row it locks (an index
/// into `TABLES`), whether it commits.
#[derive(Clone, Copy, Debug)]
struct Stmt {
    cycles: f64,
    locks: Option<usize>,
    commit: bool,
}

#[derive(Debug)]
pub struct Pgbench {
    pub rw: bool,
    pub clients: u32,
    /// pgbench -j: client threads.
    pub threads: u32,
    pub scale: u32,
    pub warmup_ns: u64,
    script: Vec<Stmt>,
    client_stmt: f64,
    sigma: f64,
    wal_flush_ns: u64,
    query_bytes: u64,
    result_bytes: u64,
    sock: SockCosts,
}

/// pgbench -j as spec/workloads.md §9.1 gives it: J = clamp(C, NUM_NODES, CPUs/NUM_NODES/8),
/// i.e. at least one thread per node, at most one per 8 CPUs of a node, and never more threads
/// than connections (pgbench refuses that).
pub fn threads_for(clients: u32, cpus: usize, nodes: usize) -> u32 {
    let nodes = nodes.max(1) as u32;
    let hi = (cpus as u32 / nodes / 8).max(nodes);
    clients.clamp(nodes, hi).min(clients).max(1)
}

impl Pgbench {
    pub fn new(ctx: &GenCtx, rw: bool) -> Result<Self, String> {
        let info = if rw { info_rw() } else { info_ro() };
        let p = Params::new(info.name, ctx.params, &info)?;
        let clients = p.int("clients", 1, 1, 4096)? as u32;
        let warmup_s = p.f64("warmup_s", 0.0, 0.0, 86_400.0)?;
        let threads = p.int("threads", 0, 0, 4096)? as u32;
        // 42,949 is the largest scale whose accounts fit pgbench's int4 aid
        let scale = p.int("scale", 1, 1, 42_949)? as u32;
        let k = constants();
        let default_flush = super::fsync_us_default(ctx, k.get("wal_flush_us"));
        let wal_flush_us = p.f64("wal_flush_us", default_flush, 1.0, 1e6)?;
        let threads = match threads {
            0 => threads_for(clients, ctx.topo.nr_cpus(), ctx.topo.node_cpus.len()),
            j => j.min(clients),
        };
        let sel = Stmt {
            cycles: k.get("backend_select_cycles"),
            locks: None,
            commit: false,
        };
        let ctl = Stmt {
            cycles: k.get("backend_txn_control_cycles"),
            locks: None,
            commit: false,
        };
        let dml = |locks| Stmt {
            cycles: k.get("backend_dml_cycles"),
            locks,
            commit: false,
        };
        let script = if rw {
            // BEGIN; UPDATE accounts; SELECT; UPDATE tellers; UPDATE branches; INSERT; END
            vec![
                ctl,
                dml(Some(0)),
                sel,
                dml(Some(1)),
                dml(Some(2)),
                dml(None),
                Stmt {
                    commit: true,
                    ..ctl
                },
            ]
        } else {
            vec![sel]
        };
        Ok(Pgbench {
            rw,
            clients,
            threads,
            scale,
            warmup_ns: (warmup_s * 1e9).round() as u64,
            script,
            client_stmt: k.get("client_stmt_cycles"),
            sigma: k.get("backend_sigma"),
            wal_flush_ns: (wal_flush_us * 1e3).round() as u64,
            query_bytes: k.get("query_bytes") as u64,
            result_bytes: k.get("result_bytes") as u64,
            sock: SockCosts::new(&loopback()),
        })
    }

    /// The connections thread `j` serves: pgbench deals them out in contiguous blocks, the
    /// first threads taking one more when C is not a multiple of J.
    pub fn connections(&self, j: u32) -> std::ops::Range<u32> {
        let (c, t) = (self.clients, self.threads);
        let start = j * (c / t) + j.min(c % t);
        let len = c / t + u32::from(j < c % t);
        start..start + len
    }

    fn backend(&self, i: u32) -> Vec<OpSpec> {
        let req = format!("pg-query-{i}");
        let rsp = format!("pg-result-{i}");
        let mut body = Vec::new();
        let last = self.script.len() - 1;
        for (k, s) in self.script.iter().enumerate() {
            body.push(OpSpec::Recv { chan: req.clone() });
            // read the query, then reply after the statement's work
            body.push(OpSpec::Run {
                cycles: self.sock.recv(self.query_bytes, 1) + self.sock.tcp_send(self.result_bytes),
                stall_ns: 0.0,
            });
            if let Some(tb) = s.locks {
                // the UPDATE finds its row and waits while another transaction holds it
                let (table, per_scale) = TABLES[tb];
                body.push(OpSpec::LockRow {
                    table: table.into(),
                    rows: per_scale * self.scale,
                });
            }
            body.push(OpSpec::RunDist {
                dist: Dist::lognormal_with_mean(s.cycles, self.sigma),
                stall_ns: 0.0,
            });
            if s.commit {
                body.push(OpSpec::GroupCommit {
                    log: WAL.into(),
                    ns: self.wal_flush_ns,
                });
                // the row locks go after the commit record is durable
                for (table, _) in TABLES {
                    body.push(OpSpec::UnlockRows {
                        table: table.into(),
                    });
                }
            }
            body.push(OpSpec::Send { chan: rsp.clone() });
            if k == last {
                // the transaction's last result is on its way to the client thread
                body.push(OpSpec::Mark { name: "txn".into() });
            }
        }
        vec![OpSpec::Loop { count: -1, body }]
    }

    fn client_thread(&self, j: u32) -> Vec<OpSpec> {
        let issue = self.client_stmt + self.sock.tcp_send(self.query_bytes);
        let mut prog = Vec::new();
        // open every connection's first transaction
        for i in self.connections(j) {
            prog.push(OpSpec::Run {
                cycles: issue,
                stall_ns: 0.0,
            });
            prog.push(OpSpec::Send {
                chan: format!("pg-query-{i}"),
            });
        }
        // then serve whichever connection has a result: poll() over its sockets, read the
        // result, issue that connection's next statement
        let results: Vec<String> = self
            .connections(j)
            .map(|i| format!("pg-result-{i}"))
            .collect();
        let queries: Vec<String> = self
            .connections(j)
            .map(|i| format!("pg-query-{i}"))
            .collect();
        let body = vec![
            OpSpec::RecvAny { chans: results },
            OpSpec::Run {
                cycles: self.sock.recv(self.result_bytes, 1) + issue,
                stall_ns: 0.0,
            },
            OpSpec::SendPolled { chans: queries },
        ];
        prog.push(OpSpec::Loop { count: -1, body });
        prog
    }
}

/// Transactions per second over `(t0, t1]`, and the transactions.
fn tps_between(sim: &Sim, t0: u64, t1: u64) -> (f64, u64) {
    let n = super::count_marks(sim, "txn", t0, t1);
    let secs = t1.saturating_sub(t0) as f64 * 1e-9;
    let tps = if secs > 0.0 {
        n as f64 / secs
    } else {
        super::NO_DATA
    };
    (tps, n)
}

impl Model for Pgbench {
    fn measured_from_ns(&self) -> u64 {
        self.warmup_ns
    }

    fn build(&self) -> Result<CustomWorkload, String> {
        let mut tasks = Vec::new();
        let mut channels = Vec::new();
        for j in 0..self.threads {
            tasks.push(task(format!("pgbench-{j}"), self.client_thread(j)));
        }
        for i in 0..self.clients {
            tasks.push(task(format!("postgres-{i}"), self.backend(i)));
            for ch in [format!("pg-query-{i}"), format!("pg-result-{i}")] {
                channels.push(ChannelSpec::tcp(ch, 1));
            }
        }
        Ok(CustomWorkload { tasks, channels })
    }

    fn window_primary(&self, sim: &Sim, t0: u64, t1: u64) -> Option<f64> {
        Some(tps_between(sim, t0, t1).0)
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let (tps, n) = tps_between(sim, self.warmup_ns.min(sim.now), sim.now);
        let mut values = BTreeMap::new();
        values.insert("tps".into(), tps);
        values.insert(
            "latency_ms_mean".into(),
            if tps > 0.0 {
                1e3 * self.clients as f64 / tps
            } else {
                super::NO_DATA
            },
        );
        values.insert("transactions".into(), n as f64);
        values.insert("threads".into(), self.threads as f64);
        if let Some(wal) = sim.compiled.logs.iter().position(|l| l == WAL) {
            // commits per WAL flush over the whole run: 1 when commits never share a flush
            let lg = &sim.sync.logs[wal];
            if lg.flushes > 0 {
                values.insert(
                    "commits_per_flush".into(),
                    lg.commits as f64 / lg.flushes as f64,
                );
            }
        }
        Metrics {
            values,
            primary: "tps".into(),
            higher_is_better: true,
        }
    }
}
