//! Trace sinks. Events are recorded as compact records while the simulation runs and formatted
//! at the end; the ftrace text form follows spec/ecosystem.md §1.1 so that Perfetto and LISA
//! parse it.
pub mod ftrace;
