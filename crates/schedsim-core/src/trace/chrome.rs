//! Chrome JSON (the Trace Event Format, spec/ecosystem.md §1.2), for chrome://tracing and the
//! Perfetto UI's JSON importer: the "hybrid" form, whose `systemTraceEvents` string carries the
//! ftrace text (so Perfetto builds its real CPU and thread tracks from it) and whose
//! `traceEvents` draw the same run as simple tracks, CPUs as threads of one synthetic process:
//!
//! - `CPU N`: an `X` slice per stretch a task ran, named by its comm, `args` {pid, prio};
//! - `CPU N idle`: an `X` slice per idle-state residency, named by the state (`C1`, `WFI`, ...);
//! - `cpuN freq kHz`: a `C` counter at every change of the CPU's request.
//!
//! Times are µs with three decimals, so nanoseconds survive. Stretches still open at the end
//! of the run are closed there.

use serde_json::{json, Value};

use super::ftrace::{Payload, TraceBuf, PWR_EVENT_EXIT};

/// The synthetic process that holds the CPU tracks; above any simulated pid.
pub const CPUS_PID: u64 = 1_000_000_000;
/// Thread ids of the per-CPU tracks: running tasks, then idle states.
const RUN_TID: u64 = 1_000_000_000;
const IDLE_TID: u64 = 1_100_000_000;

fn us(ns: u64) -> Value {
    // µs with ns precision, as a decimal the JSON carries exactly enough of
    json!((ns as f64) / 1000.0)
}

/// Encode the trace. `idle_names[cpu][state]` names each CPU's idle states; `end_ns` closes the
/// stretches still open; `ftrace_text` becomes `systemTraceEvents`.
pub fn encode(
    buf: &TraceBuf,
    nr_cpus: usize,
    idle_names: &[Vec<String>],
    end_ns: u64,
    ftrace_text: String,
) -> String {
    let mut events: Vec<Value> = Vec::new();
    events.push(
        json!({"ph": "M", "pid": CPUS_PID, "name": "process_name", "args": {"name": "CPUs"}}),
    );
    for cpu in 0..nr_cpus {
        for (tid, name) in [
            (RUN_TID + cpu as u64, format!("CPU {cpu}")),
            (IDLE_TID + cpu as u64, format!("CPU {cpu} idle")),
        ] {
            events.push(json!({"ph": "M", "pid": CPUS_PID, "tid": tid, "name": "thread_name", "args": {"name": name}}));
            events.push(json!({"ph": "M", "pid": CPUS_PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid - RUN_TID}}));
        }
    }
    // (start, comm, pid, prio) of the task running on each CPU; (start, state) of its idle
    let mut running: Vec<Option<(u64, String, u32, i32)>> = vec![None; nr_cpus];
    let mut idle: Vec<Option<(u64, usize)>> = vec![None; nr_cpus];
    let slice = |cpu: usize, start: u64, end: u64, name: &str, args: Value, tid: u64| {
        json!({
            "ph": "X", "pid": CPUS_PID, "tid": tid + cpu as u64, "name": name,
            "ts": us(start), "dur": us(end.saturating_sub(start)), "args": args,
        })
    };
    let idle_name = |cpu: usize, state: usize| -> String {
        idle_names
            .get(cpu)
            .and_then(|n| n.get(state))
            .cloned()
            .unwrap_or_else(|| format!("state{state}"))
    };
    for i in buf.time_order() {
        let r = &buf.records[i];
        match &r.payload {
            Payload::Switch { next, .. } => {
                if let Some((start, comm, pid, prio)) = running[r.cpu].take() {
                    let args = json!({"pid": pid, "prio": prio});
                    events.push(slice(r.cpu, start, r.ts, &comm, args, RUN_TID));
                }
                if next.pid != 0 {
                    let comm = buf.payload_comm(next, r.cpu);
                    running[r.cpu] = Some((r.ts, comm, next.pid, next.prio));
                }
            }
            Payload::CpuIdle { state, cpu } => {
                if let Some((start, s)) = idle[*cpu].take() {
                    events.push(slice(
                        *cpu,
                        start,
                        r.ts,
                        &idle_name(*cpu, s),
                        json!({}),
                        IDLE_TID,
                    ));
                }
                if *state != PWR_EVENT_EXIT {
                    idle[*cpu] = Some((r.ts, *state as usize));
                }
            }
            Payload::CpuFrequency { khz, cpu } => {
                events.push(json!({
                    "ph": "C", "pid": CPUS_PID, "name": format!("cpu{cpu} freq"),
                    "ts": us(r.ts), "args": {"kHz": khz},
                }));
            }
            _ => {}
        }
    }
    for cpu in 0..nr_cpus {
        if let Some((start, comm, pid, prio)) = running[cpu].take() {
            let args = json!({"pid": pid, "prio": prio});
            events.push(slice(cpu, start, end_ns, &comm, args, RUN_TID));
        }
        if let Some((start, s)) = idle[cpu].take() {
            events.push(slice(
                cpu,
                start,
                end_ns,
                &idle_name(cpu, s),
                json!({}),
                IDLE_TID,
            ));
        }
    }
    // `traceEvents` first: older Perfetto tokenizers stop at the first key they do not know
    let mut out = serde_json::Map::new();
    out.insert("traceEvents".into(), Value::Array(events));
    out.insert("displayTimeUnit".into(), json!("ns"));
    out.insert("systemTraceEvents".into(), Value::String(ftrace_text));
    serde_json::to_string(&Value::Object(out)).expect("trace events serialise")
}
