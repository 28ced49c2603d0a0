//! RocketMQ's enums as fastjson reads them (`EnumDeserializer`): by name (`"CLUSTERING"`) or by
//! ordinal (`1`). A name fastjson does not know reads as null (the field keeps its default); an
//! ordinal out of range is an error (`parse enum … error, value : N`). Written by name, as
//! fastjson writes enums. The variant order is the Java declaration order, which is what an
//! ordinal means: Apache's C++ client writes ordinals from its own copy of these enums.

use std::fmt;

use serde::{
    de::{self, Deserializer, Visitor},
    Deserialize, Serialize, Serializer,
};

/// A Java enum: its names in declaration order.
pub trait JavaEnum: Sized + Copy + 'static {
    /// The Java class name, for error messages.
    const CLASS: &'static str;
    /// Every constant in declaration order (index = ordinal).
    const ALL: &'static [Self];
    fn name(self) -> &'static str;

    fn ordinal(self) -> usize {
        Self::ALL
            .iter()
            .position(|v| v.name() == self.name())
            .unwrap_or(0)
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }
}

/// Declares a Java enum: variants in declaration order, each with its Java name.
macro_rules! java_enum {
    ($(#[$doc:meta])* $ty:ident = $class:literal { $($variant:ident = $name:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $ty { $($variant,)+ }

        impl JavaEnum for $ty {
            const CLASS: &'static str = $class;
            const ALL: &'static [Self] = &[$($ty::$variant,)+];
            fn name(self) -> &'static str {
                match self { $($ty::$variant => $name,)+ }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        /// Strict on its own: an unknown name is an error. Fields use [`lenient`], which maps
        /// an unknown name to `None` as fastjson does.
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                match d.deserialize_any(EnumVisitor::<$ty>(std::marker::PhantomData))? {
                    Read::Known(v) => Ok(v),
                    Read::Null => Err(de::Error::custom(concat!("null is not a ", $class))),
                    Read::UnknownName(n) => {
                        Err(de::Error::custom(format!("{n:?} is not a {}", $class)))
                    }
                }
            }
        }
    };
}

java_enum! {
    /// `ConsumeType` (4.x: the first two; 5.x adds CONSUME_POP).
    ConsumeType = "ConsumeType" {
        Actively = "CONSUME_ACTIVELY",
        Passively = "CONSUME_PASSIVELY",
        Pop = "CONSUME_POP",
    }
}

java_enum! {
    /// `MessageModel` (4.3 to 5.3).
    MessageModel = "MessageModel" {
        Broadcasting = "BROADCASTING",
        Clustering = "CLUSTERING",
    }
}

java_enum! {
    /// `ConsumeFromWhere`; the three deprecated constants keep their ordinals 1 to 3.
    ConsumeFromWhere = "ConsumeFromWhere" {
        LastOffset = "CONSUME_FROM_LAST_OFFSET",
        LastOffsetAndFromMinWhenBootFirst = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
        MinOffset = "CONSUME_FROM_MIN_OFFSET",
        MaxOffset = "CONSUME_FROM_MAX_OFFSET",
        FirstOffset = "CONSUME_FROM_FIRST_OFFSET",
        Timestamp = "CONSUME_FROM_TIMESTAMP",
    }
}

java_enum! {
    /// `TopicFilterType`.
    TopicFilterType = "TopicFilterType" {
        SingleTag = "SINGLE_TAG",
        MultiTag = "MULTI_TAG",
    }
}

/// What one JSON value says about an enum field.
enum Read<T> {
    Known(T),
    Null,
    UnknownName(String),
}

struct EnumVisitor<T>(std::marker::PhantomData<T>);

impl<T: JavaEnum> EnumVisitor<T> {
    fn ordinal<E: de::Error>(v: i128) -> Result<Read<T>, E> {
        usize::try_from(v)
            .ok()
            .and_then(|i| T::ALL.get(i).copied())
            .map(Read::Known)
            .ok_or_else(|| E::custom(format!("parse enum {} error, value : {v}", T::CLASS)))
    }
}

impl<'de, T: JavaEnum> Visitor<'de> for EnumVisitor<T> {
    type Value = Read<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} name or ordinal", T::CLASS)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Self::ordinal(i128::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Self::ordinal(i128::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        if v.is_empty() {
            return Ok(Read::Null);
        }
        Ok(T::from_name(v).map_or_else(|| Read::UnknownName(v.to_owned()), Read::Known))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Read::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Read::Null)
    }
}

/// An enum field as fastjson fills it: by name or ordinal; `None` for null, an empty string or
/// a name this release does not know. Use with `#[serde(default)]`.
pub fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: JavaEnum,
{
    match d.deserialize_any(EnumVisitor::<T>(std::marker::PhantomData))? {
        Read::Known(v) => Ok(Some(v)),
        Read::Null | Read::UnknownName(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Default, Deserialize)]
    #[serde(default, rename_all = "camelCase")]
    struct Consumer {
        #[serde(deserialize_with = "lenient")]
        consume_type: Option<ConsumeType>,
        #[serde(deserialize_with = "lenient")]
        message_model: Option<MessageModel>,
        #[serde(deserialize_with = "lenient")]
        consume_from_where: Option<ConsumeFromWhere>,
    }

    fn read(json: &str) -> Result<Consumer, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    /// The C++ client's heartbeat (issue 23) and the Java client's read the same.
    #[test]
    fn ordinals_and_names_read_the_same() {
        let cpp = read(r#"{"consumeFromWhere":4,"consumeType":1,"messageModel":1}"#).unwrap();
        let java = read(
            r#"{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING"}"#,
        )
        .unwrap();
        for c in [cpp, java] {
            assert_eq!(c.consume_type, Some(ConsumeType::Passively));
            assert_eq!(c.message_model, Some(MessageModel::Clustering));
            assert_eq!(c.consume_from_where, Some(ConsumeFromWhere::FirstOffset));
        }
    }

    #[test]
    fn unknown_names_and_null_are_none_and_bad_ordinals_refused() {
        let c =
            read(r#"{"consumeType":"CONSUME_LATER","messageModel":null,"consumeFromWhere":""}"#)
                .unwrap();
        assert_eq!(
            (c.consume_type, c.message_model, c.consume_from_where),
            (None, None, None)
        );
        assert_eq!(
            read(r#"{"messageModel":2}"#).unwrap_err(),
            "parse enum MessageModel error, value : 2 at line 1 column 17"
        );
        assert!(read(r#"{"consumeType":-1}"#).is_err());
        assert!(read(r#"{"consumeType":[0]}"#).is_err());
    }

    /// Java declaration order, checked against apache/rocketmq (4.3.0 … 5.3.3).
    #[test]
    fn ordinals_follow_the_java_declaration_order() {
        assert_eq!(ConsumeFromWhere::FirstOffset.ordinal(), 4);
        assert_eq!(ConsumeFromWhere::Timestamp.ordinal(), 5);
        assert_eq!(ConsumeType::Passively.ordinal(), 1);
        assert_eq!(MessageModel::Clustering.ordinal(), 1);
        assert_eq!(TopicFilterType::MultiTag.ordinal(), 1);
        assert_eq!(
            serde_json::to_string(&TopicFilterType::SingleTag).unwrap(),
            "\"SINGLE_TAG\""
        );
        assert!(serde_json::from_str::<MessageModel>("\"LOCAL\"").is_err());
    }

    fn round_trip<T>() -> Result<(), TestCaseError>
    where
        T: JavaEnum + PartialEq + fmt::Debug + Serialize + for<'de> Deserialize<'de>,
    {
        for (i, v) in T::ALL.iter().enumerate() {
            prop_assert_eq!(serde_json::from_str::<T>(&i.to_string()).unwrap(), *v);
            let by_name = serde_json::to_string(v).unwrap();
            prop_assert_eq!(serde_json::from_str::<T>(&by_name).unwrap(), *v);
        }
        Ok(())
    }

    proptest! {
        /// Any ordinal reads as the constant at that index, or fails; never another constant.
        #[test]
        fn any_ordinal_is_its_constant_or_an_error(i in -10i64..20) {
            let got = serde_json::from_str::<ConsumeFromWhere>(&i.to_string()).ok();
            let want = usize::try_from(i).ok().and_then(|i| ConsumeFromWhere::ALL.get(i).copied());
            prop_assert_eq!(got, want);
            round_trip::<ConsumeType>()?;
            round_trip::<MessageModel>()?;
            round_trip::<ConsumeFromWhere>()?;
            round_trip::<TopicFilterType>()?;
        }
    }
}
