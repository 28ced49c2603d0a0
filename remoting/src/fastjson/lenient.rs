//! Field conversions as fastjson 1.2.x makes them when it fills a Java bean (`TypeUtils.castTo*`,
//! `IntegerCodec`, `BooleanCodec`, `StringCodec`), for `#[serde(deserialize_with = "…")]`:
//! - a number field takes a JSON number or a string holding one (`"1796132190898"`); a decimal
//!   is truncated (`intValue()`); `""`, `"null"` and `null` leave the field at its default, as
//!   fastjson leaves a primitive at 0;
//! - a boolean field takes `true`/`false`, a number (`1` is true), or the strings `"true"`,
//!   `"false"` (any case), `"1"`, `"0"`, `"Y"`, `"T"`, `"N"`, `"F"`;
//! - a string field takes any scalar, written as its JSON text (`4` → `"4"`).
//!
//! Use them with `#[serde(default)]` so that a missing field is the default too.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// A number field (`int`, `long`): see the module doc.
pub fn int<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + Default,
{
    match d.deserialize_any(IntVisitor)? {
        None => Ok(T::default()),
        Some(v) => T::try_from(v)
            .map_err(|_| de::Error::custom(format!("{v} is out of range for this field"))),
    }
}

/// A boxed number field (`Integer`, `Long`): `None` for null or an empty string.
pub fn opt_int<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64>,
{
    match d.deserialize_any(IntVisitor)? {
        None => Ok(None),
        Some(v) => T::try_from(v)
            .map(Some)
            .map_err(|_| de::Error::custom(format!("{v} is out of range for this field"))),
    }
}

/// A `boolean` field: see the module doc.
pub fn bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(d.deserialize_any(BoolVisitor)?.unwrap_or(false))
}

/// A `String` field: any scalar as its text; null is the empty string.
pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(d.deserialize_any(StringVisitor { nested: false })?
        .unwrap_or_default())
}

/// A `String` field that may be null.
pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(StringVisitor { nested: false })
}

/// [`opt_string`] that also takes an array or an object, as its JSON text (a header's ext
/// value: whatever JSON is there is kept as text).
pub fn opt_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(StringVisitor { nested: true })
}

struct IntVisitor;

impl<'de> Visitor<'de> for IntVisitor {
    type Value = Option<i64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number, or a string holding one")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        i64::try_from(v)
            .map(Some)
            .map_err(|_| E::custom(format!("{v} is out of range for this field")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        truncate(v)
            .map(Some)
            .ok_or_else(|| E::custom(format!("{v} is not a number")))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        // TypeUtils.castToInt(Boolean): true is 1.
        Ok(Some(i64::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        let t = v.trim();
        if t.is_empty() || t == "null" || t == "NULL" {
            return Ok(None);
        }
        if let Ok(n) = t.parse::<i64>() {
            return Ok(Some(n));
        }
        t.parse::<f64>()
            .ok()
            .and_then(truncate)
            .map(Some)
            .ok_or_else(|| E::custom(format!("{v:?} is not a number")))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// `BigDecimal.longValue()` for the finite doubles that fit; `None` otherwise.
fn truncate(v: f64) -> Option<i64> {
    (v.is_finite() && v.trunc() >= i64::MIN as f64 && v.trunc() < i64::MAX as f64)
        .then(|| v.trunc() as i64)
}

struct BoolVisitor;

impl<'de> Visitor<'de> for BoolVisitor {
    type Value = Option<bool>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a boolean, a number, or one of \"true\" \"false\" \"1\" \"0\" \"Y\" \"N\"")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v == 1))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v == 1))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(truncate(v) == Some(1)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        let t = v.trim();
        if t.is_empty() || t.eq_ignore_ascii_case("null") {
            return Ok(None);
        }
        if t.eq_ignore_ascii_case("true")
            || t == "1"
            || t.eq_ignore_ascii_case("y")
            || t.eq_ignore_ascii_case("t")
        {
            return Ok(Some(true));
        }
        if t.eq_ignore_ascii_case("false")
            || t == "0"
            || t.eq_ignore_ascii_case("n")
            || t.eq_ignore_ascii_case("f")
        {
            return Ok(Some(false));
        }
        Err(E::custom(format!("can not cast to boolean, value : {v}")))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

struct StringVisitor {
    /// Arrays and objects taken as their JSON text, not refused.
    nested: bool,
}

impl<'de> Visitor<'de> for StringVisitor {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or a scalar")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(serde_json::Value::from(v).to_string()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        if !self.nested {
            return Err(de::Error::invalid_type(de::Unexpected::Seq, &self));
        }
        let v = serde_json::Value::deserialize(de::value::SeqAccessDeserializer::new(a))?;
        Ok(Some(v.to_string()))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        if !self.nested {
            return Err(de::Error::invalid_type(de::Unexpected::Map, &self));
        }
        let v = serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(a))?;
        Ok(Some(v.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::Deserialize;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Bean {
        #[serde(deserialize_with = "super::int")]
        i: i32,
        #[serde(deserialize_with = "super::int")]
        l: i64,
        #[serde(deserialize_with = "super::opt_int")]
        boxed: Option<i64>,
        #[serde(deserialize_with = "super::bool")]
        b: bool,
        #[serde(deserialize_with = "super::string")]
        s: String,
        #[serde(deserialize_with = "super::opt_string")]
        os: Option<String>,
    }

    fn bean(json: &str) -> Result<Bean, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn numbers_as_numbers_strings_decimals_and_null() {
        let b = bean(r#"{"i":"42","l":"1796132190898","boxed":"7","s":4,"b":"true"}"#).unwrap();
        assert_eq!(
            (b.i, b.l, b.boxed, b.s.as_str(), b.b),
            (42, 1796132190898, Some(7), "4", true)
        );
        let b = bean(r#"{"i":3.9,"l":-2.5,"boxed":"","s":null,"os":null,"b":1}"#).unwrap();
        assert_eq!(
            (b.i, b.l, b.boxed, b.s.as_str(), b.os, b.b),
            (3, -2, None, "", None, true)
        );
        let b = bean(r#"{"i":null,"l":" 12 ","boxed":null,"b":"N","unknown":{"x":[1]}}"#).unwrap();
        assert_eq!((b.i, b.l, b.boxed, b.b), (0, 12, None, false));
        assert_eq!(bean("{}").unwrap(), Bean::default());
    }

    #[test]
    fn what_fastjson_refuses_is_refused() {
        assert!(bean(r#"{"i":"four"}"#)
            .unwrap_err()
            .contains("\"four\" is not a number"));
        assert!(bean(r#"{"i":4294967296}"#)
            .unwrap_err()
            .contains("out of range"));
        assert!(bean(r#"{"b":"maybe"}"#)
            .unwrap_err()
            .contains("can not cast to boolean"));
        assert!(bean(r#"{"s":[1]}"#).is_err());
        assert!(bean(r#"{"i":{}}"#).is_err());
    }

    #[test]
    fn booleans_in_every_spelling() {
        for (text, want) in [
            ("true", true),
            ("false", false),
            ("1", true),
            ("0", false),
            ("2", false),
            (r#""TRUE""#, true),
            (r#""False""#, false),
            (r#""1""#, true),
            (r#""0""#, false),
            (r#""Y""#, true),
            (r#""t""#, true),
            (r#""n""#, false),
            (r#""F""#, false),
        ] {
            assert_eq!(
                bean(&format!(r#"{{"b":{text}}}"#)).unwrap().b,
                want,
                "{text}"
            );
        }
    }

    proptest! {
        /// A number reads the same written as a number or as a string, with any padding.
        #[test]
        fn a_number_reads_the_same_as_a_string(i in any::<i32>(), l in any::<i64>(), pad in " {0,2}") {
            let plain = bean(&format!(r#"{{"i":{i},"l":{l},"boxed":{l},"s":{l}}}"#)).unwrap();
            let quoted = bean(&format!(r#"{{"i":"{pad}{i}{pad}","l":"{l}","boxed":"{l}","s":"{l}"}}"#)).unwrap();
            prop_assert_eq!(&plain, &quoted);
            prop_assert_eq!((plain.i, plain.l, plain.boxed), (i, l, Some(l)));
            prop_assert_eq!(plain.s, l.to_string());
        }

        /// Strings hold any text; scalars become their JSON text.
        #[test]
        fn strings_hold_any_text(s in ".{0,16}", b in any::<bool>()) {
            let json = serde_json::json!({"s": s, "os": b});
            let parsed: Bean = serde_json::from_value(json).unwrap();
            prop_assert_eq!(parsed.s, s);
            prop_assert_eq!(parsed.os, Some(b.to_string()));
        }
    }
}
