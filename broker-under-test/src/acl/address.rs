//! White remote addresses: the forms of RocketMQ's `RemoteAddressStrategyFactory` for IPv4.
//!
//! * blank: matches nothing (an account without `whiteRemoteAddress`);
//! * `*`, `*.*.*.*`: matches every address;
//! * `192.168.1.{1,2,3}` and `192.168.1.1,192.168.1.2`: a set of exact addresses;
//! * `192.168.1.*`, `192.168.*.*`, `192.168.1.10-20`: the first segment that is `*` or `a-b`
//!   (from the second on) decides; the segments before it must be equal, later ones are not
//!   looked at, as in `RangeRemoteAddressStrategy`;
//! * one exact address.
//!
//! IPv6 ranges are refused at load (nothing on loopback could test them); exact IPv6
//! addresses are compared as addresses.

use std::collections::HashSet;
use std::net::IpAddr;

/// One parsed `whiteRemoteAddress` or `globalWhiteRemoteAddresses` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressRule {
    Nothing,
    Any,
    Set(HashSet<IpAddr>),
    /// `head` is the segments before the ranged one, each followed by a dot.
    Range {
        head: String,
        index: usize,
        start: u32,
        end: u32,
    },
}

impl AddressRule {
    pub fn parse(text: Option<&str>) -> Result<AddressRule, String> {
        let text = text.map(str::trim).unwrap_or_default();
        if text.is_empty() {
            return Ok(AddressRule::Nothing);
        }
        if matches!(text, "*" | "*.*.*.*" | "*:*:*:*:*:*:*:*") {
            return Ok(AddressRule::Any);
        }
        if text.contains(':') && (text.contains('*') || text.contains('-') || text.ends_with('}')) {
            return Err(format!("IPv6 ranges are not supported here: {text}"));
        }
        if text.ends_with('}') {
            let open = text
                .find('{')
                .ok_or_else(|| format!("Netaddress examine Exception netaddress is {text}"))?;
            let (head, tail) = text.split_at(open);
            let addrs = tail[1..tail.len() - 1]
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|last| exact(&format!("{head}{last}")))
                .collect::<Result<HashSet<_>, _>>()?;
            return Ok(AddressRule::Set(addrs));
        }
        if text.contains(',') {
            let addrs = text
                .split(',')
                .filter(|s| !s.is_empty())
                .map(exact)
                .collect::<Result<HashSet<_>, _>>()?;
            return Ok(AddressRule::Set(addrs));
        }
        if text.contains('*') || text.contains('-') {
            return range(text);
        }
        Ok(AddressRule::Set(HashSet::from([exact(text)?])))
    }

    pub fn matches(&self, ip: IpAddr) -> bool {
        match self {
            AddressRule::Nothing => false,
            AddressRule::Any => true,
            AddressRule::Set(set) => set.contains(&ip),
            AddressRule::Range {
                head,
                index,
                start,
                end,
            } => {
                let IpAddr::V4(v4) = ip else { return false };
                let text = v4.to_string();
                if !text.starts_with(head.as_str()) {
                    return false;
                }
                let value = u32::from(v4.octets()[*index]);
                (*start..=*end).contains(&value)
            }
        }
    }
}

fn exact(text: &str) -> Result<IpAddr, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("Netaddress examine Exception netaddress is {text}"))
}

fn octet(text: &str, whole: &str) -> Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|v| *v <= 255)
        .ok_or_else(|| format!("Netaddress examine scope Exception netaddress is {whole}"))
}

fn range(text: &str) -> Result<AddressRule, String> {
    let parts: Vec<&str> = text.split('.').filter(|s| !s.is_empty()).collect();
    if parts.len() != 4 {
        return Err(format!(
            "Netaddress examine scope Exception netaddress is {text}"
        ));
    }
    for index in 1..4 {
        let value = parts[index].trim();
        let (start, end) = if value == "*" {
            (0, 255)
        } else if let Some((a, b)) = value.split_once('-') {
            let (a, b) = (octet(a, text)?, octet(b, text)?);
            if a > b {
                return Err(format!(
                    "RangeRemoteAddressStrategy netaddress examine scope Exception start is {a} , end is {b}"
                ));
            }
            (a, b)
        } else {
            continue;
        };
        let mut head = String::new();
        for p in &parts[..index] {
            octet(p, text)?;
            head.push_str(p.trim());
            head.push('.');
        }
        return Ok(AddressRule::Range {
            head,
            index,
            start,
            end,
        });
    }
    Err(format!(
        "Netaddress examine scope Exception netaddress is {text}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn rule(s: &str) -> AddressRule {
        AddressRule::parse(Some(s)).unwrap()
    }

    #[test]
    fn blank_matches_nothing_and_star_everything() {
        assert!(!AddressRule::parse(None).unwrap().matches(ip("127.0.0.1")));
        assert!(!rule("  ").matches(ip("127.0.0.1")));
        assert!(rule("*").matches(ip("10.1.2.3")));
        assert!(rule("*.*.*.*").matches(ip("127.0.0.1")));
    }

    #[test]
    fn exact_sets_and_braces() {
        assert!(rule("127.0.0.1").matches(ip("127.0.0.1")));
        assert!(!rule("127.0.0.1").matches(ip("127.0.0.2")));
        let braces = rule("127.0.0.{1,2,3}");
        assert!(braces.matches(ip("127.0.0.3")) && !braces.matches(ip("127.0.0.4")));
        let list = rule("127.0.0.2,127.0.0.5");
        assert!(list.matches(ip("127.0.0.5")) && !list.matches(ip("127.0.0.1")));
    }

    #[test]
    fn ranges_look_at_the_first_ranged_segment() {
        assert!(rule("127.0.0.*").matches(ip("127.0.0.9")));
        assert!(!rule("127.0.0.*").matches(ip("127.0.1.9")));
        let r = rule("127.0.0.1-3");
        assert!(r.matches(ip("127.0.0.1")) && r.matches(ip("127.0.0.3")));
        assert!(!r.matches(ip("127.0.0.4")));
        assert!(rule("127.*.*.*").matches(ip("127.5.6.7")));
        assert!(rule("127.0.0-2.*").matches(ip("127.0.2.200")));
    }

    #[test]
    fn malformed_entries_are_refused() {
        for bad in [
            "127.0.0.300",
            "127.0.0.5-2",
            "127.0.*",
            "fe80::1-2",
            "not-an-ip",
        ] {
            assert!(AddressRule::parse(Some(bad)).is_err(), "{bad}");
        }
    }
}
