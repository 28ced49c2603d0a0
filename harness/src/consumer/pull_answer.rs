//! A PULL_MESSAGE answer as the pull loop reads it: its code, remark, header and body.
//!
//! Read in place when its JSON header is plain (`remoting::plain_json::read_frame`), as every
//! broker writes it: decoding it into a command built a map of eight strings per answer, a
//! tenth of a consumer's instructions per message in `make floor` (280 of 2964, callgrind). Anything else is decoded in
//! full and converted; both give the same answer (a unit test here, a property test in
//! `plain_json.rs`).

use bytes::Bytes;
use remoting::headers::{CustomHeader, PullMessageResponseHeader};
use remoting::plain_json::PlainFrame;
use remoting::RemotingCommand;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullAnswer {
    pub code: i32,
    pub remark: Option<String>,
    /// None when the answer carries no valid header (an error answer has none).
    pub header: Option<PullMessageResponseHeader>,
    pub body: Bytes,
}

impl PullAnswer {
    /// From a frame read in place; `frame` is the one `v` was read from.
    pub fn from_plain(v: &PlainFrame<'_>, frame: &Bytes) -> PullAnswer {
        PullAnswer {
            code: v.code,
            remark: v.remark.map(str::to_owned),
            header: PullMessageResponseHeader::from_ext_fields(v.ext()).ok(),
            body: frame.slice(v.body_at..),
        }
    }

    pub fn from_command(cmd: RemotingCommand) -> PullAnswer {
        PullAnswer {
            code: cmd.code,
            header: cmd.header().ok(),
            remark: cmd.remark,
            body: cmd.body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::plain_json::read_frame;

    #[test]
    fn read_in_place_or_decoded_a_pull_answer_is_the_same() {
        let header = PullMessageResponseHeader {
            suggest_which_broker_id: 1,
            next_begin_offset: 64,
            min_offset: 0,
            max_offset: 4000,
        };
        let found = RemotingCommand::request(0, 0)
            .with_header(&header)
            .with_body(&b"records"[..]);
        let refused = RemotingCommand::request(1, 0).with_remark("the consumer's group not exist");
        for mut cmd in [found, refused] {
            cmd.flag = 1;
            cmd.opaque = 9;
            let mut frame = cmd.to_bytes();
            let frame = frame.split_off(4);
            let v = read_frame(&frame).expect("a plain header");
            let fast = PullAnswer::from_plain(&v, &frame);
            let full = PullAnswer::from_command(RemotingCommand::decode(frame.clone()).unwrap());
            assert_eq!(fast, full);
        }
    }
}
