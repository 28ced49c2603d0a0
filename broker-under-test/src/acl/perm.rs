//! `Permission`: the bits of a topic or group permission and how they are compared.

/// `Permission.DENY`.
pub const DENY: u8 = 1;
/// `Permission.ANY`: needed by nothing our broker checks; kept so the bit layout is RocketMQ's.
pub const ANY: u8 = 1 << 1;
/// `Permission.PUB`.
pub const PUB: u8 = 1 << 2;
/// `Permission.SUB`.
pub const SUB: u8 = 1 << 3;

/// `Permission.parsePermFromString`: `PUB`, `SUB`, `PUB|SUB`, `SUB|PUB`, `DENY`; anything else
/// (and an absent value) is DENY.
pub fn parse(text: Option<&str>) -> u8 {
    match text.map(str::trim) {
        Some("PUB") => PUB,
        Some("SUB") => SUB,
        Some("PUB|SUB") | Some("SUB|PUB") => PUB | SUB,
        _ => DENY,
    }
}

/// `Permission.checkPermission(needed, owned)`.
pub fn permits(needed: u8, owned: u8) -> bool {
    if owned & DENY != 0 {
        return false;
    }
    if needed & ANY != 0 {
        return owned & (PUB | SUB) != 0;
    }
    needed & owned != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rocketmq_spellings() {
        assert_eq!(parse(Some(" PUB ")), PUB);
        assert_eq!(parse(Some("SUB|PUB")), PUB | SUB);
        assert_eq!(parse(Some("pub")), DENY, "case matters in RocketMQ");
        assert_eq!(parse(None), DENY);
    }

    #[test]
    fn deny_wins_and_bits_must_overlap() {
        assert!(permits(PUB, PUB | SUB));
        assert!(!permits(PUB, SUB));
        assert!(!permits(SUB, DENY | SUB));
        assert!(permits(ANY, SUB));
        assert!(!permits(ANY, DENY));
    }
}
