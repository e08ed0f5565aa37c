//! The dbench-4 loadfile MMTests measures with (`client-tiny.txt`, lines 601–4173 of dbench's
//! `client.txt`, spec/workloads.md §2.2), parsed as dbench's `child.c::child_run` parses it, plus
//! what both dbench models share: the message sizes of tbench's `sockio` backend, the bytes each
//! op credits to the client, the per-pass checkpoints the metrics read, and MMTests' statistics
//! of the per-pass `loadfile` samples.

use std::collections::BTreeMap;

use super::constants::Constants;
use crate::engine::Sim;

/// The loadfile, embedded (byte-identical to `shared/data/dbench/client-tiny.txt`).
pub const CLIENT_TINY: &str = include_str!("../../data/dbench/client-tiny.txt");

/// Constants shared by the tbench and dbench models.
pub const CONSTANTS: &str = include_str!("../../data/workloads/loadfile.json");

pub fn constants() -> Constants {
    Constants::parse("loadfile", CONSTANTS).expect("data/workloads/loadfile.json is valid")
}

/// The operations of dbench's loadfile grammar that `client-tiny.txt` uses (and the rest of
/// `client.txt`'s vocabulary, so a different loadfile parses the same way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    NtCreateX,
    Close,
    Rename,
    Unlink,
    Deltree,
    Mkdir,
    Rmdir,
    QueryPathInformation,
    QueryFileInformation,
    QueryFsInformation,
    SetFileInformation,
    FindFirst,
    WriteX,
    ReadX,
    LockX,
    UnlockX,
    Flush,
}

impl Kind {
    fn parse(s: &str) -> Option<Kind> {
        // dbench matches op names with strcasecmp
        let k = match s.to_ascii_lowercase().as_str() {
            "ntcreatex" => Kind::NtCreateX,
            "close" => Kind::Close,
            "rename" => Kind::Rename,
            "unlink" => Kind::Unlink,
            "deltree" => Kind::Deltree,
            "mkdir" => Kind::Mkdir,
            "rmdir" => Kind::Rmdir,
            "query_path_information" => Kind::QueryPathInformation,
            "query_file_information" => Kind::QueryFileInformation,
            "query_fs_information" => Kind::QueryFsInformation,
            "set_file_information" => Kind::SetFileInformation,
            "find_first" => Kind::FindFirst,
            "writex" => Kind::WriteX,
            "readx" => Kind::ReadX,
            "lockx" => Kind::LockX,
            "unlockx" => Kind::UnlockX,
            "flush" => Kind::Flush,
            _ => return None,
        };
        Some(k)
    }

    /// dbench's name in its per-op latency table.
    pub fn table_name(self) -> &'static str {
        match self {
            Kind::NtCreateX => "NTCreateX",
            Kind::Close => "Close",
            Kind::Rename => "Rename",
            Kind::Unlink => "Unlink",
            Kind::Deltree => "Deltree",
            Kind::Mkdir => "Mkdir",
            Kind::Rmdir => "Rmdir",
            Kind::QueryPathInformation => "Qpathinfo",
            Kind::QueryFileInformation => "Qfileinfo",
            Kind::QueryFsInformation => "Qfsinfo",
            Kind::SetFileInformation => "Sfileinfo",
            Kind::FindFirst => "Find",
            Kind::WriteX => "WriteX",
            Kind::ReadX => "ReadX",
            Kind::LockX => "LockX",
            Kind::UnlockX => "UnlockX",
            Kind::Flush => "Flush",
        }
    }
}

/// One loadfile line.
#[derive(Clone, Debug)]
pub struct Line {
    pub kind: Kind,
    /// The file name argument(s) as written, backslashes turned into slashes, quotes removed.
    pub fname: Option<String>,
    pub fname2: Option<String>,
    /// The numeric parameters after the file names (`ival`, hex allowed); the status is not one.
    pub params: Vec<i64>,
}

impl Line {
    fn param(&self, i: usize) -> i64 {
        self.params.get(i).copied().unwrap_or(0)
    }

    /// Bytes the op credits to the client's throughput: `WriteX` its `size`, `ReadX` its
    /// `ret_size` (sockio) or `size` (fileio) — equal on every line of `client.txt`.
    pub fn bytes(&self) -> u64 {
        match self.kind {
            Kind::WriteX => self.param(2).max(0) as u64,
            Kind::ReadX => self.param(3).max(0) as u64,
            _ => 0,
        }
    }

    /// Payload bytes written by a `WriteX` (the dirty data that writeback throttling counts).
    pub fn write_bytes(&self) -> u64 {
        if self.kind == Kind::WriteX {
            self.param(2).max(0) as u64
        } else {
            0
        }
    }

    /// `strlen(fname)` as the client sees it: dbench prefixes the working directory (`.` for
    /// tbench, which MMTests runs without `-D`) and renames `client1` to `client<id>`.
    fn name_len(name: &Option<String>, client: u32) -> usize {
        match name {
            Some(n) => {
                let id = client.to_string();
                let occurrences = n.matches("client1").count();
                1 + n.len() + occurrences * (id.len() - 1)
            }
            None => 0,
        }
    }

    /// tbench's request and response sizes in bytes for this op of client `client`
    /// (`sockio.c`, dbench 4.0: the `do_packets(send_size, recv_size)` of each op). Deltree
    /// sends nothing.
    pub fn sockio_sizes(&self, client: u32) -> Option<(u64, u64)> {
        let l1 = Self::name_len(&self.fname, client) as u64;
        let l2 = Self::name_len(&self.fname2, client) as u64;
        let s = match self.kind {
            Kind::Unlink | Kind::Mkdir | Kind::Rmdir => (39 + 2 + l1 * 2 + 2, 39),
            Kind::NtCreateX => (70 + 2 + l1 * 2 + 2, 39 + 12 * 4),
            Kind::WriteX => (39 + 20 + self.param(2).max(0) as u64, 39 + 16),
            Kind::ReadX => (39 + 20, 39 + 20 + self.param(3).max(0) as u64),
            Kind::Close => (39 + 8, 39),
            Kind::Rename => (39 + 8 + 2 * l1 + 2 * l2, 39),
            Kind::Flush => (39 + 2, 39),
            Kind::QueryPathInformation => (39 + 16 + 2 * l1, 39 + 32),
            Kind::QueryFileInformation | Kind::QueryFsInformation => (39 + 20, 39 + 32),
            Kind::FindFirst => (39 + 20 + l1 * 2, 39 + 90 * self.param(2).max(0) as u64),
            Kind::SetFileInformation => (39 + 32, 39 + 8),
            Kind::LockX | Kind::UnlockX => (39 + 12, 39),
            Kind::Deltree => return None,
        };
        Some(s)
    }
}

/// dbench's `ival`: `strtoll(s, NULL, 0)` (decimal, `0x` hex, leading-0 octal), 0 if no digits.
fn ival(s: &str) -> i64 {
    let (neg, t) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, digits) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (16, h)
    } else if t.len() > 1 && t.starts_with('0') {
        (8, &t[1..])
    } else {
        (10, t)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let v = i64::from_str_radix(&digits[..end], radix).unwrap_or(0);
    if neg {
        -v
    } else {
        v
    }
}

/// `next_token` of dbench's util.c: split on spaces, a double quote toggles quoting and is
/// dropped.
fn tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut in_tok = false;
    for c in line.chars() {
        if c == '"' {
            quoted = !quoted;
            in_tok = true;
        } else if c == ' ' && !quoted {
            if in_tok {
                out.push(std::mem::take(&mut cur));
                in_tok = false;
            }
        } else {
            cur.push(c);
            in_tok = true;
        }
    }
    if in_tok {
        out.push(cur);
    }
    out
}

/// Parse a dbench-4 loadfile: one op per line, optional leading timestamp, file names (which
/// start with `/` once backslashes are turned into slashes) before the numeric parameters, a
/// status last. Lines with fewer than two tokens and `#` comments are skipped, as dbench does;
/// anything else it cannot run is an error naming the line.
pub fn parse(text: &str) -> Result<Vec<Line>, String> {
    let mut out = Vec::new();
    for (no, raw) in text.lines().enumerate() {
        let line = raw.replace('\\', "/");
        let mut t = tokens(&line);
        if t.len() < 2 || t[0].starts_with('#') {
            continue;
        }
        if t[0].chars().next().is_some_and(|c| c.is_ascii_digit()) {
            t.remove(0);
        }
        let bad = |what: &str| format!("loadfile line {}: {what}: {raw}", no + 1);
        let status = t.last().cloned().unwrap_or_default();
        if !(status.starts_with("NT_STATUS_")
            || status.starts_with("0x")
            || status.starts_with("SUCCESS")
            || status.starts_with("ERROR"))
        {
            return Err(bad("badly formed status"));
        }
        let kind = Kind::parse(&t[0]).ok_or_else(|| bad("unknown operation"))?;
        let mut i = 1;
        let mut names = Vec::new();
        while i < t.len() - 1 && names.len() < 2 && t[i].starts_with('/') {
            names.push(t[i].clone());
            i += 1;
        }
        let params = t[i..t.len() - 1].iter().map(|s| ival(s)).collect();
        let mut names = names.into_iter();
        out.push(Line {
            kind,
            fname: names.next(),
            fname2: names.next(),
            params,
        });
    }
    if out.is_empty() {
        return Err("loadfile has no operations".into());
    }
    Ok(out)
}

/// `client-tiny.txt`, parsed.
pub fn client_tiny() -> Vec<Line> {
    parse(CLIENT_TINY).expect("client-tiny.txt parses")
}

/// Checkpoints per pass: after these line indices a client records a mark, so the metrics
/// know the bytes it has done at any time within 1/`n` of a pass. The last is the pass end.
pub fn checkpoints(lines: usize, n: usize) -> Vec<usize> {
    let n = n.clamp(1, lines);
    let mut v: Vec<usize> = (1..=n).map(|j| j * lines / n - 1).collect();
    v.dedup();
    v
}

/// Cumulative bytes credited at each checkpoint.
pub fn checkpoint_bytes(lines: &[Line], cks: &[usize]) -> Vec<u64> {
    let mut acc = 0u64;
    let mut out = Vec::with_capacity(cks.len());
    let mut next = 0;
    for (i, l) in lines.iter().enumerate() {
        acc += l.bytes();
        if next < cks.len() && cks[next] == i {
            out.push(acc);
            next += 1;
        }
    }
    out
}

/// What the checkpoint marks of every client say: per-pass times and bytes done.
pub struct Progress {
    /// (completion time, pass duration) of every pass of every client, in ns.
    pub passes: Vec<(u64, u64)>,
    /// Bytes done by all clients at `at`.
    pub bytes_at: Vec<u64>,
}

/// Read the checkpoint marks named `mark` of the tasks `clients`. A client's k-th checkpoint
/// mark is checkpoint k mod n of pass k / n. `at` lists the times at which to total the bytes.
pub fn progress(
    sim: &Sim,
    mark: &str,
    clients: &[usize],
    ck_bytes: &[u64],
    at: &[u64],
) -> Progress {
    let n = ck_bytes.len();
    let per_pass = ck_bytes.last().copied().unwrap_or(0);
    let id = sim.compiled.marks.iter().position(|m| m == mark);
    let mut count: BTreeMap<usize, usize> = clients.iter().map(|&c| (c, 0)).collect();
    let mut pass_start: BTreeMap<usize, u64> = clients
        .iter()
        .map(|&c| (c, sim.tasks[c].stats.start_ns))
        .collect();
    // bytes done by each client at each `at` time: the last checkpoint reached by then
    let mut done: Vec<BTreeMap<usize, u64>> = vec![BTreeMap::new(); at.len()];
    let mut passes = Vec::new();
    for &(t, task, m) in &sim.marks {
        if Some(m) != id {
            continue;
        }
        let Some(k) = count.get_mut(&task) else {
            continue;
        };
        let pass = (*k / n) as u64;
        let bytes = pass * per_pass + ck_bytes[*k % n];
        if *k % n == n - 1 {
            let s = pass_start[&task];
            passes.push((t, t - s));
            pass_start.insert(task, t);
        }
        *k += 1;
        for (i, &a) in at.iter().enumerate() {
            if t <= a {
                done[i].insert(task, bytes);
            }
        }
    }
    Progress {
        passes,
        bytes_at: done.iter().map(|m| m.values().sum()).collect(),
    }
}

/// MMTests' statistics of the `loadfile-N` samples (ms, lower is better, sorted best first,
/// `NormalisedLeftSkewops` rows: Amean, Min, Max, Stddev, Pctile-50/75/90/99) into `values`
/// as `loadfile_ms_*`, plus the sample count.
pub fn loadfile_stats(samples_ms: &[f64], values: &mut BTreeMap<String, f64>) {
    let mut s = samples_ms.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    values.insert("loadfile_passes".into(), n as f64);
    if n == 0 {
        for k in ["mean", "min", "max", "stddev", "p50", "p75", "p90", "p99"] {
            values.insert(format!("loadfile_ms_{k}"), super::NO_DATA);
        }
        return;
    }
    let mean = s.iter().sum::<f64>() / n as f64;
    // Stat.pm::calc_stddev: no spread from one sample
    let sd = if n > 1 {
        (s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        super::NO_DATA
    };
    values.insert("loadfile_ms_mean".into(), mean);
    values.insert("loadfile_ms_min".into(), s[0]);
    values.insert("loadfile_ms_max".into(), s[n - 1]);
    values.insert("loadfile_ms_stddev".into(), sd);
    for p in [50usize, 75, 90, 99] {
        values.insert(format!("loadfile_ms_p{p}"), mmtests_pctile(&s, p));
    }
}

/// MMTests' `Pctile-P` of best-first sorted data: the element at int(n·P/100) − 1 (≥ 0).
pub fn mmtests_pctile(sorted_best_first: &[f64], p: usize) -> f64 {
    let n = sorted_best_first.len();
    let count = (n * p / 100).max(1);
    sorted_best_first[count - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_tiny_has_the_mmtests_op_mix_and_bytes() {
        let l = client_tiny();
        assert_eq!(l.len(), 3573);
        let count = |k: Kind| l.iter().filter(|x| x.kind == k).count();
        assert_eq!(count(Kind::ReadX), 962);
        assert_eq!(count(Kind::NtCreateX), 613);
        assert_eq!(count(Kind::Flush), 43);
        assert_eq!(count(Kind::Unlink), 124);
        let w: u64 = l.iter().map(|x| x.write_bytes()).sum();
        let all: u64 = l.iter().map(|x| x.bytes()).sum();
        assert_eq!(w, 7_711_510);
        assert_eq!(all - w, 11_408_226);
    }

    #[test]
    fn sockio_sizes_follow_sockio_c() {
        let l = parse(
            "NTCreateX \"\\clients\\client1\\~dmtmp\\PWRPNT\\PCBENCHM.PPT\" 0x40 0x1 10003 NT_STATUS_OK\n\
             ReadX 10003 0 4096 4096 NT_STATUS_OK\n\
             WriteX 10005 0 4096 4096 NT_STATUS_OK\n\
             FIND_FIRST \"\\clients\\client1\\~dmtmp\\<.JNK\" 260 1366 11 NT_STATUS_OK\n",
        )
        .unwrap();
        // "./clients/client0/~dmtmp/PWRPNT/PCBENCHM.PPT" is 44 characters
        assert_eq!(l[0].sockio_sizes(0), Some((74 + 2 * 44, 87)));
        assert_eq!(l[0].sockio_sizes(12), Some((74 + 2 * 45, 87)));
        assert_eq!(l[1].sockio_sizes(0), Some((59, 59 + 4096)));
        assert_eq!(l[2].sockio_sizes(0), Some((59 + 4096, 55)));
        // "./clients/client0/~dmtmp/<.JNK" is 30 characters, 11 entries found
        assert_eq!(l[3].sockio_sizes(0), Some((59 + 60, 39 + 990)));
        assert_eq!(l[0].params, vec![0x40, 1, 10003]);
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse("Frobnicate 1 2 NT_STATUS_OK\n").unwrap_err();
        assert!(
            e.contains("line 1") && e.contains("unknown operation"),
            "{e}"
        );
        let e = parse("ReadX 1 2 3 4 OK\n").unwrap_err();
        assert!(e.contains("status"), "{e}");
    }

    #[test]
    fn checkpoints_end_at_the_pass_end() {
        let c = checkpoints(3573, 64);
        assert_eq!(c.len(), 64);
        assert_eq!(*c.last().unwrap(), 3572);
        let l = client_tiny();
        let b = checkpoint_bytes(&l, &c);
        assert_eq!(*b.last().unwrap(), 19_119_736);
        assert!(b.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn mmtests_percentile_indexing() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(mmtests_pctile(&s, 50), 2.0);
        assert_eq!(mmtests_pctile(&s, 99), 3.0);
        assert_eq!(mmtests_pctile(&s, 10), 1.0);
    }
}
