//! Processes as the harness sees them from outside: CPU time and memory, CPU pinning, signals,
//! a JVM's own counters.

pub mod cpu;
pub mod hsperf;
pub mod pin;
