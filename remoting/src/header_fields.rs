//! A command's header fields, borrowed for encoding and owned after decoding: a leaf below
//! [`crate::header`] (both serializations) and [`crate::plain_json`] (the plain JSON reader).

use std::collections::BTreeMap;

use crate::code::LanguageCode;

/// The header fields of a command, borrowed for encoding.
pub(crate) struct HeaderFields<'a> {
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<&'a str>,
    pub ext_fields: &'a BTreeMap<String, String>,
}

/// The header fields of a command, owned after decoding.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct DecodedHeader {
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    pub ext_fields: BTreeMap<String, String>,
}
