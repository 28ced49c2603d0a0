//! Processes as the harness sees them from outside: CPU time and memory, CPU pinning, signals.

pub mod cpu;
pub mod pin;
