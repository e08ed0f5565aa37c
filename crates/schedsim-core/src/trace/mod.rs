//! Trace sinks. Events are recorded as compact records while the simulation runs and formatted
//! at the end, as ftrace text (spec/ecosystem.md §1.1, which Perfetto and LISA parse) or as
//! Perfetto's protobuf (§1.3).
pub mod ftrace;
pub mod perfetto;
