//! What the load generator costs, measured against the cheapest possible peers.
//!
//! A generator that cannot outrun the broker measures itself. To know how much headroom the
//! harness has, `make floor` runs two senders, one after the other, against the same
//! [`responder`] on the same pinned cores:
//!
//! - [`sender`]: a minimal pipelined sender. It writes one pre-encoded SEND_MESSAGE_V2 frame again
//!   and again, keeps a fixed number in flight, and only counts response frames by their length
//!   prefix: no histograms, no header parsing, no schedule. This is the floor of what one core
//!   can push through one connection.
//! - the harness in closed loop, with every histogram and classification on.
//!
//! The ratio of the two rates is the harness's efficiency (`make floor` also compares the CPU
//! each spends per message, which a busy machine does not skew). The consumers are measured the
//! same way: [`puller`] is the minimal puller (long polling off, 32 a pull, one pull in flight per
//! queue, records counted by their length fields), the responder answers pulls from a
//! [`canned`] batch ([`consume`] holds the group requests around them), and the harness's
//! consumers run `profiles/consume-floor.toml` against the same responder.
//!
//! The responder must be much faster than either sender: it answers send requests from a fixed template and reads only the
//! fields it must echo (`code`, `opaque`, `flag`), so one responder core outruns one sender core.
//!
//! It imports only `remoting` from the workspace (and no tokio); it must never import
//! `rmq-client` or a harness crate: a yardstick that shared the harness's code path would
//! measure the harness against itself.

pub mod canned;
pub mod consume;
pub mod puller;
pub mod request;
pub mod responder;
pub mod sender;
