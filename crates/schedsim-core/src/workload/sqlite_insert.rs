//! `sqlite-insert`: MMTests `config-db-sqlite-insert-small` (spec/workloads.md §9.5).
//!
//! MMTests' Perl driver (`sqlite-txnpersec.pl`) prints ~2,520 `INSERT` lines into a pipe to
//! one `sqlite3` shell; every statement is its own autocommit transaction. Tasks:
//! - `perl`: per statement a little CPU; PerlIO flushes its 8 KiB buffer into the pipe
//!   (59 statements per write); the pipe holds 64 KiB (8 writes), so once it is full the driver
//!   runs at sqlite's pace;
//! - `sqlite3`: reads a buffer of statements, then per statement: execute (CPU), and commit.
//!   With the default rollback journal (`journal_mode=delete`, `synchronous=FULL`) a commit
//!   writes the journal and fdatasyncs it — the data write is waited for in iowait, then the
//!   new journal file's metadata needs a jbd2 commit, waited for in a plain sleep — writes the
//!   database page and fdatasyncs it (iowait for the write and the cache flush ext4 issues),
//!   and unlinks the journal: two fsyncs per transaction. With `journal_mode=wal` a commit
//!   appends one frame to the WAL and fdatasyncs it: one fsync per transaction;
//! - `jbd2/nvme0n1p1-8`: the ext4 journal thread (the `journal_*` ops, as dbench's); per
//!   commit it writes the journal blocks, the commit block with a preflush (iowait), then wakes
//!   the fsync caller.
//!
//! The metric is the Perl driver's transactions per second after its 2 s warmup (MMTests
//! parses only the `execute` samples), or over the whole run when it is shorter.

use std::collections::BTreeMap;

use serde_json::Value;

use super::constants::Constants;
use super::fio::{choice, finished_s, looped, mark, mark_id, run, task, BlockDevice, IoDir};
use super::spec::{ChannelSpec, CustomWorkload, OpSpec};
use super::{Generator, Metrics, Model, ParamInfo, Params, WorkloadInfo};
use crate::engine::Sim;

pub fn generator() -> Generator {
    Generator {
        info,
        make: |ctx| Ok(Box::new(SqliteInsert::new(ctx.params)?)),
    }
}

/// Linux's default pipe capacity (16 pages).
pub const PIPE_BYTES: f64 = 65536.0;
/// MMTests' warmup threshold in sqlite-txnpersec.pl ($threshold = 2 s).
pub const WARMUP_NS: u64 = 2_000_000_000;
pub const JBD2: &str = "jbd2/nvme0n1p1-8";
/// The filesystem's journal, which `JBD2` commits.
pub const JOURNAL: &str = "jbd2";

pub fn info() -> WorkloadInfo {
    WorkloadInfo {
        name: "sqlite-insert",
        description: "MMTests sqlite-insert: a Perl driver pipes INSERT statements to sqlite3; each is an autocommit transaction: CPU, then journal write + fdatasync (jbd2 commit) + database write + fdatasync (journal_mode=delete), or one WAL append + fdatasync (wal); device waits are iowait; runs to completion.",
        params: vec![
            ParamInfo { name: "inserts", default: 2520.into(), description: "statements (MMTests: 128 KiB / 52-byte rows = 2520)" },
            ParamInfo { name: "journal_mode", default: "delete".into(), description: "delete (sqlite3's default rollback journal) or wal" },
        ],
        metrics: vec!["txn_per_s", "elapsed_s", "transactions", "fsyncs_per_txn", "jbd2_commits"],
        primary: "txn_per_s",
        higher_is_better: true,
        open_ended: false,
    }
}

/// The sqlite-insert model.
#[derive(Clone, Debug)]
pub struct SqliteInsert {
    pub inserts: u64,
    pub wal: bool,
    pub per_write: u64,
    pub pipe_writes: u32,
    c: BTreeMap<&'static str, f64>,
    /// Device waits (ns): journal data, database page (+ flush), WAL frame (+ flush),
    /// jbd2 commit (journal blocks + flush + commit block).
    pub journal_io_ns: u64,
    pub db_io_ns: u64,
    pub wal_io_ns: u64,
    pub commit_io_ns: u64,
}

impl SqliteInsert {
    pub fn new(params: &BTreeMap<String, Value>) -> Result<Self, String> {
        let p = Params::new("sqlite-insert", params, &info())?;
        let inserts = p.int("inserts", 2520, 1, 100_000_000)? as u64;
        let mode = choice(
            "sqlite-insert",
            params,
            "journal_mode",
            "delete",
            &["delete", "wal"],
        )?;
        let k = Constants::parse(
            "sqlite-insert",
            include_str!("../../data/workloads/sqlite-insert.json"),
        )?;
        let dev = BlockDevice::nvme()?;
        let mut c = BTreeMap::new();
        for key in [
            "exec_cycles",
            "journal_cycles",
            "db_write_cycles",
            "unlink_cycles",
            "wal_cycles",
            "jbd2_commit_cycles",
            "perl_line_cycles",
        ] {
            c.insert(key, k.get(key));
        }
        let per_write = (k.get("perl_buffer_bytes") / k.get("line_bytes")).floor() as u64;
        let w = |bytes: f64| dev.service_ns(IoDir::Write, bytes);
        Ok(SqliteInsert {
            inserts,
            wal: mode == "wal",
            per_write: per_write.max(1),
            pipe_writes: (PIPE_BYTES / k.get("perl_buffer_bytes")).max(1.0) as u32,
            c,
            journal_io_ns: w(k.get("journal_bytes")).round() as u64,
            db_io_ns: (w(4096.0) + dev.flush_ns).round() as u64,
            wal_io_ns: (w(4096.0 + 24.0) + dev.flush_ns).round() as u64,
            commit_io_ns: (w(k.get("jbd2_commit_bytes")) + dev.flush_ns + w(4096.0)).round() as u64,
        })
    }

    fn txn(&self) -> Vec<OpSpec> {
        let c = |k: &str| self.c[k];
        let mut ops = vec![run(c("exec_cycles"))];
        if self.wal {
            ops.push(run(c("wal_cycles")));
            ops.push(mark("fsync"));
            ops.push(OpSpec::Io { ns: self.wal_io_ns });
        } else {
            ops.push(run(c("journal_cycles")));
            ops.push(mark("fsync"));
            ops.push(OpSpec::Io {
                ns: self.journal_io_ns,
            });
            // the journal's new inode size needs a jbd2 commit: ask for it, wait for it
            ops.push(OpSpec::JournalCommit {
                journal: JOURNAL.into(),
            });
            ops.push(run(c("db_write_cycles")));
            ops.push(mark("fsync"));
            ops.push(OpSpec::Io { ns: self.db_io_ns });
            ops.push(run(c("unlink_cycles")));
        }
        ops.push(mark("txn"));
        ops
    }

    /// (full pipe writes, statements in the last partial write)
    fn chunks(&self) -> (u64, u64) {
        (self.inserts / self.per_write, self.inserts % self.per_write)
    }
}

impl Model for SqliteInsert {
    /// `txn_per_s` leaves out MMTests' 2 s threshold, and so do power and turbostat; a run that
    /// ends sooner is measured whole, as its rate is.
    fn measured_from_ns(&self) -> u64 {
        WARMUP_NS
    }

    fn warmup_fixed(&self) -> bool {
        true
    }

    fn build(&self) -> Result<CustomWorkload, String> {
        let (full, rest) = self.chunks();
        let line = self.c["perl_line_cycles"];
        let send = || OpSpec::Send {
            chan: "pipe".into(),
        };
        let recv = || OpSpec::Recv {
            chan: "pipe".into(),
        };
        let mut perl = vec![looped(
            full as i64,
            vec![run(line * self.per_write as f64), send()],
        )];
        let mut sqlite = vec![looped(
            full as i64,
            vec![recv(), looped(self.per_write as i64, self.txn())],
        )];
        if rest > 0 {
            perl.extend([run(line * rest as f64), send()]);
            sqlite.extend([recv(), looped(rest as i64, self.txn())]);
        }
        perl.push(OpSpec::Exit);
        sqlite.push(OpSpec::Exit);
        let mut tasks = vec![
            task("perl".into(), 1, perl),
            task("sqlite3".into(), 1, sqlite),
        ];
        if !self.wal {
            tasks.push(task(
                JBD2.into(),
                1,
                vec![
                    looped(
                        self.inserts as i64,
                        vec![
                            OpSpec::JournalWait {
                                journal: JOURNAL.into(),
                            },
                            run(self.c["jbd2_commit_cycles"]),
                            OpSpec::Io {
                                ns: self.commit_io_ns,
                            },
                            mark("commit"),
                            OpSpec::JournalDone {
                                journal: JOURNAL.into(),
                            },
                        ],
                    ),
                    OpSpec::Exit,
                ],
            ));
        }
        Ok(CustomWorkload {
            tasks,
            channels: vec![ChannelSpec::new("pipe", self.pipe_writes)],
        })
    }

    fn metrics(&self, sim: &Sim) -> Metrics {
        let count = |name: &str| {
            mark_id(sim, name)
                .map(|id| sim.marks.iter().filter(|m| m.2 == id).count())
                .unwrap_or(0)
        };
        let txn_times: Vec<u64> = mark_id(sim, "txn")
            .map(|id| {
                sim.marks
                    .iter()
                    .filter(|m| m.2 == id)
                    .map(|m| m.0)
                    .collect()
            })
            .unwrap_or_default();
        let n = txn_times.len();
        let last = txn_times.last().copied().unwrap_or(0);
        let rate = if last > WARMUP_NS {
            let after = txn_times.iter().filter(|&&t| t > WARMUP_NS).count();
            after as f64 / ((last - WARMUP_NS) as f64 * 1e-9)
        } else if last > 0 {
            n as f64 / (last as f64 * 1e-9)
        } else {
            0.0
        };
        let mut values = BTreeMap::new();
        values.insert("txn_per_s".into(), rate);
        values.insert("elapsed_s".into(), finished_s(sim));
        values.insert("transactions".into(), n as f64);
        values.insert(
            "fsyncs_per_txn".into(),
            super::mean_or_no_data(count("fsync") as f64, n as u64),
        );
        values.insert("jbd2_commits".into(), count("commit") as f64);
        Metrics {
            values,
            primary: "txn_per_s".into(),
            higher_is_better: true,
        }
    }
}
