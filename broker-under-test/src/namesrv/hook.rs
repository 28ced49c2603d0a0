//! The processors' way to the name servers: a topic created while serving a request is
//! registered from the creating thread before the request is answered, as RocketMQ does
//! (name-server reference §8). A leaf: the processors know this hook, not the registrar, which
//! installs it when it starts (a broker without `namesrvAddr` has none).

use std::sync::OnceLock;

/// How a topic came to be; with the version profile it decides how the name servers are told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicOrigin {
    /// Auto-created by a send (`createTopicInSendMessageMethod`) or as a group's retry topic
    /// (`createTopicInSendMessageBackMethod`).
    Send,
    /// UPDATE_AND_CREATE_TOPIC.
    Admin,
}

/// The registration callback, set once by the registrar.
type Register = Box<dyn Fn(TopicOrigin) + Send + Sync>;

#[derive(Default)]
pub struct RegisterHook(OnceLock<Register>);

impl RegisterHook {
    /// Installs the callback; a second call is ignored (one registrar per broker).
    pub fn install(&self, register: Register) {
        let _ = self.0.set(register);
    }

    /// Registers the broker's topic table now, on the calling thread (a no-op without name
    /// servers). Returns when the registration is answered (or sent, when oneway).
    pub fn topic_created(&self, origin: TopicOrigin) {
        if let Some(register) = self.0.get() {
            register(origin);
        }
    }
}

impl std::fmt::Debug for RegisterHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "RegisterHook(installed)"
        } else {
            "RegisterHook(none)"
        })
    }
}
