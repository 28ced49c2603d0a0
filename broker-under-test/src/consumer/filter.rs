//! TAG subscriptions (FilterAPI.buildSubscriptionData, ExpressionMessageFilter; consumer §2.1):
//! `TagA || TagB` → tags and their Java `String.hashCode()`s; `*` or empty matches everything.
//! The broker filters by the consume queue's tag hash; the client re-filters by tag string.

use std::collections::BTreeSet;

/// Java's `String.hashCode()` (UTF-16 units, wrapping int arithmetic).
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// A subscription's filter; `None` sets mean "all".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TagFilter {
    pub sub_string: String,
    pub tags: Option<BTreeSet<String>>,
    pub codes: Option<BTreeSet<i32>>,
}

impl TagFilter {
    /// Everything matches.
    pub fn all() -> Self {
        TagFilter {
            sub_string: "*".into(),
            tags: None,
            codes: None,
        }
    }

    pub fn parse(expression: Option<&str>) -> Self {
        let sub = expression.map(str::trim).unwrap_or("");
        if sub.is_empty() || sub == "*" {
            return TagFilter::all();
        }
        let tags: BTreeSet<String> = sub
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect();
        if tags.is_empty() {
            return TagFilter::all();
        }
        let codes = tags.iter().map(|t| java_string_hash(t)).collect();
        TagFilter {
            sub_string: sub.to_owned(),
            tags: Some(tags),
            codes: Some(codes),
        }
    }

    /// isMatchedByConsumeQueue: a missing tags code (the periodic check) or `*` matches.
    pub fn matches_code(&self, tags_code: Option<i64>) -> bool {
        match (&self.codes, tags_code) {
            (None, _) | (_, None) => true,
            (Some(codes), Some(code)) => codes.contains(&(code as i32)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_filter_api() {
        let f = TagFilter::parse(Some(" TagA || TagB ||"));
        assert_eq!(f.tags.as_ref().unwrap().len(), 2);
        assert!(f.matches_code(Some(java_string_hash("TagB") as i64)));
        assert!(!f.matches_code(Some(java_string_hash("TagC") as i64)));
        assert!(f.matches_code(None));
        assert_eq!(TagFilter::parse(Some("*")), TagFilter::all());
        assert_eq!(TagFilter::parse(None), TagFilter::all());
        assert_eq!(java_string_hash("TagA"), 2_598_919);
        assert!(TagFilter::all().matches_code(Some(12)));
    }
}
