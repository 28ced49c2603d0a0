//! A queue's PULL_MESSAGE as bytes: the header encoded once into a [`FrameTemplate`], then per
//! pull only the opaque and the four fields that change written into it.
//!
//! The rest of the header is the queue's and the configuration's, fixed for the pull loop's
//! life. Rewriting the fields of a kept command and encoding its header map again cost 4% of
//! the consumers' CPU in `make floor` (an escape check and a copy per key and value); the
//! template copies the constant bytes and writes the digits. Its output is byte for byte the
//! full encoder's (the template's own property test, and the test below on pull headers), and
//! it signs as the full encoder signs when credentials are installed.

use bytes::BytesMut;
use remoting::headers::PullMessageRequestHeader;
use remoting::template::FrameTemplate;
use remoting::{RemotingCommand, RequestCode};

/// PULL_MESSAGE's fields that change from one pull of a queue to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullFields {
    pub queue_offset: i64,
    pub sys_flag: i32,
    pub commit_offset: i64,
    pub sub_version: i64,
}

impl PullFields {
    /// In the order of [`SLOTS`].
    fn values(self) -> [i64; 4] {
        [
            self.queue_offset,
            i64::from(self.sys_flag),
            self.commit_offset,
            self.sub_version,
        ]
    }
}

/// The ext fields a pull changes, as the template's slots.
const SLOTS: [&str; 4] = ["queueOffset", "sysFlag", "commitOffset", "subVersion"];

enum Kept {
    /// Boxed: a template is several times the size of the fallback's command.
    Template(Box<FrameTemplate>),
    /// A header the template refuses (a value holding its marker byte, DEL): encoded whole
    /// each time, its changing fields rewritten.
    Command(RemotingCommand),
}

/// One queue's PULL_MESSAGE, kept for the pull loop's life.
pub struct PullFrame(Kept);

impl PullFrame {
    pub fn new(header: &PullMessageRequestHeader) -> PullFrame {
        let cmd = RemotingCommand::request(RequestCode::PULL_MESSAGE, 0).with_header(header);
        PullFrame(match FrameTemplate::new(&cmd, &SLOTS) {
            Ok(template) => Kept::Template(Box::new(template)),
            Err(_) => Kept::Command(cmd),
        })
    }

    /// Appends the frame of a pull with `f` and `opaque` to `dst`.
    pub fn encode(&mut self, f: PullFields, opaque: i32, dst: &mut BytesMut) {
        match &mut self.0 {
            Kept::Template(template) => {
                let values = f.values();
                // Digits need no escaping: written where they go.
                let written = template.encode_with(opaque, dst, |i, dst| {
                    dst.extend_from_slice(itoa::Buffer::new().format(values[i]).as_bytes());
                });
                if written.is_none() {
                    // A signing template takes the raw values.
                    let digits = values.map(|v| v.to_string());
                    let values = [&*digits[0], &*digits[1], &*digits[2], &*digits[3]];
                    template.encode(opaque, &values, dst);
                }
            }
            Kept::Command(cmd) => {
                for (key, v) in SLOTS.iter().zip(f.values()) {
                    cmd.ext_fields.insert((*key).to_owned(), v.to_string());
                }
                cmd.opaque = opaque;
                cmd.encode(dst);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(topic: &str, f: PullFields) -> PullMessageRequestHeader {
        PullMessageRequestHeader {
            consumer_group: "G".into(),
            topic: topic.into(),
            queue_id: 3,
            queue_offset: f.queue_offset,
            max_msg_nums: 32,
            sys_flag: f.sys_flag,
            commit_offset: f.commit_offset,
            suspend_timeout_millis: 20_000,
            subscription: None,
            sub_version: f.sub_version,
            expression_type: Some("TAG".into()),
            max_msg_bytes: None,
        }
    }

    /// A kept frame, re-emitted for each pull, is the frame a header built anew encodes: from
    /// the template, and from the whole-command fallback (a topic that is the template's marker).
    #[test]
    fn a_kept_pull_frame_is_the_one_built_anew() {
        let pulls = [
            (0, 0x2, 0, 1),
            (32, 0x3, 32, 1),
            (1_000_000_007, 0x2, 0, 1_700_000_000_000),
            (7, 0x3, -1, 2),
        ];
        for topic in ["T", "\u{7f}0\u{7f}"] {
            let first = PullFields {
                queue_offset: 0,
                sys_flag: 0,
                commit_offset: 0,
                sub_version: 0,
            };
            let mut kept = PullFrame::new(&header(topic, first));
            assert_eq!(
                matches!(kept.0, Kept::Template { .. }),
                topic == "T",
                "{topic:?}"
            );
            for (i, (queue_offset, sys_flag, commit_offset, sub_version)) in
                pulls.into_iter().enumerate()
            {
                let f = PullFields {
                    queue_offset,
                    sys_flag,
                    commit_offset,
                    sub_version,
                };
                let mut got = BytesMut::new();
                kept.encode(f, 9 + i as i32, &mut got);
                let mut fresh = RemotingCommand::request(RequestCode::PULL_MESSAGE, 0)
                    .with_header(&header(topic, f));
                fresh.opaque = 9 + i as i32;
                assert_eq!(&got[..], &fresh.to_bytes()[..], "{topic:?} {f:?}");
            }
        }
    }
}
