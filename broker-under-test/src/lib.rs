//! broker-under-test: RocketMQ's send path, request by request:
//! `remoting → server → dispatch → processor → store`.

pub mod store;
