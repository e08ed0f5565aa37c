//! Trace sinks. Events are recorded as compact records while the simulation runs and formatted
//! at the end, as ftrace text (spec/ecosystem.md §1.1, which Perfetto and LISA parse), as
//! Perfetto's protobuf (§1.3) or as Chrome JSON (§1.2).
pub mod chrome;
pub mod ftrace;
pub mod perfetto;
