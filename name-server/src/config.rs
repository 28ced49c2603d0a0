//! The name server's settings: RocketMQ's NamesrvConfig / NettyServerConfig key names where
//! they exist (name-server reference §7), and our own bounds. One table, [`KEYS`], drives
//! parsing, `-p` and the README.

use std::{
    net::{IpAddr, SocketAddr},
    path::Path,
    time::Duration,
};

/// A bad configuration: the origin (`file:line` or `--set`) and the fix.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{origin}: `{text}` is not `key=value`")]
    Syntax { origin: String, text: String },
    #[error("{origin}: unknown key `{key}`{hint}")]
    UnknownKey {
        origin: String,
        key: String,
        hint: String,
    },
    #[error("{origin}: {key}={value}: {reason}")]
    BadValue {
        origin: String,
        key: String,
        value: String,
        reason: String,
    },
    #[error("reading {path}: {reason}")]
    Read { path: String, reason: String },
}

/// One key: name, default, and what it does.
pub struct Key {
    pub name: &'static str,
    pub default: &'static str,
    pub doc: &'static str,
}

/// Every key the name server reads.
pub const KEYS: &[Key] = &[
    Key {
        name: "listenPort",
        default: "9876",
        doc: "port; 0 = ephemeral",
    },
    Key {
        name: "bindAddress",
        default: "127.0.0.1",
        doc: "address bound (RocketMQ 5.x: 0.0.0.0; loopback here unless you say otherwise)",
    },
    Key {
        name: "scanNotActiveBrokerInterval",
        default: "5000",
        doc: "ms between liveness scans (4.x: fixed 10000)",
    },
    Key {
        name: "brokerChannelExpiredTime",
        default: "120000",
        doc: "ours: ms of silence after which a broker is removed, unless its registration names \
              `heartbeatTimeoutMillis` (RocketMQ's constant BROKER_CHANNEL_EXPIRED_TIME)",
    },
    Key {
        name: "serverChannelMaxIdleTimeSeconds",
        default: "120",
        doc: "a connection with no traffic for this long is closed",
    },
    Key {
        name: "maxConnections",
        default: "1024",
        doc: "ours: connections served at once; more wait in the accept backlog",
    },
    Key {
        name: "maxBrokers",
        default: "1024",
        doc: "ours: broker names kept; a registration beyond is refused with code 1",
    },
    Key {
        name: "maxTopics",
        default: "100000",
        doc: "ours: topics kept; a registration that would add more is refused with code 1",
    },
];

/// The validated settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamesrvConfig {
    pub listen_port: u16,
    pub bind_address: IpAddr,
    pub scan_interval: Duration,
    pub broker_expired: Duration,
    pub idle: Duration,
    pub max_connections: usize,
    pub max_brokers: usize,
    pub max_topics: usize,
    /// Log lines to this file instead of stderr (in-process use); not a key.
    pub log_file: Option<std::path::PathBuf>,
}

impl Default for NamesrvConfig {
    fn default() -> Self {
        let mut c = NamesrvConfig {
            listen_port: 0,
            bind_address: IpAddr::from([127, 0, 0, 1]),
            scan_interval: Duration::ZERO,
            broker_expired: Duration::ZERO,
            idle: Duration::ZERO,
            max_connections: 0,
            max_brokers: 0,
            max_topics: 0,
            log_file: None,
        };
        for k in KEYS {
            // The defaults in KEYS are valid by construction (a unit test checks).
            let _ = c.set(k.name, k.default, "default");
        }
        c
    }
}

impl NamesrvConfig {
    /// Defaults, then `file` (properties: `key=value`, `#` comments), then `overrides`.
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<Self, ConfigError> {
        let mut c = NamesrvConfig::default();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            for (i, raw) in text.lines().enumerate() {
                let line = raw.trim();
                if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                    continue;
                }
                let origin = format!("{}:{}", path.display(), i + 1);
                let (k, v) = line.split_once('=').ok_or_else(|| ConfigError::Syntax {
                    origin: origin.clone(),
                    text: raw.to_owned(),
                })?;
                c.set(k.trim(), v.trim(), &origin)?;
            }
        }
        for arg in overrides {
            let (k, v) = arg.split_once('=').ok_or_else(|| ConfigError::Syntax {
                origin: "--set".into(),
                text: arg.clone(),
            })?;
            c.set(k.trim(), v.trim(), "--set")?;
        }
        Ok(c)
    }

    /// Sets one key from its text.
    pub fn set(&mut self, key: &str, value: &str, origin: &str) -> Result<(), ConfigError> {
        let bad = |reason: &str| ConfigError::BadValue {
            origin: origin.to_owned(),
            key: key.to_owned(),
            value: value.to_owned(),
            reason: reason.to_owned(),
        };
        let int = |min: u64, max: u64| -> Result<u64, ConfigError> {
            value
                .parse::<u64>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| bad(&format!("expected an integer in {min}..={max}")))
        };
        match key {
            "listenPort" => self.listen_port = int(0, 65_535)? as u16,
            "bindAddress" => {
                self.bind_address = value
                    .parse()
                    .map_err(|_| bad("expected an IP address such as 127.0.0.1"))?
            }
            "scanNotActiveBrokerInterval" => {
                self.scan_interval = Duration::from_millis(int(1, 86_400_000)?)
            }
            "brokerChannelExpiredTime" => {
                self.broker_expired = Duration::from_millis(int(1, 86_400_000)?)
            }
            "serverChannelMaxIdleTimeSeconds" => self.idle = Duration::from_secs(int(1, 86_400)?),
            "maxConnections" => self.max_connections = int(1, 1_000_000)? as usize,
            "maxBrokers" => self.max_brokers = int(1, 1_000_000)? as usize,
            "maxTopics" => self.max_topics = int(1, 10_000_000)? as usize,
            _ => {
                let hint = KEYS
                    .iter()
                    .map(|k| (strsim::levenshtein(key, k.name), k.name))
                    .min()
                    .filter(|(d, _)| *d <= 3)
                    .map(|(_, n)| format!("; did you mean `{n}`?"))
                    .unwrap_or_else(|| "; `name-server -p` lists every key".into());
                return Err(ConfigError::UnknownKey {
                    origin: origin.to_owned(),
                    key: key.to_owned(),
                    hint,
                });
            }
        }
        Ok(())
    }

    pub fn bind_addr(&self) -> SocketAddr {
        SocketAddr::new(self.bind_address, self.listen_port)
    }

    /// `key=value` lines, as `-p` prints them.
    pub fn render(&self) -> String {
        let values = [
            self.listen_port.to_string(),
            self.bind_address.to_string(),
            self.scan_interval.as_millis().to_string(),
            self.broker_expired.as_millis().to_string(),
            self.idle.as_secs().to_string(),
            self.max_connections.to_string(),
            self.max_brokers.to_string(),
            self.max_topics.to_string(),
        ];
        KEYS.iter()
            .zip(values)
            .map(|(k, v)| format!("{}={v}\n", k.name))
            .collect()
    }

    /// The book's key table (docs/src/clusters.md).
    pub fn markdown() -> String {
        let mut out = String::from("| key | default | meaning |\n|---|---|---|\n");
        for k in KEYS {
            out.push_str(&format!("| `{}` | {} | {} |\n", k.name, k.default, k.doc));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The book's name-server key table is this table: a key added here and not there (or
    /// a default changed) fails here.
    #[test]
    fn the_book_carries_the_key_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/src/clusters.md");
        let book = std::fs::read_to_string(path).expect("docs/src/clusters.md");
        assert!(
            book.contains(&NamesrvConfig::markdown()),
            "docs/src/clusters.md lacks `name-server --list-keys` output; paste it into the name-server section:\n{}",
            NamesrvConfig::markdown()
        );
    }

    #[test]
    fn defaults_are_rocketmqs_and_render_round_trips() {
        let c = NamesrvConfig::default();
        assert_eq!(c.listen_port, 9876);
        assert_eq!(c.scan_interval, Duration::from_millis(5000));
        assert_eq!(c.broker_expired, Duration::from_secs(120));
        let mut again = NamesrvConfig::default();
        for line in c.render().lines() {
            let (k, v) = line.split_once('=').unwrap();
            again.set(k, v, "render").unwrap();
        }
        assert_eq!(again, c);
    }

    #[test]
    fn bad_input_names_origin_and_fix() {
        let e = NamesrvConfig::load(None, &["scanNotActiveBrokerIntervl=5".into()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--set: unknown key `scanNotActiveBrokerIntervl`; did you mean `scanNotActiveBrokerInterval`?"
        );
        let e = NamesrvConfig::load(None, &["listenPort=70000".into()]).unwrap_err();
        assert!(
            e.to_string().contains("expected an integer in 0..=65535"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("namesrv-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("namesrv.conf");
        std::fs::write(&f, "# comment\nlistenPort=0\nnonsense\n").unwrap();
        let e = NamesrvConfig::load(Some(&f), &[]).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("namesrv.conf:3: `nonsense` is not `key=value`"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
